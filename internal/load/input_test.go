package load

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
)

// TestNumbersParcCannotHold: a number beyond int64 or float64 is reported at
// its line with the limit in the message, whatever the field (issue 12 item 4).
func TestNumbersParcCannotHold(t *testing.T) {
	for _, tc := range []struct {
		field, value, path, limit string
	}{
		{"fp8_margin", "9223372036854775808", "train.fp8_margin", "9223372036854775807"},
		{"fp8_margin", "2 * 9223372036854775807", "train.fp8_margin", "9223372036854775807"},
		{"manual_gc_interval", "18446744073709551616", "train.manual_gc_interval", "9223372036854775807"},
		{"adam_eps", "1e999", "train.adam_eps", "1.7976931348623157e+308"},
		{"lr_warmup_init", "1e-999", "train.lr_warmup_init", "5e-324"},
		{"seed", "99999999999999999999", "train.seed", "9223372036854775807"},
		{"samples", "123456789012345678901234567890", "train.samples", "9223372036854775807"},
		{"lr", "1e400", "train.lr", "1.7976931348623157e+308"},
		{"min_lr", "1e-400", "train.min_lr", "5e-324"},
		{"weight_decay", "3e1000", "train.weight_decay", "1.7976931348623157e+308"},
	} {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			src := strings.Replace(goodCUE, "global_batch: 64}", "global_batch: 64}\ntrain: "+tc.field+": "+tc.value, 1)
			l := diagsFor(t, mem("plan.cue", src))
			require.Len(t, l, 1, "%v", l)
			d := l[0]
			assert.Equal(t, "number-too-large", d.Code)
			assert.Equal(t, tc.path, d.Path)
			assert.Equal(t, 12, d.Line, "%v", d)
			assert.Greater(t, d.Column, 1, "%v", d)
			assert.Contains(t, d.Message, tc.limit)
		})
	}
	// In a list too, with the element's index.
	// (hierarchical_cp's elements now have a schema bound, which reports
	// them first; rampup_batch_size's do not.)
	src := strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: 2}\ntrain: rampup_batch_size: [1, 99999999999999999999, 8]", 1)
	l := diagsFor(t, mem("plan.cue", src))
	d := find(l, "number-too-large")
	require.NotNil(t, d, "%v", l)
	assert.Equal(t, "train.rampup_batch_size[1]", d.Path)
	assert.Equal(t, 11, d.Line)
	// The largest values that fit still load.
	src = strings.Replace(goodCUE, "global_batch: 64}", "global_batch: 64, seed: 9223372036854775807, lr: 1e300, weight_decay: 99999999999999999999}", 1)
	assert.Nil(t, find(diagsFor(t, mem("plan.cue", src)), "number-too-large"))
}

func TestUnreadableInput(t *testing.T) {
	dir := t.TempDir()

	// A directory.
	l := diagsFor(t, Source{Path: dir})
	require.Len(t, l, 1)
	assert.Equal(t, "file-unreadable", l[0].Code)
	assert.Contains(t, l[0].Message, "is a directory")

	// Permission denied is its own code, not file-not-found.
	d := readError("plan.cue", &fs.PathError{Op: "open", Path: "plan.cue", Err: syscall.EACCES})
	assert.Equal(t, "permission-denied", d.Code)
	assert.Contains(t, d.Message, "permission denied")
	d = readError("plan.cue", &fs.PathError{Op: "open", Path: "plan.cue", Err: syscall.ENOENT})
	assert.Equal(t, "file-not-found", d.Code)
	if os.Geteuid() != 0 { // root reads any file
		p := filepath.Join(dir, "secret.cue")
		require.NoError(t, os.WriteFile(p, []byte(goodCUE), 0o000))
		l := diagsFor(t, Source{Path: p})
		require.Len(t, l, 1)
		assert.Equal(t, "permission-denied", l[0].Code)
	}
}

