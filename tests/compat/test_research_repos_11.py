"""More whole programs written the way public repositories and tutorials write them, run
unchanged on PyTorch and through ``python -m ember.compat.run``, printing the same.

The programs live in ``programs/research_11/`` (our own code, after the named repositories'
and tutorials' patterns):

- ``lightning_hand_loop``: a Lightning-style ``training_step``/``validation_step``/
  ``configure_optimizers`` loop written by hand (``OneCycleLR`` per step beside a warmup
  ``LambdaLR``, gradient accumulation, ``clip_grad_norm_`` after ``unscale_`` on a disabled
  ``GradScaler``, an EMA by ``torch._foreach_lerp_``, a checkpoint that resumes exactly);
- ``swa_ema_update_bn``: ``AveragedModel`` for SWA and, through ``get_ema_multi_avg_fn``
  with ``use_buffers=True``, for an EMA; ``SWALR`` (linear and cosine), ``update_bn`` over
  pairs and over bare tensors, the averaged state in a ``weights_only`` checkpoint;
- ``ddp_world_of_one``: a nanoGPT-style DDP script in a world of one over a ``file://``
  rendezvous (``require_backward_grad_sync``, ``no_sync``, ``DistributedSampler.set_epoch``,
  ``all_reduce``/``all_gather``/``broadcast_object_list``, ``raw_model = model.module``,
  a master-process checkpoint behind ``barrier``, ``destroy_process_group``);
- ``hf_pretrained_generate``: a transformers-style ``PreTrainedModel`` (``post_init``,
  ``_init_weights`` through ``apply``, tied embeddings, ``save_pretrained``/
  ``from_pretrained``, ``finfo.min`` masks, left padding, ``past_key_values`` tuples, greedy,
  top-k and top-p ``generate``);
- ``safetensors_mmap_io``: a safetensors-style file written and read by hand
  (``untyped_storage``, ``frombuffer``, ``UntypedStorage.from_file``), ``torch.load`` with
  ``mmap=True``, NumPy sharing semantics, ``default_collate`` of nested structures;
- ``timm_convnext_droppath``: a timm ConvNeXt (``DropPath``, ``LayerScale``,
  ``LayerNorm2d``, ``default_cfg``, ``create_model``, ``reset_classifier(0)``, weight-decay
  and layer-decay groups, weights from ``torch.hub.load_state_dict_from_url`` on a
  ``file://`` URL);
- ``kalman_rts_em``: a Kalman filter (Joseph form), RTS smoother, noise scales learned
  through the filter's likelihood, a batched filter and an unscented transform (float64);
- ``hmc_logistic``: HMC for a Bayesian logistic regression (``torch.distributions``,
  leapfrog by ``autograd.grad``, dual averaging, split-R-hat, FFT effective sample sizes)
  and random-walk Metropolis (float64);
- ``soft_renderer_pose``: a differentiable 2-D renderer (``affine_grid``/``grid_sample``
  sprites, soft discs and triangles, alpha compositing, an SSIM loss) recovering a pose;
- ``dit_flow_matching``: a DiT with adaLN-Zero trained by rectified flow, classifier-free
  guidance in an Euler sampler, NumPy sin-cos tables, an EMA copy;
- ``muon_lion_schedulefree``: Muon (Newton-Schulz in bfloat16 on one matrix, float32 in
  training on CPU), Lion by ``_foreach`` ops and schedule-free AdamW as ``Optimizer``
  subclasses with hooks and ``state_dict`` round trips;
- ``protonet_episodes``: prototypical networks (an episodic ``batch_sampler``, ``cdist``
  logits, a cosine head with a learned scale, an episode ``IterableDataset`` over two
  persistent workers read twice);
- ``sparse_autoencoder_sae``: ReLU and TopK sparse autoencoders on synthetic superposition
  (geometric-median bias, unit-norm decoder with gradient projection, dead latents, the
  auxiliary-k loss);
- ``neural_ode_adjoint``: torchdiffeq's ``ode_demo`` by hand (RK4 ``odeint``,
  ``RunningAverageMeter``) and the adjoint method as an ``autograd.Function`` checked
  against backpropagation, ``torch.func.jvp`` of the flow;
- ``burgers_pinn``: the Burgers PINN of maziarraissi/PINNs' PyTorch ports (``OrderedDict``
  network, ``create_graph`` residuals, Adam then strong-Wolfe ``LBFGS``, the inverse
  problem with registered ``lambda`` parameters; float64);
- ``two_tower_retrieval``: a two-tower recommender (hashed ``EmbeddingBag`` features with
  ``per_sample_weights``, ``padding_idx`` history pooling, in-batch softmax with logQ
  correction, ``SparseAdam`` beside ``Adam``, recall and NDCG at k);
- ``scaler_logging_reprs``: what a script logs (``logging`` of modules and tensors,
  ``print(optimizer)``, scheduler and scaler state dicts), an enabled CPU ``GradScaler``
  skipping overflowed steps and backing off, ``set_printoptions``, ``finfo``/``iinfo``,
  ``inference_mode`` and ``no_grad`` decorators;
- ``tar_shards_stream``: webdataset-style ``.tar`` shards written with ``tarfile`` and
  ``torch.save`` to bytes, streamed by an ``IterableDataset`` split over two workers with a
  seeded shuffle buffer, ``ChainDataset``, ``islice``, a dict ``collate_fn``;
- ``xlstm_mlstm``: xLSTM's mLSTM in its parallel stabilised, recurrent and chunked forms
  (float64, agreeing), mLSTM blocks with a causal depthwise ``Conv1d`` and ``GroupNorm``
  heads, and an exponentially gated sLSTM cell, trained as a tiny language model.

With PyTorch installed each program runs on both (two processes each side, taking turns
among the programs) and the printed lines must agree: the text with its floats masked
exactly, the floats to a relative 1e-4. Without PyTorch each must run under ember and print
what PyTorch printed when ``<name>.expected`` was recorded (``python -m
tests.compat.test_research_repos_11`` with PyTorch installed records them again). What
these programs found different in ember is pinned in ``test_program_regressions_32.py``.
Every program printed the same at one thread and at the machine's default when written
(NOTE [ Thread count of the program runs ] in _program_folder.py).
"""

