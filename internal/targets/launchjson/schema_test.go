package launchjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"parc.dev/parc/launchplan"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"parc.dev/parc/internal/layout"
	"parc.dev/parc/internal/spec"
)

// The JSON Schema keywords launch.schema.json may use: the ones the small
// validator below implements, plus annotations.
var (
	assertionKeywords  = []string{"type", "required", "properties", "additionalProperties", "items", "minItems", "minimum", "maximum", "const", "pattern", "$ref", "propertyNames", "uniqueItems"}
	annotationKeywords = []string{"$schema", "$id", "$defs", "title", "description"}
)

// schemaValidator checks a JSON value (decoded with UseNumber) against the
// subset of draft 2020-12 listed above.
type schemaValidator struct {
	root map[string]any
}

func (v *schemaValidator) validate(s map[string]any, x any, at string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, _ := v.root["$defs"].(map[string]any)[name].(map[string]any)
		if !found || def == nil {
			fail("unresolvable $ref %q", ref)
			return errs
		}
		errs = append(errs, v.validate(def, x, at)...)
	}
	if t, ok := s["type"].(string); ok && !hasType(x, t) {
		fail("%v is not of type %s", x, t)
		return errs
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(x) {
		fail("%v is not %v", x, c)
	}
	if n, ok := x.(json.Number); ok {
		f, _ := n.Float64()
		if m, ok := s["minimum"].(json.Number); ok {
			if mf, _ := m.Float64(); f < mf {
				fail("%v < minimum %v", n, m)
			}
		}
		if m, ok := s["maximum"].(json.Number); ok {
			if mf, _ := m.Float64(); f > mf {
				fail("%v > maximum %v", n, m)
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := x.(string); ok && !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
	}
	if arr, ok := x.([]any); ok {
		if m, ok := s["minItems"].(json.Number); ok {
			if mi, _ := m.Int64(); int64(len(arr)) < mi {
				fail("%d items, fewer than %d", len(arr), mi)
			}
		}
		if u, _ := s["uniqueItems"].(bool); u {
			seen := map[string]bool{}
			for _, e := range arr {
				if k := fmt.Sprint(e); seen[k] {
					fail("%v appears twice (uniqueItems)", e)
				} else {
					seen[k] = true
				}
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				errs = append(errs, v.validate(items, e, at+"/"+strconv.Itoa(i))...)
			}
		}
	}
	if obj, ok := x.(map[string]any); ok {
		for _, r := range asStrings(s["required"]) {
			if _, ok := obj[r]; !ok {
				fail("missing required %q", r)
			}
		}
		if pn, ok := s["propertyNames"].(map[string]any); ok {
			for k := range obj {
				errs = append(errs, v.validate(pn, k, at+"/"+k+" (name)")...)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, e := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, v.validate(ps, e, at+"/"+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("property %q is not allowed", k)
				}
			case map[string]any:
				errs = append(errs, v.validate(ap, e, at+"/"+k)...)
			}
		}
	}
	return errs
}

func hasType(x any, t string) bool {
	switch t {
	case "object":
		_, ok := x.(map[string]any)
		return ok
	case "array":
		_, ok := x.([]any)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "integer":
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		return err == nil
	}
	panic("type " + t + " not supported by the test validator")
}

func asStrings(x any) []string {
	var out []string
	for _, e := range anySlice(x) {
		out = append(out, e.(string))
	}
	return out
}

func anySlice(x any) []any { s, _ := x.([]any); return s }

func decodeNumbers(t testing.TB, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		t.Fatal(err)
	}
	return x
}

func loadSchema(t testing.TB) *schemaValidator {
	t.Helper()
	root, ok := decodeNumbers(t, launchplan.Schema).(map[string]any)
	if !ok {
		t.Fatal("schema is not an object")
	}
	return &schemaValidator{root: root}
}

// TestSchemaKeywords: the schema is draft 2020-12, versioned as the Go code
// says, and uses only keywords the validator implements (so nothing in it is
// silently unchecked).
func TestSchemaKeywords(t *testing.T) {
	v := loadSchema(t)
	if v.root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema %v", v.root["$schema"])
	}
	if v.root["$id"] != launchplan.SchemaID || !strings.HasSuffix(launchplan.SchemaID, fmt.Sprintf("/v%d.json", launchplan.Version)) {
		t.Fatalf("$id %v, launchplan.SchemaID %s, launchplan.Version %d", v.root["$id"], launchplan.SchemaID, launchplan.Version)
	}
	if c := v.root["properties"].(map[string]any)["version"].(map[string]any)["const"]; fmt.Sprint(c) != strconv.Itoa(launchplan.Version) {
		t.Fatalf("version const %v", c)
	}
	var walk func(s map[string]any, at string)
	walk = func(s map[string]any, at string) {
		for k, e := range s {
			switch {
			case slices.Contains(assertionKeywords, k), slices.Contains(annotationKeywords, k):
			default:
				t.Errorf("%s: keyword %q not supported by the test validator", at, k)
			}
			switch k {
			case "properties", "$defs":
				for name, sub := range e.(map[string]any) {
					walk(sub.(map[string]any), at+"/"+k+"/"+name)
				}
			case "items", "additionalProperties", "propertyNames":
				if sub, ok := e.(map[string]any); ok {
					walk(sub, at+"/"+k)
				}
			}
		}
	}
	walk(v.root, "#")
}

