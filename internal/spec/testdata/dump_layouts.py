"""Parses pipeline layout strings with Megatron-LM's own
PipelineParallelLayerLayout.parse_str_to_list and prints, per string, the
stages as strings of layer characters (E, t, m, L) or the parser's error.

usage: python3 dump_layouts.py /path/to/Megatron-LM < layouts.txt > layouts.json
"""
import json, re, sys, types
sys.path.insert(0, sys.argv[1])
# parse_str_to_list needs only re and LayerType; load the module without
# megatron.core's heavy imports.
src = open(sys.argv[1] + '/megatron/core/transformer/pipeline_parallel_layer_layout.py').read()
import enum
class LayerType(enum.Enum):
    encoder = 1; decoder = 2; embedding = 3; loss = 4; mtp = 5
mod = types.ModuleType('ppl')
mod.__dict__.update(LayerType=LayerType)
body = src[src.index('    @staticmethod\n    def parse_str_to_list'):]
code = 'import re\nclass P:\n' + body
exec(code, mod.__dict__)
char = {LayerType.embedding: 'E', LayerType.loss: 'L', LayerType.decoder: 't', LayerType.mtp: 'm'}
out = []
for line in sys.stdin:
    s = line.rstrip('\n')
    if not s or s.startswith('#'):
        continue
    try:
        stages = [''.join(char[x] for x in st) for st in mod.P.parse_str_to_list(s)]
        out.append({'layout': s, 'stages': stages})
    except AssertionError as e:
        out.append({'layout': s, 'error': str(e)})
json.dump(out, sys.stdout, indent=1)
print()