// TestBinaryInput: an image renamed .cue (or .hcl) is reported at its first
// byte that is not text, naming what it looks like.
func TestBinaryInput(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")
	for _, name := range []string{"img.cue", "img.hcl", "img"} {
		l := diagsFor(t, Source{Path: name, Data: png})
		require.Len(t, l, 1, "%v", l)
		assert.Equal(t, "not-text", l[0].Code)
		assert.Equal(t, 1, l[0].Line)
		assert.Equal(t, 1, l[0].Column)
		assert.Contains(t, l[0].Message, "image/png")
		assert.Contains(t, l[0].Message, "0x89")
	}
	// A NUL after some text is placed where it is.
	l := diagsFor(t, Source{Path: "x.cue", Data: []byte("model: {\n  layers: 1\x00\n}\n")})
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "not-text", l[0].Code)
	assert.Equal(t, [2]int{2, 12}, [2]int{l[0].Line, l[0].Column})
}

// TestInputSizeCap: input beyond MaxInputBytes stops with a clear error, and
// an endless file (/dev/zero) is read only up to the cap.
func TestInputSizeCap(t *testing.T) {
	big := bytes.Repeat([]byte("// padding\n"), MaxInputBytes/10)
	l := diagsFor(t, Source{Path: "big.cue", Data: big})
	require.Len(t, l, 1, "%v", l)
	assert.Equal(t, "input-too-large", l[0].Code)
	assert.Contains(t, l[0].Message, fmt.Sprint(MaxInputBytes))
	if _, err := os.Stat("/dev/zero"); err == nil {
		l := diagsFor(t, Source{Path: "/dev/zero"})
		require.Len(t, l, 1, "%v", l)
		assert.Equal(t, "input-too-large", l[0].Code)
	}
}

// TestStdin: a spec given as /dev/stdin (or any name without .cue) is read as
// CUE, and its diagnostics name the path the user gave.
func TestStdin(t *testing.T) {
	if os.Getenv("PARC_LOAD_STDIN") == "1" {
		l := diagsFor(t, Source{Path: "/dev/stdin"})
		for _, d := range l {
			fmt.Println(d.String())
		}
		return
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestStdin$")
	cmd.Env = append(os.Environ(), "PARC_LOAD_STDIN=1")
	cmd.Stdin = strings.NewReader(strings.Replace(goodCUE, "nodes: 1", "nodes: 0", 1))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "/dev/stdin:4:9: error out-of-range: cluster.nodes = 0 is out of range")
}

// TestCycles: a structural cycle and an import cycle are positioned and keep
// CUE's cause.
func TestCycles(t *testing.T) {
	src := strings.Replace(goodCUE, "parallel: {tp: 2}", "parallel: {tp: 2}\nx: {a: x}", 1)
	l := diagsFor(t, mem("plan.cue", src))
	d := find(l, "structural-cycle")
	require.NotNil(t, d, "%v", l)
	assert.True(t, d.IsValid(), "%v", d)
	assert.Equal(t, 11, d.Line)
	assert.Contains(t, d.Message, "structural cycle")

	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("cue.mod/module.cue", "module: \"ex.com\"\nlanguage: version: \"v0.9.0\"\n")
	write("cue.mod/pkg/ex.com/a/a.cue", "package a\n\nimport \"ex.com/b\"\n\nx: b.y\n")
	write("cue.mod/pkg/ex.com/b/b.cue", "package b\n\nimport \"ex.com/a\"\n\ny: a.x\n")
	write("plan.cue", "package plan\n\nimport \"ex.com/a\"\n\ntrain: iters: a.x\n")
	l = diagsFor(t, Source{Path: filepath.Join(dir, "plan.cue")})
	d = find(l, "import-cycle")
	require.NotNil(t, d, "%v", l)
	assert.Equal(t, [2]int{3, 8}, [2]int{d.Line, d.Column})
	assert.Contains(t, d.Message, "import cycle")
	assert.Contains(t, d.Message, "a.cue:3:8")
	assert.Contains(t, d.Message, "b.cue:3:8")
}