// TestSchemaMatchesFile: the schema's properties are exactly the JSON fields
// of File, Node and Worker, so the two cannot drift apart.
func TestSchemaMatchesFile(t *testing.T) {
	v := loadSchema(t)
	fields := func(x any) []string {
		var out []string
		rt := reflect.TypeOf(x)
		for i := range rt.NumField() {
			out = append(out, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		slices.Sort(out)
		return out
	}
	keys := func(s any) []string {
		var out []string
		for k := range s.(map[string]any)["properties"].(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	defs := v.root["$defs"].(map[string]any)
	for _, c := range []struct {
		name   string
		schema any
		goType any
	}{{"File", v.root, launchplan.File{}}, {"Node", defs["node"], launchplan.Node{}}, {"Worker", defs["worker"], launchplan.Worker{}}} {
		if got, want := keys(c.schema), fields(c.goType); !slices.Equal(got, want) {
			t.Errorf("%s: schema properties %v, Go fields %v", c.name, got, want)
		}
	}
	req := asStrings(v.root["properties"].(map[string]any)["groups"].(map[string]any)["required"])
	slices.Sort(req)
	names := slices.Clone(layout.FamilyNames)
	slices.Sort(names)
	if !slices.Equal(req, names) {
		t.Errorf("required groups %v, families %v", req, names)
	}
}

// TestGeneratedFilesValidate runs the validator over launch.json files built
// for several layouts, and over broken copies that it must reject.
func TestGeneratedFilesValidate(t *testing.T) {
	v := loadSchema(t)
	for _, c := range []layout.Config{
		exampleB,
		{Nodes: 1, GPUsPerNode: 1, TP: 1, PP: 1, CP: 1, EP: 1, Order: spec.OrderDefault},
		{Nodes: 4, GPUsPerNode: 4, TP: 2, PP: 2, CP: 1, EP: 2, ETP: 1, Order: spec.OrderPPDP},
		{Nodes: 36, GPUsPerNode: 4, NVLinkDomain: 72, TP: 4, PP: 3, CP: 2, EP: 8, ETP: 1, Order: spec.OrderDefault, MTPLayers: 1},
		{Nodes: 2, GPUsPerNode: 8, TP: 1, PP: 2, CP: 1, EP: 1, Order: "dp-pp"},
	} {
		data := launchplan.Encode(Build(mustLayout(t, c), launchplan.Env{"NCCL_DEBUG": "WARN"}, []string{"python3", "pretrain_gpt.py"}, 29500))
		if errs := v.validate(v.root, decodeNumbers(t, data), "#"); len(errs) > 0 {
			t.Errorf("%+v: %v", c, errs)
		}
	}
	good := string(launchplan.Encode(Build(mustLayout(t, exampleB), launchplan.Env{}, []string{"x"}, 0)))
	for name, mutate := range map[string]func(string) string{
		"version 2":       func(s string) string { return strings.Replace(s, `"version": 1`, `"version": 2`, 1) },
		"string world":    func(s string) string { return strings.Replace(s, `"world_size": 16`, `"world_size": "16"`, 1) },
		"fractional port": func(s string) string { return strings.Replace(s, `"master_port": 0`, `"master_port": 0.5`, 1) },
		"port too large":  func(s string) string { return strings.Replace(s, `"master_port": 0`, `"master_port": 70000`, 1) },
		"bad order":       func(s string) string { return strings.Replace(s, `"tp-cp-ep-dp-pp"`, `"tp-xx"`, 1) },
		"negative rank":   func(s string) string { return strings.Replace(s, `{"rank":3,`, `{"rank":-3,`, 1) },
		"extra field":     func(s string) string { return strings.Replace(s, `"version": 1`, `"version": 1, "extra": true`, 1) },
		"extra worker key": func(s string) string {
			return strings.Replace(s, `"gpu":0}`, `"gpu":0,"host":"a"}`, 1)
		},
		"no env":         func(s string) string { return strings.Replace(s, `"env": {},`, ``, 1) },
		"no tp groups":   func(s string) string { return strings.Replace(s, `"tp": `, `"tq": `, 1) },
		"empty group":    func(s string) string { return strings.Replace(s, `"pos_embd": [[0],`, `"pos_embd": [[],`, 1) },
		"env not string": func(s string) string { return strings.Replace(s, `"env": {}`, `"env": {"A": 1}`, 1) },
		"no nodes": func(s string) string {
			return s[:strings.Index(s, `"nodes": [`)+10] + "]" + s[strings.Index(s, `,
  "groups"`):]
		},
	} {
		bad := mutate(good)
		if bad == good {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if errs := v.validate(v.root, decodeNumbers(t, []byte(bad)), "#"); len(errs) == 0 {
			t.Errorf("%s: broken file accepted", name)
		}
	}
}
