package main

import (
	"testing"
	"time"
)

// The time limit is per spec: vet over many files in one pre-commit run
// gets a bound that grows with them.
func TestCommandTimeLimit(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"vet"}, timeLimit},
		{[]string{"vet", "a.cue"}, timeLimit},
		{[]string{"vet", "-q", "a.cue", "b.cue", "c.hcl"}, 3 * timeLimit},
		{[]string{"solve", "--top", "3", "plan.cue"}, 2 * timeLimit},
	} {
		if got := commandTimeLimit(c.args); got != c.want {
			t.Errorf("%q: %v, want %v", c.args, got, c.want)
		}
	}
}
