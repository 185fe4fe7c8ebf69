# Regenerates the *.args files and not_usable.tsv from Megatron-LM at d98e8a64:
#   MEGATRON_LM=<a checkout or git clone holding d98e8a64> python3 convert.py
# Every (test case, platform) whose dev golden values log mem-max-allocated-bytes is either written as
# an *.args file (the test case runs pretrain_gpt.py under a recipe of tests/test_utils/recipes, which
# gives its nodes and GPUs) or listed in not_usable.tsv with the reason.
import re, json, subprocess, sys, os, glob
import yaml

REPO = os.environ.get("MEGATRON_LM", "Megatron-LM")
C = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
HERE = os.path.dirname(os.path.abspath(__file__))


def show(p):
    if os.path.isdir(os.path.join(REPO, ".git")) or os.path.exists(os.path.join(REPO, "HEAD")):
        return subprocess.run(["git", "-C", REPO, "show", f"{C}:{p}"], capture_output=True, text=True, check=True).stdout
    return open(os.path.join(REPO, p)).read()


def ls(pattern):
    if os.path.isdir(os.path.join(REPO, ".git")) or os.path.exists(os.path.join(REPO, "HEAD")):
        out = subprocess.run(["git", "-C", REPO, "ls-tree", "-r", "--name-only", C], capture_output=True, text=True, check=True).stdout
        rx = re.compile("^" + pattern.replace(".", r"\.").replace("*", "[^/]*") + "$")
        return sorted(p for p in out.split("\n") if rx.match(p))
    return sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, pattern)))


CLUSTER = {"dgx_h100": "dgx_h100", "dgx_gb200": "gb200_nvl72", "dgx_a100": "dgx_a100_80g"}
SUFFIX = {"dgx_h100": "", "dgx_gb200": "_gb200", "dgx_a100": "_a100"}

# (model, test case, platform) -> (recipe, nodes, gpus per node, training script) for the dev environment
runs = {}
for f in ls("tests/test_utils/recipes/*/*.yaml"):
    y = yaml.safe_load(show(f))
    if not isinstance(y, dict) or "spec" not in y:
        continue
    sp = y["spec"]
    m = re.search(r'"TRAINING_SCRIPT_PATH=([^"]*)"', str(sp.get("script", "")))
    script = m.group(1).strip() if m else "?"
    for p in y.get("products", []):
        for sub in p.get("products", []):
            if "dev" not in sub.get("environment", ["dev"]):
                continue
            for pl in sub.get("platforms", [sp.get("platforms")]):
                for tc in p.get("test_case", []):
                    runs.setdefault((sp["model"], tc, pl), (f, sp.get("nodes"), sp.get("gpus"), script))


def last(g, k):
    v = g[k]
    if not isinstance(v, dict):
        return None, v
    v = v["values"]
    ks = sorted(int(x) for x in v if v[x] not in ("nan", None))
    return ks[-1], v[str(ks[-1])]


for f in glob.glob(os.path.join(HERE, "*.args")) + glob.glob(os.path.join(HERE, "release", "*.args")):
    os.remove(f)
skipped = []
written = set()
# Test cases a recipe lists but comments out (disabled at d98e8a64, e.g. "hang: #513"): their golden values are
# still a measured run of these arguments on that recipe's nodes.
disabled = {}
for f in ls("tests/test_utils/recipes/*/*.yaml"):
    text = show(f)
    y = yaml.safe_load(text)
    if not isinstance(y, dict) or "spec" not in y:
        continue
    sp = y["spec"]
    m = re.search(r'"TRAINING_SCRIPT_PATH=([^"]*)"', str(sp.get("script", "")))
    script = m.group(1).strip() if m else "?"
    plat = "dgx_" + f.split("/")[-2]
    for tc in re.findall(r"^\s*#\s*- test_case: \[([^\]]+)\]", text, re.M):
        for t in tc.split(","):
            disabled.setdefault((sp["model"], t.strip(), plat), (f + " (commented out)", sp.get("nodes"), sp.get("gpus"), script))
for k, v in disabled.items():
    runs.setdefault(k, v)

