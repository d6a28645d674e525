"""More whole programs written the way public repositories and tutorials write them, run
unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_10/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``fgsm_pgd_adversarial``: the "Adversarial Example Generation" tutorial (``fgsm_attack``,
  ``denorm``, the accuracy-over-epsilon loop), a random-start PGD attack, PGD adversarial
  training and TRADES' KL term;
- ``fixmatch_ema``: kekmodel/FixMatch-pytorch (labelled/unlabelled splits, replacement
  ``RandomSampler``s and two-worker loaders with a views ``collate_fn``, interleaving,
  thresholded pseudo-labels, ``ModelEMA``, warmup-cosine ``LambdaLR``, a disabled
  ``GradScaler``, CPU bfloat16 ``autocast`` evaluation, checkpoints);
- ``fedavg_fedprox``: federated averaging over Dirichlet non-IID ``Subset`` clients
  (weighted ``state_dict`` averages with BatchNorm counters, FedProx's proximal term,
  ``torch.save`` of the round history);
- ``ewc_continual``: permuted-task continual learning (EWC with per-sample Fisher by a loop
  and by ``vmap(grad)`` over ``functional_call``, online EWC, synaptic intelligence,
  reservoir replay through ``ConcatDataset``, a ``named_parameters`` table);
- ``stylegan2_modconv``: rosinality's StyleGAN2 in pure PyTorch (equalised learning rate,
  modulated/demodulated grouped convolution, ``upfirdn2d`` blur, noise injection, minibatch
  stddev, R1 and path-length regularisation, style mixing, truncation, EMA);
- ``convtasnet_pit``: Conv-TasNet (gLN against ``GroupNorm(1, C)``, dilated depthwise TCN,
  ``ConvTranspose1d`` decoder), SI-SNR with permutation invariant training, package
  checkpoints;
- ``sdpa_nested_fastpath``: the SDPA tutorials (masks, ``is_causal``, ``scale``, dropout,
  ``enable_gqa``, ``sdpa_kernel``, ``causal_upper_left``/``causal_lower_right``), the Better
  Transformer fast path with padding masks, jagged nested tensors;
- ``tsne_pca_kmeans``: PCA by SVD against ``pca_lowrank``/``svd_lowrank``, t-SNE with the
  perplexity search, k-means++ and Lloyd by ``cdist``/``index_add_``, silhouettes, GMM EM;
- ``video_r2plus1d``: torchvision's R(2+1)D video ResNet (``Conv3d`` factorisation,
  ``BatchNorm3d``, ``MaxPool3d``/``MaxUnpool3d``), a hook-built torchinfo-style summary,
  clip sampling, ``channels_last_3d``, a SlowFast lateral connection;
- ``ctc_forced_alignment``: the wav2vec2 forced-alignment tutorial's trellis, backtracking,
  segment and word merging, greedy and beam CTC decoding on a small trained model;
- ``adaptive_softmax_lm``: a word language model with an LSTM with ``proj_size``,
  ``AdaptiveLogSoftmaxWithLoss`` (``log_prob``, ``predict``), ``pack_sequence`` without
  sorting, ``unpack_sequence``/``unpad_sequence``, a whole-model checkpoint;
- ``conformal_prediction``: split conformal, APS and RAPS sets, Mondrian thresholds and
  conformalised quantile regression over ``torch.quantile(..., interpolation="higher")``
  with LBFGS temperature scaling;
- ``hnn_lagrangian``: greydanus's Hamiltonian neural networks (``autograd.grad`` with
  ``create_graph``, the symplectic permutation, leapfrog) and a Lagrangian network from
  ``vmap`` of ``hessian``/``jacrev(jacrev)``/``grad`` and ``linalg.pinv``;
- ``mixup_optimizer_zoo``: timm's mixup/cutmix with label smoothing and random erasing,
  then eleven optimizers (Adafactor, RAdam/NAdam with decoupled decay, ASGD, Rprop, ...)
  with cyclic, warm-restart, polynomial, constant, multiplicative and one-cycle schedules,
  step hooks and mid-run ``state_dict`` round trips;
- ``kd_transfer_tutorials``: the Knowledge Distillation tutorial (soft targets, the cosine
  and regressor variants) and the Transfer Learning tutorial (``train_model`` phases under
  ``set_grad_enabled``, ``StepLR``, best weights, frozen features) fed by an
  ``IterableDataset`` sharded over two workers by ``get_worker_info``;
- ``retnet_xpos``: RetNet's multi-scale retention with xPos (parallel, recurrent and
  chunkwise forms agreeing in float64), a tied-embedding language model and recurrent
  top-k generation;
- ``pointer_generator``: atulkum/pointer_summarizer (article OOV ids, packed bidirectional
  encoder, ``init_lstm_wt`` over ``_all_weights``, coverage attention, ``p_gen`` and the
  ``scatter_add`` into the extended vocabulary, Adagrad, beam search copying OOVs);
- ``bf16_autocast_trainer``: a ``train.py`` with a dataclass config from ``argparse``,
  ``torch.backends`` flags, a guarded ``torch.compile``, a padding ``collate_fn`` over two
  seeded workers, ``tqdm``, real CPU bfloat16 ``autocast`` training of an attention
  classifier with a disabled ``GradScaler``, accumulation and a full checkpoint (compared to
  a relative 1e-2: bfloat16 roundings, which PyTorch's own thread counts move).

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_10`` with PyTorch installed records them again). What
these programs found different in ember is pinned in ``test_program_regressions_31.py``.
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_10")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
