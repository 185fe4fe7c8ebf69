package estimate

import (
	"math"
	"slices"

	"parc.dev/parc/internal/spec"
)

// Pipeline schedules.
const (
	ScheduleNone        = "none"             // pp = 1: microbatches run back to back
	Schedule1F1B        = "1f1b"             // PipeDream-flush one-forward-one-backward
	ScheduleInterleaved = "interleaved-1f1b" // Megatron's virtual-stage schedule
)

// BubbleFraction is the idle fraction of a pipeline step: (p−1)/(m+p−1) for
// 1F1B (and GPipe), (p−1)/(v·m+p−1) for the interleaved schedule with v
// virtual stages per rank (Narayanan et al. 2021).
func BubbleFraction(p, v, m int) float64 {
	if p <= 1 || m < 1 {
		return 0
	}
	if v < 1 {
		v = 1
	}
	return float64(p-1) / float64(v*m+p-1)
}

// MicrobatchesForBubble is the smallest microbatch count m that brings the
// bubble to at most target, for p ranks and v virtual stages. The interleaved
// schedule needs m ≥ g and m mod g either 0 or ≥ p (g = microbatch group
// size, default p; Megatron's schedules.py); m is chosen to satisfy that. It
// returns 0 when no m reaches the target (target ≤ 0).
func MicrobatchesForBubble(p, v, g int, target float64) int {
	if p <= 1 {
		return 1
	}
	if target <= 0 {
		return 0
	}
	if v < 1 {
		v = 1
	}
	if g < 1 {
		g = p
	}
	// (p−1)/(v·m+p−1) ≤ target  ⇔  v·m ≥ (p−1)/target − (p−1).
	need := float64(p-1)/target - float64(p-1)
	m := max(1, int(need/float64(v)))
	for float64(p-1) > target*float64(v*m+p-1) {
		m++
	}
	for m > 1 && float64(p-1) <= target*float64(v*(m-1)+p-1) {
		m--
	}
	if v > 1 {
		for !interleavedMicrobatchesOK(p, g, m) {
			m++
		}
	}
	return m
}

// interleavedMicrobatchesOK is Megatron's rule for the interleaved schedule:
// g ≤ m, and m mod g is 0 or at least p.
func interleavedMicrobatchesOK(p, g, m int) bool {
	if g > m {
		return false
	}
	r := m % g
	return r == 0 || r >= p
}

// interleavedTable is Megatron's schedule table: microbatches in groups of g,
// each group running through every model chunk in order. Entry k is the model
// chunk of the k-th forward pass on every rank.
func interleavedTable(m, v, g int) []int {
	var chunks []int
	for start := 0; start < m; start += g {
		end := min(start+g, m)
		for c := range v {
			for range end - start {
				chunks = append(chunks, c)
			}
		}
	}
	return chunks
}

// InFlight returns, for pipeline rank r of p, how many forward passes of each
// of its v model chunks hold activations at the peak of the schedule: the
// warm-up forwards plus the one the steady state starts with (Megatron's
// schedules.py: 1F1B warms up with p−r−1 forwards, the interleaved schedule
// with 2(p−r−1) + (v−1)·g).
func InFlight(p, v, m, g, r int) []int {
	if v < 1 {
		v = 1
	}
	out := make([]int, v)
	if m < 1 {
		return out
	}
	if p <= 1 {
		out[0] = 1
		return out
	}
	if v == 1 {
		out[0] = min(p-r, m)
		return out
	}
	if g < 1 {
		g = p
	}
	total := m * v
	warmup := (p-r-1)*2 + (v-1)*g
	slots := min(warmup+1, total)
	// The first slots entries of interleavedTable, counted without building
	// it (m·v entries per rank would dominate a solver's time).
	for start := 0; start < m && slots > 0; start += g {
		size := min(g, m-start)
		for c := 0; c < v && slots > 0; c++ {
			take := min(size, slots)
			out[c] += take
			slots -= take
		}
	}
	return out
}

// peakInFlight is, for rank r of Megatron's interleaved schedule, how many
// microbatches of each model chunk are alive when the bytes they keep
// (weight[c] per microbatch of chunk c) peak. schedules.py at d98e8a64
// (forward_backward_pipelining_with_interleaving): the warm-up runs
// 2(p−r−1) + (v−1)·g forwards, then each steady-state step runs the next
// forward and then the oldest backward, then the cool-down the remaining
// backwards. The k-th forward runs chunk table[k] (get_schedule_table), the
// k-th backward chunk v−1−table[k] (get_model_chunk_id with forward=False),
// so a step can free a lighter chunk than it fills — on the last rank the
// backward of the loss-only chunk frees no layer while a full chunk's
// forward fills one; the peak is then after a later forward than InFlight's
// count. With equal weights it is InFlight's.
func peakInFlight(p, v, m, g, r int, weight []float64) []int {
	first := InFlight(p, v, m, g, r)
	if v < 2 || p < 2 || m < 1 {
		return first
	}
	if g < 1 {
		g = p
	}
	even := true
	for _, x := range weight {
		even = even && x == weight[0]
	}
	total := m * v
	warmup := min((p-r-1)*2+(v-1)*g, total)
	if even || warmup >= total {
		return first
	}
	full, last := m/g*g*v, max(m%g, 1)
	alive := make([]int, v)
	var bytes float64
	fwd := newChunkSeq(0, full, g, v, last)
	for range warmup {
		alive[fwd.c]++
		bytes += weight[fwd.c]
		fwd.next()
	}
	bwd := newChunkSeq(0, full, g, v, last)
	best, at := -1.0, slices.Clone(alive)
	// The steady state repeats every g·v steps while its forwards stay in
	// the full groups: when a period ends in the state it began with
	// (exactly the same bytes and microbatches alive), the periods after it
	// repeat it bit for bit and cannot raise the peak, so they are skipped.
	period := g * v
	mark, markAlive := bytes, slices.Clone(alive)
	for k := 0; warmup+k < total; k++ {
		if k > 0 && k%period == 0 {
			if bytes == mark && slices.Equal(alive, markAlive) {
				skipped := k
				for warmup+k+period <= full {
					k += period
				}
				if k != skipped {
					fwd = newChunkSeq(warmup+k, full, g, v, last)
					bwd = newChunkSeq(k, full, g, v, last)
				}
			}
			mark = bytes
			copy(markAlive, alive)
		}
		c := fwd.c
		alive[c]++
		bytes += weight[c]
		if bytes > best {
			best = bytes
			copy(at, alive)
		}
		b := v - 1 - bwd.c
		alive[b]--
		bytes -= weight[b]
		fwd.next()
		bwd.next()
	}
	return at
}

