package estimate

import (
	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// Links a process-group family can cross (the layout's names).
const (
	LinkNVLink  = layout.LinkNVLink
	LinkNetwork = layout.LinkNetwork
)

// DefaultLinks is the link of every process-group family when the caller
// gives none: the layout stage's summary for the spec (a family is "nvlink"
// when each of its groups stays inside one NVLink domain). It returns an
// empty map when the degrees do not tile the cluster (check reports that);
// every family then counts as crossing the network.
func DefaultLinks(s *spec.Spec, d spec.Derived) map[string]string {
	out := map[string]string{}
	l, _ := layout.Build(s, d)
	if l == nil {
		return out
	}
	for _, f := range l.Summaries {
		out[f.Name] = f.Link
	}
	return out
}
