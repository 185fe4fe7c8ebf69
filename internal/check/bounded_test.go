package check

import (
	"regexp"
	"strconv"
	"testing"

	"parc.dev/parc/schema"
)

// TestHintSearchIsBounded: the ranges a hint searches come from the spec (a
// microbatch count of 2^30 from global_batch 2^30, a microbatch group of
// 10^9, the world size), so the search looks at a bounded number of
// candidates. Before the bound, a microbatch group of 3·10^9 ran the
// nearest-global-batch search for minutes, and global_batch 2^30 with
// vpp made valuesIn allocate 14 GB (re-probe of issue 12 item 5).
func TestHintSearchIsBounded(t *testing.T) {
	calls := 0
	count := func(int) bool {
		if calls++; calls > 4*maxScanned {
			t.Fatalf("valuesIn looked at more than %d candidates", 4*maxScanned)
		}
		return true
	}
	if got := valuesIn(1, 1<<30, count); len(got) > maxScanned {
		t.Errorf("valuesIn(1, 2^30) kept %d values, more than %d", len(got), maxScanned)
	}
	calls = 0
	nearestSatisfying(3_000_000_000, 1, 4*3_000_000_000, func(v int) bool { count(v); return false })
	if calls > 2*maxScanned+2 {
		t.Errorf("nearestSatisfying tried %d candidates", calls)
	}
}

// TestHintsStayInsideTheSchema: a value a hint suggests passes the schema's
// bounds as well as the rules. With global_batch at the schema's limit
// (2^30) and a microbatch group of 2^30-1, the nearest global batches the
// rules accept are 2^30-1 and 2^30+1; only the first loads.
func TestHintsStayInsideTheSchema(t *testing.T) {
	s := specFrom(t, parse(t, `{"cluster": {"nodes": 1, "gpus_per_node": 2},
		"parallel": {"tp": 1, "pp": 2, "vpp": 2, "microbatch_group_size": 1073741823},
		"train": {"micro_batch": 1, "global_batch": 1073741824}}`))
	found := false
	for _, d := range runSpec(s) {
		if d.Code != "interleave-microbatches" {
			continue
		}
		found = true
		for _, m := range regexp.MustCompile(`\d{6,}`).FindAllString(d.Hint, -1) {
			if n, _ := strconv.Atoi(m); n > 1<<30 {
				t.Errorf("hint suggests %d, above the schema's bound 2^30 for train.global_batch: %s", n, d.Hint)
			}
		}
	}
	if !found {
		t.Fatal("no interleave-microbatches diagnostic")
	}
	if !schema.Allows("train.global_batch", 1<<30) || schema.Allows("train.global_batch", 1<<30+1) || schema.Allows("train.global_batch", 0) {
		t.Error("schema.Allows does not follow train.global_batch's bounds 1..2^30")
	}
	if !schema.Allows("cluster.gpu.compute_capability", 9.0) || schema.Allows("cluster.gpu.compute_capability", 0.5) {
		t.Error("schema.Allows does not follow compute_capability's bounds 1..100")
	}
}
