"""Dumps the default of every argparse dest of Megatron-LM's parser as
defaults.tsv rows: dest, then the default as JSON (null for None; enums and
other objects by their str()).

usage: python3 dump_defaults.py /path/to/Megatron-LM > ../defaults.tsv.body
(see README.md for the header and the commit)
"""
import sys, argparse, json, enum
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, sys.argv[1])
import megatron_stub as stub, typing
typing.override = getattr(typing, "override", lambda f: f)
stub.STUBS += ['torch', 'transformer_engine', 'triton', 'apex', 'einops', 'numpy', 'flash_attn', 'nvidia_resiliency_ext', 'tensorstore', 'zarr', 'wandb', 'onelogger', 'mamba_ssm', 'causal_conv1d', 'flashinfer', 'nvtx', 'modelopt', 'multistorageclient', 'safetensors', 'yaml', 'tqdm']
from megatron.training import arguments
p = argparse.ArgumentParser(allow_abbrev=False)
p = arguments.add_megatron_arguments(p)
# The namespace parse_args gives with no arguments: argparse sets each dest
# from the first action that has it (get_default would skip a first None).
ns = vars(p.parse_args([]))
out = {}
for a in p._actions:
    if a.dest == 'help' or a.dest in out:
        continue
    d = ns[a.dest]
    def conv(v):
        if isinstance(v, enum.Enum):
            return v.name
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        return str(v)
    out[a.dest] = json.dumps(conv(d))
for k in sorted(out):
    print(k + '\t' + out[k])
