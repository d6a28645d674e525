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
HERE = Path(__file__).parent / "programs" / "research_5"
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
    return _run_all(tmp_path_factory.mktemp("research_5"), sides)


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
