"""Fourteen whole programs written the way public repositories and tutorials write them,
run unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_5/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``vae_distributions``: a VAE over ``torch.distributions`` (Independent Normal encoder,
  Bernoulli decoder, ``kl_divergence``, an importance-weighted bound);
- ``seq2seq_packed``: bentrevett's packed-padded seq2seq (bidirectional GRU over
  ``pack_padded_sequence``, masked additive attention, teacher forcing);
- ``char_rnn_gru``: spro/char-rnn.pytorch (GRU and LSTM, clipping, temperature sampling,
  whole-model ``torch.save``);
- ``unet_segmentation``: milesial/Pytorch-UNet (transposed-conv and bilinear decoders, Dice,
  RMSprop, ``ReduceLROnPlateau``, channels-last);
- ``dqn_replay``: the DQN tutorial (replay memory, Huber loss, soft target updates, Double
  DQN, a prioritised draw);
- ``realnvp_flow``: RealNVP as a ``TransformedDistribution`` of custom coupling transforms;
- ``jit_trace_roundtrip``: ``jit.trace``/``jit.script``, ``save``/``load`` with extra files,
  training a loaded module, ``jit.freeze``;
- ``checkpoint_amp``: activation checkpointing (both kinds, ``checkpoint_sequential``) and
  bfloat16 autocast with a CPU ``GradScaler``;
- ``transformer_translation``: the nn.Transformer translation tutorial (masks, label
  smoothing, warmup, greedy decoding);
- ``fx_compile_export``: FX passes (op swap, conv-bn fusion, ``replace_pattern``,
  ``ShapeProp``, a custom Tracer), ``torch.compile`` with a custom backend, ``torch.export``
  with a dynamic batch and ``save``/``load``;
- ``sparse_gcn_maml``: Kipf's GCN on a sparse normalised adjacency, and MAML with
  ``functional_call`` (second- and first-order);
- ``function_profiler_loader``: custom autograd Functions (``once_differentiable``,
  ``mark_non_differentiable``), the profiler's schedule and trace handler, a sharded
  ``IterableDataset`` with ``worker_init_fn`` and two workers;
- ``ctc_speech_triplet``: CTC training and decoding, a spatial-transformer front end,
  triplet loss on hardest negatives, gumbel-softmax codes;
- ``func_transforms``: forward-mode AD, jacobians and hessians, per-sample gradients,
  ensembling with ``stack_module_state``, an empirical NTK.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_5`` with PyTorch installed records them again).
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_5")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()

if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
