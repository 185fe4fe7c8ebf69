package megatron

import (
	"fmt"
	"parc.dev/parc/internal/importer"
	"parc.dev/parc/internal/spec"
	"slices"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/format"

	mg "parc.dev/parc/internal/targets/megatron"
)

type renderOptions struct {
	cluster        string
	nodes, gpn     int
	presetGPN      int
	preset         bool
	file           string
	vocabAssumed   *int64
	presetUsed     string
	presetShape    string
	droppedPresets []string
	// own are the program's own options (an option and its values, by
	// index in the input), carried in launch.extra_args.
	own [][]int
}

// node is one field of the spec being written.
type node struct {
	name     string
	value    any // nil for a block
	text     string
	comment  string
	children []*node
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	c := &node{name: name}
	n.children = append(n.children, c)
	return c
}

func (n *node) set(p string, v any, comment string) {
	cur := n
	for _, seg := range strings.Split(p, ".") {
		cur = cur.child(seg)
	}
	cur.value, cur.comment = v, comment
}

// derivedDefault is parc's default for fields whose default depends on
// others, from the one place that defines it: spec.Derive for the sizes
// Megatron derives when the arguments leave them out (ffn_hidden,
// kv_channels, query_groups, the expert size, max_position_embeddings,
// etp), the schema's own expressions for overlap_param_gather,
// grad_reduce_in_bf16 and bias, spec.DefaultTPCommOverlap for tp_comm_overlap, and
// fusionDefault for the bias-dropout and bias-activation fusions. ok is false
// when the values it depends on are not known.
func derivedDefault(p string, vals map[string]any) (any, bool) {
	get := func(k string) (int, bool) {
		v, ok := asInt(vals[k])
		return int(v), ok
	}
	if p == "train.overlap_param_gather" || p == "train.grad_reduce_in_bf16" || p == "model.bias" {
		return theSchema().defaultGiven(p, vals)
	}
	if p == "kernels.bias_dropout_fusion" || p == "kernels.bias_gelu_fusion" {
		return fusionDefault(p, vals)
	}
	// The imported values as a spec, for spec.DefaultTPCommOverlap and
	// spec.Derive; each default needs its inputs.
	var s spec.Spec
	m := &s.Model
	hidden, hasHidden := get("model.hidden")
	heads, hasHeads := get("model.heads")
	seq, hasSeq := get("train.seq_length")
	m.Hidden, m.Heads, s.Train.SeqLength = hidden, heads, seq
	m.Activation, _ = vals["model.activation"].(string)
	if v, ok := get("model.ffn_hidden"); ok && p != "model.ffn_hidden" {
		m.FFNHidden = &v // the experts' default size
	}
	m.MoE = &spec.MoE{}
	m.MakeVocabDivisibleBy = 1 // Derive pads the vocabulary, not needed here
	s.Parallel.TP = 1
	if v, ok := get("parallel.tp"); ok {
		s.Parallel.TP = v
	}
	if sp, ok := vals["parallel.sp"].(bool); ok {
		s.Parallel.SP = &sp
	}
	s.Train.DeterministicMode, _ = vals["train.deterministic_mode"].(bool)
	if p == "parallel.tp_comm_overlap" {
		// The cluster may not be known here: its GPU is taken as Hopper
		// (an explicit false where parc's default is off anyway changes
		// nothing).
		s.Cluster.GPU.ComputeCapability = 9.0
		return spec.DefaultTPCommOverlap(&s), true
	}
	d := spec.Derive(&s)
	switch p {
	case "model.ffn_hidden":
		return int64(d.FFNHidden), hasHidden
	case "model.moe.ffn_hidden":
		return int64(d.MoEFFNHidden), hasHidden || m.FFNHidden != nil
	case "model.kv_channels":
		// Megatron derives it only when heads divide hidden (it asserts
		// that otherwise).
		return int64(d.KVChannels), hasHidden && hasHeads && heads > 0 && hidden%heads == 0
	case "model.query_groups":
		return int64(d.QueryGroups), hasHeads
	case "model.max_position_embeddings":
		return int64(d.MaxPositions), hasSeq
	case "parallel.etp":
		return int64(d.ETP), true
	}
	return nil, false
}

