#!/usr/bin/env bash
# The project's single test command: prepares the test environment (Slurm,
# torch, shellcheck, ...; skip with PARC_SKIP_SETUP=1), then runs every Go
# test. Extra arguments are go test flags: scripts/test.sh -run TestX -v
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ "${PARC_SKIP_SETUP:-}" = 1 ] || bash scripts/setup-test-env.sh
# On these machines python3 on PATH is pyenv's, which has no torch; this makes
# it Debian's /usr/bin/python3, the one python3-torch installs into.
export PYENV_VERSION=system
# The test cluster's own configuration (scripts/setup-test-env.sh), never the
# machine's /etc/slurm.
export SLURM_CONF=${PARC_SLURM_CONF:-/var/lib/parc-test-slurm/etc/slurm.conf}
command -v go >/dev/null || PATH="$PATH:/usr/local/go/bin"
# The estimate and solve packages sweep the measured corpus: about 3 minutes
# each on 2 idle cores, past go test's 10-minute default on a loaded machine.
# A later -timeout in the arguments wins.
exec go test -count=1 -timeout 30m "$@" ./...
