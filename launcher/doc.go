// Package launcher is the runtime side of parc: `parc launch` executes a
// launch.json (written by the launchplan target) on one node. It reads the
// plan, checks the node before any worker starts (node index, GPU count, the
// Slurm allocation), starts this node's workers with the torchrun-compatible
// environment (RANK, LOCAL_RANK, WORLD_SIZE, ...), and supervises them: output
// prefixed by rank or written to per-rank files, fail-fast teardown of every
// worker when one fails, signal forwarding, optional restarts, and no worker
// outliving the launcher.
//
// Unlike torchrun there is no rendezvous: the plan fixes every rank, so a
// node starts exactly the ranks the plan gives it.
//
// Exit status: 0 when every worker exits 0; ExitUsage (2) for a usage or
// preflight error, when nothing was started; otherwise the exit code of the
// first worker that failed (128+N when it was killed by signal N).
//
// The package is the one runtime exception to "only cmd/ touches the disk":
// it reads launch.json, writes per-rank logs and starts processes. It runs
// on Linux only (process groups and the parent-death signal).
package launcher