// TestGPUFiguresBounded: hardware figures outside physical ranges are
// out-of-range at their line (issue 12 item 7: memory_gib 1e-10 passed the
// memory check, bf16_tflops 1e-320 printed +Inf).
func TestGPUFiguresBounded(t *testing.T) {
	for _, tc := range []struct{ from, to, path string }{
		{"memory_gib: 80", "memory_gib: 1e-10", "cluster.gpu.memory_gib"},
		{"memory_gib: 80", "memory_gib: 1e9", "cluster.gpu.memory_gib"},
		{"bf16_tflops: 989", "bf16_tflops: 1e-320", "cluster.gpu.bf16_tflops"},
		{"bf16_tflops: 989", "bf16_tflops: 1e12", "cluster.gpu.bf16_tflops"},
		{"bf16_tflops: 989", "bf16_tflops: 989, exp_tops: 1e-9", "cluster.gpu.exp_tops"},
		{"bf16_tflops: 989", "bf16_tflops: 989, tdp_watts: 0.001", "cluster.gpu.tdp_watts"},
		{"nvlink_gbps: 450", "nvlink_gbps: 1e-300", "cluster.nvlink_gbps"},
		{"network_gbps: 50", "network_gbps: 1e-9", "cluster.network_gbps"},
		{"network_gbps: 50", "network_gbps: 1e300", "cluster.network_gbps"},
	} {
		l := diagsFor(t, mem("plan.cue", strings.Replace(goodCUE, tc.from, tc.to, 1)))
		d := find(l, "out-of-range")
		require.NotNil(t, d, "%s: %v", tc.to, l)
		assert.Equal(t, tc.path, d.Path)
		assert.Greater(t, d.Line, 1, "%v", d)
	}
	// Real figures pass: GB300's 288 GB, 10.7 tera-exponentials/s and 1,400 W, 1 GbE (0.125 GB/s), B200's 2250 TFLOP/s.
	ok := strings.NewReplacer("memory_gib: 80", "memory_gib: 288", "network_gbps: 50", "network_gbps: 0.125", "bf16_tflops: 989", "bf16_tflops: 2250, exp_tops: 10.7, tdp_watts: 1400").Replace(goodCUE)
	assert.Empty(t, diagsFor(t, mem("plan.cue", ok)))
}

// TestBoundMessagesNameTheLimit: a value outside a field with a default
// (`int & >=0 | *1234`) is reported with the field's limit, never the default
// as if it were an allowed alternative ("must be 1234 | uint"), and a
// fraction in an integer field says it is not an integer (CUE's "has type
// int, want float" named the kinds backwards). Re-probe of issue 12 item 4
// with fields other than iters/seed/lr.
func TestBoundMessagesNameTheLimit(t *testing.T) {
	for _, tc := range []struct{ set, code, path, msg, hint string }{
		{"launch: master_port: 99999999999999999999999", "out-of-range", "launch.master_port",
			"it must be an integer from 1 to 65535", "launch.master_port must be an integer from 1 to 65535; default 29500"},
		{"train: seed: 1e400", "out-of-range", "train.seed", "= 1e+400 is not an integer: it must be a non-negative integer", "default 1234"},
		{"train: fp8_margin: 0.5", "out-of-range", "train.fp8_margin", "is not an integer", "train.fp8_margin must be an integer; default 0"},
		{"model: norm_epsilon: -0.0", "out-of-range", "model.norm_epsilon", "it must be a positive number", "default 0.00001"},
		{"train: adam_beta2: 1", "out-of-range", "train.adam_beta2", "it must be a number at least 0 and less than 1", ""},
		{"launch: grace_seconds: -0.0", "type-mismatch", "launch.grace_seconds", "= 0.0 is not an integer: it must be an integer from 0 to 86400", ""},
		{"cluster: gpu: sm_count: 1.5", "type-mismatch", "cluster.gpu.sm_count", "is not an integer: it must be an integer from 1 to 1048576", ""},
		{"model: make_vocab_divisible_by: 9223372036854775807", "out-of-range", "model.make_vocab_divisible_by", "an integer from 1 to 65536", ""},
		{"cluster: gpu: compute_capability: 1e300", "out-of-range", "cluster.gpu.compute_capability", "a number at least 1 and at most 100", ""},
		{"model: name: 5", "type-mismatch", "model.name", "model.name = 5 is a number: it must be a string", `default "model"`},
		{"model: tie_embeddings: 3", "type-mismatch", "model.tie_embeddings", "is a number: it must be true or false", "default true"},
		// A string or bool where a field with a default takes another kind
		// is the same type-mismatch as in a field without one.
		{`parallel: pp: "2"`, "type-mismatch", "parallel.pp", `parallel.pp has type string, want int (got "2")`, "default 1"},
		{`train: distributed_optimizer: "yes"`, "type-mismatch", "train.distributed_optimizer", `has type string, want bool (got "yes")`, "default false"},
		{`train: precision: true`, "type-mismatch", "train.precision", "has type bool, want string (got true)", `default "bf16"`},
		{`train: precision: "int8"`, "invalid-value", "train.precision", `train.precision = "int8" is not allowed`, `default "bf16"`},
	} {
		t.Run(tc.set, func(t *testing.T) {
			l := diagsFor(t, mem("plan.cue", goodCUE+tc.set+"\n"))
			d := find(l, tc.code)
			require.NotNil(t, d, "%v", l)
			assert.Equal(t, tc.path, d.Path)
			assert.Equal(t, 12, d.Line, "%v", d)
			assert.Contains(t, d.Message, tc.msg)
			assert.Contains(t, d.Hint, tc.hint)
			assert.NotRegexp(t, `\| *u?int|\| *>`, d.Message+d.Hint, "a default leaked into the text as an alternative")
		})
	}
	// A required field left out is missing, not "not set to a concrete
	// value (incomplete value >=1 & <=1073741824 & int)".
	l := diagsFor(t, mem("plan.cue", strings.Replace(goodCUE, "micro_batch: 1, ", "", 1)))
	d := find(l, "missing-field")
	require.NotNil(t, d, "%v", l)
	assert.Equal(t, "required field train.micro_batch is missing", d.Message)
	assert.Contains(t, d.Hint, "an integer from 1 to 1073741824")
}

