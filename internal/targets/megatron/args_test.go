package megatron_test

import (
	exampleplans "parc.dev/parc/internal/examples"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/megatron"
)

func examples(t *testing.T) map[string]*plan.Plan { return exampleplans.Plans(t) }

// parseArgs checks an argument vector the way Megatron's argparse parser
// would, from the option table dumped from that parser: every option known,
// the right number of values, int and float values that parse, values among
// the choices. It returns the values of each option.
func parseArgs(t *testing.T, args []string) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for i := 0; i < len(args); {
		name := args[i]
		require.True(t, strings.HasPrefix(name, "--"), "argument %d %q is not an option (stray value?)", i, name)
		o, ok := megatron.Options[name]
		require.True(t, ok, "%s is not an option of Megatron's parser", name)
		_, dup := got[name]
		require.False(t, dup, "%s given twice", name)
		i++
		var vals []string
		if o.TakesValues() {
			for i < len(args) && !strings.HasPrefix(args[i], "--") {
				vals = append(vals, args[i])
				i++
				if o.Nargs == "" || o.Nargs == "?" {
					break
				}
			}
			switch o.Nargs {
			case "":
				require.Len(t, vals, 1, "%s takes one value", name)
			case "+":
				require.NotEmpty(t, vals, "%s takes one or more values", name)
			}
		}
		for _, v := range vals {
			switch o.Type {
			case "int":
				_, err := strconv.Atoi(v)
				assert.NoError(t, err, "%s %s", name, v)
			case "float":
				_, err := strconv.ParseFloat(v, 64)
				assert.NoError(t, err, "%s %s", name, v)
			case "moe_freq_type":
				if _, err := strconv.Atoi(v); err != nil {
					assert.Contains(t, v, "[", "%s %s", name, v)
				}
			}
			if o.Choices != nil && (o.Type == "str" || o.Type == "") {
				assert.Contains(t, o.Choices, v, "%s", name)
			}
		}
		got[name] = vals
	}
	return got
}

func TestExamplesParse(t *testing.T) {
	for name, p := range examples(t) {
		t.Run(name, func(t *testing.T) {
			args, diags := megatron.Args(p, nil)
			require.Empty(t, diags)
			got := parseArgs(t, args)
			s, d := p.Spec, p.Derived
			// The values Megatron derives from the generated flags are the
			// ones the plan computed (validate_args' own derivations).
			assert.Equal(t, []string{strconv.Itoa(s.Parallel.TP)}, got["--tensor-model-parallel-size"])
			assert.Equal(t, []string{strconv.Itoa(s.Parallel.PP)}, got["--pipeline-model-parallel-size"])
			assert.Equal(t, []string{strconv.Itoa(s.Model.Layers)}, got["--num-layers"])
			assert.Equal(t, []string{strconv.Itoa(d.FFNHidden)}, got["--ffn-hidden-size"])
			assert.Equal(t, []string{strconv.Itoa(s.Train.GlobalBatch)}, got["--global-batch-size"])
			_, sp := got["--sequence-parallel"]
			assert.Equal(t, d.SP, sp)
			_, iters := got["--train-iters"]
			_, samples := got["--train-samples"]
			assert.True(t, iters != samples, "exactly one of --train-iters and --train-samples (T1)")
			_, mock := got["--mock-data"]
			_, paths := got["--data-path"]
			assert.True(t, mock != paths, "exactly one data source (T6)")
			_, bf16 := got["--bf16"]
			_, fp16 := got["--fp16"]
			assert.False(t, bf16 && fp16, "F1")
			if _, ok := got["--overlap-param-gather"]; ok {
				assert.Contains(t, got, "--use-distributed-optimizer", "O1")
				assert.Contains(t, got, "--overlap-grad-reduce", "O2")
			}
			if _, ok := got["--save"]; ok {
				assert.Contains(t, got, "--save-interval", "T5")
			}
			if mla := s.Model.MLA; mla != nil {
				assert.NotContains(t, got, "--group-query-attention", "S11")
				assert.NotContains(t, got, "--rope-type", "MLA keeps the YaRN RoPE fusion needs (S12)")
			}
			if _, ok := got["--group-query-attention"]; ok {
				assert.Equal(t, []string{strconv.Itoa(d.QueryGroups)}, got["--num-query-groups"])
			} else {
				assert.NotContains(t, got, "--num-query-groups", "ignored without --group-query-attention")
			}
			if s.Model.MoE != nil {
				pattern := evalMoEFreq(t, got["--moe-layer-freq"][0], s.Model.Layers)
				assert.Equal(t, d.MoELayers, pattern, "--moe-layer-freq gives Megatron the plan's MoE layers")
			}
			// Byte-identical output.
			again, _ := megatron.Args(p, nil)
			assert.Equal(t, megatron.File(args), megatron.File(again))
		})
	}
}

