package spec

// OpenField is a spec field `parc solve` may fill when the user leaves it
// open (`tp: int`, `tp: 1 | 2 | 4 | 8`, `pp: >=2`, `account_for_loss: bool`).
// This is the one list of them: internal/load decides which are open,
// internal/solve searches them, and results list them in this order.
type OpenField int

// The open fields, in the order results list them.
const (
	OpenTP OpenField = iota
	OpenPP
	OpenVPP
	OpenCP
	OpenEP
	OpenETP
	OpenMicroBatch
	OpenRecompute
	OpenAccountForEmbedding
	OpenAccountForLoss
	OpenFirstStageLayers
	OpenLastStageLayers
	OpenDistributedOptimizer
	OpenFSDP
	NumOpenFields
)

var openPaths = [NumOpenFields]string{
	OpenTP:                   "parallel.tp",
	OpenPP:                   "parallel.pp",
	OpenVPP:                  "parallel.vpp",
	OpenCP:                   "parallel.cp",
	OpenEP:                   "parallel.ep",
	OpenETP:                  "parallel.etp",
	OpenMicroBatch:           "train.micro_batch",
	OpenRecompute:            "train.recompute",
	OpenAccountForEmbedding:  "parallel.account_for_embedding",
	OpenAccountForLoss:       "parallel.account_for_loss",
	OpenFirstStageLayers:     "parallel.first_stage_layers",
	OpenLastStageLayers:      "parallel.last_stage_layers",
	OpenDistributedOptimizer: "train.distributed_optimizer",
	OpenFSDP:                 "train.fsdp",
}

// Path is the field's dotted path in the spec.
func (f OpenField) Path() string { return openPaths[f] }

// GroupSizePath is parallel.microbatch_group_size (Megatron's
// --microbatch-group-size-per-virtual-pipeline-stage). A user may leave it
// open too; it is not an OpenField because the solver chooses it per plan
// with the interleaved schedule (internal/solve/group.go), not as a degree.
const GroupSizePath = "parallel.microbatch_group_size"

// LayoutPath is parallel.layout and RecomputeModulesPath
// train.recompute_modules. A user may leave them open too (`layout: string`,
// `layout: "Et|(tt|)*30mL" | "Et*4|(t*4|)*14tmL"`, `recompute_modules:
// [...string]`, a disjunction of lists); they are not OpenFields because the
// solver chooses them with the pipeline split and the recomputation
// (internal/solve/choice.go), not as degrees.
const (
	LayoutPath           = "parallel.layout"
	RecomputeModulesPath = "train.recompute_modules"
)

// RecomputeMethodPath is train.recompute_method and RecomputeLayersPath
// train.recompute_layers. Left open (`recompute_method: string`,
// `recompute_layers: int`) parc chooses them with full recomputation as when
// the spec writes neither: the fewest layers of each model chunk that fit,
// with the block method, or every layer.
const (
	RecomputeMethodPath = "train.recompute_method"
	RecomputeLayersPath = "train.recompute_layers"
)

// DataParallelPath is parallel.dp and SequenceParallelPath parallel.sp.
// Left open (`dp: int`, `dp: >=16`, `sp: bool`) they follow each plan as
// when they are not written: dp is derived from the world and the other
// degrees (within the user's constraint), sp is on with tp > 1.
const (
	DataParallelPath     = "parallel.dp"
	SequenceParallelPath = "parallel.sp"
)

// OpenPaths lists the OpenFields' paths, in OpenField order.
func OpenPaths() []string { return append([]string(nil), openPaths[:]...) }

// LeaveOpenPaths lists every field a user may leave open for parc solve:
// the OpenFields, then the fields chosen with them (the layout, the
// recomputation's modules, method and layers, dp and sp), and the
// microbatch group last.
func LeaveOpenPaths() []string {
	return append(OpenPaths(), LayoutPath, RecomputeModulesPath, RecomputeMethodPath, RecomputeLayersPath,
		DataParallelPath, SequenceParallelPath, GroupSizePath)
}

// OpenFieldOf returns the open field at path.
func OpenFieldOf(path string) (OpenField, bool) {
	for f, p := range openPaths {
		if p == path {
			return OpenField(f), true
		}
	}
	return -1, false
}

// PipelineSplitFields are the open fields that decide how the decoder layers
// split over the pipeline stages (beside pp and vpp).
var PipelineSplitFields = []OpenField{OpenAccountForEmbedding, OpenAccountForLoss, OpenFirstStageLayers, OpenLastStageLayers}
