package solve

import (
	"path/filepath"
	"testing"

	"parc.dev/parc/internal/load"
)

func loadFile(tb testing.TB, path string) *load.Result {
	tb.Helper()
	res, ds := load.Load(load.Source{Path: path})
	if res == nil || ds.HasErrors() {
		tb.Fatalf("load %s: %v", path, ds)
	}
	return res
}

func benchSolve(b *testing.B, path string) {
	res := loadFile(b, path)
	b.ResetTimer()
	for b.Loop() {
		r, ds := Solve(res, Options{})
		if len(r.Candidates) == 0 {
			b.Fatalf("no candidate: %v", ds)
		}
	}
}

// BenchmarkSolve405B16k: Llama 3.1 405B on 16,384 GPUs, every degree open.
func BenchmarkSolve405B16k(b *testing.B) { benchSolve(b, "testdata/bench-405b-16k.cue") }

// BenchmarkSolveDeepSeek2k: DeepSeek-V3 on 2,048 GPUs, every degree open.
func BenchmarkSolveDeepSeek2k(b *testing.B) { benchSolve(b, "testdata/bench-deepseek-2k.cue") }

// BenchmarkLoadAndSolve405B16k includes loading the spec (CUE, stdlib).
func BenchmarkLoadAndSolve405B16k(b *testing.B) {
	for b.Loop() {
		res := loadFile(b, "testdata/bench-405b-16k.cue")
		if r, ds := Solve(res, Options{}); len(r.Candidates) == 0 {
			b.Fatalf("no candidate: %v", ds)
		}
	}
}

// BenchmarkLoadAndSolveDeepSeek2k includes loading the spec.
func BenchmarkLoadAndSolveDeepSeek2k(b *testing.B) {
	for b.Loop() {
		res := loadFile(b, "testdata/bench-deepseek-2k.cue")
		if r, ds := Solve(res, Options{}); len(r.Candidates) == 0 {
			b.Fatalf("no candidate: %v", ds)
		}
	}
}

// BenchmarkSolve405B1kOpen: Llama 3.1 405B on 1,024 H100s, every degree,
// the micro batch, recompute and the pipeline split open.
func BenchmarkSolve405B1kOpen(b *testing.B) { benchSolve(b, "testdata/acceptance/llama3-405b-1k.cue") }

// BenchmarkSolve405B16kOpen: the same on 16,384 H100s.
func BenchmarkSolve405B16kOpen(b *testing.B) {
	benchSolve(b, "testdata/acceptance/llama3-405b-16k.cue")
}

// BenchmarkSolveDeepSeek1kOpen: DeepSeek-V3 on 1,024 H100s, everything open.
func BenchmarkSolveDeepSeek1kOpen(b *testing.B) {
	benchSolve(b, "testdata/acceptance/deepseek-v3-1k.cue")
}

// BenchmarkSolveDeepSeek1kShardingOpen: the same with the optimizer
// sharding open too (distributed optimizer and Megatron-FSDP).
func BenchmarkSolveDeepSeek1kShardingOpen(b *testing.B) {
	benchSolve(b, "testdata/deepseek-v3-1k-sharding-open.cue")
}

// BenchmarkSolveQwen3GB300Open: Qwen3-235B-A22B on 256 GB300, everything
// open; hundreds of shapes within the noise band.
func BenchmarkSolveQwen3GB300Open(b *testing.B) {
	benchSolve(b, "testdata/scale/qwen3-235b-gb300-256.cue")
}

// BenchmarkSolveQwen3GB300FSDPOpen: the same with train.fsdp open.
func BenchmarkSolveQwen3GB300FSDPOpen(b *testing.B) {
	benchSolve(b, "testdata/scale/qwen3-235b-gb300-256-fsdp-open.cue")
}

// BenchmarkLoadAndSolve405B16kOpen includes loading the spec.
func BenchmarkLoadAndSolve405B16kOpen(b *testing.B) {
	for b.Loop() {
		res := loadFile(b, "testdata/acceptance/llama3-405b-16k.cue")
		if r, ds := Solve(res, Options{}); len(r.Candidates) == 0 {
			b.Fatalf("no candidate: %v", ds)
		}
	}
}

// BenchmarkLoadAndSolveDeepSeek1kOpen includes loading the spec.
func BenchmarkLoadAndSolveDeepSeek1kOpen(b *testing.B) {
	for b.Loop() {
		res := loadFile(b, "testdata/acceptance/deepseek-v3-1k.cue")
		if r, ds := Solve(res, Options{}); len(r.Candidates) == 0 {
			b.Fatalf("no candidate: %v", ds)
		}
	}
}

// BenchmarkWorkUnit measures what a unit of the search's work budget
// (budget.go) costs: each search's time over the units it counted, reported
// as ns/unit (about 1 where the units are calibrated) with the units each
// spends. Two searches that stop at the budget, two that finish:
//
//	go test ./internal/solve -run '^$' -bench WorkUnit -benchtime 1x -count 3
func BenchmarkWorkUnit(b *testing.B) {
	for _, path := range []string{
		"testdata/budget/huge.cue",               // 65,536 layers: the per-layer cost
		"testdata/budget/divisible.cue",          // many cheap plans: the fixed and heap costs
		"testdata/budget/wide-moe.cue",           // millions of plans stored: the heap and memory
		"testdata/acceptance/deepseek-v3-1k.cue", // the acceptance searches
		"testdata/acceptance/llama3-405b-16k.cue",
	} {
		res := loadFile(b, path)
		b.Run(filepath.Base(path), func(b *testing.B) {
			var units int64
			for b.Loop() {
				sv, ds := newSolver(res, Options{Top: DefaultTop, NoiseBand: DefaultNoiseBand})
				if sv == nil {
					b.Fatal(ds)
				}
				sv.run()
				units += sv.work
			}
			b.ReportMetric(float64(units)/float64(b.N), "units/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
		})
	}
}
