#!/usr/bin/env bash
# free-ports.sh BASE COUNT: prints the first base port B ≥ BASE, in steps of
# COUNT, such that nothing listens on TCP ports B..B+COUNT-1 (the test
# cluster's slurmctld and slurmd ports); exits 1 when none is found below
# 65536 within 200 steps. scripts/setup-test-env.sh calls it, with its own
# daemons stopped, when the recorded ports are taken by something else (another
# Slurm on the machine), and records the base it prints in slurm.conf.
set -euo pipefail
base=$1 count=$2
[[ "$base" =~ ^[0-9]+$ && "$count" =~ ^[0-9]+$ && "$count" -ge 1 ]] || {
  echo "usage: free-ports.sh BASE COUNT" >&2
  exit 2
}
# Every listening TCP port, once, from the kernel's tables (st 0A = LISTEN;
# the local port is the hex after the address). Unreadable tables are an
# error, never "all free".
hex=$(awk 'FNR > 1 && $4 == "0A" {split($2, a, ":"); print a[2]}' /proc/net/tcp /proc/net/tcp6) || {
  echo "free-ports.sh: cannot read /proc/net/tcp" >&2
  exit 1
}
listening=$(for h in $hex; do echo $((16#$h)); done | sort -un)
taken() { grep -qx "$1" <<<"$listening"; }
for ((step = 0; step < 200; step++)); do
  b=$((base + step * count))
  [ $((b + count - 1)) -le 65535 ] || break
  free=1
  for ((p = b; p < b + count; p++)); do
    if taken "$p"; then
      free=0
      break
    fi
  done
  if [ "$free" = 1 ]; then
    echo "$b"
    exit 0
  fi
done
echo "free-ports.sh: no $count free consecutive TCP ports from $base" >&2
exit 1
