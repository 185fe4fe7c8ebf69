package launchplan

// Version is the launch.json format version this package writes and reads.
const Version = 1

// File is launch.json: everything `parc launch` needs to start one node's
// workers, and every process group Megatron-Core will build, so that a worker
// (or a test) can check membership.
//
// launch.schema.json (embedded as Schema) is its JSON Schema; Build makes one
// from a layout and Encode writes it.
type File struct {
	Version     int `json:"version"`
	WorldSize   int `json:"world_size"`
	GPUsPerNode int `json:"gpus_per_node"`
	// Order is the Megatron rank order of the groups, completed with the
	// size-1 axes the spec left out (layout.Layout.Order).
	Order string `json:"order"`
	// MasterAddr is optional: when empty the launcher takes the first host of
	// SLURM_JOB_NODELIST (or its --master-addr flag).
	MasterAddr string `json:"master_addr,omitempty"`
	// MasterPort 0 lets the launcher choose its default.
	MasterPort int `json:"master_port"`
	// GraceSeconds is how long workers get between the stop signal (SIGTERM,
	// or the one forwarded) and SIGKILL, in seconds; 0 kills at once. nil
	// (absent) lets the launcher choose (its --grace flag, else 10 s). The
	// compiler writes launch.grace_seconds, which covers the preemption
	// warning (cluster.slurm.preempt_signal_seconds).
	GraceSeconds *int     `json:"grace_seconds,omitempty"`
	Nodes        []Node   `json:"nodes"`
	Groups       Groups   `json:"groups"`
	Env          Env      `json:"env"`
	Command      []string `json:"command"`
}

// Node is one machine of the plan.
type Node struct {
	Index   int      `json:"index"`
	Workers []Worker `json:"workers"`
}

// Worker is one process: its global rank, its rank on the node and the GPU it uses.
type Worker struct {
	Rank      int `json:"rank"`
	LocalRank int `json:"local_rank"`
	GPU       int `json:"gpu"`
}

// Groups maps a group family name (tp, pp, dp, cp, dp-cp, tp-pp, tp-dp,
// tp-dp-cp, tp-cp, ep, etp, edp, etp-ep, etp-ep-pp, embd, pos_embd) to its
// groups; each group lists ranks ascending and groups are sorted by first rank.
// embd follows pretrain_gpt.py: the first pipeline stage, plus the last when
// embeddings are tied or the model has MTP layers (see internal/layout).
type Groups map[string][][]int

// Env is the environment every worker gets on top of the launcher's own.
type Env map[string]string
