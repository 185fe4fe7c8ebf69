package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"parc.dev/parc/launcher"
)

// newLaunchCmd is `parc launch`: run this node's workers from launch.json.
func newLaunchCmd() *cobra.Command {
	var (
		opts     launcher.Options
		nodeRank int
		grace    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "launch --plan DIR/launch.json [--node-rank N] [--master-addr A] [-- CMD ARGS...]",
		Short: "Start and supervise this node's workers exactly as launch.json says",
		Long: `launch starts this node's workers from a launch plan written by parc compile,
with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK (= GROUP_RANK),
MASTER_ADDR, MASTER_PORT, PARC_LAUNCH_PLAN and the plan's env. The command is
the one after -- or else the plan's command.

The node rank comes from --node-rank, else SLURM_NODEID. The master address
comes from --master-addr, else the plan, else the first host of the Slurm
node list (expanded without scontrol), else 127.0.0.1 for a one-node plan.

Before any worker starts, launch checks that the node index is in the plan,
that this node's GPU count (nvidia-smi, narrowed by CUDA_VISIBLE_DEVICES;
without nvidia-smi CUDA_VISIBLE_DEVICES or SLURM_GPUS_ON_NODE) equals the
plan's gpus_per_node, and under Slurm that SLURM_NNODES matches the plan and
that srun runs one launch per node.

When a worker fails, every other worker gets SIGTERM, then SIGKILL after the
grace period: --grace, else the plan's grace_seconds (launch.grace_seconds in
the spec, which covers cluster.slurm.preempt_signal_seconds), else 10s.
SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to every worker's
process group. No worker, and no process a worker started, outlives the
launcher: it adopts them as a child subreaper and kills them when the workers
end. A closed stdout (parc launch ... | head) stops nothing: the workers'
output is dropped from then on, with one warning (--log-dir keeps it).

Exit status: 0 when every worker exits 0; 2 for a usage or preflight error
(nothing was started); otherwise the exit code of the first worker that
failed, 128+N when it was killed by signal N.`,
		Example: `  parc launch --plan out/launch.json --node-rank 0 --master-addr 10.0.0.1
  srun --ntasks-per-node=1 parc launch --plan out/launch.json    # the workers run launch.json's command
  parc launch --plan out/launch.json --node-rank 1 -- python3 my_worker.py`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usageError{fmt.Errorf("unexpected argument %q: put the worker command after --", args[0])}
			}
			if opts.PlanPath == "" {
				return usageError{errors.New("--plan is required")}
			}
			if cmd.Flags().Changed("node-rank") {
				opts.NodeRank = &nodeRank
			}
			if cmd.Flags().Changed("grace") {
				if grace < 0 {
					return usageError{fmt.Errorf("--grace is %s: it must be 0 (SIGKILL right after the stop signal) or more", grace)}
				}
				opts.Grace = &grace
			}
			opts.Command = args
			opts.Stdout = cmd.OutOrStdout()
			opts.Stderr = cmd.ErrOrStderr()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			code, err := launcher.Run(ctx, opts)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "parc launch: %v\n", err)
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.PlanPath, "plan", "", "the launch plan (launch.json from parc compile)")
	f.IntVar(&nodeRank, "node-rank", 0, "this node's index in the plan (default: $SLURM_NODEID)")
	f.StringVar(&opts.MasterAddr, "master-addr", "", "rank 0's address (default: the plan's, else the first host of $SLURM_JOB_NODELIST)")
	f.StringVar(&opts.LogDir, "log-dir", "", "write each rank's output to DIR/attempt-A/rank-R.log instead of prefixing it")
	f.IntVar(&opts.MaxRestarts, "max-restarts", 0, "restart this node's workers up to N times after a failure")
	f.DurationVar(&grace, "grace", launcher.DefaultGrace, "time between the stop signal and SIGKILL when stopping workers; 0 kills at once (default: the plan's grace_seconds, else 10s)")
	return cmd
}
