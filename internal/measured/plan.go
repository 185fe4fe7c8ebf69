package measured

import (
	"encoding/json"
	"fmt"
	"maps"
	"parc.dev/parc/internal/spec"
	"slices"
	"strings"
	"sync"

	"parc.dev/parc/internal/load"
)

// clusterPresets maps the corpus's GPU names to stdlib cluster presets.
var clusterPresets = map[string]string{
	"H100-SXM":       "dgx_h100",
	"A100-SXM4-80GB": "dgx_a100_80g",
	"B200":           "dgx_b200",
	"B300":           "dgx_b300",
	"GB200":          "gb200_nvl72",
	"GB300":          "gb300_nvl72",
	"H200":           "hgx_h200",
}

// ClusterPreset is the stdlib cluster preset of a corpus GPU name
// ("H100-SXM": "dgx_h100"), "" for a GPU parc has none of.
func ClusterPreset(gpu string) string { return clusterPresets[gpu] }

// Open is a field a run's source leaves unsaid, written as the CUE
// constraint of the values it may take ("int", "string",
// `=~"^selective$"`). Whoever rates the run's plan gives it the best value
// the checks allow (parc solve's pick with every other field as the run
// gives it and the whole GPU as the memory limit: the run fit).
type Open string

// Plan is a measured run written as a parc spec: the plan as it ran, with
// the settings its source records, and the fields the source leaves unsaid
// Open. The calibration (TestCalibration, internal/estimate) and the
// solver corpus (TestPublishedCorpus, internal/solve) both rate a run with
// it, so both rate the same plan.
type Plan struct {
	// Imports are the stdlib packages Model and Cluster use.
	Imports []string
	// Model and Cluster are CUE expressions.
	Model, Cluster string
	// Parallel and Train are the spec's parallel and train blocks: field
	// name to value (int, bool, float64, string, []string or Open).
	Parallel, Train map[string]any
	// Kernels is the CUE of the run's MoE and kernel settings
	// (ModelKernelsCUE).
	Kernels string
}

// Unsaid names the fields the plan leaves Open ("parallel.vpp",
// "train.micro_batch", "train.recompute"), sorted.
func (p *Plan) Unsaid() []string {
	var out []string
	for blk, m := range map[string]map[string]any{"parallel": p.Parallel, "train": p.Train} {
		for k, v := range m {
			if _, ok := v.(Open); ok {
				out = append(out, blk+"."+k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Clone is a copy of p whose blocks can be changed without changing p's.
func (p *Plan) Clone() *Plan {
	c := *p
	c.Imports = slices.Clone(p.Imports)
	c.Parallel, c.Train = maps.Clone(p.Parallel), maps.Clone(p.Train)
	return &c
}

// contractFields are the parallel and train fields shared/design.md names
// (the contract, with "Solve, extended"), and the training length.
var contractFields = map[string][]string{
	"parallel": {"tp", "pp", "vpp", "cp", "ep", "etp", "dp", "sp", "order", "first_stage_layers", "last_stage_layers",
		"account_for_embedding", "account_for_loss", "layout"},
	"train": {"seq_length", "micro_batch", "global_batch", "precision", "recompute", "distributed_optimizer", "fsdp",
		"recompute_modules", "recompute_method", "recompute_layers", "iters"},
}

// ContractOnly is the plan as a user who knows only the contract's fields
// writes it: the model, the cluster and those fields (Open ones stay open),
// and none of the settings the run recorded beyond them (overlap, fp8
// recipe, dispatcher, CUDA graphs, fusions, offloading), which take parc's
// defaults.
func (p *Plan) ContractOnly() *Plan {
	c := p.Clone()
	c.Kernels = ""
	for blk, m := range map[string]map[string]any{"parallel": c.Parallel, "train": c.Train} {
		for k := range m {
			if !slices.Contains(contractFields[blk], k) {
				delete(m, k)
			}
		}
	}
	return c
}

// CUE is the plan's spec text (fields in name order, so equal plans give
// equal text).
func (p *Plan) CUE() string {
	var b strings.Builder
	b.WriteString("package plan\n\n")
	switch len(p.Imports) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "import %q\n\n", "parc.dev/stdlib/"+p.Imports[0])
	default:
		b.WriteString("import (\n")
		for _, im := range p.Imports {
			fmt.Fprintf(&b, "\t%q\n", "parc.dev/stdlib/"+im)
		}
		b.WriteString(")\n\n")
	}
	fmt.Fprintf(&b, "model: %s\ncluster: %s\nparallel: %s\ntrain: %s\n%s",
		p.Model, p.Cluster, block(p.Parallel), block(p.Train), p.Kernels)
	return b.String()
}

// block writes a spec block's fields in name order.
func block(m map[string]any) string {
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if o, ok := v.(Open); ok {
			fs = append(fs, k+": "+string(o))
			continue
		}
		q, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("measured: %s: %v", k, err))
		}
		fs = append(fs, k+": "+string(q))
	}
	return "{" + strings.Join(fs, ", ") + "}"
}

