"""Embedding's backward: every lookup of a row summed into its gradient."""

import numpy as np
import pytest

import ember
from ember import nn


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_embedding_backward_sums_repeated_rows(dtype):
    # float32/64 sum through a sparse product, other dtypes by sorted runs: both must add
    # every lookup of a row, leave unused rows zero and honour padding_idx
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 7, (5, 6))
    idx[0, :3] = 4  # a row looked up many times
    dt = getattr(ember, dtype)
    w = ember.zeros(9, 3, dtype=dt, requires_grad=True)
    g = rng.standard_normal((5, 6, 3))
    out = nn.functional.embedding(ember.tensor(idx), w, padding_idx=6)
    out.backward(ember.tensor(g).to(dt))
    ref = np.zeros((9, 3))
    np.add.at(ref, idx.reshape(-1), ember.tensor(g).to(dt).double().numpy().reshape(-1, 3))
    ref[6] = 0
    got = w.grad.double().numpy()
    assert w.grad.dtype == dt and w.grad.shape == (9, 3)
    tol = {"float32": 1e-6, "float64": 1e-12}.get(dtype, 3e-2)
    assert np.allclose(got, ref, rtol=tol, atol=tol)
    assert not got[7:].any()
    empty = nn.functional.embedding(ember.zeros(0, dtype=ember.int64), w)
    empty.sum().backward()
    assert np.allclose(w.grad.double().numpy(), got)


def test_embedding_backward_bfloat16_adds_in_lookup_order():
    # PyTorch adds a bfloat16 row's lookups one by one in that precision; the rounding of each
    # partial sum shows, so the result must be that sequence exactly. (For float16 NumPy's
    # reduction keeps a float32 running sum, which differs from PyTorch in the last bits.)
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 3, 400)
    g = ember.tensor(rng.standard_normal((400, 4))).to(ember.bfloat16)
    w = ember.zeros(3, 4, dtype=ember.bfloat16, requires_grad=True)
    nn.functional.embedding(ember.tensor(idx), w).backward(g)
    rows = [ember.zeros(4, dtype=ember.bfloat16) for _ in range(3)]
    for j, i in enumerate(idx.tolist()):
        rows[i] = rows[i] + g[j]
    assert np.array_equal(w.grad.float().numpy(), ember.stack(rows).float().numpy())
