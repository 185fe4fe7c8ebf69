package schema

import "testing"

func TestAllows(t *testing.T) {
	for _, c := range []struct {
		path  string
		value any
		want  bool
	}{
		{"train.global_batch", 1 << 30, true},
		{"train.global_batch", 1<<30 + 1, false},
		{"train.global_batch", 0, false},
		{"cluster.gpu.compute_capability", 9.0, true},
		{"cluster.gpu.compute_capability", 0.5, false},
		{"solve.memory_headroom", 0.9, true},
		{"solve.memory_headroom", 1.5, false},
		{"model.query_groups?", 8, true},
		{"parallel.tp", 8, true},
		{"parallel.tp", -1, false},
		{"parallel.tp", "8", false},
		{"model.no_such_field", 1, false},
		{"model.no_such_field", nil, false},
		{"parallel.first_stage_layers", nil, true},
		{"launch.env.CUDA_DEVICE_MAX_CONNECTIONS", "1", true},
		{"launch.env.CUDA_DEVICE_MAX_CONNECTIONS", 1, false},
		{"parallel.sp", true, true},
		{"parallel.sp", "yes", false},
		{"train.recompute_modules", []string{"core_attn"}, true},
		{"train.recompute_modules", []string{"no_such_module"}, false},
	} {
		// Twice: the second answer comes from the memo.
		for range 2 {
			if got := Allows(c.path, c.value); got != c.want {
				t.Errorf("Allows(%q, %v) = %v, want %v", c.path, c.value, got, c.want)
			}
		}
	}
}

func BenchmarkAllows(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Allows("train.global_batch", 1024)
	}
}