// fusionDefault is spec.DefaultBiasDropoutFusion or spec.DefaultBiasGeluFusion
// for the imported model: its linear biases, activation, layers and, with
// experts, how they run and which layers are MoE. ok is false when one of
// them is not known (the field is then written as the input has it).
func fusionDefault(p string, vals map[string]any) (any, bool) {
	var s spec.Spec
	m := &s.Model
	var ok bool
	if m.Bias, ok = vals["model.bias"].(bool); !ok {
		return nil, false
	}
	if m.Activation, ok = vals["model.activation"].(string); !ok {
		return nil, false
	}
	layers, ok := asInt(vals["model.layers"])
	if !ok {
		return nil, false
	}
	m.Layers = int(layers)
	s.Kernels.TransformerImpl, _ = vals["kernels.transformer_impl"].(string)
	if _, moe := vals["model.moe.experts"]; moe {
		// layer_freq and dense_layers left out: the schema's 1 and 0.
		e := &spec.MoE{LayerFreq: 1}
		if v, set := vals["model.moe.layer_freq"]; set {
			freq, ok := asInt(v)
			if !ok {
				return nil, false
			}
			e.LayerFreq = int(freq)
		}
		if v, set := vals["model.moe.dense_layers"]; set {
			dense, ok := asInt(v)
			if !ok {
				return nil, false
			}
			e.DenseLayers = int(dense)
		}
		if e.GroupedGEMM, ok = vals["model.moe.grouped_gemm"].(bool); !ok {
			return nil, false
		}
		m.MoE = e
	}
	if p == "kernels.bias_dropout_fusion" {
		return spec.DefaultBiasDropoutFusion(&s), true
	}
	return spec.DefaultBiasGeluFusion(&s), true
}

