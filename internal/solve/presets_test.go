package solve_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/compiler"
	"parc.dev/parc/internal/solve"
	"parc.dev/parc/stdlib"
)

// presetNames lists the presets a stdlib folder defines (its top-level
// fields), in file order.
func presetNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := fs.Glob(stdlib.FS, dir+"/*.cue")
	require.NoError(t, err)
	label := regexp.MustCompile(`(?m)^([a-z][a-z0-9_]*):`)
	var out []string
	for _, f := range files {
		b, err := fs.ReadFile(stdlib.FS, f)
		require.NoError(t, err)
		for _, m := range label.FindAllSubmatch(b, -1) {
			out = append(out, string(m[1]))
		}
	}
	require.NotEmpty(t, out, dir)
	return out
}

// TestEveryPresetSolves solves every stdlib model on every stdlib cluster
// (16 nodes, 2,048-token sequences, fp8 where the GPU has it) with every degree, the micro batch,
// recomputation and the optimizer open, and holds each result to what
// parc solve promises whatever the spec: it returns (a panic here was
// gpt_oss_120b on 16 DGX B200 in fp8, whose top shapes gained a best plan
// that was never verified), the counts add up, and the pick either exists
// within the memory headroom and the precision's peak, and compiles without
// an error or a memory-near-limit warning, or the search ends in one
// no-feasible-plan error.
func TestEveryPresetSolves(t *testing.T) {
	if testing.Short() {
		t.Skip("solves every preset pair")
	}
	clusters := presetNames(t, "clusters")
	for _, m := range presetNames(t, "models") {
		for _, c := range clusters {
			t.Run(m+"/"+c, func(t *testing.T) {
				precision := "fp8"
				if strings.Contains(c, "a100") {
					precision = "bf16"
				}
				head := fmt.Sprintf(`package plan

import (
	"parc.dev/stdlib/clusters"
	"parc.dev/stdlib/models"
)

model:   models.%s
cluster: clusters.%s & {nodes: 16}
`, m, c)
				common := fmt.Sprintf("seq_length: 2048, global_batch: 512, precision: %q, iters: 10", precision)
				text := head + "parallel: {tp: int, pp: int, vpp: int, cp: int, ep: int, etp: int}\n" +
					"train: {" + common + ", micro_batch: int, recompute: string, distributed_optimizer: bool}\n"
				res := loadText(t, "plan.cue", text)
				r, ds := solve.Solve(res, solve.Options{})
				require.NotNil(t, r)
				assert.Equal(t, r.Space, r.Pruned+r.Infeasible+r.Feasible+r.Bounded, "the counts add up")
				if len(r.Candidates) == 0 {
					assert.Equal(t, 1, ds.Errors(), "%v", ds)
					assert.Contains(t, codesOf(ds), "no-feasible-plan", "%v", ds)
					return
				}
				require.False(t, ds.HasErrors(), "%v", ds)
				for _, c := range r.Candidates {
					assert.LessOrEqual(t, c.Memory.FractionOfGPU, solve.DefaultMemoryHeadroom, c.Label())
					assert.LessOrEqual(t, c.MFU, 1.0, c.Label())
					assert.Positive(t, c.StepTimeS, c.Label())
				}
				c := r.Candidates[0]
				// The pick as its JSON gives it, written into the spec: vet
				// passes it and explain rates it as solve did.
				par, tr := jsonFields(t, c.Parallel, "dp"), jsonFields(t, c.Train)
				written := head + "parallel: {" + par + "}\ntrain: {" + common + ", " + tr + "}\n"
				p, ds := compiler.Vet(compiler.Source{Path: filepath.Join(t.TempDir(), "pick.cue"), Data: []byte(written)})
				require.NotNil(t, p, "%s: %v", written, ds)
				require.False(t, ds.HasErrors(), "%s: %v", written, ds)
				assert.NotContains(t, codesOf(ds), "memory-near-limit", c.Label())
				assert.InEpsilon(t, c.StepTimeS, p.Estimate.StepTimeS, 1e-9, written)
				assert.Equal(t, c.Memory.PerGPUPeakBytes, p.Estimate.Memory.PerGPUPeakBytes, written)
			})
		}
	}
}

// jsonFields is v's JSON object as the fields of a CUE struct, without the
// keys drop.
func jsonFields(t *testing.T, v any, drop ...string) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(drop, k) {
			fs = append(fs, k+": "+string(m[k]))
		}
	}
	return strings.Join(fs, ", ")
}
