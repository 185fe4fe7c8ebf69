package layout

import "parc.dev/parc/internal/diag"

// Codes lists every code the layout stage emits.
var Codes = []diag.CodeInfo{
	{Code: "order-unknown-axis", Severity: diag.Error, Rule: "W6", Meaning: "parallel.order names an axis that is not tp, cp, ep, dp or pp.", Fix: `Use "tp-cp-ep-dp-pp" (default) or "tp-cp-ep-pp-dp".`},
	{Code: "order-repeated-axis", Severity: diag.Error, Meaning: "parallel.order names an axis twice.", Fix: "Name each axis once."},
	{Code: "order-missing-axis", Severity: diag.Error, Rule: "W6", Meaning: "parallel.order leaves out an axis whose size is larger than 1 (Megatron raises).", Fix: "Add the axis to the order, as the hint shows."},
	{Code: "order-expert-dp-mismatch", Severity: diag.Error, Rule: "W4", Meaning: "With an order that does not end in pp and pp > 1, the dense and expert data-parallel sizes differ.", Fix: "Use the default order, or make etp·ep equal tp·cp."},
	{Code: "order-pp-groups-differ", Severity: diag.Error, Rule: "W5", Meaning: "The pipeline groups of the dense and expert grids differ.", Fix: "Use an order that ends in pp."},
	{Code: "order-not-megatron-mapping", Severity: diag.Warning, Meaning: "The order builds groups that neither of Megatron's two mappings builds.", Fix: `Use "tp-cp-ep-dp-pp" or "tp-cp-ep-pp-dp".`},
	{Code: "layout-grid-does-not-tile", Severity: diag.Error, Rule: "W1/W3", Meaning: "The dense or expert grid does not tile the world.", Fix: "Pick degrees whose product divides the world size."},
	{Code: "layout-invalid-degree", Severity: diag.Error, Meaning: "A degree below 1 (only possible for specs built in Go).", Fix: "Use a whole number ≥ 1."},
	{Code: "layout-world-too-large", Severity: diag.Error, Meaning: "More GPUs than parc lays out (2^22).", Fix: "Split the job."},
	{Code: "layout-nvlink-domain-misaligned", Severity: diag.Warning, Meaning: "NVLink domains do not line up with node boundaries.", Fix: "Set cluster.nvlink_domain to a divisor or multiple of gpus_per_node."},
}
