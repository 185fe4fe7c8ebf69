package compiler

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/launchplan"
)

// Issue 12, item 10: the grace period comes from the spec and reaches every
// launcher mode: launch.json's grace_seconds for `parc launch`,
// TORCH_ELASTIC_SHUTDOWN_TIMEOUT for torchrun; by default it covers the
// preemption warning.
func TestGracePeriodReachesEveryLauncher(t *testing.T) {
	for _, c := range []struct {
		name, slurm, launch string
		want                int
	}{
		{"default", ``, `launcher: "parc"`, 30},
		{"covers the preemption warning", `slurm: {time: "02:00:00", preempt_signal_seconds: 300}`, `launcher: "parc"`, 300},
		{"short warning, default floor", `slurm: {time: "02:00:00", preempt_signal_seconds: 10}`, `launcher: "parc"`, 30},
		{"explicit", `slurm: {time: "02:00:00", preempt_signal_seconds: 300}`, `launcher: "parc", grace_seconds: 450`, 450},
		{"zero", ``, `launcher: "srun", grace_seconds: 0`, 0},
		{"torchrun", ``, `grace_seconds: 25`, 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := smallSpec(t, "cluster: {"+c.slurm+"}\nlaunch: {"+c.launch+"}")
			_, files, diags := Compile(src, Options{})
			require.False(t, diags.HasErrors(), "%v", diags)
			f, err := launchplan.Decode(files[LaunchJSON])
			require.NoError(t, err)
			require.NotNil(t, f.GraceSeconds)
			assert.Equal(t, c.want, *f.GraceSeconds)
			export := `export TORCH_ELASTIC_SHUTDOWN_TIMEOUT="${TORCH_ELASTIC_SHUTDOWN_TIMEOUT:-` + strconv.Itoa(c.want) + `}"`
			assert.Contains(t, string(files[TorchrunSh]), export)
			sbatch := string(files[SbatchFile])
			switch {
			case strings.Contains(c.launch, `"parc"`):
				assert.Contains(t, sbatch, "grace_seconds="+strconv.Itoa(c.want)+" between a stop signal and SIGKILL")
			case strings.Contains(c.launch, `"srun"`):
				assert.Contains(t, sbatch, "KillWait")
			default:
				assert.Contains(t, sbatch, export)
			}
		})
	}
}
