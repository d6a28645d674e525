"""Eighteen more whole programs written the way public repositories and tutorials write them,
run unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_7/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``timm_registry_zoo``: pytorch-image-models' ``register_model``/``create_model``/
  ``list_models`` registry, ``named_apply`` init, DropPath, layer-decay parameter groups, a
  "pretrained" checkpoint through a filter function with ``strict=False``;
- ``gp_regression``: exact GP regression by hand (``cholesky``, ``cholesky_solve``,
  ``solve_triangular``, jittered ``cholesky_ex``), type-II ML, posterior samples, a DTC
  sparse approximation, ``LinAlgError``;
- ``mdn_mixture``: a mixture density network over ``MixtureSameFamily``, EM for a GMM with
  ``logsumexp``, mixture CDFs and the ``kl_divergence`` registry;
- ``bigru_crf_tagger``: a char-CNN + packed bidirectional GRU + linear-chain CRF NER tagger
  (forward algorithm, Viterbi, span F1);
- ``wavenet_mulaw``: mu-law WaveNet with causal dilated convolutions, speaker conditioning,
  a checkpoint dict, slow and queue-based fast generation sampling the same;
- ``transformer_xl_memory``: kimiyoung/transformer-xl's relative attention with
  ``_rel_shift``, segment recurrence with detached memories, ``LMOrderedIterator``;
- ``gradcam_hooks``: pytorch-grad-cam's activations-and-gradients hooks, Grad-CAM(++),
  guided backprop through full backward hooks, kwargs/prepend/global/backward-pre hooks;
- ``glow_flow``: rosinality's Glow (ActNorm data init, LU 1x1 convolution from
  ``scipy.linalg.lu``, affine coupling, squeeze, split priors, exact reconstruction);
- ``pinn_lbfgs``: a heat-equation PINN (nested ``autograd.grad``, Adam then strong-Wolfe
  LBFGS), a SIREN with gradient and Laplacian, ``torch.func`` Jacobians;
- ``dlrm_recsys``: facebookresearch/dlrm (sparse ``EmbeddingBag`` with offsets, dot
  interaction, SGD on sparse gradients), BPR matrix factorisation, NCF, HR/NDCG;
- ``s4d_fft_conv``: state-spaces' S4D (complex parameters via ``view_as_real``, FFT
  convolution, ``_optim`` parameter groups) and its recurrence agreeing with it;
- ``moco_swav_queue``: MoCo v2's momentum encoder and queue buffer with batch shuffling,
  SwAV's prototypes, Sinkhorn-Knopp codes and swapped prediction;
- ``tabnet_sparsemax``: pytorch-tabnet's sparsemax/entmax Functions, ghost BN, attentive
  transformers, masks' importances, a ``SummaryWriter`` log read back with TensorBoard;
- ``raft_correlation``: RAFT's all-pairs correlation pyramid with ``grid_sample`` lookups,
  the separable ConvGRU update, convex upsampling via ``unfold``, ``sequence_loss``;
- ``deeplab_aspp_miou``: DeepLabV3+ with dilated backbone, ASPP and its pooling branch,
  ``ignore_index=255``, focal loss, poly ``LambdaLR``, the bincount confusion-matrix
  metrics, a best-score checkpoint and flip TTA under ``inference_mode``;
- ``pointnet2_sampling``: yanx27's pure-PyTorch PointNet++ (farthest point sampling, ball
  query by ``sort``, multi-scale grouping, three-nearest feature propagation) for part
  segmentation, and DGCNN's k-NN EdgeConv feature;
- ``printing_pickling_functions``: printed tensors of many dtypes and layouts, print
  options, a model's, optimizer's and scheduler's printed forms, a whole module through
  ``torch.save``/``torch.load(weights_only=False)`` and ``safe_globals``, and custom
  Functions with ``once_differentiable`` and ``mark_dirty``;
- ``sparse_csr_gnn``: GCN, GraphSAGE-mean and edge attention on COO and CSR adjacencies
  (``torch.sparse.sum``/``mm``/``softmax``/``addmm``) with early stopping on the best
  deep-copied ``state_dict``.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_7`` with PyTorch installed records them again).
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_7")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()

if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