// PublishedPlan writes a measured run as the plan it ran (Plan), or says
// why it cannot.
func PublishedPlan(r *Run) (*Plan, error) {
	p := &Plan{Parallel: map[string]any{}, Train: map[string]any{}, Kernels: ModelKernelsCUE(r.Settings)}
	// Megatron asserts max_position_embeddings ≥ seq_length (arguments.py
	// validate_args at d98e8a64): a run longer than its model's positions
	// extended them to its sequence (runs.jsonl notes, e.g. NeMo's
	// long-sequence Llama 2 7B table; the performance scripts set it to
	// seq_length when a model's own is shorter).
	var name string
	if json.Unmarshal(r.Model, &name) == nil {
		p.Imports = []string{"clusters", "models"}
		p.Model = "models." + name
		mp, err := presetMaxPositions(name)
		if err != nil {
			return nil, err
		}
		if mp > 0 && r.Train.SeqLength > mp {
			p.Model = fmt.Sprintf("models.%s & {max_position_embeddings: %d}", name, r.Train.SeqLength)
		}
	} else {
		p.Imports = []string{"clusters"}
		var m map[string]any
		if err := json.Unmarshal(r.Model, &m); err != nil {
			return nil, fmt.Errorf("model: %v", err)
		}
		p.Model = string(r.Model)
		if mp, ok := m["max_position_embeddings"].(float64); ok && int(mp) < r.Train.SeqLength {
			m["max_position_embeddings"] = r.Train.SeqLength
			q, _ := json.Marshal(m)
			p.Model = string(q)
		}
	}
	preset, ok := clusterPresets[r.GPU]
	if !ok {
		return nil, fmt.Errorf("no cluster preset for GPU %q", r.GPU)
	}
	gpn := r.GPUsPerNode
	if gpn <= 0 {
		gpn = 8
	}
	if r.GPUs%gpn == 0 && r.GPUs >= gpn {
		// The NVLink domain the job saw, where the row records one. On
		// GB200/GB300 the launchers pass Slurm's --segment (the row's
		// slurm_segment), which keeps each block of that many consecutive
		// nodes in one NVL72 rack, so a 64-node job runs as 64-GPU
		// domains, not 72-rank ones, and the spec says so as a user
		// would (cluster.slurm.segment, nvlink_domain the segment's GPUs):
		// Megatron-Bridge scripts/performance/utils/executors.py
		// slurm_executor since 568b3a3ef, NeMo's scripts/performance
		// utils.py from v2.3.0 (and the DGX Cloud benchmarking branch
		// llmb-nemo-r2.3.0); the rows' notes name other launchers.
		domain := ""
		if r.NVLinkDomain > 0 {
			domain = fmt.Sprintf(", nvlink_domain: %d", r.NVLinkDomain)
		}
		if r.SlurmSegment > 0 {
			domain = fmt.Sprintf(", nvlink_domain: %d, slurm: segment: %d", r.SlurmSegment*gpn, r.SlurmSegment)
		}
		p.Cluster = fmt.Sprintf("clusters.%s & {nodes: %d, gpus_per_node: %d%s}", preset, r.GPUs/gpn, gpn, domain)
	} else {
		// Fewer GPUs than a node: the run's GPUs as one node of the
		// preset's GPU and links.
		p.Cluster = fmt.Sprintf("{name: \"x\", nodes: 1, gpus_per_node: %d, nvlink_domain: %d, gpu: clusters.%[3]s.gpu, nvlink_gbps: clusters.%[3]s.nvlink_gbps, network_gbps: clusters.%[3]s.network_gbps}",
			r.GPUs, r.GPUs, preset)
	}

	rp, par, set := r.Parallel, p.Parallel, r.Settings
	tp, pp, cp := degree(rp.TP), degree(rp.PP), degree(rp.CP)
	par["tp"], par["pp"], par["cp"], par["ep"] = tp, pp, cp, degree(rp.EP)
	// A pipeline whose source leaves the interleaving unsaid takes the
	// best vpp the checks allow; without a pipeline there is none
	// (Megatron asserts pipeline-model-parallel size > 1 for the
	// interleaved schedule, arguments.py at d98e8a64), and MT-NLG's
	// DeepSpeed pipeline has no interleaved schedule (the rows' notes), so
	// both stay at 1.
	par["vpp"] = degree(rp.VPP)
	if rp.VPP == nil && pp > 1 && rp.Layout == "" && PipelineInterleaves(r.ID) {
		par["vpp"] = Open("int")
	}
	if rp.ETP != nil {
		par["etp"] = *rp.ETP
	}
	// Megatron turns sequence parallelism off without tensor parallelism
	// (arguments.py at d98e8a64: "Disabling sequence parallelism because
	// tensor model parallelism is disabled").
	if rp.SP != nil && tp > 1 {
		par["sp"] = *rp.SP
	}
	if rp.AccountForEmbedding != nil {
		par["account_for_embedding"] = *rp.AccountForEmbedding
	}
	if rp.AccountForLoss != nil {
		par["account_for_loss"] = *rp.AccountForLoss
	}
	if rp.FirstStageLayers != nil {
		par["first_stage_layers"] = *rp.FirstStageLayers
	}
	if rp.LastStageLayers != nil {
		par["last_stage_layers"] = *rp.LastStageLayers
	}
	// The EP all-to-all overlap's delayed weight gradients
	// (delay_wgrad_compute, which Megatron-Bridge's moe_a2a_overlap sets
	// with overlap_moe_expert_parallel_comm: scripts/performance/utils/
	// overrides.py) as the row's settings give them.
	for _, k := range []string{"tp_comm_overlap", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"} {
		if v, ok := set[k].(bool); ok {
			par[k] = v
		}
	}
	// Interleaved pipelines overlap their point-to-point transfers unless
	// the run turned it off (--no-overlap-p2p-communication; NeMo's
	// overlap_p2p_comm false, batch_p2p_comm true): then every transfer
	// synchronises the device (spec.Parallel.OverlapP2P).
	if v, ok := set["overlap_p2p_comm"].(bool); ok && !v {
		par["overlap_p2p"] = false
	}
	// The output layer's weight gradients deferred to the pipeline flush
	// (--defer-embedding-wgrad-compute, --wgrad-deferral-limit), which
	// Megatron accepts only with a pipeline (ModelParallelConfig.
	// __post_init__ at d98e8a64); the launchers turn it off without one
	// (dgxc-benchmarking llama3.1/configure.sh at 143b90dd for PP 1,
	// Megatron-Bridge's FSDP override).
	if v, ok := set["defer_embedding_wgrad_compute"].(bool); ok && v && pp > 1 {
		par["defer_embedding_wgrad_compute"] = true
		if lim, ok := set["wgrad_deferral_limit"].(float64); ok && lim > 0 {
			par["wgrad_deferral_limit"] = int(lim)
		}
	}
	// The context-parallel exchange exists only with context parallelism.
	if v, ok := set["cp_comm_type"].(string); ok && cp > 1 {
		par["cp_comm_type"] = v
	}
	if rp.Layout != "" {
		par["layout"] = rp.Layout
	}

	rt, tr := r.Train, p.Train
	tr["seq_length"], tr["precision"], tr["iters"] = rt.SeqLength, rt.Precision, 10
	// Megatron has no default micro batch (arguments.py at d98e8a64
	// asserts --micro-batch-size is given): a run whose source does not
	// say it (the rows' notes: "Micro batch not stated") takes the best
	// the checks allow.
	tr["micro_batch"] = Open("int")
	if rt.MicroBatch != nil {
		tr["micro_batch"] = *rt.MicroBatch
	}
	if rt.GlobalBatch == nil {
		return nil, fmt.Errorf("no global batch")
	}
	tr["global_batch"] = *rt.GlobalBatch
	if rt.FP8Recipe != "" {
		tr["fp8_recipe"] = rt.FP8Recipe
	}
	// Dropout as the run's settings give it (Megatron's --attention-dropout,
	// --hidden-dropout); absent, the spec's default (none).
	for _, k := range []string{"attention_dropout", "hidden_dropout"} {
		if v, ok := set[k].(float64); ok {
			tr[k] = v
		}
	}
	said := map[string]any{}
	if rt.Recompute != "" {
		said["recompute"] = rt.Recompute
	}
	if len(rt.RecomputeModules) > 0 {
		said["recompute_modules"] = rt.RecomputeModules
	}
	tr["recompute"] = rt.Recompute
	if c := RecomputeConstraint(said); c != "" {
		tr["recompute"] = Open(c)
	}
	if rt.RecomputeLayers != nil {
		tr["recompute_layers"] = *rt.RecomputeLayers
	}
	if len(rt.RecomputeModules) > 0 {
		tr["recompute_modules"] = rt.RecomputeModules
	}
	fsdp := rt.FSDP != nil && *rt.FSDP
	if rt.FSDP != nil {
		tr["fsdp"] = *rt.FSDP
		strategy, _ := set["data_parallel_sharding_strategy"].(string)
		if v, ok := set["fsdp_reshard_after_forward"].(bool); ok && !v && strategy == "" {
			// Parameters stay gathered after the forward: sharded
			// gradients and optimizer state, Megatron-FSDP's optim_grads
			// (ZeRO-2; the Llama 3 paper's FSDP, §3.3.2).
			strategy = "optim_grads"
		}
		if fsdp && strategy != "" {
			tr["data_parallel_sharding_strategy"] = strategy
		}
	}
	// Data-parallel overlap: as the row's settings say; Megatron-Bridge's
	// and NeMo's performance recipes turn both on and use the distributed
	// optimizer; the 2021-22 papers' software predates both (PaperEra).
	overlap := !PaperEra(r.ID)
	distopt := overlap
	if rt.DistributedOptimizer != nil {
		distopt = *rt.DistributedOptimizer
		tr["distributed_optimizer"] = distopt
	} else if !fsdp {
		tr["distributed_optimizer"] = distopt
	}
	// Overlapped parameter gathering needs the distributed optimizer or
	// Megatron-FSDP (arguments.py at d98e8a64); a run that records it
	// without overlapped gradient reduction ran it so (Megatron-Bridge
	// does not run Megatron-LM's argument check that rejects the pair:
	// the Megatron-Bridge 25.09 DeepSeek-V3 H100 rows' notes).
	og, op := overlap, overlap
	if v, ok := set["overlap_grad_reduce"].(bool); ok {
		og = v
	}
	if v, ok := set["overlap_param_gather"].(bool); ok {
		op = v
	}
	tr["overlap_grad_reduce"], tr["overlap_param_gather"] = og, op && (distopt || fsdp)
	// The data-parallel buckets as the run's DDP config set them (only
	// where Megatron's DDP cuts buckets: with overlapped gradient reduction,
	// not Megatron-FSDP).
	for _, k := range []string{"ddp_bucket_size", "ddp_num_buckets"} {
		if v, ok := set[k].(float64); ok && v >= 1 && og && !fsdp {
			tr[k] = int64(v)
		}
	}
	if v, ok := set["fp8_param_gather"].(bool); ok && rt.Precision == "fp8" {
		tr["fp8_param_gather"] = v
	}
	if v, ok := set["fp4_param_gather"].(bool); ok && rt.Precision == "fp4" {
		tr["fp4_param_gather"] = v
	}
	if v, ok := set["grad_reduce_in_fp32"].(bool); ok {
		tr["grad_reduce_in_bf16"] = !v
	}
	// The precision-aware optimizer and its state dtypes as the row's
	// command or recipe gives them (--use-precision-aware-optimizer,
	// --main-grads-dtype, --exp-avg-dtype, --exp-avg-sq-dtype).
	if v, ok := set["use_precision_aware_optimizer"].(bool); ok && v {
		tr["precision_aware_optimizer"] = true
		for _, k := range []string{"main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"} {
			if d, ok := set[k].(string); ok {
				tr[k] = d
			}
		}
	}
	// The optimizer (--optimizer; Megatron-Bridge's optimizer_type). The
	// deprecated dist_muon is muon with the layer-wise distributed
	// optimizer, as validate_args makes it.
	if v, _ := set["optimizer"].(string); v != "" {
		o, layerWise := spec.MegatronOptimizer(v)
		tr["optimizer"] = o
		if layerWise {
			tr["distributed_optimizer"] = true
		}
	}
	if v, ok := set["manual_gc"].(bool); ok {
		tr["manual_gc"] = v
	}
	if set["cuda_graph_impl"] == "full_iteration" {
		// Megatron asserts --no-check-for-nan-in-loss-and-grad with
		// --cuda-graph-impl=full_iteration (arguments.py, validate_args),
		// so the run had it off.
		tr["check_for_nan_in_loss_and_grad"] = false
	}
	if v, ok := set["cpu_offloading_num_layers"].(float64); ok && v > 0 {
		tr["cpu_offloading_num_layers"] = int(v)
	}
	// Fine-grained activation offloading (Megatron's
	// --fine-grained-activation-offloading --offload-modules ...,
	// --delay-offload-until-cuda-graph) as the row's command gives it.
	if v, ok := set["fine_grained_activation_offloading"].(bool); ok && v {
		tr["fine_grained_activation_offloading"] = true
		if m, ok := set["offload_modules"].([]any); ok {
			tr["offload_modules"] = m
		}
		if d, ok := set["delay_offload_until_cuda_graph"].(bool); ok {
			tr["delay_offload_until_cuda_graph"] = d
		}
	}
	return p, nil
}

