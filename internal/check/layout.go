package check

import (
	"errors"
	"fmt"
	"strings"

	"parc.dev/parc/internal/spec"
)

// pipelineLayout checks parallel.layout (--pipeline-model-parallel-layout)
// with Megatron-Core's rules: validate_args (the stage count is a multiple of
// pp and gives the virtual stages), TransformerConfig.__post_init__ (no
// first/last-stage layers or account-for flags beside it) and
// PipelineParallelLayerLayout.validate_layer_layout (embedding first, loss
// last, each once; every decoder and MTP layer placed; MTP after the decoder,
// in one stage, the last virtual stage of a rank that is not the first).
func (c *checker) pipelineLayout() {
	p := c.s.Parallel
	const path = "parallel.layout"
	var others []string
	var unset []setting
	if p.FirstStageLayers != nil {
		others = append(others, "first_stage_layers")
		unset = append(unset, setting{"parallel.first_stage_layers", nil})
	}
	if p.LastStageLayers != nil {
		others = append(others, "last_stage_layers")
		unset = append(unset, setting{"parallel.last_stage_layers", nil})
	}
	if p.AccountForEmbedding {
		others = append(others, "account_for_embedding")
		unset = append(unset, setting{"parallel.account_for_embedding", removed{false}})
	}
	if p.AccountForLoss {
		others = append(others, "account_for_loss")
		unset = append(unset, setting{"parallel.account_for_loss", removed{false}})
	}
	if len(others) > 0 {
		c.report("pipeline-layout", path, c.anyOf("pipeline-layout", path, setOpt(unset...).note("the layout places every layer itself")),
			"parallel.layout cannot be combined with %s (TransformerConfig rejects other pipeline layout arguments)", strings.Join(others, ", "))
	}
	l, err := spec.ParsePipelineLayout(*p.Layout)
	if err != nil {
		var le *spec.LayoutError
		msg := err.Error()
		if errors.As(err, &le) {
			msg = fmt.Sprintf("at character %d of the layout: %s", le.Offset+1, le.Msg)
		}
		c.report("pipeline-layout", path, "write stages of E, t, m, L separated by |, e.g. \"Et*2|t*2|t*2|t*2L\"", "parallel.layout: %s", msg)
		return
	}
	// The stage count against pp and vpp, then what the stages hold: the
	// two are independent (parc's Megatron target writes the layout, not
	// vpp, and Megatron validates the layout's content whatever its stage
	// count), so a plan wrong in both hears of both at once.
	n := len(l.Stages)
	stagesOK := n%p.PP == 0
	if !stagesOK {
		c.report("pipeline-layout", path, fmt.Sprintf("give pp·vpp stages: a multiple of pp=%d", p.PP),
			"parallel.layout has %d stages, which is not a multiple of pp=%d", n, p.PP)
	} else if c.specVPP != 0 { // the spec's vpp, which the other rules do not see (layoutStages)
		vpp := n / p.PP
		c.report("pipeline-layout", "parallel.vpp", c.anyOf("pipeline-layout", "parallel.vpp", setOpt(setting{"parallel.vpp", vpp})),
			"parallel.layout has %d stages = pp %d × %d virtual stages, but vpp=%d", n, p.PP, vpp, c.specVPP)
	}
	type fault struct{ hint, msg string }
	var faults []fault
	add := func(hint, format string, args ...any) {
		faults = append(faults, fault{hint, fmt.Sprintf(format, args...)})
	}
	flat := l.Flat()
	if !strings.HasPrefix(flat, "E") {
		add("start the layout with E", "the first layer of parallel.layout must be the embedding (E)")
	}
	if !strings.HasSuffix(flat, "L") {
		add("end the layout with L", "the last layer of parallel.layout must be the loss (L)")
	}
	if e := l.Count('E'); e != 1 {
		add("write E once", "parallel.layout has %d embedding layers (E); it must have exactly one", e)
	}
	if lo := l.Count('L'); lo != 1 {
		add("write L once", "parallel.layout has %d loss layers (L); it must have exactly one", lo)
	}
	if d := l.Count('t'); d != c.s.Model.Layers {
		add(fmt.Sprintf("place model.layers=%d decoder layers (t)", c.s.Model.Layers),
			"parallel.layout places %d decoder layers (t), but model.layers=%d", d, c.s.Model.Layers)
	}
	mtp := c.s.Model.MTPLayers
	if m := l.Count('m'); m != mtp {
		add(fmt.Sprintf("place model.mtp_layers=%d MTP layers (m)", mtp),
			"parallel.layout places %d MTP layers (m), but model.mtp_layers=%d", m, mtp)
	} else if mtp > 0 && stagesOK {
		vpp := n / p.PP
		for i, s := range l.Stages {
			r, v := i%p.PP, i/p.PP
			switch m := s.Count('m'); {
			case m == 0:
			case v != vpp-1:
				add("put the MTP layers in a rank's last virtual stage",
					"stage %d (rank %d, virtual stage %d) holds MTP layers; Megatron allows them only in a rank's last virtual stage", i, r, v)
			case m != mtp:
				add("put all MTP layers in one stage", "stage %d holds %d of the %d MTP layers; all must be in one stage", i, m, mtp)
			}
		}
		if k := strings.IndexByte(flat, 'm'); strings.Contains(flat[k:], "t") {
			add("place every t before the first m", "parallel.layout has decoder layers (t) after an MTP layer (m)")
		}
	}
	for _, f := range faults {
		c.report("pipeline-layout", path, f.hint, "%s", f.msg)
	}
}
