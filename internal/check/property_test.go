package check

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// randomValid builds a random plan that satisfies every Megatron rule by
// construction (each degree is picked among the values the rules allow).
func randomValid(r *rand.Rand) map[string]any {
	pick := func(v []int) int { return v[r.IntN(len(v))] }
	gpn := pick([]int{4, 8})
	nodes := pick([]int{1, 2, 4, 8})
	world := nodes * gpn

	tp := pick(divisorsUpTo(gpn, 8))
	rest := world / tp
	pp := pick(divisorsUpTo(rest, 8))
	rest /= pp
	cp := pick(divisorsUpTo(rest, 4))
	dp := rest / cp

	vpp := 1
	if pp > 1 && r.IntN(2) == 0 {
		vpp = pick([]int{2, 3})
	}
	layers := pp * vpp * pick([]int{1, 2, 3})
	groups := tp * pick([]int{1, 2}) // a multiple of tp
	if r.IntN(3) == 0 {
		groups = pick(divisorsUpTo(tp, tp)) // or a divisor
	}
	heads := lcm(tp, groups) * pick([]int{1, 2, 4})
	hidden := heads * pick([]int{64, 128})
	seq := 2 * cp * tp * pick([]int{64, 256, 512})
	mbs := pick([]int{1, 2})
	M := pp * pick([]int{1, 2, 3}) // a multiple of pp: valid for the interleaved schedule too
	gbs := mbs * dp * M

	model := map[string]any{"layers": layers, "hidden": hidden, "heads": heads, "query_groups": groups}
	par := map[string]any{"tp": tp, "pp": pp, "vpp": vpp, "cp": cp}
	if r.IntN(2) == 0 {
		// MoE on the expert grid: etp·ep·pp must divide the world.
		etp := pick(divisorsUpTo(tp, tp))
		ep := pick(divisorsUpTo(world/(etp*pp), 16))
		experts := ep * pick([]int{1, 2, 4})
		model["moe"] = map[string]any{"experts": experts, "topk": min(2, experts)}
		if min(2, experts) == 1 {
			model["moe"].(map[string]any)["router_pre_softmax"] = true
		}
		model["bias"] = etp == 1 && r.IntN(2) == 0
		par["ep"], par["etp"] = ep, etp
	}
	if r.IntN(3) == 0 {
		model["activation"] = "swiglu"
	}
	if r.IntN(4) == 0 {
		par["dp"] = dp
	}
	return map[string]any{
		"model":    model,
		"cluster":  map[string]any{"nodes": nodes, "gpus_per_node": gpn, "nvlink_domain": gpn},
		"parallel": par,
		"train":    map[string]any{"seq_length": seq, "micro_batch": mbs, "global_batch": gbs},
	}
}

func divisorsUpTo(n, limit int) []int {
	var out []int
	for _, d := range divisors(n) {
		if d <= limit {
			out = append(out, d)
		}
	}
	return out
}

func TestRandomValidGridsAreAccepted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		o := randomValid(r)
		s := specFrom(t, o)
		if l := runSpec(s); l.HasErrors() {
			t.Fatalf("case %d: a valid plan was rejected\nspec overrides: %v\n%v", i, o, l)
		}
	}
}

// mutation breaks exactly one rule of a valid plan; apply reports false when
// the plan has no room for it (e.g. tp = 1 cannot break ffn-tp).
type mutation struct {
	code  string
	apply func(s *spec.Spec, d spec.Derived) bool
}

