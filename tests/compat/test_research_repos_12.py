"""More whole programs written the way public repositories and tutorials write them, run
unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_12/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``arcface_metric``: insightface's ``ArcMarginProduct`` and a CosFace head over a P-K
  ``BatchSampler`` subclass with a dict ``collate_fn``, recall@k by ``fill_diagonal_`` and
  ``topk``, ``MultiStepLR`` over Nesterov SGD;
- ``slot_attention``: Slot Attention (learned Gaussian slots, ``GRUCell`` updates, softmax
  over slots, ``SoftPositionEmbed`` over an ``indexing="ij"`` grid, a spatial-broadcast
  decoder with alpha masks, warm-up times decay ``LambdaLR``);
- ``hash_grid_ngp``: Instant-NGP's multiresolution hash encoding (int64 ``^=`` with large
  primes, ``&`` masks, bilinear corner weights, ``nn.Embedding`` tables) fitting an image;
- ``tree_lstm_sentiment``: a child-sum TreeLSTM over parsed s-expressions (post-order
  recursion, per-child forget gates, per-node ``NLLLoss``, ``Adagrad``, a checkpoint with
  optimizer state and vocabulary, ``logging`` to stdout);
- ``t5_span_corruption``: a tiny T5 (``T5LayerNorm``, relative position buckets,
  unscaled attention, gated GELU, tied rescaled head, ``_shift_right``, sentinel span
  corruption, ``torch.optim.Adafactor``, greedy decoding);
- ``edm_karras_heun``: EDM preconditioning, log-normal sigmas, the Karras schedule, the
  stochastic Heun sampler in float64, a half-life EMA and consistency training;
- ``decision_transformer``: returns-to-go, interleaved (R, s, a) tokens, left padding with
  key-padding and causal masks, return-conditioned evaluation with ``get_action``;
- ``patchtst_revin``: PatchTST (``RevIN``, ``ReplicationPad1d`` + ``unfold`` patches,
  channel independence, a ``Transpose``-wrapped ``BatchNorm1d`` layer, ``EarlyStopping``
  checkpoints, type3 learning-rate adjustment);
- ``mingru_log_scan``: minGRU/minLSTM by the log-space Heinsen scan (``logcumsumexp``)
  agreeing with the recurrence in float64, a character LM with causal depthwise convolution;
- ``gaussian_splat_2d``: 2-D Gaussian splatting (rotation-scale covariances,
  ``linalg.inv``/``det``, depth-sorted ``cumprod`` compositing, L1 + D-SSIM, per-group
  learning rates, densification by cloning, a ``uint8`` render saved);
- ``meta_init_surgery``: ``torch.device("meta")`` construction, ``to_empty`` and
  ``load_state_dict(assign=True)``, load and state-dict hooks, ``_IncompatibleKeys`` and
  strict-load error texts, ``get_submodule``/``set_submodule``, LoRA injection, dtype casts;
- ``glove_cooccurrence``: GloVe (a distance-weighted co-occurrence table as a coalesced
  sparse COO tensor, the clipped weighting, ``Adagrad``, neighbours and analogies);
- ``diffpool_graphs``: DiffPool over dense padded graph batches (dense SAGE convolutions,
  assignment softmax, link and entropy losses, ``random_split``, ``StepLR`` beside
  ``ReduceLROnPlateau``);
- ``awd_lstm_ntasgd``: AWD-LSTM (embedding dropout, locked dropout, fastai's
  ``WeightDropout`` setting a dropped ``weight_hh_l0`` on an ``nn.LSTM``, AR/TAR, variable
  BPTT) with the switch from SGD to ``ASGD`` and evaluation on its averages;
- ``neuralsort_ranking``: NeuralSort's relaxed and straight-through permutations, soft
  ranks, ListNet, ApproxNDCG and Spearman losses over padded lists, NDCG@k,
  ``CosineAnnealingWarmRestarts`` stepped with fractional epochs;
- ``jem_sgld``: JEM (``logsumexp`` energies, a replay buffer with re-initialisation, SGLD by
  ``autograd.grad``), calibration error and a rank-based OOD AUROC;
- ``vrnn_sequences``: the Variational RNN (a ``GRU`` stepped per time step, the Gaussian KL
  by hand beside ``kl_divergence``, KL annealing, per-epoch checkpoints, sampling);
- ``attention_mil_bags``: attention-based MIL (variable-size bags at ``batch_size=1``,
  plain and gated attention pooling, the clamped likelihood, CLAM's instance loss);
- ``speculative_decoding``: draft-and-verify decoding (top-k/top-p filtering, ``max_fn``
  residuals, ``multinomial`` with generators, a greedy variant equal to the target's own
  greedy decoding) under ``inference_mode``;
- ``classic_cnn_layers``: the rarer layers of classic CNNs (``LocalResponseNorm``,
  ``ChannelShuffle``, ``LPPool2d``, ``FractionalMaxPool2d`` with fixed and drawn samples,
  adaptive max pooling into ``MaxUnpool2d``, ``Fold``/``Unfold``, ``CircularPad2d``,
  ``Softmax2d``, ``Unflatten``, ``RReLU``, ``CELU``, ``Hardshrink``) in a trained net;
- ``lie_group_rotations``: SO(3) exp/log maps against ``linalg.matrix_exp``, the
  ``orthogonal`` parametrization under its three maps, Kabsch and rotation averaging by
  SVD, LBFGS on axis-angle vectors, ``jacrev``/``hessian``/``linearize``, the 6-D
  representation (float64);
- ``hub_local_entrypoints``: a ``hubconf.py`` checkout loaded with ``torch.hub.load(...,
  source="local")`` and ``_load_local``, weights through ``load_state_dict_from_url`` with
  ``check_hash`` into a ``set_dir`` cache, ``download_url_to_file`` hash checks;
- ``count_regression_losses``: Poisson, negative-binomial, Gaussian, Huber and pinball
  heads on overdispersed counts, ``cummax`` against quantile crossing, ``kthvalue`` and
  ``nanquantile`` metrics, ``MultiLabelSoftMarginLoss``, a deep ensemble's variance.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_12`` with PyTorch installed records them again). What
these programs found different in ember is pinned in ``test_program_regressions_33.py``.
Every program printed the same at one thread and at the machine's default when written
(NOTE [ Thread count of the program runs ] in _program_folder.py).

Two of the public originals train a bias that feeds a normalisation which cancels it
(PatchTST's BatchNorm after attention, DiffPool's BatchNorm after a dense convolution):
its gradient is rounding noise that Adam turns into full-size steps, differently on any
two libraries or thread counts, so those programs use a per-token LayerNorm instead (and
say so where they do).
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_12")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
