package megatron

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/load"
)

// shellCases are scripts whose training command bash itself expands; the
// reader must produce the same arguments (TestReadShellAgainstBash).
var shellCases = []string{
	`python pretrain_gpt.py --num-layers 4 --hidden-size 64`,
	"torchrun --nproc_per_node 8 pretrain_gpt.py \\\n  --num-layers 4 \\\n  --split '99,1,0' \\\n  --data-path \"a b\" c\\ d",
	`NL=32
H=4096
OPTS="--swiglu --bf16"
python pretrain_gpt.py --num-layers $NL --hidden-size ${H} $OPTS "$OPTS" --lr ${LR:-3e-4} --x "${MISSING:-a b}"`,
	`MODEL_ARGS=(
    --num-layers 32 # a comment
    --hidden-size 4096
)
TRAIN=( "--fp8-format hybrid" '--lr 1e-4' )
TRAIN+=(--bf16)
torchrun --nnodes=2 --nproc-per-node=4 pretrain_gpt.py ${MODEL_ARGS[@]} "${TRAIN[@]}" ${TRAIN[@]} ${TRAIN[1]} 2>&1 | tee log.txt`,
	`export TP=2; export CP=1
G=8; N=4
WORLD=$(( G * N ))
srun python -u /opt/Megatron-LM/pretrain_gpt.py --tensor-model-parallel-size $TP --context-parallel-size "$CP" --world $WORLD --half $(( (WORLD + 1) / 2 ))`,
	`A=x; B="${A}y"; C='$A'; D=${NOPE-default}; E=${A:+set}; F=${A+alt}
python pretrain_gpt.py --a $B --c $C --d $D --e $E --f $F --g "\$A" --h "it's" --i 'say "hi"' --j ""`,
	`cat <<EOF > /tmp/x
--not-an-arg
EOF
python3 pretrain_gpt.py --num-layers 2 \
  --moe-layer-freq "([0]*3+[1]*58)" | tee out.log`,
	// the command built in a variable and run by another shell (Megatron-LM's
	// examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh: srun bash -c "$CMD")
	`ARGS=(--num-layers 2 --hidden-size 64)
ARGS+=(--split "99,1,0")
CMD="cd /opt;
python pretrain_gpt.py ${ARGS[@]}"
eval "$CMD"`,
	`A=(x y z)
N="a ${A[@]} b"
python pretrain_gpt.py --tensorboard-dir "$N"`,
	// if/elif/else decided from what the script assigns (Megatron-LM's
	// examples/llama/train_llama3_8b_h100_fp8.sh, lines 106 and 135)
	`TOK=${3:-"MOCK"}
DATA=${4:-"MOCK"}
DTYPE="fp8"
A=()
if [[ "$DTYPE" == "fp8" ]]; then
    A+=(--fp8-format hybrid)
fi
if [[ "$TOK" == "MOCK" ]] || [[ "$DATA" == "MOCK" ]] || [[ -z "$TOK" ]]; then
    A+=(--mock-data --tokenizer-type NullTokenizer)
else
    A+=(--data-path "$DATA" --tokenizer-model "$TOK")
fi
if [[ "$DTYPE" != "fp8" ]] && [[ $TOK == MOCK ]]; then A+=(--bf16); fi
python pretrain_gpt.py "${A[@]}"`,
	`N=${1:-4}; M=""; EMPTY=
if [ $N -gt 8 ]; then X=big
elif test "$N" -eq 4 && [ -z "$M" ]; then X=four
elif [ 1 -eq 1 ]; then X=late
else X=other
fi
if ! [[ $N -le 2 ]]; then
    if [ "$X" != four ]; then Y=no; else Y=yes; fi
    if [ -n "$EMPTY" ]; then Y="$Y-n"
    elif [ ! "$N" = 4 ]
    then Y="$Y-not4"
    else Y="$Y-else"; fi
else
    Y=never
    if [ 1 = 1 ]; then Y=nested; fi
fi
if [[ -n $M ]] || [ "$N" -ne 4 ] || [ -z $EMPTY ]; then Z=1; else Z=2; fi
if [ "$N" -lt 5 ] && [ "$N" -ge 4 ] && [ $N -le 4 ] && [[ "$N" = "4" ]]; then W=in; else W=out; fi
if [ x ]; then V=set; fi
if [ "" ]; then V=empty; fi
python pretrain_gpt.py --x $X --y $Y --z $Z --w $W --v $V`,
	`MODEL=${1:-llama3-8b}; DT=fp8; A=()
case $MODEL in
    gpt*|mixtral) A+=(--gpt) ;;
    llama3-?b) A+=(--llama-small)
        case "$DT" in
            bf16) A+=(--bf16) ;;
            "fp8") A+=(--fp8-format hybrid) ;;
            *) A+=(--fp16) ;;
        esac
        ;;
    llama*) A+=(--llama) ;;
    *) A+=(--other) ;;
esac
case "x y" in (x) B=1;; "x y") B=2;; esac
case "" in "") C=empty ;; *) C=any ;; esac
case abc in a*c) D=glob ;; esac
E=0; case $DT in bf16) E=1 ;; esac
python pretrain_gpt.py "${A[@]}" --b $B --c $C --d $D --e "$E"`,
}

func TestReadShellAgainstBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, src := range shellCases {
		// bash runs the script with the launchers replaced by a function
		// that prints the program's arguments.
		stub := `p() { while [ $# -gt 0 ] && [[ "$1" != *.py ]]; do shift; done; shift; printf '%s\0' "$@"; }
torchrun() { p "$@"; }; python() { p "$@"; }; python3() { p "$@"; }; srun() { p "$@"; }
tee() { cat; }
`
		out, err := exec.Command(bash, "-c", stub+src).Output()
		require.NoError(t, err, src)
		want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		c := ReadShell(src)
		var got []string
		for _, w := range c.Args {
			got = append(got, w.Text)
		}
		require.Equal(t, want, got, src)
	}
}

func TestReadShell(t *testing.T) {
	c := ReadShell(shellCases[3])
	require.Equal(t, 2, c.Nodes)
	require.Equal(t, 4, c.GPUsPerNode)
	// each argument keeps the line it was written on
	require.Equal(t, "--num-layers@2", at(c.Args[0]))
	require.Equal(t, "4096@3", at(c.Args[3]))
	require.Equal(t, "--fp8-format hybrid@5", at(c.Args[4]))

	// the words of a multi-line string variable keep their own lines
	c = ReadShell("ARGS=\"\n  --num-layers 4 \\\n  --hidden-size 64\n\"\npython pretrain_gpt.py $ARGS --bf16")
	var got []string
	for _, w := range c.Args {
		got = append(got, at(w))
	}
	require.Equal(t, []string{"--num-layers@2", "4@2", "--hidden-size@3", "64@3", "--bf16@5"}, got)

	c = ReadShell("if true; then\n X=1\nfi\npython pretrain_gpt.py --a $X --data-path $DATA_PATH --b $(date) --c ${#X}")
	require.Equal(t, []string{"--a", "1", "--data-path", "$DATA_PATH", "--b", "$(date)", "--c", "${#X}"}, texts(c.Args))
	var codes []string
	for _, n := range c.Notes {
		codes = append(codes, n.Code)
	}
	require.Equal(t, []string{"import-shell", "import-unresolved", "import-unresolved", "import-unresolved"}, codes)

	// a bare argument list on one or several lines
	c = Read("--num-layers 4 --hidden-size 64\n--bf16")
	require.Equal(t, []string{"--num-layers", "4", "--hidden-size", "64", "--bf16"}, texts(c.Args))
	// one argument per line (megatron.args), values verbatim
	c = Read("--data-path\n/data/my file\n--moe-layer-freq\n([0]*3+[1]*58)\n")
	got = nil
	for _, w := range c.Args {
		got = append(got, at(w))
	}
	require.Equal(t, []string{"--data-path@1", "/data/my file@2", "--moe-layer-freq@3", "([0]*3+[1]*58)@4"}, got)
}

