// Package launcher is the runtime side of parc: `parc launch` executes a
// launch.json (written by the launchplan target) on one node. It reads the
// plan, checks the node before any worker starts (node index, GPU count, the
// Slurm allocation), starts this node's workers with the torchrun-compatible
// environment (RANK, LOCAL_RANK, WORLD_SIZE, ...), and supervises them: output
// prefixed by rank or written to per-rank files (a closed stdout drops it
// with one warning and stops nothing), fail-fast teardown of every worker
// when one fails (the stop signal, then SIGKILL after the grace period:
// Options.Grace, else the plan's grace_seconds, else DefaultGrace), signal
// forwarding, optional restarts, and no worker or process a worker started
// outliving the launcher, even a SIGKILLed one: each worker runs under a
// shim (a copy of the launcher's own executable, see shim_linux.go) that is
// its parent and a child subreaper, so whatever the worker starts, `setsid`
// daemons included, stays its descendant; the shim kills them all when the
// worker exits or the launcher dies, and the launcher, a subreaper too,
// kills what is left when an attempt ends. A program linking this package
// must let its init run before main (it always does): the shim starts there.
//
// Unlike torchrun there is no rendezvous: the plan fixes every rank, so a
// node starts exactly the ranks the plan gives it.
//
// Every worker gets the launcher's environment, then the plan's env on top,
// then RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK and
// GROUP_RANK (the node index), GROUP_WORLD_SIZE (nodes), ROLE_RANK,
// ROLE_NAME=default, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RESTART_COUNT and PARC_RESTART_ATTEMPT (the attempt, from 0),
// TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_USE_AGENT_STORE=False (rank 0's
// TCPStore, as without torchrun), PARC_LAUNCH_PLAN (launch.json's absolute
// path) and PARC_GPU (the worker's gpu in the plan); OMP_NUM_THREADS=1 when
// several workers share the node and nobody set it (as torchrun does).
//
// Exit status: 0 when every worker exits 0; ExitUsage (2) for a usage or
// preflight error, when nothing was started; otherwise the exit code of the
// first worker that failed (128+N when it was killed by signal N). When the
// launcher itself is stopped (SIGTERM, SIGINT, SIGHUP, SIGQUIT, or its context), the
// workers' statuses decide: 0 when they all exited 0 (say, after saving a
// checkpoint), else the first non-zero one; no restart follows.
//
// The package is the one runtime exception to "only cmd/ touches the disk":
// it reads launch.json, writes per-rank logs and starts processes. It runs
// on Linux only (process groups and the parent-death signal).
package launcher
