package solve_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/solve"
)

// knownRecipeMisses are Megatron-LM MoE recipes whose published plan parc
// rates more than 10% slower than its pick, with why (the list can only
// shrink).
var knownRecipeMisses = map[string]string{
	"qwen3_30b_h100_fp8_32GPU_TP1PP1EP8":                 "the pick is TP 2, EP 16 at micro batch 4 with the expert activation recomputed where the recipe runs TP 1, EP 8 at micro batch 1; no run of the measured corpus has the recipe's settings at the pick's plan",
	"qwen3_30b_gb200_mxfp8_16GPU_TP1PP1EP16_paged_stash": "the pick is EP 2 at micro batch 1 (64 experts per GPU) where the recipe runs EP 16 at micro batch 4: the model charges EP 16's all-to-all, which the recipe leaves unoverlapped, about four times EP 2's, and no run of the measured corpus is a fine-grained MoE at EP 2",
}

// openRecipe is a recipe's spec with every degree, the micro batch and the
// recomputation open and the pipeline split, layout and recompute modules
// left to parc (as TestPublishedCorpus's openPlan opens a corpus row).
func openRecipe(t *testing.T, name string, src []byte) []byte {
	f, err := parser.ParseFile(name, src, parser.ParseComments)
	require.NoError(t, err)
	open := func(fields []string, drop []string, lit *ast.StructLit, kind string) {
		seen := map[string]bool{}
		lit.Elts = slices.DeleteFunc(lit.Elts, func(d ast.Decl) bool {
			fl, ok := d.(*ast.Field)
			if !ok {
				return false
			}
			label, _, _ := ast.LabelName(fl.Label)
			if slices.Contains(fields, label) {
				fl.Value, seen[label] = ast.NewIdent(kind), true
			}
			return slices.Contains(drop, label)
		})
		for _, k := range fields {
			if !seen[k] {
				lit.Elts = append(lit.Elts, &ast.Field{Label: ast.NewIdent(k), Value: ast.NewIdent(kind)})
			}
		}
	}
	for _, d := range f.Decls {
		fl, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		lit, ok := fl.Value.(*ast.StructLit)
		if !ok {
			continue
		}
		switch label, _, _ := ast.LabelName(fl.Label); label {
		case "parallel":
			open([]string{"tp", "pp", "vpp", "cp", "ep", "etp"},
				[]string{"sp", "layout", "first_stage_layers", "last_stage_layers", "account_for_embedding", "account_for_loss", "microbatch_group_size"}, lit, "int")
		case "train":
			open([]string{"micro_batch"}, []string{"recompute_modules", "recompute_method", "recompute_layers"}, lit, "int")
			open([]string{"recompute"}, nil, lit, "string")
		}
	}
	b, err := format.Node(f)
	require.NoError(t, err)
	return b
}

// TestMoERecipesSolved is issue 14's solver criteria on Megatron-LM's MoE
// recipes, plans the measured corpus does not hold (internal/estimate
// TestMoERecipesOutOfSample keeps the spec each imports as): with every
// degree, the micro batch and the recomputation open, parc finds a plan,
// the published plan passes every check, and parc rates it within 10% of
// its pick, knownRecipeMisses aside; the pick stays within the memory
// headroom and below 100% MFU.
func TestMoERecipesSolved(t *testing.T) {
	if testing.Short() {
		t.Skip("solves 13 MoE plans")
	}
	files, err := filepath.Glob("../estimate/testdata/moe-recipes/*.cue")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10)
	var cases []corpusCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.Base(f), ".cue")
		cases = append(cases, corpusCase{id: name, pub: string(b), open: string(openRecipe(t, name+".cue", b))})
	}
	out := solveCases(cases)
	ok := 0
	for _, o := range out {
		t.Logf("%s: %s %s", o.id, o.status, o.detail)
		require.NotEqual(t, "published-infeasible", o.status, "%s: %s", o.id, o.detail)
		require.NotEqual(t, "no-pick", o.status, "%s: %s", o.id, o.detail)
		if o.pickMemory > solve.DefaultMemoryHeadroom || o.pickMFU > 1 {
			t.Errorf("%s: the pick's peak is %.1f%% of the GPU, its MFU %.1f%%: %s", o.id, 100*o.pickMemory, 100*o.pickMFU, o.detail)
		}
		why, known := knownRecipeMisses[o.id]
		switch {
		case o.status == "slower" && !known:
			t.Errorf("%s newly misses the 10%% criterion: %s", o.id, o.detail)
		case o.status == "ok" && known:
			t.Errorf("%s now meets the criterion (%s): remove it from knownRecipeMisses (%s)", o.id, o.detail, why)
		case o.status == "ok":
			ok++
		}
	}
	t.Logf("%d of %d published recipes rated within 10%% of the pick", ok, len(out))
}
