#!/bin/bash
# Mixtral 8x7B on 8 DGX H100 nodes: the model, MoE and parallel settings of
# Megatron-LM's examples/mixtral/train_mixtral_8x7b_distributed.sh (d98e8a64).
CHECKPOINT_PATH=${1:-/ckpt/mixtral}
MODEL_ARGS=(
    --use-mcore-models --disable-bias-linear
    --seq-length 4096 --max-position-embeddings 32768
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336
    --num-attention-heads 32 --group-query-attention --num-query-groups 8
    --normalization RMSNorm --position-embedding-type rope --rotary-base 1000000
    --swiglu --untie-embeddings-and-output-weights --no-masked-softmax-fusion
)
MOE_ARGS=(
    --num-experts 8 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss
    --moe-aux-loss-coeff 1e-2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall
)
torchrun --nproc_per_node 8 --nnodes 8 pretrain_gpt.py \
    ${MODEL_ARGS[@]} ${MOE_ARGS[@]} \
    --tensor-model-parallel-size 1 --pipeline-model-parallel-size 4 \
    --expert-model-parallel-size 8 --sequence-parallel --use-distributed-optimizer \
    --micro-batch-size 1 --global-batch-size 256 --train-iters 500000 \
    --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --lr-warmup-iters 500 \
    --clip-grad 1.0 --weight-decay 0.1 --bf16 \
    --mock-data --tokenizer-type NullTokenizer --vocab-size 32000 \
    --save "$CHECKPOINT_PATH" --save-interval 10000 --log-interval 1 --manual-gc \
    --eval-interval 1000 --eval-iters 10
