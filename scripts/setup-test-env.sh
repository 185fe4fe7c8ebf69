#!/usr/bin/env bash
# Installs and starts what parc's tests need, on Debian 12 as root, without
# systemd: Slurm (slurmctld + 4 logical slurmd nodes with 8 fake GPUs each,
# layout in scripts/slurm/README.md), munge, python3-torch (gloo) with
# torchrun fixed for Python 3.11, shellcheck, pre-commit and rsvg-convert.
# Idempotent: on a machine where all of it is installed and running it only
# checks, and prints one summary line.
set -euo pipefail

# The test cluster keeps to itself, so that it runs beside a Slurm the machine
# already has: its own configuration (never /etc/slurm; clients find it through
# SLURM_CONF), state directory, cluster name (parc-test) and ports.
readonly DIR=/var/lib/parc-test-slurm            # config, state, spool, pid and log files
readonly CONF_DIR=$DIR/etc
export SLURM_CONF=$CONF_DIR/slurm.conf
# slurmctld's port; the 4 slurmd listen on the next 4. PARC_SLURM_PORT fixes
# it; otherwise the port the cluster's config records (the cluster is reused
# where it runs), else 16817, moved to the next free ports when something
# that is not this cluster listens there (start_slurm).
# A new machine has no config yet: no port, and no failure (under set -e and
# pipefail a failing sed in the assignment below would end the script).
recorded_port() {
  [ -r "$CONF_DIR/slurm.conf" ] || return 0
  sed -n 's/^SlurmctldPort=\([0-9][0-9]*\)$/\1/p' "$CONF_DIR/slurm.conf" | head -n 1
}
CTLD_PORT=${PARC_SLURM_PORT:-$(recorded_port)}
CTLD_PORT=${CTLD_PORT:-16817}
readonly NODES=(n1 n2 n3 n4)
readonly PY=/usr/bin/python3                      # Debian's python, the one python3-torch serves
TEMPLATES="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/slurm"
readonly TEMPLATES
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

say() { printf 'setup-test-env: %s\n' "$*"; }
die() { printf 'setup-test-env: error: %s\n' "$*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root to $1"; }

# One run at a time: parallel test runs must not restart the cluster together.
# Every daemon started below gets `9>&-`: a daemon that inherited fd 9 would
# hold the lock for as long as it runs, and the next run would wait for it.
exec 9>>/tmp/parc-setup-test-env.lock
flock -w 600 9 || die "another setup-test-env.sh held /tmp/parc-setup-test-env.lock for 600 s"

