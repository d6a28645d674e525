"""Regressions found by running public research programs (tests/compat/test_research_repos_4.py)
unchanged under ``python -m ember.compat.run``: each test is a minimal program of our own that
reproduces one failure, checked against torch where torch is installed."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
ROOT = Path(__file__).resolve().parents[2]


def _printed(script, under_ember):
    """What ``script`` prints (stdout, then stderr's warning lines) run on its own."""
    prefix = ["-m", "ember.compat.run"] if under_ember else []
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"regression_25_{os.getpid()}.py"
    path.write_text(textwrap.dedent(script))
    try:
        proc = subprocess.run([sys.executable, *prefix, str(path)], capture_output=True,
                              text=True, timeout=120, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    finally:
        path.unlink()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# -- legacy sparse constructors (tkipf/pygcn's torch.sparse.FloatTensor(indices, values, size)) --

@pytest.mark.parametrize("make, values_dtype", [
    ("FloatTensor", ember.float64), ("DoubleTensor", ember.float32),
    ("LongTensor", ember.float32), ("FloatTensor", ember.int64)])
def test_legacy_sparse_constructor_keeps_values_dtype(make, values_dtype):
    i = ember.tensor([[0, 1], [2, 0]])
    v = ember.tensor([1, 2], dtype=values_dtype)
    s = getattr(ember.sparse, make)(i, v, ember.Size([2, 3]))
    assert s.dtype == values_dtype and s.shape == (2, 3)


def test_legacy_sparse_constructor_empty_forms_take_the_type_dtype():
    assert ember.sparse.DoubleTensor(2, 3).dtype == ember.float64
    assert ember.sparse.LongTensor(ember.Size([4])).shape == (4,)
    assert ember.sparse.LongTensor().shape == (0,)


@pytest.mark.parametrize("args", [((2, 3),), ([2, 3],)])
def test_legacy_sparse_constructor_rejects_a_plain_sequence(args):
    with pytest.raises(TypeError, match=r"SparseTensor\(sequence\) only accepts sizes"):
        ember.sparse.FloatTensor(*args)


def test_legacy_sparse_constructor_rejects_indices_alone():
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.sparse.FloatTensor(ember.tensor([[0], [1]]))


@needs_torch
def test_legacy_sparse_constructor_warnings_match_torch():
    # one deprecation warning per form and process; no word about unchecked invariants
    script = """
        import warnings
        import torch
        i, v = torch.tensor([[0], [5]]), torch.tensor([1.0])
        for _ in range(2):
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                torch.sparse.FloatTensor(i, v, torch.Size([2, 2]))
                torch.sparse.DoubleTensor(i, v, torch.Size([2, 2]))
                torch.sparse.FloatTensor(i, v)
                torch.sparse.FloatTensor(2, 3)
                torch.sparse.FloatTensor(torch.Size([2, 3]))
                torch.sparse.FloatTensor()
            for w in seen:
                print(str(w.message).split(" (Triggered internally")[0])
            print("--")
    """
    assert _printed(script, True) == _printed(script, False)
