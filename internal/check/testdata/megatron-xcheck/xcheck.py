# Cross-check of parc's verdicts against Megatron-LM's own validation (see
# ../README.md). For each plan, take the arguments and environment parc's
# Megatron target renders for it (megatron.Args, megatron.Env, dumped by
# TestDumpForMegatron), then run parse_args, validate_args, OptimizerConfig
# (and get_megatron_optimizer's condition), the DDP config
# (get_megatron_ddp_config), the microbatch calculator,
# core_transformer_config_from_args (TransformerConfig __post_init__), the
# initialize_model_parallel conditions, get_num_layers_to_build /
# get_transformer_layer_offset for every (pipeline rank, virtual stage), the
# LR schedule (get_optimizer_param_scheduler), the dataset config
# (pretrain_gpt's core_gpt_dataset_config_from_args) and the interleaved
# schedule's conditions. Print the report: "N agree, M disagree, K parc-only".
# Codes that fire later (model build, first step) or outside Megatron are
# "parc-only" (LATER, OUTSIDE below); the corpus covers them by hand.
#
#   CASES=corpus.json ERRORS=errors.json MEGATRON_LM=/path/to/Megatron-LM python3 xcheck.py
# (RESULT=file.json writes every row)
import contextlib, dataclasses, io, json, logging, os, re, sys, traceback, warnings
warnings.filterwarnings('ignore')
logging.disable(logging.CRITICAL)
from boot import boot, Stub
import torch
boot('megatron.training.arguments')
boot('megatron.training.training')
boot('pretrain_gpt')
import megatron.training.arguments as A
import megatron.training.training as T
import megatron.training.global_vars as G
import megatron.core.utils as U
import pretrain_gpt
from packaging.version import Version
# What parc's targets run on (NGC PyTorch containers, torch >= 2.6), not the
# torch 1.13 this script imports: Megatron asks the version for torch FSDP2
# (>= 2.4, validate_args) and the MoE A2A overlap (>= 2.6, TransformerConfig).
U._torch_version = Version('2.9.0')
# Transformer Engine's FusedAdam as OptimizerConfig inspects it (TE >= 2.1 has
# these parameters); the stand-in has none.
import transformer_engine.pytorch.optimizers as te_optimizers
def FusedAdam(params=None, master_weight_dtype=None, exp_avg_dtype=None, exp_avg_sq_dtype=None, use_decoupled_grad=False):
    pass
te_optimizers.FusedAdam = FusedAdam
# The dataset config needs a tokenizer object, not its files (tokenizer-files
# is parc-only below).
def tokenizer(args):
    t = Stub(); t.vocab_size = args.padded_vocab_size; return t
pretrain_gpt.build_tokenizer = tokenizer
import megatron.core.parallel_state as ps
from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator, StepBatchsizeNumMicroBatchesCalculator
from megatron.training.argument_utils import core_transformer_config_from_args
from megatron.core.transformer.transformer_block import get_num_layers_to_build
from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
import torch.distributed as dist
from megatron.core.optimizer.optimizer_config import OptimizerConfig