var mutations = []mutation{
	{"world-not-divisible", func(s *spec.Spec, d spec.Derived) bool {
		m := s.Parallel.TP * s.Parallel.PP * s.Parallel.CP
		if m == 1 {
			return false
		}
		s.Cluster.Nodes, s.Cluster.GPUsPerNode, s.Cluster.NVLinkDomain = 1, m+1, m+1
		return true
	}},
	{"global-batch", func(s *spec.Spec, d spec.Derived) bool {
		if s.Train.MicroBatch*d.DP == 1 {
			return false
		}
		s.Train.GlobalBatch++
		return true
	}},
	{"pp-layers", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.PP == 1 {
			return false
		}
		s.Model.Layers++
		return true
	}},
	{"cp-seq-length", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.CP == 1 {
			return false
		}
		s.Train.SeqLength += 2
		return true
	}},
	{"ep-experts", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil || s.Parallel.EP == 1 {
			return false
		}
		s.Model.MoE.Experts++
		return true
	}},
	{"moe-bias-etp", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil || d.ETP == 1 {
			return false
		}
		s.Model.Bias = true
		return true
	}},
	{"moe-sp-required", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil || s.Parallel.TP == 1 {
			return false
		}
		off := false
		s.Parallel.SP = &off
		return true
	}},
	{"max-positions", func(s *spec.Spec, d spec.Derived) bool {
		v := s.Train.SeqLength - 1
		s.Model.MaxPositionEmbeddings = &v
		return true
	}},
	{"interleave-microbatches", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.VPP == 1 || s.Parallel.PP < 2 {
			return false
		}
		s.Train.GlobalBatch = s.Train.MicroBatch * d.DP * (s.Parallel.PP - 1)
		return true
	}},
	{"ffn-tp", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.TP == 1 {
			return false
		}
		v := s.Parallel.TP*7 + 1
		s.Model.FFNHidden = &v
		return true
	}},
	{"dp-mismatch", func(s *spec.Spec, d spec.Derived) bool {
		v := d.DP + 1
		s.Parallel.DP = &v
		return true
	}},
	{"order-pp-last", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.PP == 1 || d.EDP == d.DP {
			return false
		}
		s.Parallel.Order = spec.OrderPPDP
		return true
	}},
	{"vpp-pp", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.PP != 1 {
			return false
		}
		s.Parallel.VPP = 2
		return true
	}},
	{"tp-heads", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.TP == 1 || s.Model.Heads%2 == 1 {
			return false
		}
		// One head fewer: tp (a power of two) no longer divides it; keep
		// the head dimension explicit so hidden/heads stays irrelevant.
		kv := s.Model.Hidden / s.Model.Heads
		s.Model.KVChannels = &kv
		s.Model.Heads--
		s.Model.QueryGroups = &s.Model.Heads
		return true
	}},
	{"lr-min", func(s *spec.Spec, d spec.Derived) bool {
		s.Train.MinLR = s.Train.LR * 2
		return true
	}},
	{"cuda-max-connections", func(s *spec.Spec, d spec.Derived) bool {
		if s.Parallel.TP == 1 && s.Parallel.CP == 1 {
			return false
		}
		s.Launch.Env = map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": "2"}
		return true
	}},
	{"overlap-param-gather", func(s *spec.Spec, d spec.Derived) bool {
		s.Train.OverlapParamGather, s.Train.DistributedOptimizer, s.Train.FSDP = true, false, false
		return true
	}},
	{"fp8-param-gather", func(s *spec.Spec, d spec.Derived) bool {
		s.Train.FP8ParamGather, s.Train.DistributedOptimizer, s.Train.FSDP = true, false, false
		return true
	}},
	{"option-like-path", func(s *spec.Spec, d spec.Derived) bool {
		s.Launch.Program = "-c"
		return true
	}},
	{"slurm-time", func(s *spec.Spec, d spec.Derived) bool {
		v := "4h"
		s.Cluster.Slurm = &spec.Slurm{Exclusive: true, Time: &v}
		return true
	}},
	{"hidden-heads", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.KVChannels != nil {
			return false
		}
		s.Model.Hidden++
		return s.Model.Hidden%s.Model.Heads != 0
	}},
	{"query-groups-heads", func(s *spec.Spec, d spec.Derived) bool {
		g := s.Model.Heads + 1
		s.Model.QueryGroups = &g
		return true
	}},
	{"glu-options", func(s *spec.Spec, d spec.Derived) bool {
		s.Model.Activation, s.Model.GLULinearOffset, s.Kernels.BiasSwigluFusion = "swiglu", 1, true
		return true
	}},
	{"mtp-position-embedding", func(s *spec.Spec, d spec.Derived) bool {
		s.Model.MTPLayers = 1
		s.Model.PositionEmbedding = "learned_absolute"
		return true
	}},
	{"mla-query-groups", func(s *spec.Spec, d spec.Derived) bool {
		g := s.Model.Heads
		s.Model.QueryGroups = &g
		s.Model.MLA = &spec.MLA{KVLoraRank: 512, QKHeadDim: 128, QKPosEmbHeadDim: 64, VHeadDim: 128}
		return true
	}},
	{"moe-expert-bias-score", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil {
			return false
		}
		s.Model.MoE.ExpertBias, s.Model.MoE.ScoreFunction = true, "softmax"
		return true
	}},
	{"moe-sinkhorn-aux-loss", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil {
			return false
		}
		s.Model.MoE.RouterLoadBalancing, s.Model.MoE.AuxLossCoeff = "sinkhorn", 0.01
		return true
	}},
	{"moe-router-groups", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil {
			return false
		}
		g := 1
		s.Model.MoE.RouterGroupTopK = &g
		return true
	}},
	{"env-name", func(s *spec.Spec, d spec.Derived) bool {
		s.Launch.Env = map[string]string{"1X": "a"}
		return true
	}},
	{"env-reserved", func(s *spec.Spec, d spec.Derived) bool {
		s.Launch.Env = map[string]string{"MASTER_PORT": "1"}
		return true
	}},
	{"env-value", func(s *spec.Spec, d spec.Derived) bool {
		s.Launch.Env = map[string]string{"X": "a\x00b"}
		return true
	}},
	{"launch-command", func(s *spec.Spec, d spec.Derived) bool {
		s.Launch.Program = ""
		return true
	}},
	{"slurm-line-break", func(s *spec.Spec, d spec.Derived) bool {
		s.Model.Name = "a\nb"
		return true
	}},
	{"slurm-option", func(s *spec.Spec, d spec.Derived) bool {
		s.Cluster.Slurm = &spec.Slurm{Exclusive: true, Extra: []string{"mail-type=END"}}
		return true
	}},
	{"slurm-preempt", func(s *spec.Spec, d spec.Derived) bool {
		v := 70000
		s.Cluster.Slurm = &spec.Slurm{Exclusive: true, PreemptSignalSeconds: &v}
		return true
	}},
	{"moe-topk-experts", func(s *spec.Spec, d spec.Derived) bool {
		if s.Model.MoE == nil {
			return false
		}
		s.Model.MoE.TopK = s.Model.MoE.Experts + 1
		return true
	}},
	{"lr-warmup", func(s *spec.Spec, d spec.Derived) bool {
		n := 100
		s.Train.Iters, s.Train.Samples, s.Train.LRDecayIters, s.Train.LRWarmupIters = &n, nil, nil, 200
		return true
	}},
	{"lr-wsd-decay", func(s *spec.Spec, d spec.Derived) bool {
		s.Train.LRDecayStyle, s.Train.LRWSDDecayIters, s.Train.LRWSDDecaySamples = "WSD", nil, nil
		return true
	}},
	{"ddp-buckets", func(s *spec.Spec, d spec.Derived) bool {
		size, n := int64(134217728), int64(8)
		s.Train.DDPBucketSize, s.Train.DDPNumBuckets = &size, &n
		return true
	}},
	{"train-iters-samples", func(s *spec.Spec, d spec.Derived) bool {
		n, m := 100, 6400
		s.Train.Iters, s.Train.Samples = &n, &m
		return true
	}},
	{"weight-decay-schedule", func(s *spec.Spec, d spec.Derived) bool {
		w := 0.05
		s.Train.WeightDecayIncrStyle, s.Train.StartWeightDecay = "constant", &w
		return true
	}},
	{"data-split", func(s *spec.Spec, d spec.Derived) bool {
		s.Data.Paths, s.Data.Split = []string{"/data/corpus_text_document"}, "0,0,0"
		return true
	}},
	{"moe-topk-pre-softmax", func(s *spec.Spec, d spec.Derived) bool {
		e := s.Model.MoE
		if e == nil || e.RouterLoadBalancing == "sinkhorn" {
			return false
		}
		e.TopK, e.ScoreFunction, e.RouterPreSoftmax = 1, "softmax", false
		e.RouterGroupTopK, e.RouterNumGroups = nil, nil
		return true
	}},
	{"moe-capacity-balancing", func(s *spec.Spec, d spec.Derived) bool {
		e := s.Model.MoE
		if e == nil {
			return false
		}
		cf := 1.0
		e.CapacityFactor, e.RouterLoadBalancing = &cf, "sinkhorn"
		return true
	}},
	{"moe-pad-capacity", func(s *spec.Spec, d spec.Derived) bool {
		e := s.Model.MoE
		if e == nil {
			return false
		}
		e.PadExpertInputToCapacity, e.CapacityFactor = true, nil
		return true
	}},
}

