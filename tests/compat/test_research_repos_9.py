"""More whole programs written the way public repositories and tutorials write them, run
unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_9/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``perceiver_io``: lucidrains/perceiver-pytorch's Perceiver IO (Fourier position features,
  latents cross-attending through ``nn.MultiheadAttention`` with ``key_padding_mask`` and
  ``need_weights=False``, tied latent blocks, decoder queries), argparse options,
  ``torch.backends`` flags, a guarded ``torch.compile``, disabled AMP;
- ``esn_reservoir``: an echo state network (spectral radius from ``linalg.eigvals``, leaky
  states, a ridge readout by ``linalg.solve`` checked against ``lstsq``, generative mode on
  Mackey-Glass) in float64;
- ``retinanet_anchors``: a RetinaNet-style head without ``torchvision.ops`` (anchor
  generation, ``box_iou``, the ``Matcher``, ``BoxCoder``, sigmoid focal loss, hand NMS and
  batched NMS, ``roi_align`` by ``grid_sample``);
- ``mae_masking``: facebookresearch/mae's masked autoencoder (NumPy sin-cos position tables,
  ``patchify`` by ``einsum``, ``argsort`` masking with ``ids_restore`` and ``gather``,
  normalised-pixel loss, the cosine warmup set by hand, checkpoints);
- ``byol_barlow_vicreg``: BYOL (a cached deep-copied target with a cosine EMA), SimSiam's
  stop-gradient, Barlow Twins' ``off_diagonal`` with a LARS optimizer, VICReg, a k-NN monitor;
- ``snn_surrogate``: snnTorch-style leaky integrate-and-fire neurons with a surrogate
  gradient ``Function``, rate and latency coding, spike-count losses through time;
- ``ntm_memory``: loudinthecloud/pytorch-ntm's Neural Turing Machine on the copy task
  (cosine content addressing, circular shifts by ``conv1d``, sharpening, erase/add writes);
- ``transe_kge``: TransE (``max_norm`` embeddings, renormalisation, ``MarginRankingLoss``)
  and RotatE (self-adversarial negatives) with a ``collate_fn`` loader and filtered MRR;
- ``neural_process``: (attentive) latent neural processes on GP curves (``cholesky``
  samples, ``kl_divergence`` of ``Normal``s, ``Independent`` likelihoods);
- ``performer_favor``: performer-pytorch's FAVOR+ (orthogonal random features from
  ``linalg.qr``, the stabilised softmax kernel, causal prefix sums) against exact attention;
- ``pixelcnn_masked``: PixelCNN's ``MaskedConv2d`` (a mask buffer applied to
  ``weight.data``), the receptive field by gradients, bits per dimension, pixel-by-pixel
  ``multinomial`` sampling;
- ``hypernet_film``: hypernetworks emitting conv kernels from layer embeddings, FiLM, and a
  task hypernetwork for a SIREN through ``functional_call`` and ``vmap``;
- ``per_double_dqn``: prioritized replay with a NumPy sum tree, importance weights, a
  dueling double DQN with Polyak target updates;
- ``cyclegan_patchgan``: junyanz's CycleGAN/pix2pix networks (reflection padding, instance
  norm partials, PatchGAN, LSGAN ``GANLoss`` buffers, ``ImagePool``, linear-decay
  ``LambdaLR``, the U-Net skip block);
- ``convlstm_nowcast``: ndrplz/ConvLSTM_pytorch's cells and layers in an encoder-forecaster
  on moving squares (``torch.roll``), ``ReduceLROnPlateau``, CSI;
- ``conformer_specaugment``: a Conformer encoder (SpecAugment masks, conv subsampling,
  relative-position attention with the pad-and-view shift, GLU/depthwise conv module) under
  CTC with a Noam ``LambdaLR``;
- ``dann_gradreverse``: fungtion/DANN's gradient reversal ``Function``, alpha and
  learning-rate schedules written into ``param_groups``, zipped source/target loaders, MMD
  and CORAL;
- ``deformable_conv``: 4uiiurz1's pure-PyTorch deformable convolution v2 (offsets and
  modulation, bilinear sampling by four ``gather``s), checked against ``conv2d`` and
  ``grid_sample``;
- ``reformer_lsh``: reformer-pytorch's LSH attention (random-rotation hashing, sorting by
  bucket and position, chunked attention looking one back, unsorting, rounds combined by
  ``logsumexp``), reversible blocks, axial position embeddings, ``bucketize``;
- ``set_transformer``: juho-lee/set_transformer's MAB/SAB/ISAB/PMA and Deep Sets
  (permutation invariance, max of a set, amortised mixture-of-Gaussians clustering);
- ``common_mistakes``: the "common PyTorch mistakes" posts' errors printed as
  ``type(e).__name__: e`` (a float64 NumPy batch into a float32 model, wrongly shaped RNN
  states, ``where``/``permute``/``view`` misuse, a failed Cholesky, a freed graph); these
  messages are pinned in ``test_program_regressions_30.py``.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_9`` with PyTorch installed records them again).
"""

from tests.compat._program_folder import Folder

FOLDER = Folder("research_9")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
