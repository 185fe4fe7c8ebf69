"""Dumps every option of Megatron-LM's argument parser as options.tsv rows.

usage: python3 dump_options.py /path/to/Megatron-LM > ../options.tsv.body
(see README.md for the header and the commit)
"""
import sys, argparse
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, sys.argv[1])
import megatron_stub as stub, typing
typing.override = getattr(typing, "override", lambda f: f)
stub.STUBS += ['torch', 'transformer_engine', 'triton', 'apex', 'einops', 'numpy', 'flash_attn', 'nvidia_resiliency_ext', 'tensorstore', 'zarr', 'wandb', 'onelogger', 'mamba_ssm', 'causal_conv1d', 'flashinfer', 'nvtx', 'modelopt', 'multistorageclient', 'safetensors', 'yaml', 'tqdm']
from megatron.training import arguments
p = argparse.ArgumentParser(allow_abbrev=False)
p = arguments.add_megatron_arguments(p)
out = {}
for a in p._actions:
    for o in a.option_strings:
        kind = type(a).__name__
        t = getattr(a.type, '__name__', None) if a.type else None
        d = {'dest': a.dest, 'action': kind, 'nargs': a.nargs, 'type': t}
        if a.choices is not None:
            d['choices'] = [str(c) for c in a.choices]
        out[o] = d
for k in sorted(out):
    v = out[k]
    nargs = '' if v['nargs'] is None else str(v['nargs'])
    action = v['action'].strip('_').replace('Action', '')
    print('\t'.join([k, v['dest'], action, nargs, v['type'] or '', '|'.join(v.get('choices', []))]))
