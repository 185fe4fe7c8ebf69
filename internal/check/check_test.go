package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"parc.dev/parc/internal/diag"
	"parc.dev/parc/internal/spec"
)

// Five independent mistakes give five diagnostics in one run.
func TestFiveMistakesFiveDiagnostics(t *testing.T) {
	s := specFrom(t, parse(t, `{
		"model": {"heads": 24, "hidden": 3072, "query_groups": 6, "max_position_embeddings": 1024},
		"parallel": {"tp": 4},
		"train": {"global_batch": 9, "min_lr": 0.01},
		"cluster": {"slurm": {"time": "4 hours"}}
	}`))
	l := runSpec(s)
	want := []string{"global-batch", "lr-min", "max-positions", "slurm-time", "tp-query-groups"}
	if got := codesOf(l); !slices.Equal(got, want) || len(l) != 5 {
		t.Fatalf("got %d diagnostics %v, want exactly %v\n%v", len(l), got, want, l)
	}
	if l.Errors() != 5 {
		t.Fatalf("want 5 errors, got %d", l.Errors())
	}
}

// Every diagnostic carries the blamed path, its position from the locator,
// numbers in the message and a hint.
func TestDiagnosticShape(t *testing.T) {
	s := specFrom(t, parse(t, `{"model": {"heads": 24, "hidden": 3072, "query_groups": 6}, "parallel": {"tp": 4}}`))
	locate := func(path string) diag.Pos { return diag.Pos{File: "plan.cue", Line: len(path), Column: 3} }
	l := Run(s, spec.Derive(s), locate)
	if len(l) != 1 {
		t.Fatalf("want one diagnostic, got %v", l)
	}
	d := l[0]
	if d.Path != "parallel.tp" || d.Pos != locate("parallel.tp") || d.Severity != diag.Error {
		t.Fatalf("bad blame: %+v", d)
	}
	if !strings.Contains(d.Message, "query_groups=6") || !strings.Contains(d.Message, "tp=4") {
		t.Errorf("message lacks the numbers: %q", d.Message)
	}
	// valid tp: divides 24, divides or is a multiple of 6, divides ffn 12288,
	// and tp·pp(2)·cp(1) divides 16: 1, 2, 3? no (16 % 6), 6? no → 1, 2.
	if !strings.HasSuffix(d.Hint, "valid tp here: 1, 2") {
		t.Errorf("hint: %q", d.Hint)
	}
}

func TestHints(t *testing.T) {
	cases := []struct {
		override, code, hint string
	}{
		// The example: heads=64, query_groups=8 on 8 GPUs, pp=1.
		{`{"model": {"heads": 64, "hidden": 4096, "query_groups": 8}, "cluster": {"nodes": 1}, "parallel": {"tp": 3, "pp": 1}}`,
			"tp-heads", "valid tp here: 1, 2, 4, 8"},
		// Nearest global batch below and above a multiple of mbs·dp = 4.
		{`{"train": {"global_batch": 63}}`, "global-batch", "nearest valid global_batch: 60 or 64"},
		{`{"train": {"global_batch": 2}}`, "global-batch", "nearest valid global_batch: 4"},
		// pp values dividing the layers that fit the world (tp 2, cp 1, world 16).
		{`{"model": {"layers": 12}, "parallel": {"pp": 8}}`, "pp-layers", "pp values dividing 12 that fit the world size: 1, 2, 4;"},
		{`{"parallel": {"vpp": 3}}`, "vpp-layers", "vpp values dividing 8: 1, 2, 4, 8"},
		{`{"parallel": {"vpp": 2}, "train": {"global_batch": 12}}`, "interleave-microbatches", "nearest valid global_batch: 8 or 16"},
		{`{"parallel": {"pp": 4, "first_stage_layers": 3, "last_stage_layers": 2}}`, "uneven-middle",
			"with first_stage_layers and last_stage_layers both set to the same value, valid values are 1, 2, 3, 4"},
		{`{"model": {"moe": {"experts": 6}}, "parallel": {"ep": 4, "etp": 1}}`, "ep-experts", "ep values dividing experts=6 that fit the world size: 1, 2"},
		{`{"parallel": {"tp": 1, "cp": 2}, "train": {"seq_length": 2046}}`, "cp-seq-length", "nearest valid seq_length: 2044 or 2048"},
		{`{"parallel": {"distributed_optimizer_instances": 3}}`, "distopt-instances", "valid instance counts here: 1, 2, 4"},
		{`{"train": {"precision": "fp8", "fp8_recipe": "mxfp8"}}`, "precision-fp8-gpu", "fp8 recipes this GPU supports: delayed, tensorwise, blockwise"},
		// Slurm's --segment must divide the node count (6 nodes, segment 4).
		{`{"cluster": {"nodes": 6, "slurm": {"segment": 4}}, "train": {"global_batch": 48}}`, "slurm-segment", "divisors of nodes=6: 1, 2, 3, 6"},
		// 64 GB200-like 4-GPU nodes in segments of 16 (Megatron-Bridge's
		// launcher) against a 72-GPU nvlink_domain.
		{`{"cluster": {"nodes": 64, "gpus_per_node": 4, "nvlink_domain": 72, "slurm": {"segment": 16}}, "train": {"global_batch": 256}}`,
			"slurm-segment-domain", "set cluster.nvlink_domain: 64"},
	}
	for _, tc := range cases {
		l := runSpec(specFrom(t, parse(t, tc.override)))
		i := slices.IndexFunc(l, func(d diag.Diagnostic) bool { return d.Code == tc.code })
		if i < 0 {
			t.Errorf("%s: no %s in %v", tc.override, tc.code, l)
			continue
		}
		if !strings.Contains(l[i].Hint, tc.hint) {
			t.Errorf("%s: %s hint\n got: %q\nwant: …%q…", tc.override, tc.code, l[i].Hint, tc.hint)
		}
	}
}

