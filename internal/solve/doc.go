// Package solve is the solve stage of the compiler: it fills the degrees a
// user left open in a spec (parallel.tp, pp, vpp, cp, ep, etp and
// train.micro_batch, train.recompute, written as `tp: int`, `tp: 1 | 2 | 4 | 8`
// or `pp: >=2`) and ranks the complete plans by the estimated step time.
//
// The search is exact: it returns the K plans the cost model (package
// estimate) rates fastest among every assignment that passes every check
// (Megatron-Core's rules in package check, the topology rules, memory fit),
// with a deterministic tie-break. It does not enumerate blindly:
//
//  1. Domains. Each open field's candidates come from the rules that bound it
//     (tp divides the heads, the query groups and the FFN; cp with seq_length
//     a multiple of 2·cp; pp splitting the layers; vpp splitting the layers of
//     one rank; ep dividing the experts; micro_batch dividing the global batch
//     per data-parallel rank), intersected with the user's own CUE constraint
//     (a value is allowed when it unifies with what the user wrote).
//  2. Rules on partial assignments. The nested enumeration tp → cp → pp → ep
//     → etp → vpp → micro_batch → recompute drops a partial assignment as soon
//     as a rule that check.Run or check.Topology would report as an error
//     fails (world divisibility, dp, sequence-parallel split, the expert grid,
//     tensor-parallel groups that would leave the NVLink domain, the global
//     batch, the interleaved schedule's microbatch rule). Which link each
//     process-group family crosses is computed in closed form, without
//     building the groups (see crosses).
//  3. Branch and bound. Every remaining assignment gets a lower bound of its
//     step time: (m + (p−1)/v)/p × the compute of one microbatch through the
//     whole model, then, lazily, the same with the whole model's exposed
//     tensor/context/expert communication (a one-stage estimate shared by all
//     assignments with the same tp, cp, ep, etp and links, scaled by the
//     micro batch). Assignments are estimated in order of their bound; the
//     search stops when the bound exceeds the K-th best step time found. A
//     plan whose weights, gradients and optimizer state alone exceed the GPU's
//     memory rules out every micro_batch and recompute choice with the same
//     grid and vpp.
//  4. Verification. The K best are rebuilt the way `parc vet` builds a plan:
//     the open fields are filled into the user's CUE value and decoded, then
//     check.Run, layout.Build, check.Topology and estimate.Run run on the
//     result. A candidate that fails (a cross-field CUE constraint, say) is
//     dropped and the search resumes.
//
// During the search the estimate gets every family's link from the closed
// form, so it never builds a layout (TestFastEstimateMatchesReal checks the
// numbers are the ones estimate.Run gives with the layout's links).
//
// Ranking: step time rounded to 12 significant digits (the estimate's sums
// vary in the last bit between runs), then the smaller model-parallel group
// tp·pp·cp, then the lower peak memory, then tp, cp, pp, ep, etp, vpp,
// micro_batch, recompute ascending; the output is the same every run. An etp
// left open on a dense model stays unset (etp = tp): it would only shape the
// unused expert grid.
//
// TestSolveMatchesBruteForce runs the whole compiler on every value of every
// open field of small specs and finds the same top K; TestPublishedPlans
// checks published plans (papers, NVIDIA's recipes) pass every check and are
// in the top 5 or beaten by it.
package solve