// TestReadShellUndecided: a condition the reader cannot decide keeps every
// branch (the last assignment wins, as before) and a note names it.
func TestReadShellUndecided(t *testing.T) {
	c := ReadShell("X=0\nif [ -f /etc/x ] && [[ $X == 0 ]]; then\n X=1\nelse\n X=2\nfi\n" +
		"if [[ $X == 2 ]]; then Y=3; else Y=5; fi\n" +
		"if [[ $UNSET_VAR == a ]] || [[ $X == 0 ]]; then Y=4; fi\n" +
		"python pretrain_gpt.py --x $X --y $Y")
	require.Equal(t, []string{"--x", "2", "--y", "4"}, texts(c.Args))
	var notes []string
	for _, n := range c.Notes {
		notes = append(notes, fmt.Sprintf("%d %s %s", n.Line, n.Code, n.Msg))
	}
	require.Len(t, notes, 3, "%v", notes)
	require.Contains(t, notes[0], "2 import-shell the condition `[ -f /etc/x ] && [[ $X == 0 ]]`")
	require.Contains(t, notes[0], "-f")
	require.Contains(t, notes[1], "7 import-shell the condition `[[ $X == 2 ]]`")
	require.Contains(t, notes[1], "$X is assigned in a branch that was not decided")
	require.Contains(t, notes[2], "8 import-shell the condition `[[ $UNSET_VAR == a ]] || [[ $X == 0 ]]`")
	require.Contains(t, notes[2], "$UNSET_VAR")
}

// TestReadShellMegatronExample imports Megatron-LM's own example script
// raw and gets the arguments bash gives (testdata/corpus/llama3_8b_fp8.args,
// the same script run by bash; its header gives the substitution of ${PWD}).
func TestReadShellMegatronExample(t *testing.T) {
	src, err := os.ReadFile("testdata/scripts/train_llama3_8b_h100_fp8.sh")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/corpus/llama3_8b_fp8.args")
	require.NoError(t, err)
	require.Contains(t, string(want), "${PWD} = /workspace/Megatron-LM")
	c := ReadShell(strings.ReplaceAll(string(src), "${PWD}", "/workspace/Megatron-LM"))
	require.Equal(t, texts(Read(string(want)).Args), texts(c.Args))
	for _, n := range c.Notes {
		// only the file test on the training script is left undecided
		require.Contains(t, n.Msg, `[ ! -f "$PRETRAIN_SCRIPT_PATH" ]`, "%v", n)
	}
}

// TestReadShellCaseUndecided: a case whose subject or pattern cannot be
// decided keeps every branch, with a note.
func TestReadShellCaseUndecided(t *testing.T) {
	c := ReadShell("case $UNSET_VAR in a) X=1 ;; b) X=2 ;; esac\n" +
		"case x in $UNSET_VAR) Y=1 ;; x) Y=2 ;; *) Y=3 ;; esac\n" +
		"python pretrain_gpt.py --x $X --y $Y")
	require.Equal(t, []string{"--x", "2", "--y", "2"}, texts(c.Args))
	var notes []string
	for _, n := range c.Notes {
		notes = append(notes, fmt.Sprintf("%d %s %s", n.Line, n.Code, n.Msg))
	}
	require.Len(t, notes, 2, "%v", notes)
	require.Contains(t, notes[0], "1 import-shell the case subject `case $UNSET_VAR in`")
	require.Contains(t, notes[1], "2 import-shell the case pattern `$UNSET_VAR)`")
}

func at(w Word) string { return fmt.Sprintf("%s@%d", w.Text, w.Line) }

func texts(ws []Word) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

