"""Sixteen whole programs written the way public repositories and tutorials write them,
run unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_6/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``nerf_hierarchical``: nerf-pytorch's embedder, skip-connected MLP, raw2outputs with an
  exclusive cumprod, and hierarchical inverse-CDF sampling through ``searchsorted``;
- ``gnn_message_passing``: GCN/GAT/GIN layers on an edge_index with ``index_add_``,
  ``scatter_reduce`` (sum, mean, amax), a segment softmax, ``bincount`` degrees and pooling;
- ``simclr_ntxent``: SimCLR's tensor augmentations (``affine_grid``/``grid_sample``), the
  NT-Xent loss both ways, warmup-cosine ``LambdaLR`` and a linear probe;
- ``ppo_gae``: cleanrl's PPO for Categorical and Normal policies (GAE, clipped surrogate and
  value loss, ``clip_grad_norm_``, annealed learning rate);
- ``vqvae_ema``: a VQ-VAE with the straight-through estimator, perplexity, and the EMA
  codebook variant;
- ``moe_topk``: noisy top-k gating with a SparseDispatcher, and a Mixtral-style block with
  a load-balancing loss;
- ``qat_distill``: quantization-aware training (``fuse_modules_qat``, ``prepare_qat``,
  observers and BN frozen, ``convert``) of a student distilled with temperature KL;
- ``ddpm_ema_cosine``: DDPM with a cosine schedule, an ``AveragedModel`` EMA, ancestral and
  DDIM sampling;
- ``tcn_weight_norm``: locuslab's TCN on ``parametrizations.weight_norm``, its removal, and
  the old hook-based ``weight_norm``;
- ``lora_parametrize``: minLoRA's adapters through ``register_parametrization``, frozen
  base weights, ``parametrize.cached()``, merging and reloading LoRA-only state;
- ``sparse_skipgram``: word2vec with negative sampling on sparse embeddings and
  ``SparseAdam``, and a sparse ``EmbeddingBag`` next to a dense optimizer;
- ``schedulers_resume``: ``SequentialLR``, ``OneCycleLR``, ``ReduceLROnPlateau``,
  ``ChainedScheduler``, and a checkpoint (with RNG states) resumed mid-training that ends
  where the uninterrupted run ends;
- ``dataloader_buckets``: a padding ``collate_fn``, a bucketing batch ``Sampler``,
  ``DistributedSampler``, ``WeightedRandomSampler``, an ``IterableDataset`` sharded by
  ``get_worker_info`` over two workers, ``random_split``/``ConcatDataset``;
- ``gru_beam_search``: the chatbot tutorial's packed bidirectional GRU encoder, Luong
  attention decoder, masked NLL, teacher forcing, greedy and beam search;
- ``stft_vocoder_losses``: ``stft``/``istft``, a hand-built mel filterbank, Griffin-Lim, and
  the multi-resolution STFT loss training a small generator;
- ``compile_script_autocast``: ``torch.compile`` (default, dynamic, reduce-overhead),
  ``jit.script`` with loops and Optional/List arguments, CPU bfloat16 autocast,
  ``custom_fwd``/``custom_bwd`` and gradient accumulation.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_6`` with PyTorch installed records them again).
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_6")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()

if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