# --- 1. packages ---------------------------------------------------------
missing=()
want() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
want slurmctld slurmctld
want slurmd slurmd
want sbatch slurm-client
want munged munge
want shellcheck shellcheck
want pre-commit pre-commit
want rsvg-convert librsvg2-bin
# One import of torch (1.5 s) tells whether it is there and what it is.
torch_info() {
  "$PY" -c '
import os, platform, torch, torch.distributed as d
print(torch.__version__, platform.python_version(), d.is_gloo_available(), os.path.dirname(torch.__file__))' 2>/dev/null | tail -n 1
}
info=$(torch_info) || missing+=(python3-torch)
if [ ${#missing[@]} -gt 0 ]; then
  need_root "install ${missing[*]}"
  say "installing ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- 2. torch: version, gloo, and Debian's torchrun on Python 3.11 --------
# Python 3.11 skips the alias members of the Std enum when iterating it, so
# every torchrun dies with "'NoneType' object has no attribute 'get'".
[ -n "$info" ] || info=$(torch_info) || die "$PY cannot import torch: $("$PY" -c 'import torch' 2>&1 | tail -n 1)"
read -r torch_version py_version gloo torch_dir <<<"$info"
[ "$gloo" = True ] || die "torch in $PY has no gloo backend"
api="$torch_dir/distributed/elastic/multiprocessing/api.py"
if grep -qE '^\s*for s in Std:$' "$api"; then
  need_root "patch $api"
  sed -i 's/^\(\s*\)for s in Std:$/\1for s in Std.__members__.values():/' "$api"
  say "patched torchrun for Python 3.11 ($api)"
fi

# --- 3. Slurm configuration ------------------------------------------------
host=$(hostname)
render() {
  sed -e "s|@HOST@|$host|g" -e "s|@DIR@|$DIR|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
    -e "s|@SLURMD_PORTS@|$((CTLD_PORT + 1))-$((CTLD_PORT + ${#NODES[@]}))|g" "$TEMPLATES/$1.in"
}
config_changed=0
install_config() { # name: writes $CONF_DIR/<name> when its content differs
  local want
  want=$(render "$1")
  if [ ! -f "$CONF_DIR/$1" ] || [ -L "$CONF_DIR/$1" ] || [ "$(cat "$CONF_DIR/$1")" != "$want" ]; then
    need_root "write $CONF_DIR/$1"
    mkdir -p "$CONF_DIR"
    rm -f "$CONF_DIR/$1"
    printf '%s\n' "$want" >"$CONF_DIR/$1"
    config_changed=1
  fi
}
install_config slurm.conf
install_config gres.conf

ready_dirs=1
for d in "$DIR/state/ctld" "$DIR/log" "$DIR/run" "${NODES[@]/#/$DIR/state/slurmd-}"; do
  [ -d "$d" ] || ready_dirs=0
done
if [ "$ready_dirs" = 0 ]; then
  need_root "create $DIR"
  mkdir -p "$DIR/state/ctld" "$DIR/log" "$DIR/run" "$DIR/fakedev" "${NODES[@]/#/$DIR/state/slurmd-}"
fi
for i in 0 1 2 3 4 5 6 7; do # fake GPUs: character devices like /dev/null
  dev="$DIR/fakedev/nvidia$i"
  if [ ! -c "$dev" ]; then
    need_root "create $dev"
    mkdir -p "$DIR/fakedev"
    rm -f "$dev"
    mknod "$dev" c 1 3
  fi
done

# Logical node names must resolve (MASTER_ADDR=$(scontrol show hostnames ...)).
for n in "${NODES[@]}"; do
  if ! getent hosts "$n" >/dev/null; then
    need_root "edit /etc/hosts"
    [ -z "$(tail -c 1 /etc/hosts)" ] || echo >>/etc/hosts
    echo "127.0.0.1 ${NODES[*]}" >>/etc/hosts
    say "added ${NODES[*]} to /etc/hosts"
    break
  fi
done

# --- 4. munge ---------------------------------------------------------------
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
if ! munge_ok; then
  need_root "start munged"
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge
  chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged --force </dev/null >/dev/null 2>&1 9>&-
  for _ in $(seq 50); do munge_ok && break; sleep 0.2; done
  munge_ok || die "munged does not answer (see /var/log/munge/munged.log)"
  say "started munged"
fi

# --- 5. Slurm daemons ---------------------------------------------------------
# node_states prints "partition name state gres" per node, e.g. "gpu* n1 idle gpu:8".
node_states() { timeout 10 sinfo -h -N -o '%P %N %t %G' 2>/dev/null | sort -u; }
all_nodes_in() { # regex: true when the partitions the tests use hold their nodes
  # (gpu = n1..n4 with gpu:8, the default; debug = n1, n2), each in a state matching it
  local states
  states=$(node_states) || return 1
  for n in "${NODES[@]}"; do
    grep -qE "^gpu\* $n ($1) gpu:8\$" <<<"$states" || return 1
  done
  for n in n1 n2; do
    grep -qE "^debug $n ($1) gpu:8\$" <<<"$states" || return 1
  done
}
# port_owner port: the "pid comm" listening on a TCP port, if any.
port_owner() {
  ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\2 \1/p' | head -n 1
}
check_ports() { # every port of the test cluster is free (our own daemons are stopped by now)
  local p owner
  for p in $(seq "$CTLD_PORT" $((CTLD_PORT + ${#NODES[@]}))); do
    owner=$(port_owner "$p")
    [ -z "$owner" ] || die "port $p, which the test cluster needs, is in use by ${owner#* } (pid ${owner%% *}): set PARC_SLURM_PORT to another base port (now $CTLD_PORT)"
  done
}
alive() { # pid: runs and is no zombie (this machine's init does not reap them)
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}
ours() { # pidfile name...: the pid in the file when it runs one of the names
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  shift
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
  for name in "$@"; do
    [ "$(cat "/proc/$pid/comm")" = "$name" ] && { echo "$pid"; return 0; }
  done
  return 1
}
stop_slurm() {
  if ours "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
    timeout 20 scontrol shutdown >/dev/null 2>&1 || true
  fi
  local pids=() pid
  pid=$(ours "$DIR/run/slurmctld.pid" slurmctld) && pids+=("$pid")
  for n in "${NODES[@]}"; do
    pid=$(ours "$DIR/run/slurmd-$n.pid" slurmd) && pids+=("$pid")
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  local left
  for _ in $(seq 50); do
    left=()
    for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
    [ ${#left[@]} -gt 0 ] || return 0
    sleep 0.2
  done
  kill -9 "${left[@]}" 2>/dev/null || true
}
start_slurm() {
  # Our daemons are stopped: whatever listens on the ports now is not this
  # cluster (another Slurm, anything). Without PARC_SLURM_PORT, move to the
  # next free ports and record them in slurm.conf.
  if [ -z "${PARC_SLURM_PORT:-}" ]; then
    local base
    base=$(bash "$TEMPLATES/free-ports.sh" "$CTLD_PORT" $((${#NODES[@]} + 1))) || die "no free ports for the test cluster from $CTLD_PORT on"
    if [ "$base" != "$CTLD_PORT" ]; then
      say "ports $CTLD_PORT-$((CTLD_PORT + ${#NODES[@]})) are taken by another program: the test cluster moves to $base-$((base + ${#NODES[@]})) (recorded in $SLURM_CONF)"
      CTLD_PORT=$base
      install_config slurm.conf
    fi
  fi
  check_ports
  slurmctld -c -f "$SLURM_CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 9>&- || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
  for _ in $(seq 50); do timeout 5 scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
  for n in "${NODES[@]}"; do
    slurmd -N "$n" -f "$SLURM_CONF" </dev/null >>"$DIR/log/slurmd-$n.out" 2>&1 9>&- || die "slurmd $n did not start (see $DIR/log/slurmd-$n.log)"
  done
}

# (A client takes 9 s to give up on a stopped slurmctld: look at the pid first.)
if [ "$config_changed" = 1 ] || ! ours "$DIR/run/slurmctld.pid" slurmctld >/dev/null ||
  ! all_nodes_in 'idle|mix|alloc|comp'; then
  need_root "start Slurm"
  say "(re)starting slurmctld and slurmd ${NODES[*]}"
  stop_slurm
  start_slurm
  deadline=$((SECONDS + 60))
  until all_nodes_in idle; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "sinfo:" >&2
      timeout 10 sinfo -N -l >&2 || true
      for f in "$DIR"/log/slurmctld.log "$DIR"/log/slurmd-n1.log; do
        echo "--- tail $f" >&2
        tail -n 15 "$f" >&2 || true
      done
      die "the test cluster's partitions (gpu = n[1-4], debug = n[1-2], gpu:8 each) were not idle after 60 s"
    fi
    sleep 0.2
  done
fi

# --- 6. summary ---------------------------------------------------------------
printf 'setup-test-env: ready in %ss: slurm %s (cluster parc-test, SLURM_CONF=%s, ports %s-%s; nodes n[1-4]: 8 cpus, 16000 MB, gpu:8; partitions gpu*=n[1-4], debug=n[1-2]), munge %s, torch %s (python %s, gloo), shellcheck %s, pre-commit %s, rsvg-convert %s\n' \
  "$SECONDS" \
  "$(sinfo --version | awk '{print $2}')" "$SLURM_CONF" "$CTLD_PORT" $((CTLD_PORT + ${#NODES[@]})) \
  "$(munge --version | awk '{sub(/^munge-/, "", $1); print $1}')" \
  "$torch_version" "$py_version" \
  "$(shellcheck --version | awk '/^version:/{print $2}')" \
  "$(pre-commit --version | awk '{print $2}')" \
  "$(rsvg-convert --version | awk '{print $NF}')"
