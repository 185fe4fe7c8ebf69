package estimate

import (
	"parc.dev/parc/internal/spec"
)

// What a plan search needs of the estimate, without the parts of Run it
// does not read: a search estimates thousands of plans and reads of most
// only whether they fit, and of its bounds only the step time. Each
// returns exactly the numbers Run returns for the same plan (the memory
// model never reads the step time, and the time model never reads the
// memory; TestSearchParts compares them).

// Fit is Run's Memory of s, without the step time: whether a plan fits
// (ExceedsGPU is Run's memory-exceeds-gpu error), and by how much it does
// not.
func Fit(s *spec.Spec, d spec.Derived) Memory {
	var c costModel
	c.init(s, d, resolveOptions(s, DefaultOptions()))
	e := &Estimate{Comms: map[string]AxisComm{}}
	c.memory(e) // memory reads no Params
	return e.Memory
}

// ExceedsGPU reports whether the peak stage needs more than the GPU's
// memory: Run's memory-exceeds-gpu error, its only error.
func (m Memory) ExceedsGPU() bool {
	return m.GPUBytes > 0 && len(m.Stages) > 0 && m.Stages[m.PeakStage].Total > m.GPUBytes
}

// StepTime is Run's estimate of s without the parameter counts, the memory
// and the diagnostics: Pipeline, Comms, the step time and Compute are Run's;
// Params and Memory are empty.
func StepTime(s *spec.Spec, d spec.Derived, links map[string]string) *Estimate {
	o := resolveOptions(s, DefaultOptions())
	link := linkOf(s, d, links)
	var c costModel
	c.init(s, d, o)
	e := &Estimate{Comms: map[string]AxisComm{}}
	c.pipeline(e) // neither reads Params
	c.time(e, link)
	return e
}
