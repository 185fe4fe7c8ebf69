// Package check is the check stage of the parc compiler: it takes the typed
// spec (and the values Megatron-Core derives from it) and reports, all at
// once, every rule the plan breaks.
//
// Run holds the rules that need only the spec: every validation Megatron-Core
// performs on the arguments parc generates (validate_args, the
// TransformerConfig and ModelParallelConfig post-init checks,
// initialize_model_parallel, the layer split, the interleaved schedule and the
// build-time divisibility of the parallel linears), plus the rules Megatron
// cannot see (launch environment, Slurm fields, the cluster's NVLink domain).
// Run also keeps tensor-parallel groups inside one NVLink domain (exactly,
// without a layout: tp is every rank order's innermost dimension). Topology
// holds the rules that need the rank layout: CP/EP groups should stay inside
// a node.
//
// Every diagnostic has a stable code listed in Codes, blames the spec field
// the user most plausibly should change, states the numbers involved and
// hints at valid values. Where Megatron fails the diagnostic is an error;
// where it only warns, silently changes the setting or runs badly, a warning.
package check
