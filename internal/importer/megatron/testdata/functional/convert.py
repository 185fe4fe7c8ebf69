#!/usr/bin/env python3
"""Turn a Megatron-LM functional test's model_config.yaml into a corpus file.

    python3 convert.py MEGATRON_LM TEST_DIR [TEST_DIR...]   (TEST_DIR relative to
    tests/functional_tests/test_cases, e.g. gpt/gpt3_mcore_te_tp2_pp2)

MODEL_ARGS becomes the argument list the way Megatron-LM's
tests/functional_tests/shell_test_utils/_run_training.sh (d98e8a64) builds it:
the variables are substituted first (envsubst, with the values the h100 recipes
tests/test_utils/recipes/h100/{gpt,moe}.yaml give them), then for each key
`true` is the flag alone, a value in [ ] is its words, anything else one word.
The header records the source, commit, node size (the recipes run every test
on 1 node of 8 GPUs) and the substitutions.
"""
import os
import re
import shlex
import sys

import yaml

COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
# tests/test_utils/recipes/h100/gpt.yaml and moe.yaml ARGUMENTS ({assets_dir}
# and {artifacts_dir} are the CI job's directories: written as /workspace/...)
SUBST = {
    "DATA_PATH": "/mnt/artifacts",
    "DATA_CACHE_PATH": "/workspace/data/cache",
    "TENSORBOARD_PATH": "/workspace/assets/tensorboard",
    "CHECKPOINT_SAVE_PATH": "/workspace/artifacts/checkpoints",
    "CHECKPOINT_LOAD_PATH": "/mnt/artifacts/",
    "OUTPUT_PATH": "/workspace/assets",
}


def subst(text, missing):
    def rep(m):
        name = m.group(1) or m.group(2)
        if name in SUBST:
            return SUBST[name]
        missing.add(name)
        return m.group(0)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", rep, text)


def words(key, value):
    if value is True:
        return [key]
    v = str(value).strip()
    if v == "true":
        return [key]
    if re.fullmatch(r"\[[^]]+\]", v):
        return [key] + v[1:-1].split()
    if re.fullmatch(r"\([^)]+\)", v) or any(c in v for c in " |()"):
        return [key, v]
    return [key, v]


def convert(root, test):
    path = os.path.join(root, "tests/functional_tests/test_cases", test, "model_config.yaml")
    missing = set()
    with open(path) as f:
        cfg = yaml.safe_load(subst(f.read(), missing))
    args = []
    for k, v in cfg["MODEL_ARGS"].items():
        if v is None or v == "":
            continue
        if v is False:
            raise SystemExit(f"{test}: {k}: false (the harness would pass the word 'false')")
        args += words(k, v)
    out = [
        f"# source: https://github.com/NVIDIA/Megatron-LM/blob/{COMMIT}/tests/functional_tests/test_cases/{test}/model_config.yaml",
        f"# commit: {COMMIT}",
        "# how: MODEL_ARGS as tests/functional_tests/shell_test_utils/_run_training.sh turns them into arguments"
        " (true: the flag alone; [a b]: the words); variables as the h100 recipes set them: "
        + ", ".join(f"${k}={v}" for k, v in SUBST.items()),
    ]
    if missing:
        out.append("# unset in the recipes, kept as written: " + ", ".join(sorted(missing)))
    for k, v in (cfg.get("ENV_VARS") or {}).items():
        if k in ENV_READ_BY_VALIDATE_ARGS:
            out.append(f"# env: {k}={v}")
    out += ["# cluster: dgx_h100", "# gpus-per-node: 8"]
    if test.endswith("_release"):
        out.append("# nodes-why: release tests run on more nodes than the h100 recipes' one; their recipes are not"
                   " in the repository at this commit: the fewest nodes the degrees and the global batch fit")
    else:
        out.append("# nodes: 1")
    name = test.split("/")[-1]
    if name in EXPECT:
        out += ["# expect: " + EXPECT[name][0], "# megatron: " + EXPECT[name][1]]
    else:
        out.append("# expect: round-trip")
    return "\n".join(out + args) + "\n"


# The ENV_VARS validate_args reads (besides CUDA_DEVICE_MAX_CONNECTIONS, which
# parc's launch sets itself): kept as the run's environment.
ENV_READ_BY_VALIDATE_ARGS = {"NVTE_CPU_OFFLOAD_V1"}

# The configurations Megatron itself rejects as the harness builds them, with
# its message (megatron/training/arguments.py at the commit).
EXPECT = {
    "gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap": (
        "rejected deterministic-mode",
        "validate_args (determinism.py): AssertionError: --deterministic-mode requires:"
        " tp_comm_overlap=False (got True). Adjust these options to continue."),
    "gpt3_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic": (
        "rejected import-bad-argument",
        "argparse: argument --hierarchical-context-parallel-sizes: invalid int value: '2 2'"
        " (the YAML value 2 2 has a blank, so _run_training.sh quotes it into one word)"),
    "gpt3_mcore_tp1_pp1_fsdp2_resume_torch_dist_te": (
        "rejected fsdp-options",
        "validate_args: AssertionError: --use-torch-fsdp2 requires --untie-embeddings-and-output-weights"
        " (and '--use-torch-fsdp2 not supported with fp16 yet')"),
    "gpt3_mcore_te_tp2_pp1_modelopt_distill_resume": (
        "rejected import-unknown-option",
        "pretrain_gpt.py's parser: unrecognized arguments: --export-te-mcore-model --export-kd-teacher-load ..."
        " (ModelOpt's options; the test runs ModelOpt's entry point)"),
}


if __name__ == "__main__":
    root = sys.argv[1]
    for t in sys.argv[2:]:
        name = "mlm_" + t.split("/")[-1]
        dest = os.path.join(os.path.dirname(__file__), "..", "corpus", name + ".args")
        with open(dest, "w") as f:
            f.write(convert(root, t))
        print(dest)
