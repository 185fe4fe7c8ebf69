package megatron

import (
	_ "embed"
	"strings"
)

//go:embed fields.tsv
var fieldsTSV string

// SpecFields maps an argparse dest to the spec fields parc derives it from,
// as the importer's rules map them (fields.tsv, generated and kept equal by
// the importer's TestSpecFieldsTable). A dest parc derives from no single
// field (the microbatch count, a value of the cluster) is absent.
var SpecFields = parseFields(fieldsTSV)

func parseFields(tsv string) map[string][]string {
	m := map[string][]string{}
	for line := range strings.Lines(tsv) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dest, paths, _ := strings.Cut(line, "\t")
		m[dest] = strings.Split(paths, ",")
	}
	return m
}
