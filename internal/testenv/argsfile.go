package testenv

import "strings"

// ArgsHeader reads the "# key: value" lines at the top of an argument file,
// the format of the import corpus (internal/importer/megatron/testdata/corpus)
// and of the memory measurements (internal/estimate/testdata/memory): every
// value of a key, in order.
func ArgsHeader(src string) map[string][]string {
	h := map[string][]string{}
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		if ok {
			h[strings.TrimSpace(k)] = append(h[strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return h
}
