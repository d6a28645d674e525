"""Whole PyTorch programs, written as public examples and tutorials write them, run unchanged
through ``python -m ember.compat.run`` and print what they print under PyTorch.

The programs live in ``tests/compat/programs/``; each prints only what does not depend on the
random stream (shapes, dtypes, printed forms, exact values of fixed inputs, and behaviour
such as "the loss went down"), so ember's output must equal PyTorch's line for line. PyTorch's
output, at the small sizes below, is recorded beside each program as ``<name>.expected``;
rerun ``python tests/compat/test_user_programs.py`` with PyTorch installed to record it
again after changing a program.

The first test that asks runs them all, in two processes that take turns among the
programs through the runner's entry point (``ember.compat.run.main``), so ember is imported
twice rather than once per program.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "programs"

#: program -> the arguments that keep it small (a few seconds under PyTorch or ember)
PROGRAMS = {
    "mnist_cnn.py": ["--train-size", "96", "--epochs", "1"],
    "word_language_model.py": ["--epochs", "1", "--models", "LSTM,Transformer", "--words", "3"],
    "vae_dcgan.py": ["--epochs", "2"],
    "actor_critic.py": ["--episodes", "8"],
    "timeseries_lstm.py": ["--n", "120", "--epochs", "3"],
    "nanogpt_char.py": ["--max_iters", "12"],
    "gcn.py": ["--epochs", "30"],
    "seq2seq_attention.py": ["2"],
    "text_classification.py": [],
    "finetune_resume.py": ["--epochs", "1"],
    "jit_func_tricks.py": [],
    "legacy_idioms.py": [],
    "data_and_schedules.py": [],
    "tensor_autograd_tutorial.py": [],
    "nn_really_tutorial.py": [],
    "save_load_tutorial.py": [],
    "stn_char_rnn_tutorials.py": [],
    "quickstart_tutorials.py": [],
    "with_examples_tutorial.py": [],
    "yunjey_basics.py": [],
    "prune_parametrize_tutorials.py": [],
    "flows_ensembling.py": [],
    "packed_autograd_dqn.py": [],
    "transformer_vit_siamese.py": [],
    "karpathy_makemore_mingpt.py": [],
    "style_amp_gan_workers.py": [],
    "ddpm_char_rnn.py": [],
    "script_functions.py": [],
    "d2l_chapters.py": [],
    "hooks_schedulers_swa.py": [],
    "lucidrains_einops.py": [],
    "printing_and_testing.py": [],
    "env_and_loaders.py": [],
    "optimizers_resume.py": [],
    "signal_audio.py": [],
    "fx_tutorials.py": [],
    "export_onnx_tutorials.py": [],
    "compile_explain_tutorial.py": [],
    "printed_forms.py": [],
    "reinforce_policies.py": [],
    "functions_hooks_checkpoints.py": [],
}

#: program -> a package it imports beyond torch and NumPy (the program is skipped without it)
NEEDS = {"lucidrains_einops.py": "einops", "fx_tutorials.py": "tabulate",
         "export_onnx_tutorials.py": "onnx"}


def _runnable(name):
    import importlib.util

    return name not in NEEDS or importlib.util.find_spec(NEEDS[name]) is not None

_GROUPS = 2  # processes, each running its share of the programs one after another
_TIMEOUT = 300

# one process runs several programs through the runner's own entry point (a program needs
# ~1.3 s of CPU to import ember, which would otherwise be most of this file's time); each
# program's stdout and stderr are kept apart and handed back as JSON
_DRIVER = """
import contextlib, io, json, os, sys, traceback
import ember.compat.run as runner
results = {}
for spec in json.loads(sys.argv[1]):
    out, err, rc = io.StringIO(), io.StringIO(), 0
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runner.main(spec)
        except SystemExit as e:
            rc = e.code or 0
        except BaseException:
            traceback.print_exc()
            rc = 1
    sys.argv[:], sys.path[:] = saved_argv, saved_path
    results[os.path.basename(spec[0])] = [rc, out.getvalue(), err.getvalue()]
sys.__stdout__.write(json.dumps(results))
"""


def _command(name, under_ember=True):
    runner = ["-m", "ember.compat.run"] if under_ember else []
    return [sys.executable, *runner, str(HERE / name), *PROGRAMS[name]]


def _env():
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # the programs share the cores
    return env


@pytest.fixture(scope="module")
def outcomes():
    """Runs every program under ember; name -> CompletedProcess."""
    import json

    names = [n for n in sorted(PROGRAMS) if _runnable(n)]
    procs = []
    for g in range(_GROUPS):
        specs = [[str(HERE / n), *PROGRAMS[n]] for n in names[g::_GROUPS]]
        procs.append(subprocess.Popen([sys.executable, "-c", _DRIVER, json.dumps(specs)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=HERE, env=_env()))
    results = {}
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        assert proc.returncode == 0, f"the program driver failed:\n{err[-3000:]}"
        for name, (rc, stdout, stderr) in json.loads(out).items():
            results[name] = subprocess.CompletedProcess(name, rc, stdout, stderr)
    return results


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_prints_what_pytorch_prints(name, outcomes):
    if not _runnable(name):
        pytest.skip(f"{name} needs {NEEDS[name]}")
    r = outcomes[name]
    assert r.returncode == 0, f"{name} failed under ember:\n{r.stderr[-3000:]}"
    expected = (HERE / (name[:-3] + ".expected")).read_text()
    assert r.stdout.splitlines() == expected.splitlines()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_warns_nothing_extra(name, outcomes):
    # PyTorch computes inf and NaN silently: no NumPy RuntimeWarning may reach the user
    # (NOTE [ Floating-point warnings ] in ember/__init__.py)
    if not _runnable(name):
        pytest.skip(f"{name} needs {NEEDS[name]}")
    assert "RuntimeWarning" not in outcomes[name].stderr


def _record():
    """Writes each program's output under PyTorch (the real one) beside it."""
    for name in PROGRAMS:
        r = subprocess.run(_command(name, under_ember=False), capture_output=True, text=True,
                           cwd=HERE, env=_env(), timeout=_TIMEOUT)
        if r.returncode:
            raise SystemExit(f"{name} failed under PyTorch:\n{r.stderr}")
        (HERE / (name[:-3] + ".expected")).write_text(r.stdout)
        print("recorded", name)


