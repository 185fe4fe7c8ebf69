"""Parses argument lists with Megatron-LM's own argparse parser and prints,
for each, the dests whose value differs from the default (JSON), or the
parser's error. Input: a JSON list of argument lists on stdin.

usage: python3 dump_namespaces.py /path/to/Megatron-LM < cases.json > namespaces.json
"""
import sys, argparse, os, json, enum, io, contextlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, sys.argv[1])
import megatron_stub as stub, typing
typing.override = getattr(typing, "override", lambda f: f)
stub.STUBS += ['torch', 'transformer_engine', 'triton', 'apex', 'einops', 'numpy', 'flash_attn', 'nvidia_resiliency_ext', 'tensorstore', 'zarr', 'wandb', 'onelogger', 'mamba_ssm', 'causal_conv1d', 'flashinfer', 'nvtx', 'modelopt', 'multistorageclient', 'safetensors', 'yaml', 'tqdm']
import warnings
warnings.simplefilter('ignore')
from megatron.training import arguments

def parser():
    p = argparse.ArgumentParser(allow_abbrev=False)
    return arguments.add_megatron_arguments(p)

def plain(v):
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v

defaults = vars(parser().parse_args([]))
out = []
for args in json.load(sys.stdin):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(parser().parse_args(args))
        diff = {k: plain(v) for k, v in ns.items() if type(v) != type(defaults.get(k)) or v != defaults.get(k)}
        out.append({'args': args, 'set': diff})
    except SystemExit:
        out.append({'args': args, 'error': err.getvalue().strip().splitlines()[-1]})
    except Exception as e:  # a converter's own exception stops Megatron with a traceback
        out.append({'args': args, 'error': 'crash: ' + type(e).__name__ + ': ' + str(e)})
json.dump(out, sys.stdout, sort_keys=True)
print()
