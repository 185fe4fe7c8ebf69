# Regenerates the *.args files: python3 convert.py h100|gb200 <model>/<test_case>... with MEGATRON_LM=a Megatron-LM clone holding d98e8a64.
import re, json, subprocess, sys, yaml, os
import os
REPO=os.environ.get("MEGATRON_LM", "Megatron-LM"); C="d98e8a64ddf34856e74b24714e3bedb2f5a39553"
def show(p): return subprocess.run(["git","-C",REPO,"show",f"{C}:{p}"],capture_output=True,text=True,check=True).stdout
plat=sys.argv[1]; cases=sys.argv[2:]
cl={"h100":("dgx_h100","1","8 GPUs: the h100 recipes run these cases with nodes: 1, gpus: 8"),"gb200":("gb200_nvl72","2","8 GPUs: the gb200 recipes run these cases with nodes: 2, gpus: 4")}[plat]
for case in cases:
    d=f"tests/functional_tests/test_cases/{case}"
    cfg=yaml.safe_load(show(d+"/model_config.yaml"))
    g=json.loads(show(d+"/golden_values_dev_dgx_"+plat+".json"))
    def last(k):
        v=g[k]["values"]; ks=sorted((int(x) for x in v if v[x]!="nan" and v[x] is not None)); return ks[-1], v[str(ks[-1])]
    st,peak=last("mem-max-allocated-bytes"); _,cur=last("mem-allocated-bytes")
    lines=[f"# source: https://github.com/NVIDIA/Megatron-LM/blob/{C}/{d}/model_config.yaml",
           f"# measured: https://github.com/NVIDIA/Megatron-LM/blob/{C}/{d}/golden_values_dev_dgx_{plat}.json",
           f"# commit: {C}",
           f"# cluster: {cl[0]}", f"# nodes: {cl[1]}", f"# platform: dgx_{plat} ({cl[2]}, tests/test_utils/recipes/{plat})",
           f"# step: {st}", f"# peak-allocated-bytes: {int(peak)}", f"# allocated-bytes: {int(cur)}",
           "# how: MODEL_ARGS of model_config.yaml, one argument per line as tests/functional_tests/shell_test_utils/_run_training.sh expands them (true = the flag alone, a [ ] value split into words); measured = torch.cuda.memory_stats() allocated_bytes.all.peak / .current at the last step of the golden values, logged by rank world_size-1 (megatron/training/training.py training_log; global_vars._set_tensorboard_writer)"]
    for k,v in cfg["MODEL_ARGS"].items():
        if v is True: lines.append(k)
        elif v is False: continue
        else:
            sv=str(v).strip()
            if isinstance(v,list):
                lines.append(k); lines += [str(x) for x in v]
            elif re.match(r'^\[[^\]]+\]$', sv):
                # _run_training.sh: a value in [ ] has its brackets stripped and splits into words
                lines.append(k); lines += sv[1:-1].split()
            else:
                lines.append(k); lines.append(str(v))
    name=case.split("/")[1]+("" if plat=="h100" else "_gb200")
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".args"), "w").write("\n".join(lines)+"\n")
    print(name, st, peak/2**30, cur/2**30)
