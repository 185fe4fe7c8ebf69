package megatron

import (
	"fmt"
	"strconv"
	"strings"
)

// HeaderOptions are the import options an argument file's header gives:
// the "# key: value" lines the import corpus's files start with (the
// project's argument-file format, testenv.ArgsHeader reads them) name the
// cluster preset, nodes, GPUs per node and the run's environment, one
// "env: NAME=VALUE" line each. A count written "unknown" is left to the
// importer (Options' zero).
func HeaderOptions(file string, h map[string][]string) (Options, error) {
	o := Options{File: file}
	if v := h["cluster"]; len(v) > 0 {
		o.Cluster = v[0]
	}
	for key, dst := range map[string]*int{"nodes": &o.Nodes, "gpus-per-node": &o.GPUsPerNode} {
		if v := h[key]; len(v) > 0 && v[0] != "unknown" {
			n, err := strconv.Atoi(v[0])
			if err != nil {
				return o, fmt.Errorf("%s: header %s: %w", file, key, err)
			}
			*dst = n
		}
	}
	for _, e := range h["env"] {
		k, v, _ := strings.Cut(e, "=")
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		o.Env[k] = v
	}
	return o, nil
}
