# Cross-check of parc's verdicts against Megatron-LM's own validation (see
# ../README.md). For each plan: render Megatron's arguments the way parc's
# Megatron target does, then run parse_args, validate_args, the microbatch
# calculator, core_transformer_config_from_args (TransformerConfig
# __post_init__), the initialize_model_parallel conditions, and
# get_num_layers_to_build / get_transformer_layer_offset for every (pipeline
# rank, virtual stage), and the interleaved schedule's conditions. Codes that
# fire later (model build, first step) or outside Megatron are excluded from
# the comparison (RUNTIME below); the corpus covers them by hand.
#
#   CASES=corpus.json ERRORS=errors.json MEGATRON_LM=/path/to/export python3 xcheck.py
import json, os, sys, traceback, warnings
warnings.filterwarnings('ignore')
from boot import boot, Stub
import torch
args_mod = boot('megatron.training.arguments')
import megatron.training.arguments as A
import megatron.core.parallel_state as ps
from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator
from megatron.training.argument_utils import core_transformer_config_from_args
from megatron.core.transformer.transformer_block import get_num_layers_to_build
from megatron.core.transformer.transformer_layer import get_transformer_layer_offset
import torch.distributed as dist

def to_args(s, d):
    m, p, t, c = s['model'], s['parallel'], s['train'], s['cluster']
    a = ['--num-layers', m['layers'], '--hidden-size', m['hidden'], '--num-attention-heads', m['heads'],
         '--seq-length', t['seq_length'], '--max-position-embeddings', d['max_position_embeddings'],
         '--micro-batch-size', t['micro_batch'], '--global-batch-size', t['global_batch'],
         '--tensor-model-parallel-size', p['tp'], '--pipeline-model-parallel-size', p['pp'],
         '--context-parallel-size', p['cp'], '--expert-model-parallel-size', p['ep'],
         '--vocab-size', m['vocab'], '--make-vocab-size-divisible-by', m['make_vocab_divisible_by'],
         '--tokenizer-type', s['data']['tokenizer']['type'], '--lr', t['lr'], '--min-lr', t['min_lr'],
         '--position-embedding-type', m['position_embedding'],
         '--normalization', {'layernorm': 'LayerNorm', 'rmsnorm': 'RMSNorm'}[m['normalization']],
         '--num-distributed-optimizer-instances', p['distributed_optimizer_instances'],
         '--cp-comm-type', p['cp_comm_type'], '--lr-warmup-iters', t['lr_warmup_iters']]
    if s['data']['mock']: a += ['--mock-data']
    tk = s['data']['tokenizer']
    if tk.get('model'): a += ['--tokenizer-model', tk['model']]
    if tk.get('vocab_file'): a += ['--vocab-file', tk['vocab_file']]
    if tk.get('merge_file'): a += ['--merge-file', tk['merge_file']]
    if m.get('ffn_hidden'): a += ['--ffn-hidden-size', m['ffn_hidden']]
    if m.get('query_groups'): a += ['--group-query-attention', '--num-query-groups', m['query_groups']]
    if m.get('kv_channels'): a += ['--kv-channels', m['kv_channels']]
    if m['activation'] == 'swiglu': a += ['--swiglu']
    if not m['bias']: a += ['--disable-bias-linear']
    if m['qkv_bias']: a += ['--add-qkv-bias']
    if not m['tie_embeddings']: a += ['--untie-embeddings-and-output-weights']
    if m.get('mtp_layers'): a += ['--mtp-num-layers', m['mtp_layers']]
    if m.get('mla'):
        ml = m['mla']; a += ['--multi-latent-attention', '--kv-lora-rank', ml['kv_lora_rank'], '--qk-head-dim', ml['qk_head_dim'],
                             '--qk-pos-emb-head-dim', ml['qk_pos_emb_head_dim'], '--v-head-dim', ml['v_head_dim']]
        if ml.get('q_lora_rank'): a += ['--q-lora-rank', ml['q_lora_rank']]
    if m.get('moe'):
        e = m['moe']
        a += ['--num-experts', e['experts'], '--moe-router-topk', e['topk'], '--moe-token-dispatcher-type', e['dispatcher'],
              '--moe-router-load-balancing-type', e['router_load_balancing'], '--moe-aux-loss-coeff', e['aux_loss_coeff'],
              '--moe-router-score-function', e['score_function'],
              '--moe-layer-freq', '[' + ','.join('1' if x else '0' for x in d['moe_layers']) + ']']
        if e.get('ffn_hidden'): a += ['--moe-ffn-hidden-size', e['ffn_hidden']]
        if e['shared_ffn_hidden']: a += ['--moe-shared-expert-intermediate-size', e['shared_ffn_hidden']]
        if e['grouped_gemm']: a += ['--moe-grouped-gemm']
        if e['router_pre_softmax']: a += ['--moe-router-pre-softmax']
        if e['expert_bias']: a += ['--moe-router-enable-expert-bias']
        if e.get('capacity_factor'): a += ['--moe-expert-capacity-factor', e['capacity_factor']]
        if e.get('pad_expert_input_to_capacity'): a += ['--moe-pad-expert-input-to-capacity']
        if e['dispatcher'] == 'flex' and e.get('flex_dispatcher_backend'): a += ['--moe-flex-dispatcher-backend', e['flex_dispatcher_backend']]
    if p.get('etp'): a += ['--expert-tensor-parallel-size', p['etp']]
    sp = p.get('sp')
    if (sp is None and p['tp'] > 1) or sp: a += ['--sequence-parallel']
    if p['vpp'] > 1: a += ['--num-virtual-stages-per-pipeline-rank', p['vpp']]
    if p['order'] == 'tp-cp-ep-pp-dp': a += ['--use-tp-pp-dp-mapping']
    if p.get('first_stage_layers') is not None: a += ['--decoder-first-pipeline-num-layers', p['first_stage_layers']]
    if p.get('last_stage_layers') is not None: a += ['--decoder-last-pipeline-num-layers', p['last_stage_layers']]
    if p['account_for_embedding']: a += ['--account-for-embedding-in-pipeline-split']
    if p['account_for_loss']: a += ['--account-for-loss-in-pipeline-split']
    if p.get('microbatch_group_size'): a += ['--microbatch-group-size-per-virtual-pipeline-stage', p['microbatch_group_size']]
    if not p['overlap_p2p']: a += ['--no-overlap-p2p-communication']
    if p.get('hierarchical_cp'): a += ['--hierarchical-context-parallel-sizes'] + p['hierarchical_cp']
    prec = t['precision']
    if prec in ('bf16', 'fp8'): a += ['--bf16']
    if prec == 'fp16': a += ['--fp16']
    if prec == 'fp8': a += ['--fp8-format', t['fp8_format'], '--fp8-recipe', t['fp8_recipe']]
    if t['recompute'] != 'none':
        a += ['--recompute-granularity', t['recompute']]
        if t['recompute'] == 'full':
            a += ['--recompute-method', t['recompute_method'], '--recompute-num-layers', t.get('recompute_layers') or 1]
        if t['recompute'] == 'selective' and t.get('recompute_modules'): a += ['--recompute-modules'] + t['recompute_modules']
    k = s.get('kernels') or {}
    if k.get('cuda_graph_impl') and k['cuda_graph_impl'] != 'none': a += ['--cuda-graph-impl', k['cuda_graph_impl']]
    if k.get('cuda_graph_modules'): a += ['--cuda-graph-modules'] + k['cuda_graph_modules']
    if k.get('cuda_graph_scope'): a += ['--cuda-graph-scope'] + k['cuda_graph_scope']
    if t.get('check_for_nan_in_loss_and_grad') is False: a += ['--no-check-for-nan-in-loss-and-grad']
    if t.get('cpu_offloading_num_layers'): a += ['--cpu-offloading-num-layers', t['cpu_offloading_num_layers']]
    if t['distributed_optimizer']: a += ['--use-distributed-optimizer']
    if t['overlap_grad_reduce']: a += ['--overlap-grad-reduce']
    if t['overlap_param_gather']: a += ['--overlap-param-gather']
    if t.get('iters'): a += ['--train-iters', t['iters']]
    if t.get('samples'): a += ['--train-samples', t['samples']]
    if t.get('lr_decay_iters'): a += ['--lr-decay-iters', t['lr_decay_iters']]
    ck = s.get('checkpoint')
    if ck:
        a += ['--ckpt-format', ck['format']]
        if ck.get('save'): a += ['--save', ck['save'], '--save-interval', ck['interval']]
    a += s['launch']['extra_args']
    return [str(x) for x in a]

