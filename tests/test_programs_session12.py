"""What real programs touched on their way (issue 17, session 12): a warning shown once stays
shown once after ember's first use of SciPy (NOTE [ First-use imports keep the warnings
seen ]), and float ``arange``/``linspace`` values as PyTorch's CPU kernels compute them
(NOTE [ Ranges as PyTorch's CPU kernels compute them ]). Checks compare with torch when it
is installed; the rest run without it."""

import os
import subprocess
import sys
import textwrap
import warnings
from fractions import Fraction

import numpy as np
import pytest

import ember
from ember._lazy_import import import_module, keep_warnings_seen
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- warnings seen once stay seen -------------------------------------------------------------

def _warn_here():
    warnings.warn("session12 probe", UserWarning, stacklevel=1)


def test_keep_warnings_seen_keeps_the_registry_and_applies_new_filters():
    registry = globals().setdefault("__warningregistry__", {})
    registry.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        _warn_here()
        with keep_warnings_seen():
            warnings.filterwarnings("ignore", message="session12 other")
        _warn_here()  # already shown at this line: not again
        warnings.warn("session12 other", UserWarning, stacklevel=1)  # the new filter applies
        warnings.filterwarnings("default", message="x")  # an ordinary change resets as before
        _warn_here()
    assert [str(w.message) for w in seen] == ["session12 probe", "session12 probe"]


def test_import_module_returns_the_module():
    import json

    assert import_module("json") is json
    with pytest.raises(ImportError):
        import_module("ember_no_such_module_session12")


_ONCE = textwrap.dedent("""
    import sys, warnings
    T = __import__(sys.argv[1])
    emb = T.nn.Embedding(10, 3)
    def fn():
        warnings.warn("shown once", UserWarning)
    fn()
    emb(T.tensor([1, 2, 1])).sum().backward()   # ember's first use of SciPy (a sparse product)
    T.linalg.solve(T.eye(2, dtype=T.float64), T.ones(2, dtype=T.float64))
    x = T.linspace(-1, 1, 64).view(4, 16)  # fused row kernels: numba compiles, cache cold
    T.nn.functional.cross_entropy(T.nn.functional.layer_norm(x, (16,)), T.tensor([1, 2, 3, 4]))
    fn()
    print("done")
""")


@pytest.mark.parametrize("module", ["ember", pytest.param("torch", marks=needs_torch)])
def test_warning_shown_once_across_first_scipy_use(module, tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))  # numba compiles afresh
    run = subprocess.run([sys.executable, "-c", _ONCE, module], capture_output=True,
                         text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert run.stderr.count("UserWarning: shown once") == 1


# -- ranges as PyTorch computes them ----------------------------------------------------------

_FUSED = ember.backends.cpu.get_cpu_capability() != "DEFAULT"


@pytest.mark.skipif(not _FUSED, reason="linspace is fused (FMA) only where the CPU has it")
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_linspace_values_are_rounded_once(dtype):
    start, end, steps = -1.3, 2.7, 101
    T = np.float32 if dtype is ember.float32 else np.float64
    s, e = T(start), T(end)
    step = T((e - s) / T(steps - 1))
    want = []
    for i in range(steps):  # the exact value of start + step*i (or end - step*k), rounded once
        exact = (Fraction(float(s)) + Fraction(float(step)) * i if i < steps // 2
                 else Fraction(float(e)) - Fraction(float(step)) * (steps - 1 - i))
        want.append(T(float(exact)) if T is np.float64 else _round_f32(exact))
    got = ember.linspace(start, end, steps, dtype=dtype).numpy()
    np.testing.assert_array_equal(got, np.array(want, T))


def _round_f32(exact):
    lo = np.float32(float(exact))  # double first: then fix up a double rounding, if any
    cands = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
    errs = [abs(Fraction(float(c)) - exact) for c in cands]
    best = min(errs)
    ties = [c for c, err in zip(cands, errs) if err == best]
    return ties[0] if len(ties) == 1 else next(c for c in ties if int(c.view(np.int32)) % 2 == 0)


def test_arange_exact_grids_keep_the_plain_values():
    np.testing.assert_array_equal(ember.arange(0.0, 64.0).numpy(), np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(ember.arange(-3, 3, 0.25, dtype=ember.float64).numpy(),
                                  np.arange(-12, 12) / 4.0)


_RANGE_CASES = [(0, 1, 0.1), (0, 5, 0.3), (-1, 1, 0.01), (-7.31, 4.2, 0.0137), (2.5, 100.0, 0.77)]


@needs_torch
@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("args", _RANGE_CASES)
def test_arange_matches_torch_bit_for_bit(args, name):
    import torch

    got = ember.arange(*args, dtype=getattr(ember, name)).numpy()
    want = torch.arange(*args, dtype=getattr(torch, name)).numpy()
    np.testing.assert_array_equal(got, want)


@needs_torch
@pytest.mark.parametrize("name", ["float32", "float64"])
@pytest.mark.parametrize("args", [(-1.3, 2.7, 1001), (0, 6.28, 20), (0, 1, 17), (9.4, -2.8, 896)])
def test_linspace_matches_torch_bit_for_bit(args, name):
    import torch

    got = ember.linspace(*args, dtype=getattr(ember, name)).numpy()
    want = torch.linspace(*args, dtype=getattr(torch, name)).numpy()
    np.testing.assert_array_equal(got, want)


@needs_torch
def test_long_arange_follows_the_thread_split():
    import torch

    before = ember.get_num_threads(), torch.get_num_threads()
    try:
        for threads in (1, 3):
            ember.set_num_threads(threads)
            torch.set_num_threads(threads)
            np.testing.assert_array_equal(ember.arange(0.3, 1370.0, 0.0137).numpy(),
                                          torch.arange(0.3, 1370.0, 0.0137).numpy())
    finally:
        ember.set_num_threads(before[0])
        torch.set_num_threads(before[1])