func TestSingleRuleMutationsAreReported(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	applied := map[string]int{}
	for i := range 400 {
		o := randomValid(r)
		for _, m := range mutations {
			s := specFrom(t, o)
			if !m.apply(s, spec.Derive(s)) {
				continue
			}
			applied[m.code]++
			l := runSpec(s)
			if !slices.Contains(l.Codes(), m.code) {
				t.Fatalf("case %d: mutation %s not reported\noverrides: %v\n%v", i, m.code, o, l)
			}
			if info, _ := Lookup(m.code); info.Severity == diag.Error && !l.HasErrors() {
				t.Fatalf("case %d: mutation %s accepted", i, m.code)
			}
		}
	}
	for _, m := range mutations {
		if applied[m.code] == 0 {
			t.Errorf("mutation %s never applied: the generator never makes room for it", m.code)
		}
	}
	t.Log(fmt.Sprint(applied))
}

// TestSkipFixedBySpecSkipsOnlyThose: with Options.SkipFixedBySpec the
// checker gives every error it gives without it but those of the codes
// FixedBySpec names, on random plans with each mutation applied (so every
// rule's error appears in some case), and no error it does not give
// without it.
func TestSkipFixedBySpecSkipsOnlyThose(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	errs := func(l diag.List) map[string]string {
		out := map[string]string{}
		for _, x := range l {
			if x.Severity == diag.Error {
				out[x.Code+" "+x.Path+": "+x.Message] = x.Code
			}
		}
		return out
	}
	skipped := 0
	for range 20 {
		o := randomValid(r)
		for _, m := range mutations {
			s := specFrom(t, o)
			if !m.apply(s, spec.Derive(s)) {
				continue
			}
			d := spec.Derive(s)
			full := errs(VerdictWith(s, d, diag.NoPos, Options{}))
			fast := errs(VerdictWith(s, d, diag.NoPos, Options{SkipFixedBySpec: true}))
			for e := range fast {
				require.Contains(t, full, e, "mutation %s: an error only with the option", m.code)
			}
			for e, code := range full {
				if _, ok := fast[e]; !ok {
					require.True(t, FixedBySpec(code), "mutation %s: %s skipped", m.code, e)
					skipped++
				}
			}
		}
	}
	// Some mutations break a skipped rule: the option does skip.
	assert.Greater(t, skipped, 0)
}

