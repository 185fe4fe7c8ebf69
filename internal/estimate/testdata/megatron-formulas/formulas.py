# Megatron-LM's own formulas on parc's random plans (README.md).
#
# For each line of cases.jsonl (a spec every parc check accepts, with the
# arguments and environment parc's Megatron target renders for it), run
# Megatron-LM's parse_args and validate_args on those arguments, then
# megatron/training/theoretical_memory_usage.py (weight-and-optimizer memory,
# and the activation memory report_theoretical_memory picks: with sequence
# parallelism and selective recomputation compute_activation_memory, else
# compute_activation_memory_without_sp, for the run's number of microbatches)
# and megatron/training/training.py num_floating_point_operations for one
# global batch, and the decoder layers the model builder places on every
# pipeline rank and virtual stage (get_transformer_layer_offset,
# get_num_layers_to_build). Write megatron.jsonl: one line per case, the
# numbers or why Megatron refused the arguments.
#
#   MEGATRON_LM=/tmp/mlm /usr/bin/python3 formulas.py   # Debian's python3-torch
#
# Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553 is imported with the
# stand-ins of internal/check/testdata/megatron-xcheck/boot.py (no GPU, no
# Transformer Engine); nothing of Megatron is copied here.
import contextlib, io, json, logging, os, sys, warnings
warnings.filterwarnings('ignore')
logging.disable(logging.CRITICAL)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', '..', '..', 'check', 'testdata', 'megatron-xcheck'))
from boot import boot
import torch
boot('megatron.training.arguments')
boot('megatron.training.training')
import megatron.training.arguments as A
import megatron.training.training as T
import megatron.training.theoretical_memory_usage as M
import megatron.core.utils as U
from megatron.core.tokenizers.utils.build_tokenizer import build_tokenizer
import megatron.core.parallel_state as ps
from megatron.training.argument_utils import core_transformer_config_from_args
from megatron.core.transformer.transformer_block import get_num_layers_to_build
from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
from packaging.version import Version
U._torch_version = Version('2.9.0')  # the containers parc targets, as xcheck.py

BASE_ENV = dict(os.environ)
out = open(os.path.join(here, 'megatron.jsonl'), 'w')
n = {'ok': 0, 'refused': 0}
for line in open(os.path.join(here, 'cases.jsonl')):
    c = json.loads(line)
    for k in [k for k in os.environ if k not in BASE_ENV]: del os.environ[k]
    os.environ.update(BASE_ENV)
    os.environ.update(c['env'] or {})
    os.environ['WORLD_SIZE'] = str(c['world']); os.environ['RANK'] = '0'
    cc = c['cc']
    A.get_device_arch_version = lambda: int(cc)
    torch.cuda.get_device_capability = lambda *a: (int(cc), int(round((cc % 1) * 10)))
    sys.argv = ['pretrain_gpt.py'] + c['args']
    row = {'name': c['name']}
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            args = A.parse_args()
            args = A.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})
            # The tokenizer sets padded_vocab_size, as training's
            # set_global_variables does before the model is built (the
            # NullTokenizer parc's target names counts its end-of-document
            # token: --vocab-size + 1, padded).
            build_tokenizer(args)
            microbatches = args.global_batch_size // (args.micro_batch_size * args.data_parallel_size)
            row['weights_optimizer'] = M.compute_weight_and_optimizer_memory(args)
            if args.sequence_parallel and args.recompute_granularity == 'selective':
                row['activation_formula'] = 'compute_activation_memory'
                row['activations'] = M.compute_activation_memory(args, num_microbatches=microbatches)
            else:
                row['activation_formula'] = 'compute_activation_memory_without_sp'
                row['activations'] = M.compute_activation_memory_without_sp(args, num_microbatches=microbatches)
            row['flops'] = T.num_floating_point_operations(args, args.global_batch_size)
            # The decoder layers of every pipeline rank and virtual stage, as
            # the model builder asks for them (parallel_state answers for the
            # rank, as xcheck.py does).
            cfg = core_transformer_config_from_args(args)
            pp, vp = args.pipeline_model_parallel_size, cfg.virtual_pipeline_model_parallel_size
            ps.get_virtual_pipeline_model_parallel_world_size = lambda: vp
            ps.get_pipeline_model_parallel_world_size = lambda *a, **k: pp
            stages = []
            for r in range(pp):
                ps.get_pipeline_model_parallel_rank = lambda *a, r=r, **k: r
                stages.append([[get_transformer_layer_offset(cfg, vp_stage=v if vp else None, pp_rank=r),
                                get_num_layers_to_build(cfg, vp_stage=v if vp else None, pp_rank=r)]
                               for v in range(vp or 1)])
            row['stages'] = stages
        n['ok'] += 1
    except BaseException as e:
        row = {'name': c['name'], 'error': (repr(e) + ' ' + ' / '.join(buf.getvalue().strip().splitlines()[-1:]))[:300]}
        n['refused'] += 1
    out.write(json.dumps(row) + '\n')
print(n)