// TestHCLNumbers: HCL arithmetic can make an infinity (1/0), which CUE
// cannot hold; it is reported at the attribute, not as a syntax error at
// 1:1. A number written with an exponent stays a float and is named short
// (1e+400), not spelt out in 401 digits.
func TestHCLNumbers(t *testing.T) {
	for _, tc := range []struct{ expr, msg string }{
		{"1/0", "train.lr = +Inf is not a finite number"},
		{"-1/0", "train.lr = -Inf is not a finite number"},
		{"1e400", "train.lr = 1e+400 is beyond the largest number"},
		{"1e308 * 10", "train.lr = 1e+309 is beyond the largest number"},
	} {
		src := strings.Replace(goodHCL, "  global_batch = 64\n", "  global_batch = 64\n  lr = "+tc.expr+"\n", 1)
		l := diagsFor(t, mem("plan.hcl", src))
		d := find(l, "number-too-large")
		require.NotNil(t, d, "%s: %v", tc.expr, l)
		assert.Equal(t, 27, d.Line, "%s: %v", tc.expr, d)
		assert.Equal(t, 8, d.Column, "%s: %v", tc.expr, d)
		assert.Contains(t, d.Message, tc.msg)
		assert.Less(t, len(d.Message), 200, d.Message)
	}
}

// TestNestingLimit: brackets nested past MaxNesting, or a CUE expression
// chain as deep, are one too-deep error at the first level too many.
// Before the limit, 100,000 nested HCL brackets (200 KB) killed parc with a
// fatal stack overflow, 50,000 nested HCL objects took over a minute and
// 3 GB, and a CUE chain of 40,000 additions 26 s (re-probe of issue 12
// item 5 with nesting instead of width). Brackets inside strings, comments
// and heredocs do not count.
func TestNestingLimit(t *testing.T) {
	n := 100_000
	for _, tc := range []struct{ name, text string }{
		{"brackets.hcl", "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"},
		{"objects.hcl", "x = " + strings.Repeat("{a = ", 3*MaxNesting) + "1" + strings.Repeat("}", 3*MaxNesting) + "\n"},
		{"interp.hcl", `x = "` + strings.Repeat("${[", 2*MaxNesting) + `1` + strings.Repeat("]}", 2*MaxNesting) + "\"\n"},
		{"chain.cue", "x: " + strings.Repeat("1+", 5*MaxNesting) + "1\n"},
		{"brackets.cue", "x: " + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + "\n"},
	} {
		l := diagsFor(t, mem(tc.name, tc.text))
		d := find(l, "too-deep")
		require.NotNil(t, d, "%s: %v", tc.name, l)
		require.Len(t, l, 1, "%s: %v", tc.name, l)
		assert.Equal(t, 1, d.Line, "%s", tc.name)
	}
	// What looks deep but is not: brackets in strings, comments, heredocs.
	deep := strings.Repeat("[", 2*MaxNesting)
	hcl := strings.Replace(goodHCL, "model {", "# "+deep+"\n/* "+deep+" */\nmodel {\n  name = \""+deep+"\"", 1) +
		"launch {\n  program = <<EOT\n" + deep + "\nEOT\n}\n"
	assert.Nil(t, find(diagsFor(t, mem("plan.hcl", hcl)), "too-deep"))
	cue := strings.Replace(goodCUE, "model: {", "// "+deep+"\nmodel: {name: \""+deep+"\", ", 1)
	assert.Nil(t, find(diagsFor(t, mem("plan.cue", cue)), "too-deep"))
}

