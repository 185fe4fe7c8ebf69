// Package pictures is a target: it draws a plan as SVG. PipelineSchedule
// simulates the pipeline schedule Megatron-Core runs (1F1B, or the interleaved
// schedule with virtual stages) and draws it as a space-time chart — one row
// per pipeline rank, forward and backward passes as boxes, the idle bubble
// hatched. RankLayout draws the cluster as nodes × GPUs once per parallel
// axis, each GPU coloured by the group it belongs to on that axis.
//
// Output is deterministic: fixed float formatting, no timestamps, no maps
// iterated unsorted.
package pictures
