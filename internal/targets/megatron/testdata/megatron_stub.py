# Permissive stand-ins for the heavy modules Megatron imports (torch, TE, ...),
# so that megatron/training/arguments.py can be imported and its parser run on
# a machine without a GPU stack. Only argument parsing and validation are used.
import sys, types, importlib.abc, importlib.machinery

class Stub:
    def __init__(self, name='stub'):
        object.__setattr__(self, '_name', name)
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        v = Stub(name)
        object.__setattr__(self, name, v)
        return v
    def __call__(self, *a, **k):
        if len(a) == 1 and not k and callable(a[0]) and not isinstance(a[0], Stub):
            return a[0]
        return Stub(self._name)
    def __mro_entries__(self, bases): return ()
    def __instancecheck__(self, obj): return False
    def __subclasscheck__(self, obj): return False
    def __getitem__(self, k): return self
    def __or__(self, o): return self
    def __ror__(self, o): return self
    def __iter__(self): return iter(())
    def __len__(self): return 0
    def __bool__(self): return False
    def __lt__(self, o): return False
    def __gt__(self, o): return False
    def __le__(self, o): return True
    def __ge__(self, o): return True
    def __int__(self): return 0
    def __index__(self): return 0
    def __float__(self): return 0.0
    def __enter__(self): return self
    def __exit__(self, *a): return False
    def __repr__(self): return 'Stub(%s)' % self._name
    def __str__(self): return self._name

def _mk(name): return Stub(name)

class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        v = Stub(name)
        setattr(self, name, v)
        return v

STUBS = []
class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        for p in STUBS:
            if fullname == p or fullname.startswith(p + '.'):
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None
    def create_module(self, spec):
        m = StubModule(spec.name); m.__path__ = []
        m.__version__ = '2.9.0' if spec.name == 'torch' else '99.0.0'
        return m
    def exec_module(self, m): pass

sys.meta_path.insert(0, Finder())
