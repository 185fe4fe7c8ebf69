package megatron

import (
	_ "embed"
	"maps"
	"slices"

	"parc.dev/parc/internal/plan"
	"parc.dev/parc/internal/targets/template"
)

// ArgsFile is the file name of the argument list in the output directory.
const ArgsFile = "megatron.args"

// TemplateName names megatron.args' template (megatron.args.tmpl).
const TemplateName = ArgsFile

//go:embed megatron.args.tmpl
var argsTemplate string

// ArgsData is what megatron.args.tmpl is executed on.
type ArgsData struct {
	Plan *plan.Plan
	// Args is the list Args returned: one element per line.
	Args []string
}

// File renders megatron.args with the built-in template: one argument per
// line, so a script reads it with `mapfile -t ARGS < megatron.args` and runs
// `python3 pretrain_gpt.py "${ARGS[@]}"`.
func File(args []string) []byte {
	out, err := Render(nil, args, template.Builtin())
	if err != nil {
		panic(err) // the built-in template cannot fail on a list of strings
	}
	return out
}

// Render renders megatron.args with the Set's template (the user's override
// or the built-in one).
func Render(p *plan.Plan, args []string, set *template.Set) ([]byte, error) {
	return set.Render(TemplateName, argsTemplate, ArgsData{Plan: p, Args: args})
}

// Env is the environment every worker starts with: what Megatron-Core needs
// for the plan (CUDA_DEVICE_MAX_CONNECTIONS=1 when tp > 1 or cp > 1 before
// Blackwell and without FSDP, which validate_args requires, C5;
// NVTE_CPU_OFFLOAD_V1=1 with fine-grained activation offloading), then
// cluster.env (NCCL and network settings), then launch.env; a later source
// overrides an earlier one (internal/check reports an override that breaks C5).
func Env(p *plan.Plan) map[string]string {
	env := map[string]string{}
	if p.Spec.NeedsSerialCUDAConnections() {
		env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
	}
	if p.Spec.Train.FineGrainedActivationOffloading {
		// validate_args (arguments.py at d98e8a64): with Transformer Engine
		// 2.10 or later, fine-grained offloading needs TE's v1 offload code
		// path, or TE offloads the weights too.
		env["NVTE_CPU_OFFLOAD_V1"] = "1"
	}
	maps.Copy(env, p.Spec.Cluster.Env)
	maps.Copy(env, p.Spec.Launch.Env)
	return env
}

// EnvVar is one variable of Env.
type EnvVar struct{ Name, Value string }

// SortedEnv is Env as a list sorted by name (templates iterate it).
func SortedEnv(p *plan.Plan) []EnvVar {
	env := Env(p)
	out := make([]EnvVar, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, EnvVar{k, env[k]})
	}
	return out
}

// Command is the worker command every launcher runs: launch.python,
// launch.program, then the arguments.
func Command(p *plan.Plan, args []string) []string {
	return append([]string{p.Spec.Launch.Python, p.Spec.Launch.Program}, args...)
}
