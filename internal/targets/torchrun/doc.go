// Package torchrun is the torchrun target: it renders torchrun.sh, which runs
// one node's share of the plan on machines without Slurm. Each node runs it
// with its node rank and the master address (arguments or NODE_RANK and
// MASTER_ADDR); it starts the same worker command as submit.sbatch's torchrun
// mode, with the arguments read from megatron.args next to the script (or in
// $PARC_PLAN_DIR).
package torchrun