import re
import shutil

import numpy as np

from tests.compat._program_folder import NUM, Folder
from tests.distributed.conftest import needs_mpi
from tests.test_programs_session15 import command, run

FOLDER = Folder("research_11")
PROGRAMS = FOLDER.programs
runs, test_program_prints_what_torch_prints, test_every_program_has_its_recorded_output = \
    FOLDER.tests()

#: what rank 0 alone prints when ``ddp_world_of_one`` runs as two workers under torchrun
#: (PyTorch 2.13, gloo, one thread a worker)
_TWO_WORKER_REPORT = """\
iter 0: loss 1.19146, lr 0.00333, norm 0.55217, epoch 0
iter 1: loss 1.06589, lr 0.00667, norm 0.61000, epoch 0
iter 2: loss 1.09239, lr 0.01000, norm 0.47378, epoch 1
iter 3: loss 0.98162, lr 0.00940, norm 0.52545, epoch 1
iter 4: loss 1.11679, lr 0.00775, norm 0.37778, epoch 2
iter 5: loss 0.96657, lr 0.00550, norm 0.58708, epoch 2
iter 6: loss 1.05656, lr 0.00325, norm 0.36712, epoch 3
iter 7: loss 0.92537, lr 0.00160, norm 0.53090, epoch 3
""".splitlines()


@needs_mpi
def test_ddp_program_under_the_launcher_takes_its_torchrun_branch(tmp_path):
    # the same file, started as two workers: the RANK branch, a DistributedSampler over two
    # ranks, the loss averaged over them, rank 0 alone saving (one launched group only)
    shutil.copy(FOLDER.here / "ddp_world_of_one.py", tmp_path)
    out = run(command("ember", "ddp_world_of_one.py",
                      launcher=["--standalone", "--nproc-per-node", "2"]), cwd=tmp_path)
    import ember

    saved = ember.load(tmp_path / "out" / "ckpt.pt", weights_only=True)
    assert sorted(saved["model"]) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight",
                                      "unused_in_eval"] and saved["iter_num"] == 8
    # rank 0 prints these lines while the other rank waits in a collective, so no text of
    # the other's (workers write unbuffered) can land inside them
    lines = [ln for ln in out.splitlines() if re.match(r"iter \d", ln)]
    assert [NUM.sub("#", ln) for ln in lines] == [NUM.sub("#", ln) for ln in _TWO_WORKER_REPORT]
    np.testing.assert_allclose([float(x) for x in NUM.findall("\n".join(lines))],
                               [float(x) for x in NUM.findall("\n".join(_TWO_WORKER_REPORT))],
                               rtol=1e-4, atol=1e-5)
    # (a print of several arguments writes each separately: count one argument's text)
    assert out.count("launched under torchrun:") == 2
    assert out.count("initialized after destroy") == 2


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    FOLDER.record()
