"""Regressions for session 18's differential leftovers: embedding_bag's refusal of empty
offsets with ``include_last_offset``, eigh/eigvalsh of bool and integer matrices, the SVD
family on NaN (torch's LinAlgError and message) and on small infinite matrices (NaNs, no
error), and the harness's classes: the documented kernel-order differences (inf-versus-NaN
of vendor kernels, MKL's SVD and gelsy on infinite matrices) and torch's lstm reading
malformed weights out of bounds. Each repro runs with ``T = ember`` and ``T = torch`` where
torch is installed; the stated expectations are torch 2.13's."""

import types

import numpy as np
import pytest

import ember
from tests.differential import harness as H

INF, NAN = float("inf"), float("nan")


def _torch():
    return pytest.importorskip("torch")


def _error(f, T):
    """The builtin class and the message of the exception ``f(T)`` raises."""
    with pytest.raises(Exception) as exc:
        f(T)
    base = next(k for k in type(exc.value).__mro__ if k.__module__ == "builtins")
    return base, str(exc.value)


def _same_error(f):
    torch = _torch()
    assert _error(f, ember) == _error(f, torch)


# ------------------------------------------------------------------------------------------------
# embedding_bag


@pytest.mark.parametrize("indices", [[1, 2], []])
def test_embedding_bag_include_last_offset_refuses_empty_offsets(indices):
    def f(T):
        return T.nn.functional.embedding_bag(T.tensor(indices, dtype=T.long), T.ones(3, 2),
                                             T.tensor([], dtype=T.long),
                                             include_last_offset=True)
    _same_error(f)
    base, msg = _error(f, ember)
    assert base is RuntimeError and "number of offset should be at least 1" in msg


@pytest.mark.parametrize("indices", [[1, 2], []])
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_empty_offsets_gives_no_bags(indices, mode):
    torch = _torch()
    outs = [T.nn.functional.embedding_bag(T.tensor(indices, dtype=T.long), T.ones(3, 2),
                                          T.tensor([], dtype=T.long), mode=mode)
            for T in (ember, torch)]
    assert tuple(outs[0].shape) == tuple(outs[1].shape) == (0, 2)


# ------------------------------------------------------------------------------------------------
# eigh of matrices torch has no kernel for


@pytest.mark.parametrize("fn", ["eigh", "eigvalsh"])
@pytest.mark.parametrize("dtype", ["bool", "int64", "int32", "uint8"])
def test_eigh_of_non_floating_matrix_is_not_implemented(fn, dtype):
    def f(T):
        return getattr(T.linalg, fn)(T.eye(2, dtype=getattr(T, dtype)))
    _same_error(f)
    assert _error(f, ember)[0] is NotImplementedError


# ------------------------------------------------------------------------------------------------
# the SVD family on non-finite matrices

_SVD_FAMILY = {
    "svd": lambda T, A: T.linalg.svd(A)[1],
    "svd_old": lambda T, A: T.svd(A)[1],
    "svdvals": lambda T, A: T.linalg.svdvals(A),
    "pinv": lambda T, A: T.linalg.pinv(A),
    "pinverse": lambda T, A: T.pinverse(A),
    "matrix_rank": lambda T, A: T.linalg.matrix_rank(A),
    "cond": lambda T, A: T.linalg.cond(A),
    "norm2": lambda T, A: T.linalg.norm(A, 2),
    "nuc": lambda T, A: T.linalg.matrix_norm(A, "nuc"),
    "norm_minus2": lambda T, A: T.linalg.matrix_norm(A, -2),
}