// TestTopology: the layout's node rule — cp and ep groups spanning nodes
// are warnings; other families (dp, pp) crossing nodes are fine.
func TestTopology(t *testing.T) {
	s := specFrom(t, nil)
	fams := []FamilyLink{
		{Family: "tp", Size: 2, Count: 8},
		{Family: "dp", Size: 4, Count: 4, GroupsLeavingNode: 4}, // dp across nodes is fine
		{Family: "pp", Size: 2, Count: 8, GroupsLeavingNode: 8},
		{Family: "cp", Size: 1, Count: 16, GroupsLeavingNode: 0},
	}
	if l := Topology(s, fams, diag.NoPos); len(l) != 0 {
		t.Fatalf("a layout with cp and ep inside nodes was flagged: %v", l)
	}
	fams = []FamilyLink{
		{Family: "cp", Size: 4, Count: 4, GroupsLeavingNode: 2},
		{Family: "ep", Size: 8, Count: 2, GroupsLeavingNode: 2},
	}
	l := Topology(s, fams, diag.NoPos)
	want := []string{"cp-crosses-node", "ep-crosses-node"}
	if got := codesOf(l); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v\n%v", got, want, l)
	}
	for _, d := range l {
		if d.Severity != diag.Warning {
			t.Errorf("CP/EP across nodes are warnings: %v", d)
		}
	}
}

// TestDomainRule: tp and etp groups leaving their NVLink domain are errors
// of Run (the rule's one owner; TestDomainRuleMatchesLayout compares it with
// the real layout), reported with the registry's severity; a domain larger
// than a node (NVL72) holds groups that leave the node.
func TestDomainRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		over string
		want []string
	}{
		{"tp 16 over 8-GPU domains", `{"cluster": {"nodes": 4}, "parallel": {"tp": 16, "pp": 1}, "model": {"heads": 32}}`, []string{"tp-crosses-nvlink"}},
		{"etp 16 over 8-GPU domains", `{"cluster": {"nodes": 4}, "parallel": {"tp": 1, "pp": 1, "etp": 16, "ep": 2},
			"model": {"bias": false, "moe": {"experts": 8}}}`, []string{"etp-crosses-nvlink"}},
		{"tp 8 inside NVL72 with 4-GPU nodes", `{"cluster": {"nodes": 18, "gpus_per_node": 4, "nvlink_domain": 72}, "parallel": {"tp": 8, "pp": 1}}`, nil},
		{"tp 2 inside 8-GPU domains", `{}`, nil},
	} {
		l := runSpec(specFrom(t, parse(t, tc.over)))
		var got []string
		for _, d := range l {
			if strings.HasSuffix(d.Code, "-crosses-nvlink") {
				got = append(got, d.Code)
				if info, _ := Lookup(d.Code); d.Severity != diag.Error || info.Severity != diag.Error {
					t.Errorf("%s: %s is %v (registry %v); a group leaving its NVLink domain is an error", tc.name, d.Code, d.Severity, info.Severity)
				}
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v\n%v", tc.name, got, tc.want, l)
		}
	}
}

