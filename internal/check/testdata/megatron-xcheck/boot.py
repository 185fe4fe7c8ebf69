# Imports Megatron-LM (exported to $MEGATRON_LM) under Debian's torch 1.13 without a GPU,
# stubbing what that torch lacks and the GPU-only packages. Not part of parc.
import os, sys, re, importlib, types
from unittest import mock
sys.path.insert(0, os.environ.get('MEGATRON_LM', '/tmp/mlmfull'))
sys.argv = ['x']

class Stub(mock.MagicMock):
    __path__ = []
def stub_module(name):
    m = Stub(name=name)
    m.__name__ = name; m.__spec__ = None; m.__path__ = []; m.__version__ = '3.3.0'
    sys.modules[name] = m
    parent, _, child = name.rpartition('.')
    if parent and parent in sys.modules:
        try: setattr(sys.modules[parent], child, m)
        except Exception: pass
    return m

def boot(target):
    for i in range(200):
        try:
            return importlib.import_module(target)
        except ModuleNotFoundError as e:
            stub_module(e.name)
        except ImportError as e:
            mm = re.search(r"cannot import name '(\w+)' from '([\w\.]+)'", str(e))
            if not mm: raise
            name, mod = mm.groups()
            full = mod + '.' + name
            m = stub_module(full)
            setattr(sys.modules[mod], name, m)
        # drop partially imported megatron modules
        for k in [k for k in sys.modules if k.startswith('megatron')]:
            del sys.modules[k]
    raise RuntimeError('gave up')

import importlib.abc, importlib.machinery
class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    prefixes = ['megatron.core.dist_checkpointing', 'transformer_engine', 'apex', 'flash_attn',
                'megatron.core.models.hybrid', 'nvidia_resiliency_ext', 'wandb', 'tensorboard', 'megatron.core.extensions', 'megatron.core.ssm', 'triton', 'megatron.core.distributed.torch_fully_sharded_data_parallel', 'megatron.core.distributed.fsdp']
    def find_spec(self, name, path, target=None):
        if any(name == p or name.startswith(p + '.') for p in self.prefixes):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        m = Stub(name=spec.name); m.__path__ = []; m.__name__ = spec.name; m.__version__ = "2.14.0"
        return m
    def exec_module(self, module):
        pass
sys.meta_path.insert(0, StubFinder())

import torch
def _torch_getattr(n):
    if n.startswith('__'):
        raise AttributeError(n)
    return Stub(name='torch.' + n)
torch.__getattr__ = _torch_getattr
import torch.distributed as _td
_td.__getattr__ = _torch_getattr
torch.jit.script = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
torch.compile = lambda fn=None, *a, **k: fn if fn is not None else (lambda f: f)
import torch.cuda as _tc
_tc.__getattr__ = _torch_getattr
import torch.nn as _tn
