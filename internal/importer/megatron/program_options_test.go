package megatron

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mg "parc.dev/parc/internal/targets/megatron"
)

const programBase = "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256 " +
	"--micro-batch-size 1 --global-batch-size 8 --train-iters 10 --eval-interval 10 --tensor-model-parallel-size 2 " +
	"--tokenizer-type NullTokenizer --vocab-size 32000 --mock-data --lr 3e-4"

// TestProgramOptionsCarried: a program other than pretrain_gpt.py that adds
// options of its own to Megatron's parser (an extra_args_provider, as
// Megatron-LM's examples/multimodal/train.py and ModelOpt's scripts do) is
// imported: each option it adds, with the words after it that are not
// options, is carried verbatim in launch.extra_args with an
// import-program-option warning, and parc compile gives Megatron the input's
// arguments back (the rest round-trips, the carried ones come out as written).
func TestProgramOptionsCarried(t *testing.T) {
	src := "torchrun --nproc_per_node 8 my_train.py " + programBase + " --my-flag --my-mode fast --freeze-LM --swiglu\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	var carried []string
	for _, d := range res.Diags {
		if d.Code == "import-program-option" {
			carried = append(carried, d.Message)
		}
	}
	require.Len(t, carried, 3, "%v", res.Diags)
	assert.Contains(t, carried[1], `"--my-mode" with "fast"`)
	assert.NotContains(t, res.Diags.Codes(), "import-not-round-trip")
	assert.Contains(t, string(res.Spec), `"--my-mode", "fast",`)
	assert.Contains(t, strings.Join(res.Compiled, " "), "--my-flag --my-mode fast --freeze-LM")
	ns, errs := mg.Parse(withoutOwn(res.Compiled, res.Args, [][]int{{indexOf(res.Args, "--my-flag")}, {indexOf(res.Args, "--my-mode"), indexOf(res.Args, "fast")}, {indexOf(res.Args, "--freeze-LM")}}))
	require.Empty(t, errs)
	assert.Equal(t, true, ns.Values["swiglu"])
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// TestUnknownOptionMessages: with pretrain_gpt.py the same options are
// errors, one per option, each naming the option alone (not argparse's whole
// "unrecognized arguments" list) and the words after it; a word no option
// takes is its own error, with the quoting hint where an unquoted expansion
// split it. A program's options stop the import too when anything else is
// wrong with the arguments.
func TestUnknownOptionMessages(t *testing.T) {
	src := "torchrun pretrain_gpt.py " + programBase + " --my-flag --my-mode fast --swiglu stray\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.Nil(t, res.Spec)
	var msgs []string
	for _, d := range res.Diags {
		if d.Code == "import-unknown-option" {
			msgs = append(msgs, d.Message)
			assert.NotContains(t, d.Message, "unrecognized arguments")
		}
	}
	require.Len(t, msgs, 3, "%v", res.Diags)
	assert.Contains(t, msgs[0], `rejects "--my-flag": pretrain_gpt.py's parser has no such option`)
	assert.Contains(t, msgs[1], `rejects "--my-mode" (and "fast" after it)`)
	assert.Contains(t, msgs[2], `rejects "stray": no option takes it as a value`)

	// A program whose arguments are of another kind (Megatron-Bridge's
	// performance scripts): nothing to carry them beside.
	res = Import([]byte("python scripts/performance/llm/pretrain_llama3_8b.py --gpu h100 --compute_dtype fp8 --num_gpus 8\n"), Options{File: "run.sh", Cluster: "dgx_h100"})
	assert.Nil(t, res.Spec)
	assert.Equal(t, []string{"import-unknown-option", "import-unknown-option", "import-unknown-option"}, res.Diags.Codes(), "%v", res.Diags)

	// The program's own option, but a bad value elsewhere: nothing is carried.
	src = "torchrun my_train.py " + programBase + " --my-flag --log-interval abc\n"
	res = Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.Nil(t, res.Spec)
	assert.Subset(t, res.Diags.Codes(), []string{"import-unknown-option", "import-bad-argument"})
	for _, d := range res.Diags {
		if d.Code == "import-unknown-option" {
			assert.Contains(t, d.Hint, "my_train.py adds this option")
		}
	}
}

// TestMultimodalTrainRefused: Megatron-LM's multimodal and MIMO entry points
// (examples/multimodal/train.py, examples/mimo/train.py and pretrain_mimo.py
// at d98e8a64) train a vision or other modality encoder before the language
// model, which a spec does not describe: refused by name, as pretrain_vlm.py
// is, instead of imported as a decoder with its options carried; the error
// points at the program.
func TestMultimodalTrainRefused(t *testing.T) {
	for _, prog := range []string{"examples/multimodal/train.py", "/workspace/Megatron-LM/examples/mimo/train.py", "examples/mimo/pretrain_mimo.py"} {
		res := Import([]byte("torchrun "+prog+" "+programBase+" --language-model-type yi-34b\n"), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
		assert.Nil(t, res.Spec, prog)
		require.Equal(t, []string{"import-not-decoder"}, res.Diags.Codes(), "%s: %v", prog, res.Diags)
		assert.Equal(t, [2]int{1, len("torchrun ") + 1}, [2]int{res.Diags[0].Line, res.Diags[0].Column}, "at the program")
	}
	res := Import([]byte("torchrun examples/other/train.py "+programBase+"\n"), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.NotNil(t, res.Spec, "%v", res.Diags)
}

// TestWrapperScriptNamed: a wrapper that passes options to another script
// (the shape of Megatron-MoE-ModelZoo's best_practice scripts: PP=1 TP=1
// bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing) has no
// training command of its own; the error points at the command that runs the
// other script and names it, since the training command is in that one.
func TestWrapperScriptNamed(t *testing.T) {
	src := "export MODEL=Qwen3-30B-A3B\n" +
		"PP=1 VPP=1 TP=1 EP=8 bash ./sbatch_benchmarking.sh --moe-router-force-load-balancing\n" +
		"COMMENT=x PP=1 bash ./sbatch_benchmarking.sh --recompute-granularity full\n"
	res := Import([]byte(src), Options{File: "run.sh"})
	require.Equal(t, []string{"import-no-command"}, res.Diags.Codes(), "%v", res.Diags)
	d := res.Diags[0]
	assert.Equal(t, [2]int{2, strings.Index("PP=1 VPP=1 TP=1 EP=8 bash ./sbatch_benchmarking.sh", "./") + 1}, [2]int{d.Line, d.Column})
	assert.Contains(t, d.Message, "runs ./sbatch_benchmarking.sh with options (and 1 more command")
	assert.Contains(t, d.Hint, "import the script that runs the training program")

	res = Import([]byte("echo hello\n"), Options{File: "run.sh"})
	require.Equal(t, []string{"import-no-command"}, res.Diags.Codes())
	assert.Equal(t, 1, res.Diags[0].Line)
}

// TestInlineShellCommand: a Slurm script that runs the training command as
// the script of another shell, written in place (srun --container-image=…
// bash -c "cd /opt/megatron && export … && torchrun … pretrain_gpt.py \
// …"), is imported from that script: its torchrun sizes, its exports, the
// directory it changes to (launch.workdir), and each argument at its own
// line and column of the input.
func TestInlineShellCommand(t *testing.T) {
	src := "#!/bin/bash\n#SBATCH --nodes=2\n" +
		"srun --mpi=pmix --container-image=nvcr.io/nvidia/pytorch:24.05-py3 bash -c \"cd /opt/megatron && export CUDA_DEVICE_MAX_CONNECTIONS=1 && " +
		"torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\\n  " + programBase + " \\\n  --bogus-x\"\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100"})
	require.Equal(t, []string{"import-unknown-option"}, res.Diags.Codes(), "%v", res.Diags)
	assert.Equal(t, [2]int{5, 3}, [2]int{res.Diags[0].Line, res.Diags[0].Column}, "--bogus-x where the input has it")

	res = Import([]byte(strings.Replace(src, " \\\n  --bogus-x", "", 1)), Options{File: "run.sh", Cluster: "dgx_h100"})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	spec := string(res.Spec)
	assert.Contains(t, spec, "nodes: 2")
	assert.Contains(t, spec, `workdir: "/opt/megatron"`)
	assert.Contains(t, spec, `CUDA_DEVICE_MAX_CONNECTIONS: "1"`)
	assert.NotContains(t, res.Diags.Codes(), "relative-path")
}

// TestCdGivesWorkdir: the directory a script changes to before the training
// command is the job's working directory; a later cd to a directory the
// reader cannot know hides it.
func TestCdGivesWorkdir(t *testing.T) {
	cmd := "torchrun --nproc_per_node 8 pretrain_gpt.py " + programBase + "\n"
	res := Import([]byte("cd /workspace/Megatron-LM\n"+cmd), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.Contains(t, string(res.Spec), `workdir: "/workspace/Megatron-LM"`)
	res = Import([]byte("cd /workspace/Megatron-LM\ncd $MEGATRON_PATH\n"+cmd), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.NotContains(t, string(res.Spec), "workdir:")
}

// TestSbatchToSlurm: a batch script's #SBATCH options go to cluster.slurm —
// the fields named after them, the rest verbatim in cluster.slurm.extra, the
// job's size to cluster.nodes — so parc's submit.sbatch asks Slurm for what
// the input did.
func TestSbatchToSlurm(t *testing.T) {
	src := "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH -p batch -A acct\n#SBATCH --time=04:00:00 --job-name=llm\n" +
		"#SBATCH --ntasks-per-node=8\n#SBATCH --exclusive --requeue --cpus-per-task 14\n#SBATCH --mail-type=END --signal=B:USR2@120\n" +
		"srun python pretrain_gpt.py " + programBase + "\n"
	res := Import([]byte(src), Options{File: "job.sbatch", Cluster: "dgx_h100"})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.False(t, res.Diags.HasErrors(), "%v", res.Diags)
	spec := string(res.Spec)
	for _, want := range []string{"nodes: 2", `partition: +"batch"`, `account: +"acct"`, `time: +"04:00:00"`, `job_name: +"llm"`,
		`requeue: +true`, `cpus_per_task: +14`, `extra: \["--mail-type=END", "--signal=B:USR2@120"\]`} {
		assert.Regexp(t, want, spec)
	}
	assert.NotContains(t, spec, "exclusive", "parc's default")
	assert.NotContains(t, res.Diags.Codes(), "import-not-round-trip")
}

// TestContainerToLaunch: the container srun starts the training command in
// (pyxis's --container-image, --container-mounts, --container-workdir) goes
// to launch.container, so parc's srun starts it in the same one, and its
// workdir is where relative paths resolve (no relative-path warning); an
// image the reader cannot know ($IMAGE) leaves launch.container out with a
// warning.
func TestContainerToLaunch(t *testing.T) {
	src := "srun -N 2 --ntasks-per-node=8 --container-image=nvcr.io#nvidia/pytorch:24.05-py3 " +
		"--container-mounts /lustre:/lustre,/data:/data --container-workdir=/opt/megatron python pretrain_gpt.py " + programBase + "\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100"})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.Empty(t, res.Diags, "%v", res.Diags)
	spec := string(res.Spec)
	for _, want := range []string{`image: +"nvcr.io#nvidia/pytorch:24.05-py3"`, `mounts: \["/lustre:/lustre", "/data:/data"\]`, `workdir: +"/opt/megatron"`, "nodes: 2"} {
		assert.Regexp(t, want, spec)
	}

	res = Import([]byte(strings.Replace(src, "nvcr.io#nvidia/pytorch:24.05-py3", "$IMAGE", 1)), Options{File: "run.sh", Cluster: "dgx_h100"})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.NotContains(t, string(res.Spec), "container")
	assert.Contains(t, res.Diags.Codes(), "import-unresolved")
}

// TestSingleQuotedShellCommand: the script another shell runs in single
// quotes (srun bash -c '… $ARGS') expands in that shell, which inherits
// the exported variables only: an exported one expands, another stays as
// written with import-unresolved.
func TestSingleQuotedShellCommand(t *testing.T) {
	src := "export ARGS='" + programBase + "'\nEXTRA=--swiglu\nsrun bash -c 'torchrun --nproc_per_node 8 pretrain_gpt.py $ARGS'\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	require.NotNil(t, res.Spec, "%v", res.Diags)
	assert.False(t, res.Diags.HasErrors(), "%v", res.Diags)

	res = Import([]byte(strings.Replace(src, "$ARGS'", "$ARGS $EXTRA'", 1)), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.Contains(t, res.Diags.Codes(), "import-unresolved", "%v", res.Diags)
	for _, d := range res.Diags {
		if d.Code == "import-unresolved" {
			assert.Contains(t, d.Message, "$EXTRA")
			assert.Equal(t, 3, d.Line)
		}
	}
}

// TestInferenceRefused: Megatron-LM's inference programs (their arguments
// give the model too, and options of their own) are refused by name
// instead of imported as a training run with their options carried.
func TestInferenceRefused(t *testing.T) {
	for _, prog := range []string{"examples/inference/advanced/gpt_dynamic_inference.py", "tools/run_text_generation_server.py",
		"/opt/megatron/tools/text_generation_cli.py", "examples/academic_paper_scripts/detxoify_lm/generate_samples_gpt.py"} {
		res := Import([]byte("torchrun "+prog+" "+programBase+" --inference-max-requests 8\n"), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
		assert.Nil(t, res.Spec, prog)
		assert.Equal(t, []string{"import-not-training"}, res.Diags.Codes(), "%s: %v", prog, res.Diags)
	}
	res := Import([]byte("torchrun pretrain_gpt.py "+programBase+"\n"), Options{File: "run.sh", Cluster: "dgx_h100", Nodes: 1})
	assert.NotContains(t, res.Diags.Codes(), "import-not-training")
}