func TestSlurmTime(t *testing.T) {
	good := map[string]int{"30": 1800, "30:15": 1815, "04:00:00": 14400, "1-0": 86400, "1-12": 129600,
		"2-00:30": 174600, "1-00:00:01": 86401, "infinite": -1, "UNLIMITED": -1, "0": 0}
	for in, want := range good {
		got, err := SlurmTime(in)
		if err != nil || got != want {
			t.Errorf("SlurmTime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "4h", "1:2:3:4", "-5", "1-", "a-10", "1-2:3:4:5", "1.5", " 10", "10:"} {
		if _, err := SlurmTime(in); err == nil {
			t.Errorf("SlurmTime(%q) accepted", in)
		}
	}
}

func FuzzSlurmTime(f *testing.F) {
	for _, s := range []string{"30", "04:00:00", "2-00:00:00", "1-12", "infinite", "4h", "1:2:3:4", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sec, err := SlurmTime(s)
		if err == nil && sec < -1 {
			t.Fatalf("SlurmTime(%q) = %d", s, sec)
		}
	})
}

// Every code the registry lists has a meaning and a fix; codes are kebab-case
// and unique; every diagnostic Run or Topology can emit is registered (report
// panics otherwise, which the corpus exercises).
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("duplicate code %s", c.Code)
		}
		seen[c.Code] = true
		if c.Meaning == "" || c.Fix == "" {
			t.Errorf("%s: missing meaning or fix", c.Code)
		}
		for _, r := range c.Code {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Errorf("%s is not kebab-case", c.Code)
				break
			}
		}
	}
}

// The flex dispatcher's DeepEP and NCCL EP backends dispatch over the
// tensor×expert-parallel group and assert it has more than one rank
// (MoEFlexTokenDispatcher.__init__, token_dispatcher.py at d98e8a64:
// "DeepEP dispatcher requires TPxEP > 1"); HybridEP does not.
func TestFlexDispatcherNeedsTPxEP(t *testing.T) {
	for _, tc := range []struct {
		override string
		want     bool
	}{
		{`{"model": {"moe": {"experts": 8, "dispatcher": "flex"}}, "parallel": {"tp": 1, "ep": 1}}`, true},
		{`{"model": {"moe": {"experts": 8, "dispatcher": "flex", "flex_dispatcher_backend": "ncclep"}}, "parallel": {"tp": 1, "ep": 1}}`, true},
		{`{"model": {"moe": {"experts": 8, "dispatcher": "flex", "flex_dispatcher_backend": "hybridep"}}, "parallel": {"tp": 1, "ep": 1}}`, false},
		{`{"model": {"moe": {"experts": 8, "dispatcher": "flex"}}, "parallel": {"tp": 1, "ep": 2}}`, false},
		{`{"model": {"moe": {"experts": 8, "dispatcher": "flex"}}, "parallel": {"tp": 2, "ep": 1}}`, false},
		{`{"model": {"moe": {"experts": 8, "dispatcher": "alltoall"}}, "parallel": {"tp": 1, "ep": 1}}`, false},
	} {
		l := runSpec(specFrom(t, parse(t, tc.override)))
		i := slices.IndexFunc(l, func(d diag.Diagnostic) bool {
			return d.Code == "moe-flex-backend" && d.Path == "model.moe.flex_dispatcher_backend"
		})
		if got := i >= 0; got != tc.want {
			t.Errorf("%s: moe-flex-backend %v, want %v: %v", tc.override, got, tc.want, l)
			continue
		}
		if i >= 0 && (!strings.Contains(l[i].Message, "tp=1 and ep=1") || !strings.Contains(l[i].Hint, "hybridep")) {
			t.Errorf("%s: %q, hint %q", tc.override, l[i].Message, l[i].Hint)
		}
	}
}