// TestListElementOutOfRange: an element of a list of counts outside its
// bounds is an error at the element. It was an internal error (CUE gives
// the broken list's elements as fields, and parc asked a list index for
// its field name): rampup_batch_size: [0, 1, 1], hierarchical_cp: [0, 2].
func TestListElementOutOfRange(t *testing.T) {
	for _, tc := range []struct{ set, path string }{
		{"train: rampup_batch_size: [0, 1, 1]", "train.rampup_batch_size.0"},
		{"parallel: {cp: 2, hierarchical_cp: [0, 2]}", "parallel.hierarchical_cp.0"},
		{"parallel: {cp: 2, hierarchical_cp: [2, 4294967296]}", "parallel.hierarchical_cp.1"},
	} {
		l := diagsFor(t, mem("plan.cue", goodCUE+tc.set+"\n"))
		d := find(l, "out-of-range")
		require.NotNil(t, d, "%s: %v", tc.set, l)
		assert.Equal(t, tc.path, d.Path)
		assert.Equal(t, 12, d.Line)
	}
}

// TestListElementMessages: a bad element of a list of names is named with
// its value and what the list takes. The message showed CUE's parse error
// of the path instead ("recompute_modules.0 = _|_ // expected 'EOF', found
// 'FLOAT' .0 is not allowed").
func TestListElementMessages(t *testing.T) {
	for _, tc := range []struct{ set, msg string }{
		{`train: recompute_modules: ["core_attn", 1]`, `train.recompute_modules.1 = 1 is a number: it must be one of "core_attn"`},
		{`train: recompute_modules: ["bogus"]`, `train.recompute_modules.0 = "bogus" is not allowed`},
		{`kernels: cuda_graph_modules: ["attn", "bogus"]`, `kernels.cuda_graph_modules.1 = "bogus" is not allowed`},
	} {
		l := diagsFor(t, mem("plan.cue", goodCUE+tc.set+"\n"))
		require.NotEmpty(t, l, tc.set)
		for _, d := range l {
			assert.NotContains(t, d.Message+d.Hint, "_|_", "%s: %v", tc.set, d)
			assert.NotContains(t, d.Message+d.Hint, "expected 'EOF'", "%s: %v", tc.set, d)
		}
		assert.Contains(t, l[0].Message, tc.msg, "%s: %v", tc.set, l)
	}
}

// TestListElementLimit: a list literal longer than MaxListElements is refused
// before CUE evaluates it (CUE's list evaluation grows with the square of its
// length), in CUE and HCL alike, at the list's bracket; a list of
// MaxListElements is read.
func TestListElementLimit(t *testing.T) {
	paths := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", fmt.Sprint("p", i))
		}
		return b.String()
	}
	long := diagsFor(t, Source{Path: "long.cue", Data: []byte("data: paths: [" + paths(MaxListElements+1) + "]\n")})
	require.Len(t, long, 1, "%v", long)
	assert.Equal(t, "too-many-elements", long[0].Code)
	assert.Equal(t, [2]int{1, 14}, [2]int{long[0].Line, long[0].Column})
	assert.Contains(t, long[0].Message, fmt.Sprint(MaxListElements+1))

	hcl := diagsFor(t, Source{Path: "long.hcl", Data: []byte("data {\n  paths = [" + paths(MaxListElements+1) + "]\n}\n")})
	require.Len(t, hcl, 1, "%v", hcl)
	assert.Equal(t, "too-many-elements", hcl[0].Code)
	assert.Equal(t, 2, hcl[0].Line)

	ok := diagsFor(t, Source{Path: "ok.cue", Data: []byte("data: paths: [" + paths(MaxListElements) + "]\n")})
	assert.False(t, slices.ContainsFunc(ok, func(d diag.Diagnostic) bool { return d.Code == "too-many-elements" }), "%v", ok)
}
