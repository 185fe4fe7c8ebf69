package check

import (
	"regexp"
	"strconv"
)

// splitNumberRE is how Megatron reads --split (megatron/core/datasets/
// blended_megatron_dataset_config.py, parse_and_normalize_split at
// d98e8a64): re.findall(r"[.0-9]+", split), each match through float().
var splitNumberRE = regexp.MustCompile(`[.0-9]+`)

// DefaultSplit is Megatron's legacy default split (arguments.py,
// legacy_default_split_value "969, 30, 1"), written as parc writes it.
const DefaultSplit = "969,30,1"

// dataSplit checks data.split as Megatron reads it when data.paths is set
// (with mock data Megatron takes no --split): at most three weights (train,
// valid, test; fewer are padded with 0), each a float Python can parse, not
// all 0 (normalize divides by their sum). Megatron fails at dataset build
// time, after the job waited in the queue and started every rank.
func (c *checker) dataSplit() {
	d := &c.s.Data
	if len(d.Paths) == 0 {
		return
	}
	nums := splitNumberRE.FindAllString(d.Split, -1)
	why := ""
	sum := 0.0
	for _, n := range nums {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			why = strconv.Quote(n) + " is not a number (Python's float() raises ValueError)"
			break
		}
		sum += f
	}
	switch {
	case why != "":
	case len(nums) > 3:
		why = "it has " + strconv.Itoa(len(nums)) + " weights; Megatron takes at most 3 (train, validation, test) and asserts"
	case sum == 0:
		why = "its weights sum to 0 (or it has none): Megatron divides by their sum and gets no split"
	default:
		return
	}
	c.report("data-split", "data.split", "write up to three weights, train,validation,test: "+
		c.anyOf("data-split", "data.split", setOpt(setting{"data.split", DefaultSplit}).note("Megatron's default")),
		"data.split = %q is not a split Megatron can read: %s", d.Split, why)
}