// HybridEP numbers NVLink domains rank // ranks_per_domain and asserts the
// expert-parallel group holds a whole number of them (DeepEP hybrid-ep
// branch, deep_ep/hybrid_ep_buffer.py, HybridEPBuffer.__init__: "The number
// of ranks ... should be divisible by the number of ranks per node"). On 24
// GPUs in NVLink domains of 8, ep 12 spans them unevenly; ep 8 and 24 fill
// them, and ep 4 stays inside one.
func TestHybridEPWholeDomains(t *testing.T) {
	base := `{"cluster": {"nodes": 3, "gpus_per_node": 8, "nvlink_domain": 8}, "train": {"global_batch": 48},
	  "parallel": {"tp": 1, "pp": 1, "ep": %d}, "model": {"moe": {"experts": 24, "dispatcher": "flex", "flex_dispatcher_backend": "%s"}}}`
	for _, tc := range []struct {
		ep      int
		backend string
		want    bool
	}{
		{12, "hybridep", true},
		{8, "hybridep", false},
		{24, "hybridep", false},
		{4, "hybridep", false},
		{12, "deepep", false},
	} {
		l := runSpec(specFrom(t, parse(t, fmt.Sprintf(base, tc.ep, tc.backend))))
		i := slices.IndexFunc(l, func(d diag.Diagnostic) bool { return d.Code == "moe-flex-backend" && d.Path == "parallel.ep" })
		if got := i >= 0; got != tc.want {
			t.Errorf("ep=%d %s: moe-flex-backend at parallel.ep %v, want %v: %v", tc.ep, tc.backend, got, tc.want, l)
			continue
		}
		if i >= 0 && (!strings.Contains(l[i].Message, "ep=12") || !strings.Contains(l[i].Hint, "parallel.ep: 8")) {
			t.Errorf("ep=%d: %q, hint %q", tc.ep, l[i].Message, l[i].Hint)
		}
	}
}

// A measured run is rated as it ran: check.Options.MeasuredRun lifts the
// rules only Megatron-LM's arguments.py has and the corpus's software did
// not run (TE's cross-entropy fusion, 168cb15d; the overlapped parameter
// gather without the overlapped gradient reduction, which Megatron-Bridge
// ran), and only them; without the option (parc vet, parc solve) they hold.
func TestMeasuredRunLiftsOnlyArgumentsRules(t *testing.T) {
	isOverlap := func(d diag.Diagnostic) bool { return d.Code == "overlap-param-gather" }
	gather := specFrom(t, parse(t, `{"train": {"distributed_optimizer": true, "overlap_param_gather": true, "overlap_grad_reduce": false}}`))
	if l := runSpec(gather); !slices.ContainsFunc(l, isOverlap) {
		t.Fatalf("vet: overlap_param_gather without overlap_grad_reduce accepted: %v", l)
	}
	if l := RunWith(gather, spec.Derive(gather), diag.NoPos, Options{MeasuredRun: true}); slices.ContainsFunc(l, isOverlap) {
		t.Errorf("measured run: %v", l)
	}
	// The distributed-optimizer half of the rule is not lifted: no
	// measured run gathered parameters it had not sharded.
	noDist := specFrom(t, parse(t, `{"train": {"distributed_optimizer": false, "overlap_param_gather": true, "overlap_grad_reduce": false}}`))
	if l := RunWith(noDist, spec.Derive(noDist), diag.NoPos, Options{MeasuredRun: true}); !slices.ContainsFunc(l, isOverlap) {
		t.Errorf("measured run without the distributed optimizer accepted: %v", l)
	}

	isTE := func(d diag.Diagnostic) bool {
		return d.Code == "kernel-options" && d.Path == "kernels.cross_entropy_fusion_impl"
	}
	te := specFrom(t, parse(t, `{"kernels": {"cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te"}}`))
	if l := runSpec(te); !slices.ContainsFunc(l, isTE) {
		t.Fatalf("vet: TE cross-entropy fusion accepted: %v", l)
	}
	measured := Options{MeasuredRun: true}
	if l := RunWith(te, spec.Derive(te), diag.NoPos, measured); len(l) != 0 {
		t.Errorf("measured run: %v", l)
	}
	if l := VerdictWith(te, spec.Derive(te), diag.NoPos, measured); len(l) != 0 {
		t.Errorf("measured run (verdict): %v", l)
	}
	// Megatron-LM has no flag for disable_parameter_transpose_cache: vet
	// rejects it, a measured run (Megatron-Bridge's SFT recipes) keeps it.
	isCache := func(d diag.Diagnostic) bool {
		return d.Code == "kernel-options" && d.Path == "kernels.disable_parameter_transpose_cache"
	}
	cache := specFrom(t, parse(t, `{"kernels": {"disable_parameter_transpose_cache": true}}`))
	if l := runSpec(cache); !slices.ContainsFunc(l, isCache) {
		t.Errorf("vet: disable_parameter_transpose_cache accepted: %v", l)
	}
	if l := RunWith(cache, spec.Derive(cache), diag.NoPos, measured); len(l) != 0 {
		t.Errorf("measured run with the fp8 weight cache disabled: %v", l)
	}
	// Every other rule still holds for a measured run.
	both := specFrom(t, parse(t, `{"kernels": {"cross_entropy_loss_fusion": true, "cross_entropy_fusion_impl": "te",
		"cuda_graph_scope": ["attn"], "cuda_graph_modules": ["attn"]}}`))
	l := RunWith(both, spec.Derive(both), diag.NoPos, measured)
	if slices.ContainsFunc(l, isTE) || !slices.ContainsFunc(l, func(d diag.Diagnostic) bool {
		return d.Code == "kernel-options" && d.Path == "kernels.cuda_graph_scope"
	}) {
		t.Errorf("measured run: %v", l)
	}
}

