// Package solve is the solve stage of the compiler: it fills the fields a
// user left open in a spec (spec.OpenPaths: parallel.tp, pp, vpp, cp, ep,
// etp, the pipeline split account_for_embedding, account_for_loss,
// first_stage_layers, last_stage_layers, and train.micro_batch, recompute,
// distributed_optimizer, fsdp — written as `tp: int`, `tp: 1 | 2 | 4 | 8`,
// `pp: >=2`, `account_for_loss: bool`), and parallel.layout and
// train.recompute_modules (`layout: string`, `recompute_modules:
// [...string]`, disjunctions of them; choice.go), and ranks the complete
// plans by the estimated step time.
//
// The pipeline split is searched with pp, as experts choose it: when pp is
// open (or does not divide the layers) and the spec writes none of the four
// split fields nor parallel.layout, parc tries the even split,
// account_for_embedding and/or account_for_loss, uneven first/last stages
// of 3 layers fewer to 1 more than the middle ones (Llama 3 405B's 126
// layers: 7 + 14×8 + 7 over 16 stages; DeepSeek-V3's 61: 4 + 14×4 + 1), and
// two families of parallel.layout over the pp·vpp virtual stages that
// Megatron-Bridge's DeepSeek-V3 recipes use (see layoutEdge, layoutSlots:
// "Et*4|(t*4|)*14tmL", "Et|(tt|)*30mL"). Two splits that give every stage
// the same layers are one plan, counted under the simpler. A layout the
// spec writes fixes the split; pp must divide its stages and vpp is their
// quotient. A split field left open (`account_for_loss: bool`) with none of
// the others written asks for the same search, whatever pp is: the open
// fields take the values their constraints allow, the unwritten ones are
// searched as above, and the layouts are tried when the constraints allow
// the split fields unset.
//
// Recomputation is searched with its modules: when train.recompute is open
// and the spec writes no train.recompute_modules, selective recomputation
// is tried with Megatron's default (core attention) and with each list of
// Megatron-Bridge's recipes and of NVIDIA's DGX Cloud DeepSeek-V3 benchmark
// the model can use (moduleLists).
//
// With the interleaved schedule and no parallel.microbatch_group_size in
// the spec, each plan gets the group size that gives it the least step time
// among those whose peak fits, the smallest of them (group.go): in parc's
// model a larger group only hides more data-parallel traffic and holds more
// microbatches in flight. A micro batch whose microbatches are not a
// multiple of pp is then valid with the smallest group Megatron accepts.
//
// The search is exact over that space: it returns what the documented
// ranking puts first among every assignment that passes every check
// (Megatron-Core's rules in package check, the topology rules, memory
// within the headroom), deterministically. It does not enumerate blindly:
//
//  1. Domains. Each open field's candidates come from the rules that bound it
//     (the world's divisors for a degree, the layers for vpp, the global
//     batch's divisors for micro_batch), intersected with the user's own CUE
//     constraint (a value is allowed when it unifies with what the user
//     wrote).
//  2. Rules on partial assignments (the grid rule is spec.Replicas, the
//     one definition check and layout use). The nested enumeration tp → cp → pp → ep
//     → etp → split → vpp → micro_batch drops a partial assignment as soon
//     as a rule that check.Run or check.Topology would report as an error
//     fails (world divisibility, dp, sequence-parallel split, the expert grid,
//     tensor-parallel groups that would leave the NVLink domain, the layer
//     split, the global batch, the interleaved schedule's microbatch rule).
//     Which link each process-group family crosses is computed in closed
//     form, without building the groups (see crosses). Each (grid, split,
//     vpp) becomes one node standing for its micro batches, recompute modes
//     and optimizer shardings; it is expanded only when the search reaches
//     it, into one node per micro batch, each expanded into its recompute
//     modes and shardings in turn.
//  3. Branch and bound. Every node and assignment gets a lower bound of its
//     step time: (m + (p−1)/v)/p × the compute of one microbatch through the
//     whole model, then, lazily, the same with the whole model's exposed
//     tensor/context/expert communication and the kernels' fixed cost (a
//     one-stage estimate shared by all assignments with the same tp, cp,
//     ep, etp and links, scaled by the micro batch), then the whole model's
//     exact microbatch time as one pipeline stage for the micro batch and
//     recompute mode (bound.go says why each bounds the step), and, when
//     parc chooses the group size, the step time with the largest group
//     once the plan fits (no group is faster; its group is chosen only if
//     that is within reach of the top). They are
//     taken in order of their bound; the search stops when the bound exceeds
//     both the K-th fastest shape and the noise band of the fastest. The top
//     shapes' remaining assignments are estimated at the end, so their
//     variants do not depend on what the bound skipped. A plan whose weights, gradients and optimizer state
//     alone exceed the headroom rules out every micro_batch and recompute
//     choice with the same grid, split, vpp and sharding; one whose peak
//     exceeds it rules out the larger micro batches of the same variant
//     (the microbatches in flight hold mb·min(m, pp) samples, which never
//     shrinks as mb grows); a node of one micro batch whose every variant
//     is so ruled out is rejected whole, before its plans are stored.
//  4. Verification. The plans shown are rebuilt the way `parc vet` builds a
//     plan: the open fields are filled into the user's CUE value and
//     decoded, then resolve.Resolve runs on the result. A candidate that
//     fails (a cross-field CUE constraint, say) is dropped and the search
//     resumes.
//
// Memory headroom: a plan whose estimated peak is above MemoryHeadroom of
// the GPU's memory (default 90%, spec field solve.memory_headroom, flag
// --memory-headroom) is rejected (memory-above-headroom), so `parc vet`
// never warns memory-near-limit on the pick.
//
// Ranking. Plans of one parallel shape (tp, cp, pp, ep, etp, vpp, split)
// are variants of it, ordered by step time (rounded to 12 significant
// digits: the estimate's sums vary in the last bit between runs), then peak
// memory, less recomputation, the simpler optimizer sharding, the smaller
// micro batch; the first represents the shape. Shapes whose step time is
// within the noise band (DefaultNoiseBand, 4.8%: the model's measured
// error in ranking two plans) of the fastest shape's come first, simplest
// first — the smaller tp·cp·pp, fewer pipeline stages, less
// context parallelism, fewer virtual stages, the simpler split (even, then
// accounted, then uneven), then ep, tp, etp — and the others follow by
// step time. The top K distinct parallel shapes (tp, cp, pp, ep, etp) are
// returned, each the first of its schedules and splits in that order, with
// its other plans, virtual-stage counts and splits as variants, and the
// first is explained in words (what its step is made of, the margin to the
// runner-up, a faster shape the band passed over).
//
// Counts: Space = Pruned + Infeasible + Feasible + Bounded.
//
// TestSolveMatchesBruteForce runs the whole compiler on every value of every
// open field (and every split of the documented family) of small specs and
// finds the same top K; TestPublishedPlans checks published plans (papers,
// NVIDIA's recipes) against parc's pick.
package solve
