"""Regressions for session 29's differential run against PyTorch 2.13 (OpInfo cases, and the
random module and distribution programs of tests/differential/programs_modules.py and
programs_distributions.py): each case runs with ``T = ember`` and ``T = torch`` from the
same values where torch is installed, and compares values, dtypes, shapes or the exception
raised (class and message)."""

import itertools
import warnings

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
        # (validation on by default, as in a fresh process: another test may have turned
        # either framework's default off)
        before = L.distributions.Distribution._validate_args
        L.distributions.Distribution.set_default_validate_args(True)
        try:
            d = L.distributions.LowRankMultivariateNormal(
                L.tensor([0.2253, 2.1538], dtype=L.float64),
                L.tensor([[-0.131, -0.3293], [0.3025, -1.7006]], dtype=L.float64),
                L.tensor(diag, dtype=L.float64), validate_args=None)
        except Exception as e:  # noqa: BLE001 - the class and message are compared
            return _base_class(e), str(e).split(":")[0]
        finally:
            L.distributions.Distribution.set_default_validate_args(before)
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


# ---- tensor(): a Python float must fit an integer dtype as it is, before truncation

_FLOAT_INTO_INTS = ["[-1.0]", "[-0.5]", "[255.5]", "[255.0]", "[127.5]", "[-128.5]",
                    "[-128.0]", "[-1, 2.0]", "[-1.0, 2]", "[[-1.0, 2.0]]", "-1.0",
                    "[2147483647.5]", "[9.223372036854775807e18]", "[-9.223372036854775808e18]",
                    "[-300, 2.0]", "[float('nan')]"]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("data", _FLOAT_INTO_INTS)
def test_tensor_of_python_floats_in_an_integer_dtype(dtype, data):
    E, T = _both()
    assert _outcome(lambda: E.tensor(eval(data), dtype=getattr(E, dtype))) == \
        _outcome(lambda: T.tensor(eval(data), dtype=getattr(T, dtype)))


@pytest.mark.parametrize("data", ["[2**63]", "[2**64 - 1]", "[2**63, 1.5]", "[2**64]"])
def test_tensor_of_ints_past_int64_in_bfloat16(data):
    E, T = _both()
    assert _outcome(lambda: E.tensor(eval(data), dtype=E.bfloat16)) == \
        _outcome(lambda: T.tensor(eval(data), dtype=T.bfloat16))


# ---- quantile and nanquantile check in torch's order, in "quantile()" words

_QUANTILE_CALLS = [
    "T.{op}(T.tensor([], dtype=T.float64), 1.5)",
    "T.{op}(T.tensor([], dtype=T.float64), 0.5)",
    "T.{op}(T.tensor([1]), 1.5)",
    "T.{op}(T.tensor([1.0]), float('nan'))",
    "T.{op}(T.tensor([1.0]), T.tensor([1.5]))",
    "T.{op}(T.tensor([1.0]), 0.5, interpolation='bad')",
    "T.{op}(T.tensor([], dtype=T.int64), 0.5, interpolation='bad')",
    "T.{op}(T.tensor([1.0]), 1.5, interpolation='bad')",
    "T.{op}(T.tensor([], dtype=T.float32), T.tensor([[0.5]]))",
    "T.{op}(T.tensor([1], dtype=T.int64), T.tensor([[0.5]]))",
    "T.{op}(T.tensor([1.0]), T.tensor([[1.5]]))",
    "T.{op}(T.tensor([1.0]), T.tensor([1.5], dtype=T.float64))",
    "T.{op}(T.tensor([1.0]), T.tensor([0.5]), out=T.empty(1, dtype=T.float64))",
    "T.{op}(T.tensor([1.0, 2.0, 4.0]), T.tensor([0.25, 1.0]))",
]


@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("call", _QUANTILE_CALLS)
def test_quantile_refusals_in_torchs_order_and_words(op, call):
    E, T = _both()
    src = call.format(op=op)
    assert _outcome(lambda: eval(src, {"T": E})) == _outcome(lambda: eval(src, {"T": T}))


# ---- topk checks k before the dtype, in torch's words


@pytest.mark.parametrize("call", ["T.topk(T.tensor([True]), 3)", "T.topk(T.tensor([True]), 1)",
                                  "T.topk(T.ones(3), 4)", "T.topk(T.ones(3), -1)",
                                  "T.topk(T.ones(3, 0), 1)", "T.topk(T.tensor(1.0), 2)",
                                  "T.topk(T.ones(3, dtype=T.complex64), 4)",
                                  "T.topk(T.ones(3, 0), 1, dim=0).values"])
