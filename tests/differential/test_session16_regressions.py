"""Regressions for bug classes of session 16's differential runs against torch: atan2's
gradient where ``a^2 + b^2`` is zero (the origin, signed zeros, underflow), the forward-mode
tangents of det/slogdet/logdet at singular matrices (NOTE [ Determinant tangents at singular
matrices ]), the words of an ``out=`` tensor's dtype refusal, embedding_bag's bookkeeping
dtypes with mixed index dtypes, and the long runner's report groups. Each compares with
torch where it is installed; the stated expectations are torch 2.13's."""

import importlib.util
import os

import numpy as np
import pytest

import ember
from tests.differential import test_session13_regressions as _s13

backend = _s13.backend  # the fixture: each kernel backend in turn

INF, NAN = float("inf"), float("nan")


def _torch():
    return pytest.importorskip("torch")




def _same(a, b):
    """Equal values, NaN where the other has NaN, the same signs of zeros."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    np.testing.assert_array_equal(a, b)
    fin = ~np.isnan(a)
    np.testing.assert_array_equal(np.signbit(a[fin]), np.signbit(b[fin]))


# ------------------------------------------------------------------------------------------------
# atan2's gradient where a^2 + b^2 is zero

ATAN2_A = [0.0, -0.0, 0.0, -0.0, 5e-324, 1e-160, 1e-155, 2.2e-308, 3.0, INF, 1e200, NAN, 0.0]
ATAN2_B = [-0.0, 0.0, 0.0, -0.0, 0.0, 0.0, 1e-155, 0.5, 0.0, 1.0, 1e200, 1.0, NAN]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_atan2_gradient_at_zero_denominator(backend, dtype):
    torch = _torch()
    grads = []
    for T in (ember, torch):
        a = T.tensor(ATAN2_A, dtype=getattr(T, dtype), requires_grad=True)
        b = T.tensor(ATAN2_B, dtype=getattr(T, dtype), requires_grad=True)
        w = T.arange(len(ATAN2_A), dtype=getattr(T, dtype)) % 3 - 1
        grads.append([g.detach().numpy() for g in
                      T.autograd.grad((T.atan2(a, b) * w).sum(), [a, b])])
    for e, t in zip(*grads):
        _same(e, t)


def test_atan2_gradient_origin_is_a_signed_zero():
    # torch 2.13: d/da atan2(a, b) at (0, -0) is -0 and d/db is -0 (not NaN from 0 / 0)
    a = ember.tensor([0.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([-0.0], dtype=ember.float64, requires_grad=True)
    ga, gb = ember.autograd.grad(ember.arctan2(a, b).sum(), [a, b])
    _same(ga.numpy(), [-0.0])
    _same(gb.numpy(), [-0.0])


def test_atan2_double_backward_matches_torch():
    torch = _torch()
    out = []
    for T in (ember, torch):
        a = T.tensor([0.3, -1.2, 0.0], dtype=T.float64, requires_grad=True)
        b = T.tensor([0.7, 0.4, 2.0], dtype=T.float64, requires_grad=True)
        ga, gb = T.autograd.grad(T.atan2(a, b).sum(), [a, b], create_graph=True)
        out.append([g.detach().numpy() for g in T.autograd.grad((ga * gb).sum(), [a, b])])
    for e, t in zip(*out):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# det / slogdet / logdet tangents at singular matrices

MATRICES = {
    "singular": [[1.0, 2.0], [2.0, 4.0]],
    "zero": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    "negative_det": [[0.0, 1.0], [1.0, 0.0]],
    "regular": [[2.0, 1.0], [0.5, 3.0]],
    "complex_singular": [[1 + 1j, 2 + 2j], [1 + 1j, 2 + 2j]],
    "complex_regular": [[1 + 1j, 2], [0.5j, 3]],
}
FUNCS = {"det": lambda T: T.linalg.det, "slogdet": lambda T: T.linalg.slogdet,
         "logdet": lambda T: T.logdet}


@pytest.mark.parametrize("fn", sorted(FUNCS))
@pytest.mark.parametrize("name", sorted(MATRICES))
def test_determinant_tangents_match_torch(name, fn):
    torch = _torch()
    a = np.array(MATRICES[name])
    v = np.arange(a.size).reshape(a.shape) * 0.25 + 0.5 + (0.1j if a.dtype.kind == "c" else 0)
    res = []
    for T in (ember, torch):
        _, tangent = T.func.jvp(FUNCS[fn](T), (T.from_numpy(a.copy()),),
                                (T.from_numpy(v.copy()),))
        tangent = tangent if isinstance(tangent, tuple) else (tangent,)
        res.append([x.numpy(force=True) if T is torch else x.numpy() for x in tangent])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_det_tangent_at_a_singular_matrix_is_finite():
    # torch 2.13: jvp(det, [[1, 2], [2, 4]]) has tangent 0 (a zero pivot read as eps, times
    # det = 0), where an inverse would refuse the matrix
    a = ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=ember.float64)
    v = ember.tensor([[1.0, 0.5], [0.25, 2.0]], dtype=ember.float64)
    _, t = ember.func.jvp(ember.linalg.det, (a,), (v,))
    assert t.item() == 0.0
    _, (ts, tl) = ember.func.jvp(ember.linalg.slogdet, (a,), (v,))
    assert ts.item() == 0.0 and not np.isfinite(tl.item())


def test_det_jacfwd_batched_matches_jacrev():
    a = ember.randn(3, 4, 4, dtype=ember.float64, generator=ember.Generator().manual_seed(0))
    fwd = ember.func.vmap(ember.func.jacfwd(ember.linalg.det))(a)
    rev = ember.func.vmap(ember.func.jacrev(ember.linalg.det))(a)
    np.testing.assert_allclose(fwd.numpy(), rev.numpy(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# out= dtype refusals in torch's words

OUT_CALLS = {
    "add": lambda T: T.add(T.tensor([1.5]), T.tensor([2.0]), out=T.empty(1, dtype=T.int64)),
    "mul": lambda T: T.mul(T.tensor([1.5]), T.tensor([2.0]), out=T.empty(1, dtype=T.int64)),
    "sin": lambda T: T.sin(T.tensor([1.5]), out=T.empty(1, dtype=T.int64)),
    "bitwise_and": lambda T: T.bitwise_and(T.tensor([1]), T.tensor([3]),
                                           out=T.empty(1, dtype=T.bool)),
    "mm": lambda T: T.mm(T.ones(2, 2), T.ones(2, 2), out=T.empty(2, 2, dtype=T.int64)),
    "sort": lambda T: T.sort(T.tensor([2.0, 1.0]), out=(T.empty(2, dtype=T.int64),
                                                       T.empty(2, dtype=T.int64))),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_dtype_refusal_words(name):
    torch = _torch()
    msgs = []
    for T in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            OUT_CALLS[name](T)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_mul_out_cast_message():
    with pytest.raises(RuntimeError, match=r"^result type Float can't be cast to the desired "
                                           r"output type Long$"):
        ember.mul(ember.tensor([1.5]), ember.tensor([2.0]), out=ember.empty(1, dtype=ember.int64))


# ------------------------------------------------------------------------------------------------
# embedding_bag's bookkeeping dtypes


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtypes", [("int32", "int64"), ("int64", "int32"), ("int32", "int32"),
                                    ("int64", "int64")])
def test_embedding_bag_bookkeeping_dtypes(mode, dtypes):
    torch = _torch()
    got = []
    for T in (ember, torch):
        w = T.ones(6, 3, dtype=T.float64)
        idx = T.tensor([0, 2, 4, 3], dtype=getattr(T, dtypes[0]))
        off = T.tensor([0, 2], dtype=getattr(T, dtypes[1]))
        r = T.embedding_bag(w, idx, off, False, mode, False, None, False)
        got.append([str(x.dtype).split(".")[-1] for x in r])
    assert got[0] == got[1]


def test_embedding_bag_mixed_index_dtypes_give_int64():
    # torch 2.13 promotes int32 indices with int64 offsets (or the reverse) to int64 first
    w = ember.ones(6, 3)
    r = ember.embedding_bag(w, ember.tensor([0, 2, 4], dtype=ember.int32),
                            ember.tensor([0, 2]), False, 0, False, None, False)
    assert all(x.dtype == ember.int64 for x in r[1:])


# ------------------------------------------------------------------------------------------------
# the long runner's report groups


def _difftest():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "difftest.py")
    spec = importlib.util.spec_from_file_location("_difftest_s16", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_report_groups_cover_every_entry():
    from tests.differential import harness as H

    D = _difftest()
    seen = set()
    for ent in H.load_db():
        try:
            case = H.make_case(ent, H.case_seed(ent.id, 0))
        except H.Skip:
            continue
        g = D.group(H, case)
        assert g in D.GROUPS, (ent.id, g)
        seen.add(g)
    assert seen == set(D.GROUPS)


def test_report_counts_by_group():
    D = _difftest()
    recs = [{"op": "sin", "family": "pointwise", "group": "unary", "seed": 1, "form": "function",
             "dtype": "float32", "mismatches": [["values", "x"]], "notes": [], "repro": "r",
             "size": 1},
            {"op": "add", "family": "arithmetic", "group": "binary", "seed": 2,
             "form": "function", "dtype": "float32", "mismatches": [], "notes": [],
             "repro": None, "size": 2}]
    text = D.report(recs)
    assert "- unary: 1 / 1 (100.0%)" in text
    assert "- binary: 0 / 1 (0.0%)" in text