// FuzzRead: any input is read without panicking, and every argument points
// at a line of the input.
func FuzzRead(f *testing.F) {
	for _, s := range shellCases {
		f.Add(s)
	}
	f.Add("--a\n--b\nc")
	f.Add("X=$1\npython p.py --a $X ${2:-d} \"$@\" $* $# ${3}\n")
	f.Add("X=(a\nb\"\n${X[@]:-}\n$((1/0)) ${")
	f.Add("cd /x\nsrun -N2 bash -c \"cd /opt/m && export A=1 && torchrun --nnodes 2 pretrain_gpt.py \\\n --a 1 \\\n --b\"\nbash ./w.sh --c\n")
	f.Fuzz(func(t *testing.T, src string) {
		c := Read(src)
		lines := strings.Count(src, "\n") + 1
		for _, w := range c.Args {
			if w.Line < 1 || w.Line > lines {
				t.Fatalf("argument %q at line %d of %d", w.Text, w.Line, lines)
			}
		}
		for _, w := range ReadShellArgs(src, []string{"a b", "--c"}).Args {
			if w.Line < 1 || w.Line > lines {
				t.Fatalf("argument %q at line %d of %d, with positional parameters", w.Text, w.Line, lines)
			}
		}
		for _, l := range append([]int{c.ProgramLine, c.WorkdirLine}, func() (ls []int) {
			for _, w := range c.Scripts {
				ls = append(ls, w.Line)
			}
			return ls
		}()...) {
			if l < 0 || l > lines {
				t.Fatalf("program, workdir or script at line %d of %d", l, lines)
			}
		}
		for _, n := range c.Notes {
			if n.Line < 1 || n.Line > lines {
				t.Fatalf("note %v at line %d of %d", n, n.Line, lines)
			}
		}
	})
}

// TestDiagnosticColumns: a diagnostic points at the column where the
// argument starts in the input, not at column 1.
func TestDiagnosticColumns(t *testing.T) {
	src := "ARGS=(--bogus-one)\n" +
		"python pretrain_gpt.py --num-layers 2 --bogus-flag \\\n" +
		"    --hidden-size x ${ARGS[@]}\n"
	res := Import([]byte(src), Options{File: "run.sh", Cluster: "dgx_h100"})
	var got []string
	for _, d := range res.Diags {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Line, d.Column, d.Code))
	}
	// --bogus-flag starts at byte 39 of line 2; "x" at byte 19 of line 3;
	// --bogus-one, expanded from ARGS, at byte 7 of line 1.
	require.Subset(t, got, []string{"2:39 import-unknown-option", "3:19 import-bad-argument"}, "%v", got)
	for _, w := range Read(src).Args {
		if w.Text == "--bogus-one" {
			require.Equal(t, [2]int{1, 7}, [2]int{w.Line, w.Col})
		}
	}
}

// TestExpansionBounded: a script whose expansions double a value or an
// array, or append to one line after line, stops at maxExpansion with one
// import-expansion-limit error instead of growing exponentially (64
// doublings) or quadratically; what it read stays within the bound. A
// script that reuses its variables as real ones do is not near it.
func TestExpansionBounded(t *testing.T) {
	cmd := "torchrun pretrain_gpt.py --num-layers 2 --data-path $A\n"
	doubled := "A=x\n" + strings.Repeat("A=$A$A\n", 64) + cmd
	arrays := "A=(x)\n" + strings.Repeat("A=(${A[@]} ${A[@]})\n", 64) + "torchrun pretrain_gpt.py --num-layers 2 ${A[@]}\n"
	appended := "A=x\n" + strings.Repeat("A=\"$A --x\"\n", 60000) + cmd
	for name, src := range map[string]string{"doubled": doubled, "arrays": arrays, "appended": appended} {
		t.Run(name, func(t *testing.T) {
			c := ReadShell(src)
			size := 0
			for _, w := range c.Args {
				size += len(w.Text)
			}
			assert.LessOrEqual(t, size, maxExpansion)
			var limits []Note
			for _, n := range c.Notes {
				if n.Code == "import-expansion-limit" {
					limits = append(limits, n)
				}
			}
			require.Len(t, limits, 1, "%v", c.Notes)
			res := Import([]byte(src), Options{File: "run.sh"})
			assert.Nil(t, res.Spec)
			require.NotEmpty(t, res.Diags)
			assert.Equal(t, "import-expansion-limit", res.Diags[0].Code)
			assert.Equal(t, diag.Error, res.Diags[0].Severity)
		})
	}
	// Real reuse: a 200-line script that builds its arguments in
	// ARGS+=(…) and a scalar, and expands each ten times.
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "V%d=/data/path/number/%d\nARGS+=(--x%d \"$V%d\")\nS=\"$S $V%d\"\n", i, i, i, i, i)
	}
	c := ReadShell(b.String() + strings.Repeat("echo ${ARGS[@]} $S\n", 10))
	assert.False(t, slices.ContainsFunc(c.Notes, func(n Note) bool { return n.Code == "import-expansion-limit" }))
}