// render writes the spec.
func render(as []assignment, ns *mg.Namespace, cmd Command, extra map[string]bool, o renderOptions) []byte {
	s := theSchema()
	vals := map[string]any{}
	for _, a := range as {
		vals[a.path] = a.value
	}
	// derivedDefault once per path: the schema-evaluated ones cost a CUE
	// evaluation of the plan each (vals only gains model.vocab below, which
	// no derived default reads).
	type derived struct {
		v  any
		ok bool
	}
	derivedOnce := map[string]derived{}
	derivedOnceFor := func(p string) (any, bool) {
		d, seen := derivedOnce[p]
		if !seen {
			d.v, d.ok = derivedDefault(p, vals)
			derivedOnce[p] = d
		}
		return d.v, d.ok
	}
	comment := func(a assignment) string {
		var parts []string
		for _, d := range a.dests {
			if st, ok := ns.Set[d]; ok {
				parts = append(parts, fmt.Sprintf("%s (line %d)", st.Option, cmd.Args[st.Index].Line))
			}
		}
		if a.note != "" {
			return a.note
		}
		if len(parts) == 0 {
			if d, ok := derivedOnceFor(a.path); ok && d != nil {
				return "not in the arguments: Megatron's default (parc's is " + mg.Repr(d) + " here)"
			}
			if d, ok := s.defaultOf(a.path); ok {
				return "not in the arguments: Megatron's default (parc's is " + mg.Repr(d) + ")"
			}
			return "not in the arguments: Megatron's default"
		}
		return strings.Join(parts, ", ")
	}
	kept := func(a assignment) bool {
		if d, ok := derivedOnceFor(a.path); ok {
			return !mg.Equal(d, a.value)
		}
		if d, ok := s.defaultOf(a.path); ok && mg.Equal(d, a.value) {
			return false
		}
		return true
	}

	root := &node{}
	var header []string
	// The model: a preset when one matches the shape.
	model := map[string]any{}
	for _, a := range as {
		if k, ok := strings.CutPrefix(a.path, "model."); ok {
			model[k] = a.value
		}
	}
	for _, k := range []string{"ffn_hidden", "kv_channels", "query_groups", "moe.ffn_hidden"} {
		if _, moe := model["moe.experts"]; k == "moe.ffn_hidden" && !moe {
			continue // a dense model has no expert size to match a preset's
		}
		if _, ok := model[k]; !ok {
			if d, ok := derivedOnceFor("model." + k); ok && d != nil {
				model[k] = d
			}
		}
	}
	p, usable := matchPreset(model)
	presetName := ""
	if p != nil && usable && o.preset {
		presetName = p.name
	}
	if _, ok := model["vocab"]; !ok {
		v := int64(32000)
		gpt2 := vals["data.tokenizer.type"] == "GPT2BPETokenizer"
		switch {
		case p != nil:
			v, _ = asInt(p.fields["vocab"])
		case gpt2:
			v = 50257 // GPT-2's BPE vocabulary (Radford et al. 2019; gpt2-vocab.json)
		}
		if p == nil && !gpt2 {
			header = append(header, fmt.Sprintf("model.vocab is not in the arguments (the tokenizer decides it): %d is a placeholder, set the tokenizer's vocabulary size", v))
		}
		as = append(as, assignment{path: "model.vocab", value: v, note: vocabNote(p, v)})
		model["vocab"] = v
		vals["model.vocab"] = v
	}
	for _, a := range as {
		if presetName != "" {
			if k, ok := strings.CutPrefix(a.path, "model."); ok {
				pv, has := p.fields[k]
				if !has {
					pv, has = s.defaultOf(a.path)
				}
				if has && mg.Equal(pv, a.value) {
					continue
				}
				if !has {
					if d, ok := derivedOnceFor(a.path); ok && mg.Equal(d, a.value) {
						continue
					}
				}
				c := comment(a)
				if pv, inPreset := p.fields[k]; inPreset && strings.HasPrefix(c, "not in the arguments: Megatron's default (") {
					// The value overrides the preset's, not parc's default.
					c = fmt.Sprintf("not in the arguments: Megatron's default (models.%s has %s)", presetName, mg.Repr(pv))
				}
				root.set(a.path, a.value, c)
				continue
			}
		}
		if kept(a) {
			root.set(a.path, a.value, comment(a))
		}
	}
	if presetName != "" {
		// Fields Megatron derives when the arguments leave them out
		// (kv_channels = hidden/heads, ...): the preset may say otherwise
		// (DeepSeek-V3's kv_channels 128), so its value is overridden with
		// the derived one.
		for _, k := range []string{"ffn_hidden", "kv_channels", "query_groups", "moe.ffn_hidden"} {
			if _, given := vals["model."+k]; given {
				continue
			}
			d, ok := model[k]
			pv, has := p.fields[k]
			if ok && has && d != nil && !mg.Equal(pv, d) {
				root.set("model."+k, d, "not in the arguments: the value Megatron derives (models."+p.name+" says "+mg.Repr(pv)+")")
			}
		}
	}
	// The cluster: a preset and the node count.
	root.set("cluster.nodes", int64(o.nodes), "")
	if o.gpn != o.presetGPN {
		root.set("cluster.gpus_per_node", int64(o.gpn), "")
	}
	// Arguments with no field, verbatim and in the input's order, and the
	// program's own options.
	var extraWords []*node
	idx := make([]int, 0, len(extra)+len(o.own))
	for d := range extra {
		idx = append(idx, ns.Set[d].Index)
	}
	ownAt := map[int][]int{}
	for _, g := range o.own {
		idx = append(idx, g[0])
		ownAt[g[0]] = g
	}
	slices.Sort(idx)
	for _, i := range idx {
		if g, ok := ownAt[i]; ok {
			var lits []string
			for _, j := range g {
				lits = append(lits, importer.CUEString(cmd.Args[j].Text))
			}
			extraWords = append(extraWords, &node{text: strings.Join(lits, ", ") + ",",
				comment: fmt.Sprintf("line %d: an option of %s, not of pretrain_gpt.py", cmd.Args[i].Line, sanitizeComment(cmd.Program))})
			continue
		}
		var d string
		for dd, st := range ns.Set {
			if st.Index == i && extra[dd] {
				d = dd
			}
		}
		st := ns.Set[d]
		words := []string{cmd.Args[st.Index].Text}
		for _, j := range st.Values {
			if j != st.Index {
				words = append(words, cmd.Args[j].Text)
			}
		}
		var lits []string
		for _, w := range words {
			lits = append(lits, importer.CUEString(w))
		}
		extraWords = append(extraWords, &node{text: strings.Join(lits, ", ") + ",", comment: fmt.Sprintf("line %d: no spec field", cmd.Args[st.Index].Line)})
	}
	if len(extraWords) > 0 {
		root.child("launch").child("extra_args").children = extraWords
	}

	var b strings.Builder
	fmt.Fprintf(&b, "// Imported by `parc import megatron` from %s.\n", sanitizeComment(o.file))
	if cmd.Program != "" {
		fmt.Fprintf(&b, "// The training command runs %s.\n", sanitizeComment(cmd.Program))
	}
	for _, h := range header {
		fmt.Fprintf(&b, "// %s\n", h)
	}
	b.WriteString("package plan\n\nimport (\n\t\"parc.dev/stdlib/clusters\"\n")
	if presetName != "" {
		b.WriteString("\t\"parc.dev/stdlib/models\"\n")
	}
	b.WriteString(")\n")
	for _, block := range s.fields("") {
		n := findChild(root, block)
		switch block {
		case "model":
			b.WriteString("\n")
			if presetName != "" {
				if n == nil || len(n.children) == 0 {
					fmt.Fprintf(&b, "model: models.%s\n", presetName)
					continue
				}
				fmt.Fprintf(&b, "model: models.%s & ", presetName)
			} else {
				b.WriteString("model: ")
			}
			writeBlock(&b, n, "model", 0)
			continue
		case "cluster":
			fmt.Fprintf(&b, "\ncluster: clusters.%s & ", o.cluster)
			writeBlock(&b, n, "cluster", 0)
			continue
		}
		if n == nil || len(n.children) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: ", block)
		writeBlock(&b, n, block, 0)
	}
	out := []byte(b.String())
	if f, err := format.Source(out); err == nil {
		out = f
	}
	return out
}

