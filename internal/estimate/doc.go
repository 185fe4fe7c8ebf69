// Package estimate is the estimate stage of the compiler: from a checked spec,
// its derived values and the link each process-group family crosses, it
// computes what one training step costs on every GPU.
//
//   - parameters, total and per GPU on each pipeline stage (dense parts sharded
//     by tp·pp, routed experts by etp·ep·pp, embeddings on the first stage and
//     the output layer on the last);
//   - peak memory per GPU on the most loaded stage: weights, gradients, Adam
//     state (sharded over dp·cp by the distributed optimizer, or everything
//     sharded with full sharding) and activations after Korthikanti et al.
//     2022, with sequence parallelism, full recompute and selective recompute
//     by module (recompute_modules, as transformer_layer.py, mlp, moe_layer.py
//     and multi_latent_attention.py drop what each module's recompute frees),
//     context parallelism, MoE, MLA, MTP, the cross-entropy peak, Megatron-FSDP's
//     unsharded double buffers, and the in-flight microbatches of the 1F1B /
//     interleaved schedules (one more with expert-parallel overlap); checked
//     against the peak memory Megatron-LM's functional tests measured
//     (TestMeasuredMemory, testdata/memory) and required to fit every published
//     run that ran (TestMeasuredRunsFit, TestImportCorpusFits);
//   - Megatron-Core's own theoretical memory (theoretical_memory_usage.py) and
//     FLOPs (training.py::num_floating_point_operations), implemented term by
//     term so parc reports the same numbers Megatron prints;
//   - the pipeline bubble, the bytes each parallel axis moves per step, the
//     link it crosses and the time it takes there, step time, tokens/s, model
//     TFLOP/s per GPU and MFU (against the dense peak of the precision the
//     GEMMs run in).
//
// Time is modelled per operation (compute.go): GEMMs by their per-GPU shapes
// (tile and wave quantization, memory roofline, fp8 only where Transformer
// Engine applies it), flash attention, memory-bound work at HBM bandwidth,
// fixed costs per kernel and MoE layer; collectives with latency and per-link
// bandwidth (time.go). Its free constants (Calibration) are fitted on a corpus
// of published measured runs (TestCalibration, testdata/calibration). Memory
// is parc's model on every stage; Megatron's formula is a reference beside it.
//
// Problems are diagnostics: memory-exceeds-gpu (error), memory-near-limit,
// pipeline-bubble and comms-exceed-compute (warnings).
//
// Differences from Megatron's theoretical memory, on purpose:
//   - parc evaluates every pipeline stage (the last stage holds the logits and
//     the output layer) and reports the most loaded one; Megatron evaluates the
//     first stage only.
//   - parc counts biases, learned position embeddings and the tied output copy
//     on the last stage; Megatron ignores them.
//   - Activations: parc sizes the Q/K/V tensors with the real query groups and
//     head dimension and the MLP with the real FFN width (SwiGLU's fc1 is 2f
//     wide); it divides the sequence by cp, models MoE layers (router, routed
//     tokens, shared expert), full recompute (checkpointed layer inputs plus
//     one recomputed group), fp8 GEMM inputs and the sequence-parallel split
//     whatever the recompute setting. Megatron uses sbh(18+4f/h) per layer with
//     SP and selective recompute, and sbh(10+24/t)·1.05 in every other case.
//   - parc shards the optimizer over dp·cp (the group Megatron's distributed
//     optimizer really uses); Megatron's formula divides by dp.
//   - Attention is assumed fused (flash/cuDNN attention, Megatron-Core's
//     default with Transformer Engine): the 5as²b score term of Korthikanti's
//     formula is replaced by the fp32 softmax statistics, unless
//     kernels.attention_backend is "unfused" or "local" (or
//     Options.FusedAttention is false), or the precision is fp32 (Transformer
//     Engine's flash and fused attention take bf16 or fp16 only): then the
//     probabilities are kept (2 bytes, 5 with attention dropout, as
//     Korthikanti counts them; twice that in fp32).
//   - fp32 training: Transformer Engine's linear layers run on the TF32
//     tensor cores (half the bf16 peak, the peak MFU is rated against);
//     PyTorch's own matmuls, the unfused attention's batched GEMMs and the
//     output layer, on the CUDA cores (1/16 of the bf16 rate per SM per
//     clock on A100 and Hopper, 1/32 on Blackwell), as PyTorch keeps TF32
//     off for them.
package estimate