// chunkSeq walks interleavedTable(m, v, g) without building it: the k-th
// forward's model chunk is c, (k mod g·v)/g in the full groups of g
// microbatches (the first full = m/g·g·v forwards), then (k − full)/last in
// the last group of last = m mod g (peakInFlight's steady state takes one
// step per forward, and divisions are its cost).
type chunkSeq struct {
	k, full, g, v, last int
	pos, c              int // k's position in its run of one chunk, and the chunk
}

func newChunkSeq(k, full, g, v, last int) chunkSeq {
	q := chunkSeq{k: k, full: full, g: g, v: v, last: last}
	if k < full {
		q.pos, q.c = k%g, k%(g*v)/g
	} else {
		q.pos, q.c = (k-full)%last, (k-full)/last
	}
	return q
}

func (q *chunkSeq) next() {
	q.k++
	size := q.last
	switch {
	case q.k == q.full:
		q.pos, q.c = 0, 0
		return
	case q.k < q.full:
		size = q.g
	}
	q.pos++
	if q.pos == size {
		q.pos = 0
		q.c++
		if q.k < q.full && q.c == q.v {
			q.c = 0
		}
	}
}

// stageLayout returns the layers of every (pipeline rank, virtual stage),
// from the derived split, or an even split when the spec's split is invalid
// (check reports that; the estimate still gives numbers).
func stageLayout(s *spec.Spec, d spec.Derived, pp, vpp int) [][]spec.LayerRange {
	if len(d.Stages) == pp && pp > 0 && len(d.Stages[0]) == vpp {
		return d.Stages
	}
	layers := s.Model.Layers
	chunks := pp * vpp
	out := make([][]spec.LayerRange, pp)
	for r := range out {
		out[r] = make([]spec.LayerRange, vpp)
	}
	next := 0
	for v := range vpp {
		for r := range pp {
			i := v*pp + r
			n := layers/chunks + boolInt(i < layers%chunks)
			out[r][v] = spec.LayerRange{First: next, Count: n}
			next += n
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// recomputedLayers is how many layers of a model chunk of count layers full
// recomputation runs twice. Megatron checkpoints each TransformerBlock, one
// per model chunk (num_layers_per_pipeline_rank = len(self.layers),
// transformer_block.py), by recompute_method (recompute.py,
// checkpointed_forward at d98e8a64): "uniform" reruns every layer, in groups
// of recompute_num_layers from each group's checkpointed input; "block"
// reruns the first recompute_num_layers layers of the chunk and keeps the
// rest's activations. Without full recomputation no layer is rerun whole.
func recomputedLayers(tr *spec.Train, count int) int {
	if tr.Recompute != "full" {
		return 0
	}
	if tr.RecomputeMethod == "block" {
		k := 1
		if tr.RecomputeLayers != nil {
			k = *tr.RecomputeLayers
		}
		return min(max(k, 0), count)
	}
	return count
}

// PeakMemory is Run's peak memory per GPU and the GPU's memory, without
// the step time: what a search needs to test whether a variant fits.
func PeakMemory(s *spec.Spec, d spec.Derived) (peak, gpu int64) {
	m := Fit(s, d)
	return m.PerGPUPeakBytes, m.GPUBytes
}

// interleavedFill is the time one step of Megatron's interleaved schedule
// (vpp = v > 1, overlap_p2p_comm) waits for its point-to-point transfers,
// each taking hop, when a chunk's forward of a microbatch takes fwd. The
// warm-up's 2(p−r−1) + (v−1)·g forwards (schedules.py at d98e8a64,
// forward_backward_pipelining_with_interleaving) put each rank a forward
// ahead of the rank after it, so in the steady state a transfer no longer
// than fwd runs beside compute. What waits is the first microbatch's
// forward and the last one's backward: each crosses the p−1 rank
// boundaries of every chunk, and at each of the v−1 chunk changes goes
// from rank p−1 back to rank 0, a round of p transfers that rank 0's group
// of g microbatches (microbatch_group_size_per_vp_stage, default p) covers
// only with its g−p forwards beyond the round's p. With g = p every
// crossing waits: 2(p·v−1) transfers. TestInterleavedScheduleSimulated runs
// the schedule's dependencies: exact when g = p or the group covers the
// round, an upper bound in between, and the bubble is BubbleFraction's.
func interleavedFill(p, v, g int, hop, fwd float64) float64 {
	if p < 2 || v < 2 {
		return 0
	}
	g = max(g, p)
	round := math.Max(0, float64(p)*hop-float64(g-p)*fwd)
	return 2*float64(p-1)*hop + 2*float64(v-1)*round
}
