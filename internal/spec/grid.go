package spec

import "math"

// The rank orders Megatron-Core's training entry point can build
// (megatron/training/initialize.py at d98e8a64: RankGenerator gets
// "tp-cp-ep-dp-pp", or "tp-cp-ep-pp-dp" when --use-tp-pp-dp-mapping is
// given). parallel.order must be one of them.
const (
	// OrderDefault is Megatron's default: pp outermost.
	OrderDefault = "tp-cp-ep-dp-pp"
	// OrderPPDP is what OrderPPDPFlag selects: dp outermost.
	OrderPPDP = "tp-cp-ep-pp-dp"
	// OrderPPDPFlag is the Megatron argument that selects OrderPPDP.
	OrderPPDPFlag = "--use-tp-pp-dp-mapping"
)

// MaxWorld is the largest world parc lays out (2^22 GPUs, 32 times the
// 131,072-GPU layout benchmark); beyond it launch.json alone would be
// gigabytes.
const MaxWorld = 1 << 22

// MaxGlobalBatch is the largest train.global_batch the schema accepts
// (schema/plan.cue; TestMaxGlobalBatchIsTheSchemas).
const MaxGlobalBatch = 1 << 30

// Replicas is Megatron's grid rule (initialize_model_parallel in
// megatron/core/parallel_state.py: "world_size (%d) is not divisible by
// %d"): a grid whose axes have the given degrees — the dense grid tp·pp·cp,
// the expert grid etp·ep·pp — tiles a world of GPUs when the product of its
// degrees divides the world size. Replicas returns how many copies of the
// grid fit (the data-parallel size of that grid) and whether they tile the
// world exactly. A degree below 1, or a product that overflows, never tiles.
func Replicas(world int, degrees ...int) (n int, ok bool) {
	p := 1
	for _, d := range degrees {
		if d < 1 || p > math.MaxInt/d {
			return 0, false
		}
		p *= d
	}
	if world < 1 {
		return 0, false
	}
	return world / p, world%p == 0
}

// Tiles reports whether a grid of the given degrees tiles the world (see
// Replicas).
func Tiles(world int, degrees ...int) bool {
	_, ok := Replicas(world, degrees...)
	return ok
}