def test_topk_k_out_of_range(call):
    E, T = _both()
    assert _outcome(lambda: eval(call, {"T": E})) == _outcome(lambda: eval(call, {"T": T}))


# ---- index_add / index_reduce: the index dtype and out-of-range words


@pytest.mark.parametrize("call", [
    "T.index_add(T.ones(3, 1), 0, T.tensor([0.0, 1.0]), T.ones(2, 1))",
    "T.ones(3, 1).index_add_(0, T.tensor([0.0, 1.0]), T.ones(2, 1))",
    "T.index_reduce(T.ones(3, 1), 0, T.tensor([0.0, 1.0]), T.ones(2, 1), 'prod')",
    "T.ones(3, 1).index_reduce_(0, T.tensor([0, 1], dtype=T.int16), T.ones(2, 1), 'amax')",
    "T.index_select(T.ones(3, 1), 0, T.tensor([0.0, 1.0]))",
])
def test_index_ops_name_a_bad_index_dtype(call):
    E, T = _both()
    assert _outcome(lambda: eval(call, {"T": E})) == _outcome(lambda: eval(call, {"T": T}))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("shape, src, idx, dim", [((3, 2), (1, 2), [3], 0),
                                                  ((3,), (1,), [-1], 0),
                                                  ((3, 1), (2, 1), [0, 5], 0),
                                                  ((2, 3), (2, 1), [3], 1)])
def test_index_reduce_index_out_of_range(reduce, include_self, shape, src, idx, dim):
    E, T = _both()

    def run(L):
        return L.ones(shape, dtype=L.int64).index_reduce_(
            dim, L.tensor(idx), L.ones(src, dtype=L.int64), reduce, include_self=include_self)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce is a beta API in torch
        assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- tensor_split: index tensors read as SymInts; more sections than a vector holds


@pytest.mark.parametrize("form", ["tensor", "list", "zero_dim", "int"])
@pytest.mark.parametrize("v", [-2 ** 62, -2 ** 62 - 1, -2 ** 63, 2 ** 60, 2 ** 62, 2 ** 63 - 1])
def test_tensor_split_extreme_indices_and_sections(form, v):
    E, T = _both()

    def run(L):
        idx = {"tensor": lambda: L.tensor([v]), "list": lambda: [v],
               "zero_dim": lambda: L.tensor(v), "int": lambda: v}[form]()
        return len(L.tensor([[0.0, 1.0]]).tensor_split(idx))

    assert _raised(lambda: run(E)) == _raised(lambda: run(T))
    if _raised(lambda: run(T)) is None:
        assert run(E) == run(T)


# ---- linalg.solve: no LU of an empty A, whatever B's precision; solve_ex's words


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int64"])
@pytest.mark.parametrize("fn", ["solve", "solve_ex"])
@pytest.mark.parametrize("sa, sb", [((0, 1, 1), (1, 3)), ((0, 2, 2), (2,)), ((0, 1, 1), (1,)),
                                    ((2, 2), (2, 0)), ((2, 2), (0, 2, 1)), ((1, 1), (1, 3))])
def test_solve_of_an_empty_batch_in_low_precision(dtype, fn, sa, sb):
    E, T = _both()

    def run(L):
        r = getattr(L.linalg, fn)(L.ones(sa, dtype=getattr(L, dtype)),
                                  L.ones(sb, dtype=getattr(L, dtype)))
        return r[0] if isinstance(r, tuple) else r

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


def test_singular_solve_names_torch_linalg_solve():
    E, T = _both()
    e = _raised(lambda: E.linalg.solve(E.ones(2, 2), E.ones(2)))
    t = _raised(lambda: T.linalg.solve(T.ones(2, 2), T.ones(2)))
    assert e[1] == t[1]


@pytest.mark.parametrize("nd,kw", [
    (1, dict(stride=2, output_padding=2)), (2, dict(stride=2, output_padding=(0, 2))),
    (2, dict(stride=(2, 3), output_padding=(2, 0), dilation=(1, 2))),
    (3, dict(stride=2, output_padding=2))])
def test_conv_transpose_output_padding_message(nd, kw):
    E, T = _both()

    def run(L):
        f = getattr(L.nn.functional, f"conv_transpose{nd}d")
        with pytest.raises(RuntimeError) as info:
            f(L.ones((1, 2) + (5,) * nd), L.ones((2, 2) + (3,) * nd), **kw)
        return str(info.value)

    assert run(E) == run(T)