// TestFixedBySpecRulesIgnoreThePlan checks FixedBySpec's premise: the rules
// it names give the same verdict, word for word, whatever fills the fields
// parc solve chooses. Each mutation that breaks one of them is applied to
// random plans, and the fields the solver chooses are then overwritten with
// other values (valid or not): the code's messages must not change, and on
// the plan without the mutation the code must never appear.
func TestFixedBySpecRulesIgnoreThePlan(t *testing.T) { fixedRulesIgnoreThePlan(t, fixedBySpec, false) }

// TestFixedByShardingRulesIgnoreThePlan checks FixedBySharding's premise the
// same way, the plans keeping the mutated spec's optimizer sharding.
func TestFixedByShardingRulesIgnoreThePlan(t *testing.T) {
	fixedRulesIgnoreThePlan(t, fixedBySharding, true)
}

// fixedRulesIgnoreThePlan is the two tests above: the codes of fixed, each
// broken by its mutation, give the same messages whatever fills the fields
// parc solve chooses (but the sharding, with keepSharding).
func fixedRulesIgnoreThePlan(t *testing.T, fixed map[string]bool, keepSharding bool) {
	r := rand.New(rand.NewPCG(5, 6))
	pick := func(v []int) int { return v[r.IntN(len(v))] }
	replan := func(s *spec.Spec) {
		p, tr := &s.Parallel, &s.Train
		p.TP, p.PP, p.VPP, p.CP = pick([]int{1, 2, 3, 4, 8}), pick([]int{1, 2, 3, 4, 8}), pick([]int{1, 2, 3}), pick([]int{1, 2, 4})
		if s.Model.MoE != nil {
			p.EP = pick([]int{1, 2, 4, 8})
			etp := pick([]int{1, 2})
			p.ETP = &etp
		}
		p.AccountForEmbedding, p.AccountForLoss = r.IntN(2) == 0, r.IntN(2) == 0
		p.FirstStageLayers, p.LastStageLayers, p.MicrobatchGroupSize, p.DP = nil, nil, nil, nil
		if r.IntN(3) == 0 {
			f := pick([]int{0, 1, 2})
			p.FirstStageLayers = &f
		}
		if r.IntN(3) == 0 {
			g := pick([]int{1, 2, 4})
			p.MicrobatchGroupSize = &g
		}
		tr.MicroBatch = pick([]int{1, 2, 3, 4, 8})
		tr.Recompute = []string{"none", "selective", "full"}[r.IntN(3)]
		tr.RecomputeMethod, tr.RecomputeLayers, tr.RecomputeModules = "", nil, nil
		if tr.Recompute == "full" {
			tr.RecomputeMethod = []string{"uniform", "block"}[r.IntN(2)]
			k := pick([]int{1, 2})
			tr.RecomputeLayers = &k
		}
		if !keepSharding {
			tr.DistributedOptimizer = r.IntN(2) == 0
			tr.FSDP = r.IntN(4) == 0
		}
	}
	messages := func(l diag.List, code string) []string {
		var out []string
		for _, x := range l {
			if x.Code == code {
				out = append(out, x.Path+": "+x.Message)
			}
		}
		return out
	}
	tried := map[string]int{}
	for i := range 30 {
		o := randomValid(r)
		for _, m := range mutations {
			if !fixed[m.code] {
				continue
			}
			s := specFrom(t, o)
			if !m.apply(s, spec.Derive(s)) {
				continue
			}
			want := messages(runSpec(s), m.code)
			if len(want) == 0 {
				t.Fatalf("case %d: mutation %s not reported", i, m.code)
			}
			for range 4 {
				s2 := specFrom(t, o)
				m.apply(s2, spec.Derive(s2))
				replan(s2)
				if got := messages(runSpec(s2), m.code); !slices.Equal(got, want) {
					t.Fatalf("case %d: %s changed with the plan (tp=%d pp=%d vpp=%d cp=%d ep=%d micro_batch=%d recompute=%s): %q, want %q",
						i, m.code, s2.Parallel.TP, s2.Parallel.PP, s2.Parallel.VPP, s2.Parallel.CP, s2.Parallel.EP, s2.Train.MicroBatch, s2.Train.Recompute, got, want)
				}
				clean := specFrom(t, o)
				replan(clean)
				if got := messages(runSpec(clean), m.code); len(got) > 0 {
					t.Fatalf("case %d: %s reported on a plan that does not break it: %q", i, m.code, got)
				}
			}
			tried[m.code]++
		}
	}
	for code := range fixed {
		if tried[code] == 0 {
			t.Errorf("%s: no mutation breaks it, so its premise is untested", code)
		}
	}
	t.Log(tried)
}
