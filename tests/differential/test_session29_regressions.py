"""Regressions for session 29's differential run against PyTorch 2.13 (OpInfo cases, and the
random module and distribution programs of tests/differential/programs_modules.py and
programs_distributions.py): each case runs with ``T = ember`` and ``T = torch`` from the
same values where torch is installed, and compares values, dtypes, shapes or the exception
raised (class and message)."""

import itertools

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """(dtype name, shape, values) of ``f()``'s tensor, or (class, message) it raised."""
    err = _raised(f)
    if err:
        return err[0], err[1].replace("torch", "ember")
    r = f()
    return str(r.dtype).split(".")[-1], tuple(r.shape), _np(r).tolist()


def _base_class(e):
    """The builtin class an exception derives from (torch's _LinAlgError is a
    RuntimeError)."""
    return next(k for k in type(e).__mro__ if k.__module__ == "builtins").__name__


# ---- bool products read beta and alpha as bools


@pytest.mark.parametrize("beta", [0.5, -0.5, 1.5, 2, 0, 0.0, True])
def test_bool_addmv_with_an_empty_product_scales_input_by_beta_as_a_bool(beta):
    E, T = _both()

    def run(L):
        x = L.tensor([True, False, True])
        return x.addmv_(L.empty((3, 0), dtype=L.bool), L.empty((0,), dtype=L.bool),
                        beta=beta, alpha=-2.0)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


@pytest.mark.parametrize("beta", [0.5, -0.5, 1.5, 2])
def test_integer_addmv_with_an_empty_product_truncates_beta(beta):
    E, T = _both()

    def run(L):
        x = L.tensor([1, 0, 3])
        return x.addmv_(L.empty((3, 0), dtype=L.int64), L.empty((0,), dtype=L.int64),
                        beta=beta)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- scaled_dot_product_attention with nothing to compute checks no dtype

_SDPA_SHAPES = [
    ((1, 0, 1, 4), (1, 0, 1, 4), (1, 0, 1, 1)),  # no batch
    ((1, 2, 0, 4), (1, 2, 3, 4), (1, 2, 3, 1)),  # no queries
    ((1, 2, 1, 4), (1, 2, 0, 4), (1, 2, 0, 1)),  # no keys
    ((1, 2, 1, 2), (1, 2, 3, 2), (1, 2, 3, 0)),  # values of width 0
    ((1, 2, 1, 0), (1, 2, 3, 0), (1, 2, 3, 2)),  # scores to compute: refused for integers
]


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16"])
@pytest.mark.parametrize("shapes", _SDPA_SHAPES)
def test_sdpa_with_an_empty_result_takes_any_dtype(dtype, shapes):
    E, T = _both()

    def run(L):
        q, k, v = (L.ones(s, dtype=getattr(L, dtype)) for s in shapes)
        return L.nn.functional.scaled_dot_product_attention(q, k, v)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- Householder products of an empty batch give their inputs no gradient

_EMPTY_REFLECTORS = [((0, 6, 6), (0, 6)), ((2, 0, 0), (2, 0)), ((0, 3, 2), (0, 2)),
                     ((3, 0), (0,)), ((2, 3, 2), (2, 0)), ((3, 2), (2,))]


def _grad_shapes(L, f, inputs):
    out = f(*inputs)
    grads = L.autograd.grad(out.sum(), inputs, allow_unused=True)
    return [None if g is None else tuple(g.shape) for g in grads]


@pytest.mark.parametrize("shapes", _EMPTY_REFLECTORS)
def test_householder_product_of_nothing_has_no_input_gradients(shapes):
    E, T = _both()

    def run(L):
        a, tau = (L.ones(s, dtype=L.float64, requires_grad=True) for s in shapes)
        return _grad_shapes(L, L.linalg.householder_product, [a, tau])

    assert run(E) == run(T)


@pytest.mark.parametrize("shapes", [s for s in _EMPTY_REFLECTORS if s[0] != (2, 3, 2)])
def test_ormqr_of_nothing_gives_only_other_a_gradient(shapes):
    E, T = _both()

    def run(L):
        a, tau = (L.ones(s, dtype=L.float64, requires_grad=True) for s in shapes)
        c = L.ones(shapes[0][:-1] + (shapes[0][-2],), dtype=L.float64, requires_grad=True)
        return _grad_shapes(L, L.ormqr, [a, tau, c])

    assert run(E) == run(T)


# ---- native_group_norm applies its affine step to the (N, C, HxW) view