func findChild(n *node, name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// writeBlock writes a struct in the schema's field order.
func writeBlock(b *strings.Builder, n *node, p string, depth int) {
	ind := strings.Repeat("\t", depth+1)
	if n == nil {
		b.WriteString("{}\n")
		return
	}
	if n.name == "extra_args" {
		b.WriteString("[\n")
		for _, c := range n.children {
			fmt.Fprintf(b, "%s%s // %s\n", ind, c.text, c.comment)
		}
		fmt.Fprintf(b, "%s]\n", strings.Repeat("\t", depth))
		return
	}
	b.WriteString("{\n")
	order := theSchema().fields(p)
	kids := slices.Clone(n.children)
	slices.SortStableFunc(kids, func(x, y *node) int {
		i, j := slices.Index(order, x.name), slices.Index(order, y.name)
		if i < 0 {
			i = len(order)
		}
		if j < 0 {
			j = len(order)
		}
		return i - j
	})
	for _, c := range kids {
		if c.value == nil && c.children == nil {
			continue
		}
		fmt.Fprintf(b, "%s%s: ", ind, label(c.name))
		if c.value == nil {
			writeBlock(b, c, p+"."+c.name, depth+1)
			continue
		}
		if _, null := c.value.(cueNull); null {
			b.WriteString("null")
		} else {
			b.WriteString(importer.CUELiteral(c.value))
		}
		if c.comment != "" {
			fmt.Fprintf(b, " // %s", sanitizeComment(c.comment))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "%s}\n", strings.Repeat("\t", depth))
}

// label writes a field name, quoted unless it is a plain identifier: a
// name that starts with _ is quoted too (unquoted, CUE takes it for a
// hidden field, which the spec would not see: export _X=1).
func label(name string) string {
	if strings.HasPrefix(name, "_") {
		return importer.CUEString(name)
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return importer.CUEString(name)
		}
	}
	return name
}

// sanitizeComment keeps a comment on its line.
func sanitizeComment(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85 {
			return ' '
		}
		return r
	}, s)
}

// shapeKeys decide whether a preset is the model of the arguments.
var shapeKeys = []string{"layers", "hidden", "heads", "ffn_hidden", "query_groups", "moe.experts", "moe.topk", "moe.ffn_hidden", "mla.kv_lora_rank"}

// matchPreset finds the stdlib model whose shape the arguments give, and
// reports whether the spec can use it (every preset field the arguments do
// not give has a default the arguments keep, so overrides can say the rest).
func matchPreset(model map[string]any) (*preset, bool) {
	s := theSchema()
	for _, p := range modelPresets() {
		pf := p.fields
		match := true
		for _, k := range shapeKeys {
			a, inA := model[k]
			b, inB := pf[k]
			if inA != inB || (inA && !mg.Equal(a, b)) {
				match = false
				break
			}
		}
		if v, ok := model["vocab"]; ok && match && !mg.Equal(v, pf["vocab"]) {
			match = false
		}
		if !match {
			continue
		}
		usable := true
		for k, pv := range pf {
			if k == "name" || k == "vocab" {
				continue // a label; the vocabulary the arguments leave to the tokenizer
			}
			if _, ok := model[k]; ok {
				continue
			}
			d, hasDefault := s.defaultOf("model." + k)
			if !hasDefault || !mg.Equal(d, pv) {
				// the arguments keep the schema's default (or leave an
				// optional field out) where the preset says otherwise:
				// an override can only say it when the field has a default
				if !hasDefault {
					usable = false
				}
			}
		}
		pp := p
		return &pp, usable
	}
	return nil, false
}

var (
	clustersOnce sync.Once
	clusterVals  map[string]map[string]any
)

// clusterPreset returns a stdlib cluster preset's fields.
func clusterPreset(name string) map[string]any {
	clustersOnce.Do(func() {
		clusterVals = map[string]map[string]any{}
		eachPreset("clusters", func(name string, v cue.Value) {
			m := map[string]any{}
			if g := v.LookupPath(cue.ParsePath("gpus_per_node")); g.Exists() {
				if n, err := g.Int64(); err == nil {
					m["gpus_per_node"] = n
				}
			}
			clusterVals[name] = m
		})
	})
	return clusterVals[name]
}

// ClusterPresets lists the stdlib cluster presets.
func ClusterPresets() []string {
	clusterPreset("")
	var out []string
	for k := range clusterVals {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func vocabNote(p *preset, v int64) string {
	if p == nil && v == 50257 {
		return "not in the arguments: GPT-2's BPE vocabulary (GPT2BPETokenizer)"
	}
	if p != nil {
		return "not in the arguments (the tokenizer decides it): the vocabulary of models." + p.name
	}
	return fmt.Sprintf("not in the arguments (the tokenizer decides it): %d is a placeholder, set the tokenizer's vocabulary size", v)
}
