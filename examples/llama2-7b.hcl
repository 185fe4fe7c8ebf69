# Llama 2 7B on 2 DGX A100 (80 GB) nodes, written in HCL.
#
# The HCL front-end takes the same field names as CUE: a block per struct
# (model, cluster with gpu and slurm inside, parallel, train), an attribute
# per field. HCL cannot import the CUE presets, so the model shape of
# stdlib/models/llama2.cue (meta-llama/Llama-2-7b-hf config.json) and the
# DGX A100 figures of stdlib/clusters/dgx_a100.cue are written out here.
#
# Megatron rules, checked by hand (notes/megatron-rules.md):
#   world = 2 nodes x 8 GPUs = 16; tp*pp*cp = 2*1*1 = 2 divides 16 (W1)
#   dp = 16 / 2 = 8
#   tp 2 stays inside a node (NVLink)
#   heads 32 % tp 2 = 0 (S1); no GQA (query groups = heads = 32, S2)
#   hidden 4096 % heads 32 = 0 (S3) -> kv_channels 128
#   ffn 11008 % tp 2 = 0 (S8); max_position_embeddings 4096 >= seq 4096 (S6)
#   layers 32 % pp 1 = 0 (P6); no virtual pipeline, no cp, no MoE
#   global batch 256 % (micro 1 x dp 8) = 0 (B4/B5) -> microbatches = 256 / 8 = 32
#   sp on (tp > 1); overlap_param_gather with the distributed optimizer and
#   overlap_grad_reduce (O1, O2)
#   padded vocab = ceil(32000 / (128*2)) * 256 = 32000
# Data: the schema's default, Megatron's mock dataset (no files needed).

model {
  name                    = "llama2-7b"
  layers                  = 32
  hidden                  = 4096
  ffn_hidden              = 11008
  heads                   = 32
  vocab                   = 32000
  max_position_embeddings = 4096
  activation              = "swiglu"
  normalization           = "rmsnorm"
  norm_epsilon            = 1e-5
  position_embedding      = "rope"
  rotary_base             = 10000
  tie_embeddings          = false
  bias                    = false
}

cluster {
  name          = "dgx-a100-80g"
  nodes         = 2
  gpus_per_node = 8
  nvlink_gbps   = 300 # 600 GB/s NVLink 3, both directions
  network_gbps  = 25  # 200 Gb/s HDR InfiniBand per GPU
  cpus_per_node = 128

  gpu {
    name               = "A100-SXM4-80GB"
    memory_gib         = 80
    bf16_tflops        = 312
    compute_capability = 8.0
  }

  slurm {
    job_name  = "llama2-7b"
    partition = "batch"
    time      = "06:00:00" # the 1,000 steps take about 5 h (parc explain: training run)
  }
}

parallel {
  tp = 2
  pp = 1
  sp = true
}

train {
  seq_length            = 4096
  micro_batch           = 1
  global_batch          = 256 # 1M tokens per step
  distributed_optimizer = true
  overlap_grad_reduce   = true
  overlap_param_gather  = true
  iters                 = 1000
  lr                    = 3.0e-4
  min_lr                = 3.0e-5
  lr_warmup_iters       = 100
}