// TestImportInputBounded: an input larger than load.MaxInputBytes, or a
// training command with more arguments than a spec's list may hold, is
// refused before it is read further.
func TestImportInputBounded(t *testing.T) {
	big := Import(bytes.Repeat([]byte("# comment\n"), load.MaxInputBytes/10+1), Options{File: "big.sh"})
	require.Len(t, big.Diags, 1, "%v", big.Diags)
	assert.Equal(t, "input-too-large", big.Diags[0].Code)
	assert.Nil(t, big.Spec)

	// References that cannot be expanded: the first maxUnresolved are
	// listed, the rest counted in one note (each was looked up in every
	// argument: 100,000 of them took 17 s).
	var refs strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&refs, "$X%d", i)
	}
	c := ReadShell("torchrun pretrain_gpt.py --num-layers 2 --data-path " + refs.String() + "\n")
	var unresolved []Note
	for _, n := range c.Notes {
		if n.Code == "import-unresolved" {
			unresolved = append(unresolved, n)
		}
	}
	require.Len(t, unresolved, maxUnresolved+1)
	assert.Contains(t, unresolved[maxUnresolved].Msg, "up to 900 more")

	many := Import([]byte("torchrun pretrain_gpt.py --num-layers 2"+strings.Repeat(" --data-path x", load.MaxListElements/2+1)), Options{File: "many.sh"})
	require.Len(t, many.Diags, 1, "%v", many.Diags)
	assert.Equal(t, "import-too-many-arguments", many.Diags[0].Code)
	assert.Nil(t, many.Spec)
}

// TestSplitValueHint: Megatron-LM's GPT-3 example puts a quoted value with
// blanks in a bash array and expands the array unquoted, so bash (and the
// reader) split the value and Megatron's parser rejects the later pieces;
// the error says so and how to quote. An option split out of a variable on
// purpose (OPTS="--swiglu --bogus") keeps the spelling hint.
func TestSplitValueHint(t *testing.T) {
	base := "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 --micro-batch-size 1 --train-iters 5"
	res := Import([]byte("ARGS=(\n "+base+"\n --step-batch-size-schedule \"0:16 2.4B:320\"\n)\ntorchrun pretrain_gpt.py ${ARGS[@]}\n"), Options{File: "run.sh", Nodes: 1})
	require.NotEmpty(t, res.Diags)
	assert.Equal(t, "import-unknown-option", res.Diags[0].Code)
	assert.Contains(t, res.Diags[0].Message, `"2.4B:320"`)
	assert.Contains(t, res.Diags[0].Hint, "unquoted expansion split")

	res = Import([]byte("OPTS=\"--swiglu --bogus-flag\"\ntorchrun pretrain_gpt.py "+base+" $OPTS\n"), Options{File: "run.sh", Nodes: 1})
	require.NotEmpty(t, res.Diags)
	assert.Equal(t, "import-unknown-option", res.Diags[0].Code)
	assert.NotContains(t, res.Diags[0].Hint, "unquoted expansion split")
}