for gpath in ls("tests/functional_tests/test_cases/*/*/golden_values_dev_*.json"):
    d = os.path.dirname(gpath)
    model, tc = d.split("/")[-2:]
    pl = re.sub(r"^golden_values_dev_(.*)\.json$", r"\1", os.path.basename(gpath))
    try:
        g = json.loads(show(gpath))
    except json.JSONDecodeError:
        continue  # an empty golden file
    if "mem-max-allocated-bytes" not in g:
        continue
    st, peak = last(g, "mem-max-allocated-bytes")
    key = (model, tc, pl)
    src = f"https://github.com/NVIDIA/Megatron-LM/blob/{C}/{gpath}"
    why = None
    if (tc, pl) == ("gpt3_15b_8t_release_sm_gb200", "dgx_h100"):
        why = ("the case's arguments are GB200's (tp 4, vpp, --tp-comm-overlap), but its h100 golden values stop at the step "
               "(12715) of gpt3_15b_8t_release_sm's and agree with them: they were measured with that case's arguments, not these")
    elif st is None:
        why = "the golden value is one number for the whole run (an inference test), not a training step's peak"
    elif key not in runs:
        why = "no recipe of tests/test_utils/recipes runs it on this platform at d98e8a64 (release tests run outside the repository), so its node count and with it the data-parallel size are unknown"
    elif runs[key][3] != "pretrain_gpt.py":
        why = f"runs {runs[key][3]} ({runs[key][0].split('/', 3)[-1]}), not pretrain_gpt.py: parc plans GPT-style decoder training only"
    try:
        cfg = yaml.safe_load(show(d + "/model_config.yaml"))
    except (subprocess.CalledProcessError, FileNotFoundError):
        cfg = {}  # golden values without a model_config.yaml (nemotron3_super_release_g200)
    release = False
    if why and why.startswith("no recipe") and st is not None and cfg.get("TEST_TYPE") == "release" and pl in CLUSTER and model in ("gpt", "mixtral", "moe"):
        # A release test runs pretrain_gpt.py (MODEL_ARGS) on a cluster the repository does not name: its node count is
        # unknown, so it goes to release/ where the test brackets the estimate over the data-parallel sizes it allows.
        why, release = None, True
    if why:
        skipped.append((tc + SUFFIX.get(pl, "_" + pl), model, pl, peak, src, why))
        continue
    recipe, nodes, gpus, _ = runs[key] if not release else ("no recipe in the repository (a release test)", "unknown", {"dgx_gb200": 4}.get(pl, 8), "pretrain_gpt.py")
    _, cur = last(g, "mem-allocated-bytes")
    name = tc + SUFFIX[pl]
    lines = [f"# source: https://github.com/NVIDIA/Megatron-LM/blob/{C}/{d}/model_config.yaml",
             f"# measured: {src}",
             f"# commit: {C}",
             f"# cluster: {CLUSTER[pl]}", f"# nodes: {nodes}", f"# gpus-per-node: {gpus}",
             f"# platform: {pl} ({recipe} at d98e8a64: nodes: {nodes}, gpus: {gpus})" if not release else f"# platform: {pl} (a release test: TEST_TYPE release, no recipe in the repository, node count not published)",
             f"# step: {st}", f"# peak-allocated-bytes: {int(peak)}", f"# allocated-bytes: {int(cur)}"]
    tok = str(cfg["MODEL_ARGS"].get("--tokenizer-model", "")) + " " + str(cfg["MODEL_ARGS"].get("--tokenizer-type", ""))
    if release and "nemotron_2_256k" in tok:
        # the vocabulary is the tokenizer file's, which parc cannot read: the test passes it as --vocab-size
        lines.append("# vocab-size: 256000 (nemotron_2_256k.model: Nemotron-4's SentencePiece vocabulary of 256,000 tokens, arXiv:2402.16819)")
    elif release and "Llama2Tokenizer" in tok:
        lines.append("# vocab-size: 32000 (Llama2Tokenizer: Llama 2's vocabulary of 32k tokens, arXiv:2307.09288; Mixtral's tokenizer.model is the same size)")
    env = cfg.get("ENV_VARS") or {}
    for k in sorted(env):
        if k.startswith("NVTE_") or k.startswith("PYTORCH_CUDA_ALLOC"):
            lines.append(f"# env {k}: {env[k]}")
    lines.append("# how: MODEL_ARGS of model_config.yaml, one argument per line as tests/functional_tests/shell_test_utils/_run_training.sh expands them (true = the flag alone, a [ ] value split into words); measured = torch.cuda.memory_stats() allocated_bytes.all.peak / .current at the last step of the golden values, logged by rank world_size-1 (megatron/training/training.py training_log; global_vars._set_tensorboard_writer)")
    for k, v in cfg["MODEL_ARGS"].items():
        if v is True:
            lines.append(k)
        elif v is False:
            continue
        else:
            sv = str(v).strip()
            if isinstance(v, list):
                lines.append(k); lines += [str(x) for x in v]
            elif re.match(r'^\[[^\]]+\]$', sv):
                lines.append(k); lines += sv[1:-1].split()
            else:
                lines.append(k); lines.append(str(v))
    assert name not in written, f"{name}: two (case, platform) pairs give this file name"
    written.add(name)
    out = os.path.join(HERE, "release") if release else HERE
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, name + ".args"), "w").write("\n".join(lines) + "\n")
with open(os.path.join(HERE, "not_usable.tsv"), "w") as w:
    w.write("# case\tmodel\tplatform\tpeak-allocated-bytes\tmeasured\treason (generated by convert.py)\n")
    for r in sorted(skipped):
        w.write("\t".join([r[0], r[1], r[2], str(int(r[3])), r[4], r[5]]) + "\n")
print(len(glob.glob(os.path.join(HERE, "*.args"))), "args files,", len(glob.glob(os.path.join(HERE, "release", "*.args"))), "release,", len(skipped), "not usable")