class Fail(Exception): pass

def megatron_verdict(s, d):
    world = s['cluster']['nodes'] * s['cluster']['gpus_per_node']
    cc = s['cluster']['gpu']['compute_capability']
    env = dict(s['cluster'].get('env') or {}); env.update(s['launch'].get('env') or {})
    os.environ.pop('CUDA_DEVICE_MAX_CONNECTIONS', None)
    # parc's launch targets export CUDA_DEVICE_MAX_CONNECTIONS=1 when the user sets nothing.
    fsdp = any(x in s['launch']['extra_args'] for x in ('--use-torch-fsdp2', '--use-megatron-fsdp'))
    p_ = s['parallel']
    if 'CUDA_DEVICE_MAX_CONNECTIONS' in env:
        os.environ['CUDA_DEVICE_MAX_CONNECTIONS'] = env['CUDA_DEVICE_MAX_CONNECTIONS']
    elif (p_['tp'] > 1 or p_['cp'] > 1) and cc < 10 and not fsdp:
        os.environ['CUDA_DEVICE_MAX_CONNECTIONS'] = '1'  # what parc's launch targets export
    os.environ['WORLD_SIZE'] = str(world); os.environ['RANK'] = '0'
    A.get_device_arch_version = lambda: int(cc)
    torch.cuda.get_device_capability = lambda *a: (int(cc), int(round((cc % 1) * 10)))
    sys.argv = ['pretrain_gpt.py'] + to_args(s, d)
    try:
        args = A.parse_args()
    except SystemExit as e:
        return 'parse', str(e)
    try:
        args = A.validate_args(args, {'tokenizer_type': 'GPT2BPETokenizer'})
    except BaseException as e:
        return 'validate', repr(e)[:200]
    try:
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
    # layers
    vp = cfg.virtual_pipeline_model_parallel_size
    try:
        for r in range(pp):
            for v in range(vp or 1):
                n = get_num_layers_to_build(cfg, vp_stage=v if vp else None, pp_rank=r)
                get_transformer_layer_offset(cfg, vp_stage=v if vp else None, pp_rank=r)
    except BaseException as e:
        return 'layers', repr(e)[:200]
    # schedule (interleaved only), as written in forward_backward_pipelining_with_interleaving
    if vp is not None and pp > 1:
        M = args.global_batch_size // (args.micro_batch_size * dp)
        N = cfg.microbatch_group_size_per_vp_stage
        if N > M or N < pp: return 'schedule', 'P25'
        if 0 < M % N < pp: return 'schedule', 'P26'
    return None, None

