// Package layout is the layout stage of the compiler: it lays a checked plan's
// ranks onto the cluster and computes every process group Megatron-Core builds.
//
// Ranks. Megatron-Core (megatron/core/parallel_state.py, RankGenerator and
// generate_masked_orthogonal_rank_groups, at commit d98e8a64dd) builds two
// orthogonal grids over the same world: the dense ("decoder") grid with axes
// tp, cp, dp, pp (ep of size 1) and the expert grid with axes etp, ep, edp, pp
// (cp of size 1), both in the order of parallel.order. The leftmost axis of the
// order has stride 1. A rank's coordinate on axis k is ⌊r/stride_k⌋ mod size_k,
// and the group of a family (a set of axes, Megatron's "token") containing r is
// the set of ranks that agree with r on every other axis. This closed form is
// exactly Megatron's enumeration: members ascending, groups ascending by their
// first member (generate_masked_orthogonal_rank_groups in Megatron-LM's
// megatron/core/parallel_state.py at d98e8a64). It makes every family O(world)
// to enumerate and O(1) per rank, so nothing is materialised until a target
// asks for it.
//
// Families (names as in launch.json), in the order Megatron creates them:
// dp-cp, dp, cp, tp-pp, tp, pp, embd, pos_embd, tp-dp-cp, tp-dp, tp-cp (dense
// grid) and ep, etp, etp-ep, etp-ep-pp, edp (expert grid).
//
// Embedding groups follow pretrain_gpt.py's get_embedding_ranks, not
// parallel_state.default_embedding_ranks: for every pipeline group, its first
// rank, plus its last rank when the embeddings are tied (model.tie_embeddings),
// plus the ranks that build MTP layers (model.mtp_layers > 0: the last stage,
// or, with parallel.layout, the ranks whose stages hold m, as get_mtp_ranks
// reads the layout; Config.MTPStages). With pp = 1 the group is the
// single rank. pos_embd is the first rank of every pipeline group (Megatron
// builds it whatever the position embedding is).
//
// Not emitted: the gtp weight-shard groups (singletons: parc does not set
// --tensor-parallel-num-weight-shards), the Gloo twins (same ranks as dp-cp,
// dp, edp), hierarchical cp sub-groups, and the distributed-optimizer instance
// groups.
//
// Placement is Slurm's block distribution (and torchrun's): global rank r runs
// on node ⌊r/gpus_per_node⌋ with local rank and GPU r mod gpus_per_node. NVLink
// domains are consecutive blocks of cluster.nvlink_domain global ranks (18
// four-GPU nodes form one 72-GPU NVL72 domain); a group's link is "nvlink" when
// all its ranks sit in one domain and "network" otherwise.
package layout
