// Package slurm is the Slurm target: it renders submit.sbatch, the batch
// script that runs the plan on a Slurm cluster as emitted (sbatch
// submit.sbatch). Its #SBATCH directives come from cluster.slurm; it starts
// the workers in one of three ways (launch.launcher): a torchrun per node with
// a static rendezvous, srun with one task per GPU, or `parc launch` per node;
// optionally inside a pyxis/enroot container, and optionally with preemption
// handling (SIGUSR2 before the time limit: checkpoint and requeue).
//
// The script reads the worker arguments from megatron.args (and launch.json in
// parc mode) at run time instead of embedding paths of the machine that
// compiled it, so the output is byte-identical everywhere: it looks in
// $PARC_PLAN_DIR, else in the directory of the submitted script (scontrol show
// job), else in the job's working directory. Every value from the spec that
// reaches the script is quoted (template.ShellQuote, template.SbatchQuote).
package slurm