// A pipeline layout wrong in its stage count and in what its stages hold
// gets both errors in one run, and the rules that depend on interleaving
// judge the virtual stages the layout gives: parc's Megatron target writes
// the layout and not vpp, so Megatron validates the layout's content and
// schedules with its count whatever vpp the spec wrote (found by the
// Megatron cross-check: Megatron rejected "Number of mtp layers in layout
// must match mtp_num_layers" and "--overlap-param-gather-with-optimizer-step
// only supported with interleaved pipeline parallelism" where parc reported
// only the vpp conflict, and accepted a layout of one virtual stage with
// overlap_p2p off where parc also reported vpp-pp for the spec's vpp 2).
func TestLayoutStageCountAndContentBothReported(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string // code@path of every error
	}{
		{"vpp conflict and MTP count", `{"model": {"mtp_layers": 1, "position_embedding": "rope"},
			"parallel": {"vpp": 4, "layout": "Et*4|t*4|t*4|t*4L"}}`,
			[]string{"pipeline-layout@parallel.layout", "pipeline-layout@parallel.vpp"}},
		{"stages not a multiple of pp and decoder count", `{"parallel": {"layout": "Et*8|t*4|t*3L"}}`,
			[]string{"pipeline-layout@parallel.layout", "pipeline-layout@parallel.layout"}},
		{"vpp conflict and a rule of the layout's one virtual stage", `{"parallel": {"vpp": 2, "layout": "Et*8|t*8L"},
			"train": {"distributed_optimizer": true, "overlap_grad_reduce": true, "overlap_param_gather": true,
				"overlap_param_gather_with_optimizer_step": true}, "checkpoint": {"format": "torch"}}`,
			[]string{"overlap-param-gather@train.overlap_param_gather_with_optimizer_step", "pipeline-layout@parallel.vpp"}},
		{"vpp conflict, no rule of the spec's vpp", `{"parallel": {"vpp": 2, "layout": "Et*8|t*8L", "overlap_p2p": false}}`,
			[]string{"pipeline-layout@parallel.vpp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range runSpec(specFrom(t, parse(t, tc.spec))) {
				if d.Severity == diag.Error {
					got = append(got, d.Code+"@"+d.Path)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("errors %v, want %v", got, tc.want)
			}
		})
	}
}
