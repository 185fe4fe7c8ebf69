package measured

import "strings"

// PaperEra reports whether a measured run is one of the 2021-22 papers' runs
// (Narayanan et al. SC21 Table 1, ids megatron-sc21-*; MT-NLG 530B, ids
// mtnlg-*), whose software predates Megatron's distributed optimizer,
// overlapped data-parallel communication, sequence and context parallelism
// and selective recomputation. The calibration and the solver corpus write
// these runs with that software.
func PaperEra(id string) bool {
	return strings.HasPrefix(id, "megatron-sc21") || strings.HasPrefix(id, "mtnlg")
}

// PipelineInterleaves reports whether the run's pipeline engine has an
// interleaved (virtual-stage) schedule. MT-NLG's is DeepSpeed's
// PipelineModule, which has none (the rows' notes), so where its source
// leaves vpp unsaid it is 1, not open.
func PipelineInterleaves(id string) bool {
	return !strings.HasPrefix(id, "mtnlg")
}