// TestJobSize: the job's nodes and GPUs per node come from what launches the
// program — torchrun's (or deepspeed's) own sizes first, then srun's or
// mpirun's (their tasks per node count as GPUs only where they start the
// program themselves, not one torchrun per node), then the batch script's
// #SBATCH directives (--nodes, --gpus-per-node or --gres=gpu:N, and
// --ntasks-per-node where srun starts the program).
func TestJobSize(t *testing.T) {
	const prog = "pretrain_gpt.py --num-layers 2\n"
	for _, c := range []struct {
		src          string
		nodes, perGP int
	}{
		{"torchrun --nnodes 2 --nproc_per_node 8 " + prog, 2, 8},
		{"torchrun --nnodes=1:4 --nproc-per-node=4 " + prog, 4, 4},
		{"srun -N 4 --ntasks-per-node=8 python " + prog, 4, 8},
		{"srun -N4 -n 32 python " + prog, 4, 8},
		{"srun --nodes=4 --ntasks-per-node=1 torchrun --nproc_per_node 8 " + prog, 4, 8},
		{"mpirun -np 32 -npernode 8 python " + prog, 4, 8},
		{"mpiexec -n 16 -ppn 8 python " + prog, 2, 8},
		{"#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\nsrun python " + prog, 4, 8},
		{"#SBATCH -N 2\n#SBATCH --gres=gpu:h100:8\n#SBATCH --ntasks-per-node=1\nsrun torchrun --nproc_per_node 8 " + prog, 2, 8},
		{"#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\nsrun torchrun " + prog, 2, 0},
		{"#SBATCH --nodes=${NNODES}\n#SBATCH --gpus-per-node=4\nsrun python " + prog, 0, 4},
		{"#SBATCH --nodes=2-4\n##SBATCH --nodes=8\npython " + prog, 0, 0},
		{"srun -N 4 bash -c \"torchrun --nproc_per_node 8 " + strings.TrimSuffix(prog, "\n") + "\"\n", 4, 8},
	} {
		got := ReadShell(c.src)
		assert.Equal(t, [2]int{c.nodes, c.perGP}, [2]int{got.Nodes, got.GPUsPerNode}, "%q", c.src)
	}
}

// TestSbatchDirectives: #SBATCH options as sbatch reads them — only before
// the script's first command, one-letter options with their value after a
// blank or glued, long options after = or a blank, a quoted value with its
// blanks, a comment after the options left out — by their long names.
func TestSbatchDirectives(t *testing.T) {
	src := "#!/bin/bash\n#SBATCH -N4 -p batch\n#SBATCH --time 04:00:00 --job-name=\"my run\" # two words\n" +
		"  # an indented comment\n#SBATCH --exclusive\n#SBATCHX --qos=no\n\nset -x\n#SBATCH --qos=late\n"
	var got []string
	for _, d := range sbatchDirectives(src) {
		got = append(got, fmt.Sprintf("%d %s=%q %v", d.Line, d.Option, d.Value, d.HasValue))
	}
	assert.Equal(t, []string{
		`2 --nodes="4" true`, `2 --partition="batch" true`, `3 --time="04:00:00" true`, `3 --job-name="my run" true`,
		`5 --exclusive="" false`,
	}, got)
}

// TestScriptArgs: the words a launch script is run with are its positional
// parameters — $1, ${2:-default}, "$@", $# — as bash gives them; not given,
// a reference to one stays as written with import-unresolved.
func TestScriptArgs(t *testing.T) {
	src := "CKPT=$1\nTOK=${2:-/default/tok}\npython pretrain_gpt.py --num-layers $# --save $CKPT --tokenizer-model $TOK --data-path \"$@\"\n"
	words := func(c Command) []string {
		var out []string
		for _, w := range c.Args {
			out = append(out, w.Text)
		}
		return out
	}
	c := ReadShellArgs(src, []string{"/ckpt", "/tok.model", "/data/a", "/data/b"})
	assert.Equal(t, []string{"--num-layers", "4", "--save", "/ckpt", "--tokenizer-model", "/tok.model", "--data-path", "/ckpt", "/tok.model", "/data/a", "/data/b"}, words(c))
	for _, w := range c.Args {
		want := 3 // the line that uses it
		if w.Text == "/ckpt" && w.Line != 3 || w.Text == "/tok.model" && w.Line != 3 {
			want = map[string]int{"/ckpt": 1, "/tok.model": 2}[w.Text] // where CKPT and TOK take it
		}
		assert.Equal(t, want, w.Line, "%q", w.Text)
	}
	assert.Empty(t, c.Notes)

	c = ReadShellArgs(src, []string{"/ckpt"})
	assert.Equal(t, []string{"--num-layers", "1", "--save", "/ckpt", "--tokenizer-model", "/default/tok", "--data-path", "/ckpt"}, words(c))

	c = ReadShell(src)
	assert.Contains(t, words(c), "$1")
	assert.NotEmpty(t, c.Notes)
}