// presetMaxPositions is the max_position_embeddings of a stdlib model
// preset, 0 when it writes none (Megatron's default is seq_length).
func presetMaxPositions(name string) (int, error) {
	positionsMu.Lock()
	defer positionsMu.Unlock()
	if mp, ok := positions[name]; ok {
		return mp, nil
	}
	text := "package plan\n\nimport (\n\t\"parc.dev/stdlib/clusters\"\n\t\"parc.dev/stdlib/models\"\n)\n\n" +
		"model: models." + name + "\ncluster: clusters.dgx_h100 & {nodes: 1}\ntrain: {seq_length: 2, micro_batch: 1, global_batch: 8, iters: 1}\n"
	res, ds := load.Load(load.Source{Path: name + ".cue", Data: []byte(text)})
	if res == nil || ds.HasErrors() {
		return 0, fmt.Errorf("model preset %s: %v", name, ds)
	}
	s, ds := res.DecodeValue(res.Plan)
	if s == nil || ds.HasErrors() {
		return 0, fmt.Errorf("model preset %s: %v", name, ds)
	}
	mp := 0
	if s.Model.MaxPositionEmbeddings != nil {
		mp = *s.Model.MaxPositionEmbeddings
	}
	positions[name] = mp
	return mp, nil
}

// positions memoizes presetMaxPositions.
var (
	positionsMu sync.Mutex
	positions   = map[string]int{}
)
