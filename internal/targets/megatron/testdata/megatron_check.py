"""Runs megatron.args files through Megatron-LM's own argument parser and
validation: parse_args, validate_args (with pretrain_gpt.py's defaults) and
core_transformer_config_from_args (TransformerConfig.__post_init__), and
OptimizerConfig as training.get_megatron_optimizer_config builds it.

usage: MEGATRON_LM=/path/to/Megatron-LM python3 megatron_check.py WORLD_SIZE FILE...

The heavy modules Megatron imports (torch, Transformer Engine, ...) are
replaced by permissive stand-ins (megatron_stub.py), so this runs on a machine
without a GPU stack; only argument handling is exercised. Prints one line per
file, "ok FILE" or "FAIL FILE: error", and exits 1 if any failed.
"""
import io, os, sys, traceback, typing, contextlib

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.environ['MEGATRON_LM'])
import megatron_stub
typing.override = getattr(typing, 'override', lambda f: f)  # Python < 3.12
megatron_stub.STUBS += ['torch', 'transformer_engine', 'triton', 'apex', 'einops', 'numpy',
    'flash_attn', 'nvidia_resiliency_ext', 'tensorstore', 'zarr', 'wandb', 'onelogger',
    'mamba_ssm', 'causal_conv1d', 'flashinfer', 'nvtx', 'modelopt', 'multistorageclient',
    'safetensors', 'yaml', 'tqdm']

import math
import numpy  # the stand-in; validate_args checks hierarchical CP sizes with numpy.prod
numpy.prod = math.prod
import warnings
warnings.simplefilter('ignore')
from megatron.training import arguments
import torch
# Arguments are validated while autograd is on (pretrain's initialize_megatron);
# the permissive stand-in would answer False.
torch.is_grad_enabled = lambda: True
import dataclasses
# Transformer Engine's FusedAdam as OptimizerConfig inspects it (TE >= 2.1 has
# these parameters); the permissive stand-in has none.
import transformer_engine.pytorch.optimizers as te_optimizers
def FusedAdam(params=None, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None, use_decoupled_grad=False):
    pass
te_optimizers.FusedAdam = FusedAdam
from megatron.core.optimizer.optimizer_config import OptimizerConfig

world = sys.argv[1]
cuda_connections = os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS', '1')
failed = 0
for path in sys.argv[2:]:
    with open(path) as f:
        args = f.read().split('\n')[:-1]
    os.environ.update(WORLD_SIZE=world, RANK='0', LOCAL_RANK='0')
    # The launch's CUDA_DEVICE_MAX_CONNECTIONS: 1 unless the caller says
    # otherwise (empty = unset, as parc's launch leaves it with Megatron-FSDP).
    if cuda_connections:
        os.environ['CUDA_DEVICE_MAX_CONNECTIONS'] = cuda_connections
    else:
        os.environ.pop('CUDA_DEVICE_MAX_CONNECTIONS', None)
    # The plan's own environment (parc's megatron.Env), when the caller
    # writes it beside the arguments as PATH.env, one NAME=VALUE a line.
    plan_env = {}
    if os.path.exists(path + '.env'):
        with open(path + '.env') as f:
            plan_env = dict(line.split('=', 1) for line in f.read().split('\n') if '=' in line)
    saved_env = {k: os.environ.get(k) for k in plan_env}
    os.environ.update(plan_env)
    sys.argv = ['pretrain_gpt.py'] + args
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            a = arguments.parse_args()
            arguments.validate_args(a, {'tokenizer_type': 'GPT2BPETokenizer'})
            arguments.core_transformer_config_from_args(a)
            # As training.get_megatron_optimizer_config builds it at setup
            # (OptimizerConfig.__post_init__ checks the optimizer dtypes).
            OptimizerConfig(**{f.name: getattr(a, f.name) for f in dataclasses.fields(OptimizerConfig) if hasattr(a, f.name)})
        print('ok', path)
    except BaseException as e:  # argparse exits with SystemExit
        failed += 1
        msg = traceback.format_exc().strip().splitlines()[-1]
        tail = out.getvalue().strip().splitlines()[-3:]
        print('FAIL', path + ':', msg, '|', ' / '.join(tail))
    for k, v in saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
sys.exit(1 if failed else 0)