@pytest.mark.parametrize("N, C, HxW, group", [(2, 4, 3, 2), (3, 4, 2, 4), (1, 2, 12, 1)])
def test_native_group_norm_reads_channels_in_the_n_c_hxw_view(N, C, HxW, group):
    E, T = _both()

    def run(L):
        x = L.arange(24.0).reshape(3, 4, 2).sin()  # not (N, C, ...): only the count agrees
        w = L.arange(1.0, C + 1)
        b = L.arange(0.0, 10.0 * C, 10.0)
        return L.native_group_norm(x, w, b, N, C, HxW, group, 1e-5)[0]

    e, t = _outcome(lambda: run(E)), _outcome(lambda: run(T))
    assert e[:2] == t[:2]
    np.testing.assert_allclose(e[2], t[2], rtol=1e-5, atol=1e-5)


# ---- LowRankMultivariateNormal factors its capacitance before validating


@pytest.mark.parametrize("diag", [[float("nan"), 1.4477], [-1.0, 1.4477], [-0.01, 1.4477],
                                  [0.5, 1.4477]])
def test_lowrank_mvn_factors_before_it_validates(diag):
    E, T = _both()

    def run(L):
        try:
            d = L.distributions.LowRankMultivariateNormal(
                L.tensor([0.2253, 2.1538], dtype=L.float64),
                L.tensor([[-0.131, -0.3293], [0.3025, -1.7006]], dtype=L.float64),
                L.tensor(diag, dtype=L.float64), validate_args=None)
        except Exception as e:  # noqa: BLE001 - the class and message are compared
            return _base_class(e), str(e).split(":")[0]
        return tuple(d.batch_shape), tuple(d.event_shape)

    assert run(E) == run(T)


# ---- pooling windows that do not fit raise torch's error, stage by stage


def _pool_cases():
    for fn, k, pad, ceil, size, stride, dil, batched in itertools.product(
            ("max_pool1d", "max_pool1d_ri", "max_pool2d", "max_pool3d", "avg_pool1d",
             "avg_pool2d", "avg_pool3d"),
            (1, 2, 3), (0, 1, 2), (False, True), (1, 2, 3), (1, 2), (1, 2), (True, False)):
        if dil > 1 and fn.startswith("avg"):
            continue
        yield fn, k, pad, ceil, size, stride, dil, batched


def _pool(L, fn, k, pad, ceil, size, stride, dil, batched):
    base = fn.replace("_ri", "")
    nd = int(base[-2])
    kw = dict(stride=stride, padding=pad, ceil_mode=ceil)
    if base.startswith("max"):
        kw.update(dilation=dil, return_indices=fn.endswith("_ri"))
    x = L.ones(((2,) if batched else ()) + (3,) + (size,) * nd)
    r = getattr(L.nn.functional, base)(x, k, **kw)
    return r[0] if isinstance(r, tuple) else r


def test_pooling_shape_errors_follow_torch_stage_by_stage():
    E, T = _both()
    bad = []
    for case in _pool_cases():
        e = _raised(lambda: _pool(E, *case))
        t = _raised(lambda: _pool(T, *case))
        if e != t and not (e is None and t is None):
            bad.append((case, e, t))
    assert not bad, bad[:3]


def test_pooling_shapes_agree_where_the_window_fits():
    E, T = _both()
    for case in _pool_cases():
        if _raised(lambda: _pool(T, *case)) is None:
            assert tuple(_pool(E, *case).shape) == tuple(_pool(T, *case).shape), case


# ---- lp_pool1d with a tuple window pools, then fails to scale, as torch


@pytest.mark.parametrize("kernel", [(2,), [2], 2])
def test_lp_pool1d_window_given_as_a_sequence(kernel):
    E, T = _both()
    assert _outcome(lambda: E.nn.functional.lp_pool1d(E.ones(1, 2, 4), 2, kernel)) == \
        _outcome(lambda: T.nn.functional.lp_pool1d(T.ones(1, 2, 4), 2, kernel))


def test_lp_pool1d_window_errors_come_before_the_scaling_error():
    E, T = _both()
    assert _outcome(lambda: E.nn.functional.lp_pool1d(E.ones(1, 2, 1), 2, (3,))) == \
        _outcome(lambda: T.nn.functional.lp_pool1d(T.ones(1, 2, 1), 2, (3,)))


def test_local_response_norm_refuses_2d_input_in_torchs_words():
    E, T = _both()
    assert _outcome(lambda: E.nn.functional.local_response_norm(E.ones(2, 3), 2)) == \
        _outcome(lambda: T.nn.functional.local_response_norm(T.ones(2, 3), 2))