if __name__ == "__main__":
    import torch  # noqa: F401  (the programs must run on the real PyTorch here)

    _record()


# -- what the programs found, one behaviour each ---------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def test_return_types_print_as_pytorchs():
    import ember

    t = _torch()
    x = [[1.0, 5.0], [7.0, 2.0]]
    want = repr(t.max(t.tensor(x), 1)).replace("torch.", "ember.")
    assert repr(ember.max(ember.tensor(x), 1)) == want


def test_return_types_print_multiline_fields_as_pytorchs():
    import ember

    t = _torch()
    want = repr(t.linalg.eigh(t.eye(2))).replace("torch.", "ember.")
    assert repr(ember.linalg.eigh(ember.eye(2))) == want


@pytest.mark.parametrize("text", ["cpu", "cuda:0", "meta"])
def test_device_never_equals_a_string(text):
    import ember

    t = _torch()
    assert (ember.device(text) == text) is (t.device(text) == text) is False
    assert (text != ember.device(text)) is (text != t.device(text)) is True


_FLOAT_WARNING = "Converting a tensor with requires_grad=True to a scalar"


def _float_warnings(fn):
    """How many times PyTorch's warn-once requires-grad warning is issued while ``fn`` runs,
    starting as a fresh process would (nothing warned yet)."""
    import warnings

    from ember import _settings

    _settings._warned_once.discard(next((m for m in _settings._warned_once
                                         if m.startswith(_FLOAT_WARNING)), None))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        fn()
    return sum(str(w.message).startswith(_FLOAT_WARNING) for w in shown)


def test_float_of_tensor_requiring_grad_warns_once():
    import ember

    x = ember.ones(1, requires_grad=True)
    assert _float_warnings(lambda: (float(x), float(x * 2), complex(x))) == 1


def test_float_under_no_grad_and_int_warn_nothing():
    import ember

    x = ember.ones(1, requires_grad=True)

    def read():
        int(x)
        with ember.no_grad():
            float(x)

    assert _float_warnings(read) == 0


def test_lbfgs_step_warns_nothing():
    import ember

    w = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    assert _float_warnings(lambda: opt.step(closure)) == 0


# -- NumPy's error state stays the user's (NOTE [ Floating-point warnings ]) -----------------------

def _run_quietly(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip(), r.stderr


def test_import_leaves_numpy_error_state_alone():
    out, _ = _run_quietly("import numpy as np\nnp.seterr(over='raise')\nbefore = np.geterr()\n"
                          "import ember\nprint(np.geterr() == before)")
    assert out == "True"


def test_user_numpy_code_still_warns_after_import():
    _, err = _run_quietly("import ember, numpy as np\nnp.log(np.zeros(1))")
    assert "RuntimeWarning: divide by zero encountered in log" in err


_QUIET_OPS = """
import ember as torch
inf = float("inf")
x = torch.tensor([0.0, -1.0, 1.0, inf, -inf])
torch.log(x); x / 0; torch.sqrt(x); torch.exp(x * 1000); x - x; x * 0; torch.pow(x, -1)
torch.rsqrt(x); torch.reciprocal(x); torch.log1p(-x); x.mean(); torch.tensor([]).mean()
torch.softmax(torch.full((2, 3), -inf), 1); torch.logsumexp(torch.full((3,), -inf), 0)
torch.atanh(x); torch.acos(x); torch.nn.functional.log_softmax(x, 0); x.std()
y = torch.zeros(3, requires_grad=True)
torch.log(y).sum().backward(); torch.sqrt(y).sum().backward()
torch.full((1 << 19,), -1.0).log()
torch.distributions.Normal(0.0, 1.0).log_prob(torch.tensor(inf))
print("done")
"""


def test_ordinary_inf_and_nan_ops_warn_nothing():
    out, err = _run_quietly(_QUIET_OPS)
    assert out == "done"
    assert "RuntimeWarning" not in err


def test_variance_without_degrees_of_freedom_warns_only_pytorchs_warning():
    import warnings

    import ember

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # as pytest.warns does: ember's filter is overridden
        r = ember.ones(1).var()
    assert r.isnan().item()
    assert [type(w.message) for w in shown] == [UserWarning]