// evalMoEFreq evaluates --moe-layer-freq as Megatron does: an int k means
// layer i is MoE iff i % k == 0; otherwise a list expression of [v]*n runs
// joined by '+' in parentheses (the only form Args writes).
func evalMoEFreq(t *testing.T, v string, layers int) []bool {
	t.Helper()
	out := make([]bool, 0, layers)
	if k, err := strconv.Atoi(v); err == nil {
		for i := range layers {
			out = append(out, i%k == 0)
		}
		return out
	}
	require.True(t, strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")"), v)
	for run := range strings.SplitSeq(v[1:len(v)-1], "+") {
		val, count, ok := strings.Cut(run, "*")
		require.True(t, ok, run)
		n, err := strconv.Atoi(count)
		require.NoError(t, err)
		require.Contains(t, []string{"[0]", "[1]"}, val)
		for range n {
			out = append(out, val == "[1]")
		}
	}
	require.Len(t, out, layers, "Megatron requires one entry per layer (M14)")
	return out
}

func TestFileOneArgumentPerLine(t *testing.T) {
	args := []string{"--data-path", "/a b/c", "--split", "969,30,1"}
	assert.Equal(t, "--data-path\n/a b/c\n--split\n969,30,1\n", string(megatron.File(args)))
	assert.Equal(t, "", string(megatron.File(nil)))
}

func TestFloat(t *testing.T) {
	for v, want := range map[float64]string{
		3e-4: "0.0003", 1e-5: "1e-05", 1: "1", 0.02: "0.02", 8: "8", 0.95: "0.95", 1e-2: "0.01", 0: "0",
		1.0 / 3: "0.3333333333333333", 500000: "500000", 1e21: "1e+21",
	} {
		assert.Equal(t, want, megatron.Float(v))
		back, err := strconv.ParseFloat(megatron.Float(v), 64)
		require.NoError(t, err)
		assert.Equal(t, v, back)
	}
}

func TestMoELayerFreq(t *testing.T) {
	assert.Equal(t, "1", megatron.MoELayerFreq(nil, 1, 0))
	assert.Equal(t, "2", megatron.MoELayerFreq(nil, 2, 0))
	// DeepSeek-V3: 3 dense layers, then 58 MoE layers (Megatron's own example
	// writes --moe-layer-freq ([0]*3+[1]*58)).
	pattern := make([]bool, 61)
	for i := 3; i < 61; i++ {
		pattern[i] = true
	}
	assert.Equal(t, "([0]*3+[1]*58)", megatron.MoELayerFreq(pattern, 1, 3))
	assert.Equal(t, "([0]*2+[1]*1+[0]*1+[1]*1)", megatron.MoELayerFreq([]bool{false, false, true, false, true}, 2, 2))
}

func TestOptionsTable(t *testing.T) {
	// Spot checks against megatron-flags.md (independent of the dump).
	for name, dest := range map[string]string{
		"--no-overlap-p2p-communication": "overlap_p2p_comm",
		"--disable-bias-linear":          "add_bias_linear",
		"--fp8-format":                   "fp8",
		"--norm-epsilon":                 "layernorm_epsilon",
		"--use-tp-pp-dp-mapping":         "use_tp_pp_dp_mapping",
	} {
		require.Contains(t, megatron.Options, name)
		assert.Equal(t, dest, megatron.Options[name].Dest, name)
	}
	assert.NotContains(t, megatron.Options, "--overlap-p2p-communication", "removed from Megatron")
	assert.Equal(t, []string{"LayerNorm", "RMSNorm"}, megatron.Options["--normalization"].Choices)
	assert.Greater(t, len(megatron.Options), 800)
	names := slices.Collect(func(yield func(string) bool) {
		for n := range megatron.Options {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		assert.True(t, strings.HasPrefix(n, "-"), n)
	}
}
