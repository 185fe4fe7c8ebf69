package megatron

import (
	_ "embed"
	"strings"
)

// optionsTSV lists every option of Megatron-LM's argument parser
// (megatron/training/arguments.py::add_megatron_arguments) with its dest,
// action, nargs, type and choices, dumped from the parser itself.
//
//go:embed options.tsv
var optionsTSV string

// Option is one option string of Megatron's parser.
type Option struct {
	Name    string   // "--tensor-model-parallel-size"
	Dest    string   // argparse dest: options with the same dest set the same value
	Action  string   // Store, StoreTrue, StoreFalse, BooleanOptional, Help, ...
	Nargs   string   // "" (one value), "0" (a flag), "+", "*", "?"
	Type    string   // int, float, str, or the name of Megatron's converter
	Choices []string // nil = any value
}

// TakesValues reports whether the option is followed by values.
func (o Option) TakesValues() bool {
	switch o.Action {
	case "StoreTrue", "StoreFalse", "BooleanOptional", "Help", "StoreConst", "Count":
		return false
	}
	return o.Nargs != "0"
}

// Options maps each option string of Megatron's parser to its description.
var Options = parseOptions(optionsTSV)

func parseOptions(tsv string) map[string]Option {
	m := map[string]Option{}
	for line := range strings.Lines(tsv) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		for len(f) < 6 {
			f = append(f, "")
		}
		o := Option{Name: f[0], Dest: f[1], Action: f[2], Nargs: f[3], Type: f[4]}
		if f[5] != "" {
			o.Choices = strings.Split(f[5], "|")
		}
		m[o.Name] = o
	}
	return m
}