def megatron_verdict(s, args, env):
    world = s['cluster']['nodes'] * s['cluster']['gpus_per_node']
    cc = s['cluster']['gpu']['compute_capability']
    # The workers' environment is parc's (megatron.Env: CUDA_DEVICE_MAX_CONNECTIONS=1
    # where Megatron needs it, NVTE_CPU_OFFLOAD_V1, cluster.env, launch.env).
    for k in [k for k in os.environ if k not in BASE_ENV]: del os.environ[k]
    os.environ.update(BASE_ENV)
    for k, v in env.items():
        try: os.environ[k] = v
        except ValueError: pass  # a name or value no shell exports (env-name, env-value: parc-only)
    os.environ['WORLD_SIZE'] = str(world); os.environ['RANK'] = '0'
    A.get_device_arch_version = lambda: int(cc)
    torch.cuda.get_device_capability = lambda *a: (int(cc), int(round((cc % 1) * 10)))
    sys.argv = ['pretrain_gpt.py'] + args
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            args = A.parse_args()
    except SystemExit as e:
        return 'parse', ' / '.join(out.getvalue().strip().splitlines()[-1:])
    try:
        with contextlib.redirect_stdout(out):
            args = A.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})
    except BaseException as e:
        return 'validate', repr(e)[:200]
    try:
        # As training.get_megatron_optimizer_config builds it at setup
        # (OptimizerConfig.__post_init__ checks the optimizer's dtypes).
        oc = OptimizerConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(OptimizerConfig) if hasattr(args, f.name)})
    except BaseException as e:
        return 'optimizer', repr(e)[:200]
    try:
        # As get_model builds it (training.get_megatron_ddp_config;
        # DistributedDataParallelConfig.__post_init__ checks the bucket options).
        T.get_megatron_ddp_config(args)
    except BaseException as e:
        return 'ddp', repr(e)[:200]
    # get_megatron_optimizer (megatron/core/optimizer/__init__.py), as written there
    # for Adam and SGD without Megatron-FSDP v2 (parc's train.fsdp is v1).
    if oc.optimizer in ('adam', 'sgd') and oc.use_precision_aware_optimizer and not oc.use_distributed_optimizer:
        return 'optimizer', '--use-precision-aware-optimizer only supported with distributed optimizer'
    # ... and for the emerging optimizers (muon), _get_megatron_emerging_optimizer's
    # checks in its order (the emerging-optimizers package taken as installed).
    if oc.optimizer not in ('adam', 'sgd'):
        if oc.use_layer_wise_distributed_optimizer and oc.overlap_param_gather_with_optimizer_step:
            return 'optimizer', 'overlap_param_gather_with_optimizer_step is not supported with use_layer_wise_distributed_optimizer'
        if oc.fp16:
            return 'optimizer', 'emerging optimizer with fp16 is not supported.'
    try:
        # As _build_num_microbatches_calculator at start-up: a step schedule
        # (thresholds in tokens: set_global_variables passes --seq-length)
        # or the constant batch.
        if args.step_batch_size_schedule is not None:
            calc = StepBatchsizeNumMicroBatchesCalculator(args.micro_batch_size, args.data_parallel_size, False, 1,
                                                          args.step_batch_size_schedule, seq_length=args.seq_length)
        else:
            ConstantNumMicroBatchesCalculator(args.global_batch_size, args.micro_batch_size, args.data_parallel_size, False, 0)
    except BaseException as e:
        return 'microbatches', repr(e)[:200]
    try:
        cfg = core_transformer_config_from_args(args)
    except BaseException as e:
        return 'config', repr(e)[:200]
    # parallel_state: the conditions of initialize_model_parallel, as written there.
    tp, pp, cp, ep = args.tensor_model_parallel_size, args.pipeline_model_parallel_size, args.context_parallel_size, args.expert_model_parallel_size
    etp = args.expert_tensor_parallel_size
    if world % (tp * pp * cp) != 0: return 'parallel_state', 'W2'
    dp = world // (tp * pp * cp)
    if world % (etp * ep * pp) != 0: return 'parallel_state', 'W3'
    edp = world // (etp * ep * pp)
    if args.use_tp_pp_dp_mapping and pp > 1 and edp != dp: return 'parallel_state', 'W4'
    k = args.num_distributed_optimizer_instances
    if (dp * cp) % k != 0: return 'parallel_state', 'W8'
    if edp % k != 0: return 'parallel_state', 'W9'
    # layers: a pipeline layout asks parallel_state for the rank, as a built model would.
    vp = cfg.virtual_pipeline_model_parallel_size
    ps.get_virtual_pipeline_model_parallel_world_size = lambda: vp
    ps.get_pipeline_model_parallel_world_size = lambda *a, **k: pp
    try:
        for r in range(pp):
            ps.get_pipeline_model_parallel_rank = lambda *a, r=r, **k: r
            for v in range(vp or 1):
                n = get_num_layers_to_build(cfg, vp_stage=v if vp else None, pp_rank=r)
                get_transformer_layer_offset(cfg, vp_stage=v if vp else None, pp_rank=r)
    except BaseException as e:
        return 'layers', repr(e)[:200]
    # the learning-rate and weight-decay schedule, as setup_model_and_optimizer builds it
    G.set_args(args)
    class Optimizer: param_groups = [{'params': []}]
    try:
        with contextlib.redirect_stdout(out):
            T.get_optimizer_param_scheduler(Optimizer())
    except BaseException as e:
        return 'scheduler', repr(e)[:200]
    # the dataset config (its split), as pretrain_gpt builds it before the first step
    try:
        with contextlib.redirect_stdout(out):
            pretrain_gpt.core_gpt_dataset_config_from_args(args)
    except BaseException as e:
        return 'dataset', repr(e)[:200]
    # schedule (interleaved only), as written in forward_backward_pipelining_with_interleaving,
    # for the batch of each step; with a step schedule, the training loop's
    # checks before every step (train in training.py): update_num_microbatches
    # with the consistency check, and no fewer microbatches than the step
    # before. Within a phase the batch is constant, so each phase the run
    # reaches is checked at its first step and the loop jumps to the next.
    def interleave(M):
        if vp is not None and pp > 1:
            N = cfg.microbatch_group_size_per_vp_stage
            if N > M or N < pp: return 'schedule', 'P25'
            if 0 < M % N < pp: return 'schedule', 'P26'
        return None
    if args.step_batch_size_schedule is None:
        return interleave(args.global_batch_size // (args.micro_batch_size * dp)) or (None, None)
    iters = args.train_iters  # with --train-samples, the steps update_train_iters (training.py) counts:
    if not iters:
        iters, consumed = 0, 0
        while consumed < args.train_samples:
            calc.update(consumed, False); consumed += calc.get_current_global_batch_size(); iters += 1
    it, consumed, prev = 0, 0, None
    thresholds = [t for t, _ in calc.schedule]
    while it < iters:
        calc.update(consumed, False)
        n = calc.get()
        if prev is not None and n != prev and not n > prev:
            return 'train', 'Number of microbatches should not decrease; going from %d to %d' % (prev, n)
        try:
            calc.update(consumed, True)
        except BaseException as e:
            return 'train', repr(e)[:200]
        bad = interleave(calc.get())
        if bad: return bad
        prev, b = calc.get(), calc.get_current_global_batch_size()
        nxt = [t for t in thresholds if t > consumed]
        k = min(iters - it, -(-(nxt[0] - consumed) // b)) if nxt else iters - it
        it, consumed = it + k, consumed + k * b
    return None, None

# Codes Megatron's validation (what this script runs) cannot see. A plan parc
# rejects only for these and Megatron accepts is "parc-only", listed by code,
# neither agreement nor disagreement.
# LATER: Megatron rejects the plan too, but only when the model is built or a
# step runs (a division in a layer's constructor, a kernel's shape check, the
# tokenizer or dataset opening its files); the corpus derives those by hand.
LATER = {'ffn-tp', 'moe-ffn-etp', 'moe-shared-ffn-tp', 'query-groups-heads', 'moe-sp-required', 'sp-seq-length',
         'moe-sinkhorn-aux-loss', 'moe-topk-experts', 'recompute-mtp-uniform', 'precision-fp8-gpu', 'precision-fp4-gpu', 'tokenizer-files',
         'bias-activation-fusion', 'moe-shared-expert-bias', 'moe-bias-dropout-fusion', 'attention-no-backend'}
# OUTSIDE: rules of the cluster, Slurm and the launch, which Megatron never sees.
OUTSIDE = {'slurm-time', 'slurm-mem', 'slurm-option', 'slurm-nodes', 'slurm-cpus', 'slurm-preempt', 'slurm-segment',
           'slurm-line-break', 'nvlink-domain', 'tp-crosses-nvlink', 'etp-crosses-nvlink', 'env-name', 'env-reserved',
           'env-value', 'option-like-path', 'launch-command', 'dp-mismatch', 'order-unsupported'}
# SPEC: errors where two fields of parc's spec would give one Megatron option
# (the target writes one of them, so Megatron never sees the conflict), by
# (code, field blamed).
SPEC = {('pipeline-layout', 'parallel.vpp'): 'parallel.vpp beside the stages parallel.layout gives (the target writes the layout only)',
        ('kernel-options', 'model.rope_scaling_factor'): 'two YaRN factors for one --rotary-scaling-factor',
        ('batch-schedule', 'train.global_batch'): 'train.global_batch beside a schedule whose first size differs (the target writes the schedule only)'}
PARC_ONLY = LATER | OUTSIDE

def later_here(spec):
    """Codes that fire later for this plan only: the flex dispatcher's deepep
    or ncclep backend with tp·ep = 1 (the spec's tp defaults to the base plan's
    2 here, ep to 1), and a data.split whose weights
    (at most three, each a float) sum to 0 passes parse_and_normalize_split
    (numpy divides by the sum: NaN, a RuntimeWarning) and fails when the
    dataset builder turns the NaN book-ends into indices
    (blended_megatron_dataset_builder.py: int(round(nan))), after the config
    this script builds; more than three weights or a non-number fail here."""
    later = set()
    moe = (spec.get('model') or {}).get('moe') or {}
    par = spec.get('parallel') or {}
    # MoEFlexTokenDispatcher asserts TPxEP > 1 for its deepep and ncclep
    # backends when the layer is built (token_dispatcher.py:1836, 1854).
    if moe.get('dispatcher') == 'flex' and moe.get('flex_dispatcher_backend', 'deepep') in ('deepep', 'ncclep') and \
            par.get('tp', 2) * par.get('ep', 1) == 1:
        later.add('moe-flex-backend')
    split = (spec.get('data') or {}).get('split')
    if not (spec.get('data') or {}).get('paths') or split is None:
        return later
    nums = re.findall(r"[.0-9]+", split)
    try:
        ws = [float(n) for n in nums]
    except ValueError:
        return later
    return later | ({'data-split'} if len(ws) <= 3 and sum(ws) == 0 else set())
# Warnings parc gives where Megatron stops: the disagreement is by design and
# printed with the reason.
BY_DESIGN = {'train-length-missing': 'parc warns: the training length is optional while planning; '
             'Megatron stops when it builds the schedule (training.py get_optimizer_param_scheduler)'}
ERRORS = set(json.load(open(os.environ['ERRORS'])))
BASE_ENV = dict(os.environ)
cases = json.load(open(os.environ.get('CASES', 'cases.json')))
rows = []
for c in cases:
    stage, why = megatron_verdict(c['spec'], c['args'], c['env'] or {})
    errs = sorted({x for x in (c['codes'] or []) if x in ERRORS} | set(c.get('target_codes') or []))
    # an error Megatron can see: not parc-only by code, nor a conflict of parc's own fields
    spec_only = {(e['code'], e['path']) for e in c.get('errors') or [] if (e['code'], e['path']) in SPEC}
    seen = [x for x in errs if x not in PARC_ONLY | later_here(c['spec']) and not
            (any(k[0] == x for k in spec_only) and all((e['code'], e['path']) in SPEC for e in c['errors'] if e['code'] == x))]
    if stage is not None:
        verdict = 'agree' if seen else 'disagree'
    elif seen:
        verdict = 'disagree'
    else:
        verdict = 'parc-only' if errs else 'agree'
    rows.append({'name': c['name'], 'megatron_valid': stage is None, 'stage': stage, 'why': why,
                 'corpus_valid': c['valid'], 'codes': (c['codes'] or []), 'parc_errors': errs, 'verdict': verdict})
json.dump(rows, open(os.environ.get('RESULT', '/dev/null'), 'w'), indent=1)
n = {v: sum(r['verdict'] == v for r in rows) for v in ('agree', 'disagree', 'parc-only')}
print(f"{n['agree']} agree, {n['disagree']} disagree, {n['parc-only']} parc-only (of {len(rows)})")
for r in rows:
    if r['verdict'] == 'disagree':
        why = [BY_DESIGN[x] for x in r['codes'] if x in BY_DESIGN]
        print('disagree', r['name'], 'megatron:', 'valid' if r['megatron_valid'] else f"{r['stage']} {r['why']}", '| parc errors:', r['parc_errors'],
              ('| by design, ' + '; '.join(why)) if why else '')
by_code = {}
for r in rows:
    if r['verdict'] == 'parc-only':
        for x in r['parc_errors']: by_code.setdefault(x, []).append(r['name'])
for x in sorted(by_code):
    where = ('Megatron at model build or run' if x in LATER else 'outside Megatron' if x in OUTSIDE else
             'Megatron at dataset build (weights summing to 0)' if x == 'data-split' else
             "parc's spec: " + '; '.join(v for k, v in SPEC.items() if k[0] == x))
    print(f'parc-only {x} ({where}): {len(by_code[x])}:', ' '.join(by_code[x][:6]) + (' ...' if len(by_code[x]) > 6 else ''))
