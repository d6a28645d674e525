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
what PyTorch printed when ``<name>.expected`` was recorded (rerun this file as a script with
PyTorch installed to record them again).
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "programs" / "research_6"
PROGRAMS = sorted(p.stem for p in HERE.glob("*.py"))
NUM = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")  # a printed float
_GROUPS = 2
_TIMEOUT = 400

# runs its share of the programs one after another in one process, each as ``__main__`` in a
# fresh folder (PyTorch's through runpy, ember's through the runner's own entry point), and
# writes name -> [exit status, stdout, stderr's tail] as JSON
_DRIVER = """
import contextlib, io, json, os, runpy, sys, tempfile, traceback
under_ember = sys.argv[1] == "ember"
if under_ember:
    import ember.compat.run as runner
results = {}
for path in json.loads(sys.argv[3]):
    out, err, rc = io.StringIO(), io.StringIO(), 0
    saved_argv, saved_path, cwd = list(sys.argv), list(sys.path), os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if under_ember:
                    runner.main([path])
                else:
                    sys.argv = [path]
                    sys.path.insert(0, os.path.dirname(path))
                    runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                rc = e.code or 0
            except BaseException:
                traceback.print_exc()
                rc = 1
        os.chdir(cwd)
    sys.argv[:], sys.path[:] = saved_argv, saved_path
    results[os.path.basename(path)[:-3]] = [rc, out.getvalue(), err.getvalue()[-4000:]]
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""


def _has_torch():
    return importlib.util.find_spec("torch") is not None


def _run_all(tmp, sides):
    """Runs every program on each side in ``sides`` ("torch", "ember"), ``_GROUPS``
    processes a side, all at once; side -> name -> [status, stdout, stderr]."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    procs = []
    for side in sides:
        for g in range(_GROUPS):
            share = [str(HERE / f"{n}.py") for n in PROGRAMS[g::_GROUPS]]
            result = tmp / f"{side}_{g}.json"
            procs.append((side, result, subprocess.Popen(
                [sys.executable, "-c", _DRIVER, side, str(result), json.dumps(share)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp, env=env)))
    results = {side: {} for side in sides}
    try:
        for side, result, proc in procs:
            try:
                _, err = proc.communicate(timeout=_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            assert proc.returncode == 0, f"{side} driver:\n{err[-3000:]}"
            results[side].update(json.loads(result.read_text()))
    finally:
        for _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """side -> program -> [status, stdout, stderr]; PyTorch's side only where installed."""
    sides = ("torch", "ember") if _has_torch() else ("ember",)
    return _run_all(tmp_path_factory.mktemp("research_6"), sides)


def _assert_same_printout(got, want, name):
    mask = [NUM.sub("#", ln) for ln in got.splitlines()]
    assert mask == [NUM.sub("#", ln) for ln in want.splitlines()], name
    np.testing.assert_allclose([float(x) for x in NUM.findall(got)],
                               [float(x) for x in NUM.findall(want)], rtol=1e-4, atol=1e-5,
                               err_msg=name)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_prints_what_torch_prints(name, runs):
    rc, out, err = runs["ember"][name]
    assert rc == 0, f"{name} failed under ember:\n{err}"
    if "torch" in runs:
        t_rc, t_out, t_err = runs["torch"][name]
        assert t_rc == 0, f"{name} failed on PyTorch:\n{t_err}"
        want = t_out
    else:
        want = (HERE / f"{name}.expected").read_text()
    assert out.strip(), name
    _assert_same_printout(out, want, name)


def test_every_program_has_its_recorded_output():
    assert len(PROGRAMS) >= 10
    assert all((HERE / f"{n}.expected").exists() for n in PROGRAMS)


if __name__ == "__main__":  # record PyTorch's printouts as <name>.expected
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        recorded = _run_all(Path(d), ("torch",))["torch"]
    for n, (status, printed, stderr) in recorded.items():
        assert status == 0, f"{n}:\n{stderr}"
        (HERE / f"{n}.expected").write_text(printed)
        print("recorded", n)
