package compiler

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 12, item 14: compile warns where a relative path will resolve
// somewhere the user may not expect (the job's working directory is the one
// sbatch runs in, not the output directory), and about an --output directory
// Slurm will not create.
func TestRelativePathWarnings(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		want        []string // substrings of the warnings, in order; none when empty
	}{
		{"default program, no workdir", ``,
			[]string{`relative-path: without launch.workdir the job resolves relative paths against the directory sbatch is run in (or --chdir), not the output directory: launch.program "pretrain_gpt.py"`}},
		{"absolute workdir", `launch: {workdir: "/opt/Megatron-LM"}`, nil},
		{"relative workdir", `launch: {workdir: "Megatron-LM"}`, []string{`launch.workdir "Megatron-LM" is relative`}},
		// srun starts the workers in the container's workdir.
		{"container workdir", `launch: {container: {image: "nvcr.io#nvidia/pytorch:24.05-py3", workdir: "/opt/megatron"}}`, nil},
		{"container without a workdir", `launch: {container: {image: "nvcr.io#nvidia/pytorch:24.05-py3"}}`,
			[]string{`relative-path: without launch.workdir`}},
		{"relative container workdir", `launch: {container: {image: "x", workdir: "m"}}`, []string{`launch.container.workdir "m" is relative`}},
		{"absolute program, relative checkpoint", `launch: {program: "/opt/m/pretrain_gpt.py"}
checkpoint: {save: "ckpt", interval: 100}`, []string{`checkpoint.save "ckpt"`}},
		{"output in logs/", `launch: {workdir: "/opt/m"}
cluster: slurm: {output: "logs/%x-%j.out"}`, []string{`slurm-output-dir: Slurm opens cluster.slurm.output "logs/%x-%j.out" before the script runs and does not create its directory "logs"`}},
		{"output in the submission dir", `launch: {workdir: "/opt/m"}
cluster: slurm: {output: "%x-%j.out"}`, nil},
		// $VAR and ~ are not expanded: the scripts quote every value and
		// Megatron opens paths as written (they were taken as absolute).
		{"workdir from a variable", `launch: {workdir: "$HOME/Megatron-LM"}`,
			[]string{`launch.workdir "$HOME/Megatron-LM" is relative (parc quotes every value, so $ is not expanded)`}},
		{"data path from a variable", `launch: {workdir: "/opt/m"}
data: {paths: ["$DATA/corpus_text_document"]}`,
			[]string{`data.paths "$DATA/corpus_text_document" is relative (parc quotes every value, so $ is not expanded): it resolves to /opt/m/$DATA/corpus_text_document`}},
		{"tilde checkpoint, no workdir", `launch: {program: "/opt/m/pretrain_gpt.py"}
checkpoint: {save: "~/ckpt", interval: 100}`, []string{`checkpoint.save "~/ckpt" (parc quotes every value, so ~ is not expanded)`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := smallSpec(t, c.extra)
			_, files, diags := Compile(src, Options{})
			require.False(t, diags.HasErrors(), "%v", diags)
			require.NotEmpty(t, files)
			var got []string
			for _, d := range diags {
				if d.Code == "relative-path" || d.Code == "slurm-output-dir" {
					got = append(got, d.String())
				}
			}
			require.Len(t, got, len(c.want), "%v", got)
			for i, w := range c.want {
				assert.Contains(t, got[i], w)
			}
			// vet stays quiet about it: it is about where the job runs.
			_, vd := Vet(src)
			for _, d := range vd {
				assert.False(t, strings.Contains(d.Code, "relative-path"), "vet: %v", d)
			}
		})
	}
}

// smallSpec is a valid one-node, two-GPU spec with extra CUE appended.
func smallSpec(t *testing.T, extra string) Source {
	return Source{Path: filepath.Join(t.TempDir(), "plan.cue"), Data: []byte(`
model: {layers: 4, hidden: 256, heads: 8, vocab: 1024}
cluster: {
	nodes: 1, gpus_per_node: 2
	gpu: {name: "H100", memory_gib: 80, bf16_tflops: 989}
	nvlink_gbps: 450, network_gbps: 50
}
train: {seq_length: 512, micro_batch: 1, global_batch: 8, iters: 10}
` + extra + "\n")}
}