@pytest.mark.parametrize("fn", sorted(_SVD_FAMILY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_svd_family_on_nan_raises_torchs_linalg_error(fn, dtype):
    def f(T):
        return _SVD_FAMILY[fn](T, T.tensor([[1.0, NAN], [2.0, 3.0]], dtype=getattr(T, dtype)))
    _same_error(f)
    base, msg = _error(f, ember)
    assert base is RuntimeError and "contained non-finite values" in msg


@pytest.mark.parametrize("fn", ["svd", "svd_old", "svdvals", "pinv", "pinverse", "cond",
                                "norm2", "norm_minus2"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_svd_family_on_two_by_two_inf_gives_nan(fn, dtype):
    # MKL's gesdd solves a 2 x 2 bidiagonal directly: NaNs, never "failed to converge"
    torch = _torch()
    outs = [_SVD_FAMILY[fn](T, T.tensor([[1.0, INF], [2.0, 3.0]], dtype=getattr(T, dtype)))
            for T in (ember, torch)]
    e, t = (np.asarray(o.double().numpy()) for o in outs)
    np.testing.assert_array_equal(np.isnan(e), np.isnan(t))
    assert np.isnan(t).all()


def test_svd_of_infinite_matrix_returns_nan_in_ember():
    # the reference LAPACK loops on this input; ember answers at once (no timing asserted)
    A = ember.full((5, 4), 1.0, dtype=ember.float64)
    A[1, 2] = INF
    A[3, 0] = -INF
    U, S, Vh = ember.linalg.svd(A, full_matrices=False)
    assert bool(S.isnan().all()) and bool(U.isnan().all()) and bool(Vh.isnan().all())


# ------------------------------------------------------------------------------------------------
# the harness: documented differences and torch's lstm on malformed weights


def _spec(values, dtype="float64"):
    return H.TensorSpec(np.asarray(values, dtype=np.float32 if dtype == "float32"
                                   else np.float64), dtype)


def _case(op_id, *args, **kwargs):
    return types.SimpleNamespace(op_id=op_id, args=args, kwargs=kwargs)


def test_kernel_order_difference_is_documented_only_for_nonfinite_inputs():
    inf_case = _case("mm", _spec([[1.0, INF], [0.0, 1.0]]), _spec([[1.0, 0.0], [0.0, 1.0]]))
    big_case = _case("mm", _spec([[1.0, 1e308], [0.0, 1.0]]), _spec([[1e308, 0.0], [1.0, 1.0]]))
    assert H._documented(inf_case, "values_nonfinite")
    assert H._documented(inf_case, "grad_values_nonfinite")
    # finite inputs (overflow inside the product) and other kinds stay counted
    assert H._documented(big_case, "values_nonfinite") is None
    assert H._documented(inf_case, "values") is None
    assert H._documented(inf_case, "dtype") is None
    # an op ember computes in torch's own order stays counted
    assert H._documented(_case("add", *inf_case.args), "values_nonfinite") is None


def test_svd_on_inf_is_documented_but_not_on_nan():
    inf = _case("linalg.svd", _spec([[1.0, INF, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 5.0]]))
    nan = _case("linalg.svd", _spec([[1.0, NAN, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 5.0]]))
    assert H._documented(inf, "ember_no_raise")
    assert H._documented(nan, "ember_no_raise") is None
    assert H._documented(inf, "exception_type") is None
    lstsq = _case("linalg.lstsq", _spec([[1.0, INF], [2.0, 3.0]]), _spec([[1.0], [1.0]]))
    assert H._documented(lstsq, "values")


def test_documented_mismatch_moves_to_notes():
    case = _case("bmm", _spec([[[1.0, INF]]]), _spec([[[1.0], [0.0]]]))
    out = H._finish(case, [["values_nonfinite", "out at (0, 0): ember inf, torch nan"]], [])
    assert out.mismatches == [] and out.notes[0][0] == "documented"
    assert "documented" in H.NOT_COUNTED


def _lstm_case(w_ih_rows=8, bias_len=8, bias_dtype="float32", hidden=2):
    x = _spec(np.zeros((3, 1, 3)), "float32")
    hx = [_spec(np.zeros((1, 1, hidden)), "float32"), _spec(np.zeros((1, 1, hidden)), "float32")]
    params = [_spec(np.zeros((w_ih_rows, 3)), "float32"),
              _spec(np.zeros((4 * hidden, hidden)), "float32"),
              _spec(np.zeros(bias_len), bias_dtype if bias_dtype != "int64" else "float32"),
              _spec(np.zeros(4 * hidden), "float32")]
    if bias_dtype == "int64":
        params[2] = H.TensorSpec(np.zeros(bias_len, np.int64), "int64")
    return _case("lstm", x, hx, params, True, 1, 0.0, False, False, False)


@pytest.mark.parametrize("kw,malformed", [
    ({}, False),
    ({"w_ih_rows": 2}, True),     # not four gates of the hidden size
    ({"bias_len": 3}, True),      # a bias of another length
    ({"bias_dtype": "int64"}, True),  # a parameter of another dtype than the input
])
def test_lstm_malformed_weights_are_torch_wrong(kw, malformed):
    case = _lstm_case(**kw)
    assert H._lstm_malformed_params(case) is malformed
    assert H._torch_wrong(case, "ember_raises") is malformed


def test_lstm_with_malformed_weights_is_refused_by_ember():
    # torch reads such a weight past its end; ember checks the gates' size
    x = ember.zeros(3, 1, 3)
    hx = [ember.zeros(1, 1, 2), ember.zeros(1, 1, 2)]
    params = [ember.zeros(2, 3), ember.zeros(8, 2), ember.zeros(8), ember.zeros(8)]
    with pytest.raises(RuntimeError):
        ember.lstm(x, hx, params, True, 1, 0.0, False, False, False)


# ------------------------------------------------------------------------------------------------
# non-finite values ember can follow: torch's own loops


def _values(t):
    lib = ember if isinstance(t, ember.Tensor) else __import__("torch")
    t = t.detach()
    return t.to(lib.complex128 if t.is_complex() else lib.float64).numpy()


def _same(a, b):
    a, b = np.asarray(a).astype(np.complex128), np.asarray(b).astype(np.complex128)
    np.testing.assert_array_equal(a.real, b.real)
    np.testing.assert_array_equal(a.imag, b.imag)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 2])
def test_complex_diff_spreads_a_nonfinite_part_as_torchs_sub(dtype, n):
    # torch subtracts ``hi - (1 + 0j) * lo``: (5 + 7j) - (nan + 0j) is nan + nan j
    torch = _torch()
    vals = [complex(NAN, 0), complex(5.85, 7.31), complex(INF, 0), complex(1, 2),
            complex(0, -INF), complex(-1, 0.5)]
    e, t = (_values(T.diff(T.tensor(vals, dtype=getattr(T, dtype)), n=n))
            for T in (ember, torch))
    _same(e, t)


def test_poisson_nll_loss_full_masks_the_stirling_term_at_infinite_targets():
    # torch adds ``stirling.masked_fill(target <= 1, 0)``: at target -inf that is 0, not
    # 0 * inf, so the loss keeps its -inf; the gradient goes through the same mask
    torch = _torch()
    res = []
    for T in (ember, torch):
        x = T.tensor([0.658, 1.0, 0.5, 2.0], requires_grad=True)
        t = T.tensor([-INF, INF, 3.0, 0.5])
        loss = T.nn.functional.poisson_nll_loss(x, t, log_input=False, full=True,
                                                reduction="none")
        g, = T.autograd.grad(loss.sum(), x)
        res.append((_values(loss), _values(g)))
    _same(res[0][0], res[1][0])
    _same(res[0][1], res[1][1])
    assert res[1][0][0] == -INF


def test_poisson_nll_loss_full_keeps_the_loss_dtype():
    # torch's ``loss += stirling`` is in place: a float16 loss stays float16 although the
    # Stirling term of a uint8 target is float32
    torch = _torch()
    outs = [T.poisson_nll_loss(T.tensor([0.5, 2.0], dtype=T.float16),
                               T.tensor([3, 4], dtype=T.uint8), False, True, 1e-8, 0)
            for T in (ember, torch)]
    assert str(outs[0].dtype).split(".")[-1] == str(outs[1].dtype).split(".")[-1] == "float16"
    _same(_values(outs[0]), _values(outs[1]))


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["float32", "complex64", "float16", "bfloat16"])
def test_cpu_scans_accumulate_as_torch(fn, dtype):
    # torch's CPU scans carry float32 and complex64 in double (each output rounded once),
    # float16 and bfloat16 in float32: a float32 running product passes through an overflow
    torch = _torch()
    rng = np.random.default_rng(7)
    v = rng.normal(size=(3, 41)) * (1e3 if fn == "cumsum" else 1.0)
    if dtype.startswith("complex"):
        v = v + 1j * rng.normal(size=v.shape)
    e, t = (_values(getattr(T, fn)(T.tensor(v, dtype=getattr(T, dtype)), 1))
            for T in (ember, torch))
    _same(e, t)


def test_float32_cumprod_passes_through_an_overflow():
    torch = _torch()
    vals = [0.7568260431289673, -3.4028234663852886e38, 1.699898362159729, 0.1648271530866623]
    e, t = (_values(T.cumprod(T.tensor(vals), 0)) for T in (ember, torch))
    _same(e, t)
    assert np.isfinite(t[-1])
    vals = [3e38, 3e38, -3e38]
    e, t = (_values(T.cumsum(T.tensor(vals), 0)) for T in (ember, torch))
    _same(e, t)
    assert t[-1] == np.float32(3e38)


# ------------------------------------------------------------------------------------------------
# cat of 1-D empty tensors only


@pytest.mark.parametrize("fn", ["cat", "hstack"])
@pytest.mark.parametrize("view", [False, True])
def test_cat_of_only_empty_vectors_gives_every_input_a_gradient(fn, view):
    torch = _torch()
    res = []
    for T in (ember, torch):
        leaves = [T.empty((0,), dtype=T.float64).requires_grad_(),
                  T.empty((0,), dtype=T.float32).requires_grad_()]
        parts = [x[..., ::2] if view else x for x in leaves]
        out = getattr(T, fn)(parts)
        grads = T.autograd.grad((out * 1.0).sum(), leaves, allow_unused=True)
        res.append((type(out.grad_fn).__name__, str(out.dtype).split(".")[-1],
                    [None if g is None else (tuple(g.shape), str(g.dtype).split(".")[-1])
                     for g in grads]))
    assert res[0] == res[1]
    assert res[1][0] == "CatBackward0" and None not in res[1][2]