RUNTIME = {'ffn-tp','moe-ffn-etp','moe-shared-ffn-tp','query-groups-heads','moe-sp-required','sp-seq-length',
  'moe-sinkhorn-aux-loss','moe-topk-experts','recompute-mtp-uniform','train-length-missing','precision-fp8-gpu',
  'tokenizer-files','slurm-time','slurm-mem','slurm-option','slurm-nodes','slurm-cpus','slurm-preempt','nvlink-domain',
  'dp-mismatch','order-unsupported'}
ERRORS = set(json.load(open(os.environ['ERRORS'])))
cases = json.load(open(os.environ.get('CASES', 'cases.json')))
rows = []
for c in cases:
    stage, why = megatron_verdict(c['spec'], c['derived'])
    rows.append({'name': c['name'], 'megatron_valid': stage is None, 'stage': stage, 'why': why,
                 'corpus_valid': c['valid'], 'codes': c['codes']})
json.dump(rows, open(os.environ.get('RESULT', '/dev/null'), 'w'), indent=1)
for r in rows:
    errs = [c for c in r['codes'] if c in ERRORS]
    r['parc_valid_validation'] = not [c for c in errs if c not in RUNTIME]
agree = sum(r['megatron_valid'] == r['parc_valid_validation'] for r in rows)
print(f'{agree}/{len(rows)} agree (runtime/parc-only codes excluded)'); sys.stdout.flush()
for r in rows:
    if r['megatron_valid'] != r['parc_valid_validation']:
        print(r['name'], 'megatron_valid=', r['megatron_valid'], r['stage'], r['why'], 'corpus codes', r['codes'])
