package check

import (
	"fmt"
	"slices"
	"strings"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Run checks every rule that needs only the spec and the values Derive
// computed from it, and returns all the diagnostics, sorted. at finds the
// user's position of a spec field.
func Run(s *spec.Spec, d spec.Derived, at diag.Locator) diag.List {
	return RunWith(s, d, at, Options{})
}

// Options are what a caller other than parc vet asks of the rules.
type Options struct {
	// MeasuredRun rates a published run as it was measured (the
	// calibration and the solver corpus, through measured.PublishedPlan):
	// a rule only Megatron-LM's own argument check applies, added after
	// the software the corpus's runs used, does not report, because the
	// run did what the rule forbids, and a setting Megatron-LM has no flag
	// for but another front end sets (Megatron-Bridge's SFT recipes
	// disable Transformer Engine's fp8 weight cache,
	// kernels.disable_parameter_transpose_cache) is taken as it ran.
	// Today the rules of the first kind are two: the
	// overlapped parameter gather without the overlapped gradient
	// reduction (optimizer; Megatron-Bridge ran it, see there), and
	// Transformer Engine's cross-entropy fusion (kernels), asserted
	// against in megatron/training/arguments.py validate_args since
	// Megatron-LM 168cb15d (2026-06-03, "Disable TE cross entropy loss
	// fusion"), which Megatron-Bridge's training loop never runs (its
	// performance scripts set the fusion with impl "te" from r0.1.0 to
	// r0.6.0) and Megatron-Core itself still implements
	// (language_module.py compute_language_model_loss at d98e8a64) and
	// only warns about (ModelParallelConfig.__post_init__,
	// model_parallel_config.py: "Megatron-LM training args validation
	// rejects this combination by default").
	// parc vet and parc solve never set it.
	MeasuredRun bool
	// SkipFixedBySpec skips the rules every error of which FixedBySpec
	// names (the launch environment, programs and paths; the data split):
	// for a caller that has run them once on the spec and runs the rest on
	// many plans of it (parc solve's search). Their warnings are skipped
	// with them.
	SkipFixedBySpec bool
}

// RunWith is Run with options.
func RunWith(s *spec.Spec, d spec.Derived, at diag.Locator, o Options) diag.List {
	c := &checker{s: s, d: d, r: diag.NewReporter(at), o: o}
	c.run()
	return c.r.List.Sort()
}

// Verdict is Run for callers that need the diagnostics' codes and messages
// but show no hints (the solver's search over thousands of candidates): it
// skips verifying the values hints suggest, which re-runs the rules once per
// candidate value (see accepts).
func Verdict(s *spec.Spec, d spec.Derived, at diag.Locator) diag.List {
	return VerdictWith(s, d, at, Options{})
}

// VerdictWith is Verdict with options.
func VerdictWith(s *spec.Spec, d spec.Derived, at diag.Locator, o Options) diag.List {
	c := &checker{s: s, d: d, r: diag.NewReporter(at), verifying: true, o: o}
	c.run()
	return c.r.List.Sort()
}

// run applies every rule.
func (c *checker) run() {
	if !c.ranges() {
		return
	}
	c.layoutStages()
	c.grid()
	c.tensorParallelFitsDomain()
	c.attention()
	c.pipeline()
	c.batch()
	c.batchSchedule()
	c.sequence()
	c.moe()
	c.precision()
	c.gpuDatasheet()
	c.recompute()
	c.recomputeModules()
	c.cpuOffloading()
	c.fineGrainedOffloading()
	c.deferEmbeddingWgrad()
	c.commOverlap()
	c.optimizer()
	c.ddpBuckets()
	c.optimizerPrecision()
	c.optimizerChoice()
	c.training()
	c.schedule()
	c.kernels()
	c.cudaGraphScope()
	c.cudaGraphModules()
	c.cudaGraphMoEDispatch()
	c.cudaGraphRecompute()
	c.delayWgradGraphs()
	c.graphAllocator()
	c.moeRouter()
	c.fsdpOptions()
	c.launchEnv()
	if !c.o.SkipFixedBySpec {
		c.launchValues()
		c.dataSplit()
	}
	c.slurm()
	c.grace()
}

type checker struct {
	s *spec.Spec
	d spec.Derived
	r *diag.Reporter
	o Options
	// verifying marks a re-run that checks a hint's candidate (see accepts).
	verifying bool
	// specVPP is parallel.vpp as the spec wrote it when parallel.layout
	// gives another count of virtual stages: the rules then see the
	// layout's (layoutStages), and only the layout rule sees this one.
	specVPP   int
	baseline  map[string]bool
	suggested []suggestion
}

// report adds a diagnostic blaming path with the severity the registry gives
// code; the returned entry takes related positions.
func (c *checker) report(code, path, hint, format string, args ...any) diag.Entry {
	info, ok := codeIndex[code]
	if !ok {
		panic("check: unregistered diagnostic code " + code)
	}
	return c.r.Report(info.Severity, path, code, hint, format, args...)
}

// ranges reports counts below 1 (the schema forbids them, but specs built in
// Go may carry zeros) and says whether the rest of the rules can run without
// dividing by zero.
func (c *checker) ranges() bool {
	s := c.s
	type count struct {
		path string
		v    int
	}
	var buf [32]count // on the stack: the checks run once per plan a search estimates
	fields := append(buf[:0], []count{
		{"model.layers", s.Model.Layers}, {"model.hidden", s.Model.Hidden}, {"model.heads", s.Model.Heads},
		{"model.vocab", s.Model.Vocab}, {"model.make_vocab_divisible_by", s.Model.MakeVocabDivisibleBy},
		{"cluster.nodes", s.Cluster.Nodes}, {"cluster.gpus_per_node", s.Cluster.GPUsPerNode},
		{"cluster.nvlink_domain", s.Cluster.NVLinkDomain},
		{"parallel.tp", s.Parallel.TP}, {"parallel.pp", s.Parallel.PP}, {"parallel.vpp", s.Parallel.VPP},
		{"parallel.cp", s.Parallel.CP}, {"parallel.ep", s.Parallel.EP},
		{"parallel.distributed_optimizer_instances", s.Parallel.DistributedOptimizerInstances},
		{"train.seq_length", s.Train.SeqLength}, {"train.micro_batch", s.Train.MicroBatch},
		{"train.global_batch", s.Train.GlobalBatch},
	}...)
	opt := func(path string, p *int) {
		if p != nil {
			fields = append(fields, count{path, *p})
		}
	}
	opt("model.ffn_hidden", s.Model.FFNHidden)
	opt("model.query_groups", s.Model.QueryGroups)
	opt("model.kv_channels", s.Model.KVChannels)
	opt("model.max_position_embeddings", s.Model.MaxPositionEmbeddings)
	opt("parallel.etp", s.Parallel.ETP)
	opt("parallel.dp", s.Parallel.DP)
	opt("parallel.microbatch_group_size", s.Parallel.MicrobatchGroupSize)
	opt("train.recompute_layers", s.Train.RecomputeLayers)
	if m := s.Model.MoE; m != nil {
		fields = append(fields, count{"model.moe.experts", m.Experts}, count{"model.moe.topk", m.TopK}, count{"model.moe.layer_freq", m.LayerFreq})
		opt("model.moe.ffn_hidden", m.FFNHidden)
	}
	ok := true
	for _, f := range fields {
		if f.v < 1 {
			c.report("value-range", f.path, "", "%s is %d; it must be at least 1", f.path, f.v)
			ok = false
		}
	}
	if ok && s.Cluster.Nodes > spec.MaxWorld/s.Cluster.GPUsPerNode {
		// The most nodes parc lays out that every rule takes (the
		// parallel grid must still tile the world): the largest count
		// below the limit whose world tp·pp·cp divides, verified.
		most := spec.MaxWorld / s.Cluster.GPUsPerNode
		hint := fmt.Sprintf("parc lays out at most %d GPUs: split the job", spec.MaxWorld)
		if most >= 1 {
			// Node counts whose world tp·pp·cp divides are multiples of
			// step; a re-run on a world of millions costs, so at most 8
			// are tried, the largest first.
			p := s.Parallel
			grid := max(1, p.TP*p.PP*p.CP)
			step := grid / gcd(grid, s.Cluster.GPUsPerNode)
			below := 0
			for n, tries := most/step*step, 0; n >= 1 && tries < 8; n, tries = n-step, tries+1 {
				if c.accepts("layout-world-too-large", "cluster.nodes", n) {
					below = n
					break
				}
			}
			if below > 0 {
				hint += fmt.Sprintf(" into jobs of at most %d nodes: set cluster.nodes: %d", most, below)
			} else {
				hint += "; " + noValue("cluster.nodes")
			}
		}
		c.report("layout-world-too-large", "cluster.nodes", hint,
			"%d nodes × %d GPUs is more ranks than parc lays out", s.Cluster.Nodes, s.Cluster.GPUsPerNode)
		ok = false
	}
	for i, h := range s.Parallel.HierarchicalCP {
		if h < 1 {
			c.report("value-range", "parallel.hierarchical_cp", "", "parallel.hierarchical_cp[%d] is %d; it must be at least 1", i, h)
			ok = false
		}
	}
	return ok
}

// The effective values used by several rules.

func (c *checker) world() int  { return c.s.Cluster.Nodes * c.s.Cluster.GPUsPerNode }
func (c *checker) etp() int    { return c.d.ETP }
func (c *checker) groups() int { return c.d.QueryGroups }
func (c *checker) isMoE() bool { return c.s.Model.MoE != nil }
func (c *checker) vppOn() bool { return c.s.Parallel.VPP > 1 }
func (c *checker) gridOK() bool {
	return spec.Tiles(c.world(), c.s.Parallel.TP, c.s.Parallel.PP, c.s.Parallel.CP)
}

// accountedLayers is L' = L + E + Lo (Megatron's layer count with the
// embedding and loss counted as layers).
func (c *checker) accountedLayers() int {
	n := c.s.Model.Layers
	if c.s.Parallel.AccountForEmbedding {
		n++
	}
	if c.s.Parallel.AccountForLoss {
		n++
	}
	return n
}

func (c *checker) uneven() bool {
	return c.s.Parallel.FirstStageLayers != nil || c.s.Parallel.LastStageLayers != nil
}

// validTP lists the tp values (up to the world size) that satisfy every rule
// that depends on tp alone: heads, query groups, FFN split, and the dense
// grid with the current pp and cp.
func (c *checker) validTP(code string) []int {
	s := c.s
	a, g := s.Model.Heads, c.groups()
	return c.only(code, "parallel.tp", valuesIn(1, c.world(), func(t int) bool {
		return a%t == 0 && (g%t == 0 || t%g == 0) && c.d.FFNHidden%t == 0 &&
			spec.Tiles(c.world(), t, s.Parallel.PP, s.Parallel.CP)
	}))
}

// env returns the launch environment the workers see: cluster.env overlaid by
// launch.env, with the path of the field that set each variable.
func (c *checker) env(name string) (value, path string, ok bool) {
	if v, ok := c.s.Launch.Env[name]; ok {
		return v, "launch.env." + name, true
	}
	if v, ok := c.s.Cluster.Env[name]; ok {
		return v, "cluster.env." + name, true
	}
	return "", "", false
}

func hasArg(args []string, name string) bool { return slices.Contains(args, name) }

// hasFlag reports whether launch.extra_args passes a Megatron flag, as
// "--flag", "--flag=value" or "--flag value".
func (c *checker) hasFlag(name string) bool {
	for _, a := range c.s.Launch.ExtraArgs {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// layoutStages makes every rule see the virtual stages parallel.layout gives
// when parallel.vpp says otherwise: parc's Megatron target writes the layout
// and not vpp, so Megatron schedules, interleaves and validates with the
// layout's count. The conflict itself is pipelineLayout's error (at
// parallel.vpp); the rules that depend on interleaving (the interleaved
// schedule's microbatch group, overlap_p2p, the parameter gather overlapped
// with the optimizer step, ...) then judge the plan Megatron would run, so a
// plan wrong in both hears of both at once.
func (c *checker) layoutStages() {
	p := c.s.Parallel
	if _, v, ok := p.LayoutStages(); ok && v != p.VPP {
		c.specVPP = p.VPP
		s := *c.s
		s.Parallel.VPP = v
		c.s, c.d = &s, spec.Derive(&s)
	}
}
