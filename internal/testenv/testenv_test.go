package testenv

import "testing"

// Issue 12, item 13: the readiness check looks at the partitions and nodes
// the tests need, not only at whether sinfo answers (another cluster answers
// too).
func TestCheckLayout(t *testing.T) {
	ours := "gpu* n1 idle gpu:8\ngpu* n2 mix gpu:8\ngpu* n3 alloc gpu:8\ngpu* n4 idle gpu:8\ndebug n1 idle gpu:8\ndebug n2 mix gpu:8\n"
	if got := checkLayout(ours); got != "" {
		t.Errorf("the test cluster is refused: %s", got)
	}
	for sinfo, want := range map[string]string{
		"":                            "no node gpu* n1",
		"batch* node01 idle (null)\n": "no node gpu* n1, no node gpu* n2, no node gpu* n3, no node gpu* n4, no node debug n1, no node debug n2",
		ours[:len(ours)-len("debug n2 mix gpu:8\n")]: "no node debug n2",
		"gpu* n1 down* gpu:8\n" + ours[19:]:          "gpu* n1 is down*",
		"gpu* n1 idle gpu:4\n" + ours[19:]:           "gpu* n1 has gres gpu:4",
	} {
		if got := checkLayout(sinfo); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("checkLayout(%q) = %q, want it to start with %q", sinfo, got, want)
		}
	}
}
