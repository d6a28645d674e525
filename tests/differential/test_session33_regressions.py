"""Regressions for session 33's differential run against PyTorch 2.13 (OpInfo cases and the
random programs of tests/differential/programs*.py): each case runs with ``T = ember`` and
``T = torch`` from the same source where torch is installed, and compares the values, or
the exception raised (class and message)."""

import warnings

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(src, T, env=None):
    """A library-neutral outcome of evaluating ``src``: (class, message) of what it raised,
    or its tensors (a tuple of them, or one) as (dtype name, shape, values) with NaN kept;
    other results as themselves."""
    scope = {"T": T, "np": np, **(env or {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err = _raised(lambda: eval(src, scope))
        if err:
            return err[0], err[1].replace("torch", "ember")
        r = eval(src, scope)

    def one(t):
        if not hasattr(t, "dtype"):
            return t
        a = _np(t.detach())
        if a.dtype.kind == "f":
            a = a.astype(np.float64)  # (float16 overflows rounding to 9 places)
        return str(t.dtype).split(".")[-1], tuple(t.shape), np.round(a, 9).tolist()

    return tuple(one(t) for t in r) if isinstance(r, (tuple, list)) else one(r)


def _same(a, b):
    """Outcomes equal, NaN equal to NaN."""
    return repr(a).replace("nan", "NaN") == repr(b).replace("nan", "NaN")


def _check(src):
    E, torch = _both()
    e, t = _outcome(src, E), _outcome(src, torch)
    assert _same(e, t), (src, e, t)


# ---- keepdim= (and unbiased= beside keepdim/out=) without dim=: PyTorch's parser has no such
# overload (NOTE [ keepdim without dim ] in ember/_ops/reduction.py)

_X = "T.arange(6.).reshape(2, 3)"

_KEEPDIM_CALLS = [
    f"{_X}.sum(keepdim=True)",
    f"{_X}.sum(keepdim=False)",
    f"T.sum({_X}, keepdim=True)",
    f"{_X}.sum(dtype=T.float64, keepdim=True)",
    f"T.sum({_X}, keepdim=True, out=T.empty(()))",
    f"{_X}.sum(None, keepdim=True)",
    f"{_X}.sum(1, keepdim=True)",
    f"{_X}.mean(keepdim=True)",
    f"{_X}.mean(keepdim=False)",
    f"{_X}.mean(dtype=T.float64, keepdim=True)",
    f"{_X}.mean(None, keepdim=True)",
    f"T.mean({_X}, dim=0, keepdim=True)",
    f"{_X}.prod(keepdim=True)",
    f"{_X}.prod(dtype=T.float64, keepdim=True)",
    f"T.prod({_X}, keepdim=True, out=T.empty(()))",
    f"{_X}.prod(1, keepdim=True)",
    f"{_X}.var(keepdim=True)",
    f"{_X}.var(unbiased=True, keepdim=True)",
    f"{_X}.std(unbiased=False, keepdim=False)",
    f"{_X}.var(True, keepdim=True)",
    f"{_X}.std(True)",
    f"{_X}.var(None, True, True)",
    f"T.var({_X}, unbiased=True, out=T.empty(()))",
    f"T.var({_X}, correction=0, out=T.empty(()))",
    f"T.var_mean({_X}, unbiased=True, keepdim=True)",
    f"T.std_mean({_X}, True, keepdim=True)",
    f"T.std_mean({_X}, keepdim=True)",
    f"{_X}.max(keepdim=True)",
    f"{_X}.min(keepdim=False)",
    f"{_X}.max(1, keepdim=True)",
    f"{_X}.max()",
    f"{_X}.median(keepdim=True)",
    f"{_X}.nanmedian(keepdim=False)",
    f"{_X}.median(0, keepdim=True)",
]


@pytest.mark.parametrize("src", _KEEPDIM_CALLS)
def test_keepdim_without_dim_as_torch(src):
    E, torch = _both()
    e, t = _outcome(src, E), _outcome(src, torch)
    # the class must agree, and the message up to the arguments it got (torch's names the
    # method's and the function's arguments apart, and lists its overloads after them)
    if isinstance(t, tuple) and len(t) == 2 and isinstance(t[1], str):
        assert e[0] == t[0] and e[1].split(" - got")[0] == t[1].split(" - got")[0], (src, e, t)
    else:
        assert _same(e, t), (src, e, t)


@pytest.mark.parametrize("call", ["x.sum(1)", "x.mean(1)", "x.prod(1)", "x.var(1)",
                                  "x.max(1)[0]", "x.median(1)[0]"])
def test_keepdim_default_reads_as_false(call):
    E, torch = _both()
    saved = []
    for T in (E, torch):
        x = T.arange(6.).reshape(2, 3).requires_grad_()
        fn = eval(call, {"x": x}).grad_fn
        saved.append(getattr(fn, "_saved_keepdim", "absent"))
    assert saved[0] is saved[1], (call, saved)


# ---- repeated dims: PyTorch's words name no op; amax/amin check out='s dtype, then every
# dim as given for an empty size, before the dims' repeats

@pytest.mark.parametrize("src", [
    "T.sum(T.ones(2, 2), dim=(0, 0))",
    "T.amax(T.ones(2, 2), dim=(1, 1))",
    "T.linalg.vector_norm(T.ones(2, 2), dim=(0, 0))",
    "T.amax(T.zeros(0, 1, dtype=T.int64), dim=(0, 0))",
    "T.amin(T.zeros(0, 1), dim=(1, 1, 0))",
    "T.amax(T.zeros(0, 1), dim=(0, 5))",
    "T.amax(T.zeros(0, 1), dim=(5, 0))",
    "T.amax(T.zeros(0, 1), dim=-2)",
    "T.amax(T.zeros(0, 1, dtype=T.bool), dim=0, out=T.empty(1, dtype=T.int8))",
    "T.amin(T.zeros(2, 1), dim=(0, 9), out=T.empty(1, dtype=T.float64))",
    "T.amax(T.zeros(0, 2), dim=(1, 1))",
])
def test_reduction_dims_checked_in_torch_order(src):
    _check(src)


# ---- dtype= beside an out= of another dtype: mean's result dtype is named, so out= must
# match it; nansum (and nanmean, which sums with it) words it its own way

@pytest.mark.parametrize("src", [
    "T.mean(T.zeros(0, dtype=T.float16), dim=(0,), dtype=T.float16, "
    "out=T.empty(2, dtype=T.complex64))",
    "T.mean(T.ones(3), dim=0, dtype=T.float64, out=T.empty(2))",
    "T.mean(T.ones(3), dim=5, dtype=T.float64, out=T.empty(2))",
    "T.mean(T.ones(3, dtype=T.float16), dim=0, out=T.empty((), dtype=T.complex64))",
    "T.mean(T.ones(3, dtype=T.float16), dim=0, dtype=T.float32, out=T.empty((), "
    "dtype=T.float16))",
    "T.nanmean(T.ones(3), dim=0, dtype=T.float64, out=T.empty(()))",
    "T.nanmean(T.ones(3, dtype=T.int32), dim=0, dtype=T.float64, out=T.empty(()))",
    "T.nanmean(T.ones(3, dtype=T.int32), dim=0, dtype=T.float64)",
    "T.nansum(T.ones(3), dim=0, dtype=T.float64, out=T.empty(()))",
    "T.nansum(T.ones(3), dim=5, dtype=T.float64, out=T.empty(()))",
    "T.nansum(T.ones(3, dtype=T.int32), dim=0, dtype=T.int64, out=T.empty(()))",
    "T.nansum(T.ones(3), dim=0, dtype=T.float32, out=T.empty(()))",
])
def test_reduction_dtype_against_out(src):
    _check(src)


# ---- nearest interpolation: torch's kernels find the source cell in float32, and its 2-d
# "nearest" kernel takes a kept size cell by cell and a doubled one as index // 2, whatever
# scale_factor says (NOTE [ Nearest source cells ] in ember/_ops/nn_sampling.py)

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("n,sf", [(3, 2.3), (5, 2.3), (2, 1.1), (3, 2.1), (20, 1.04), (7, 0.7),
                                  (11, 1 / 3), (4, 2.0), (6, 1.5)])
def test_nearest_source_cells(nd, mode, n, sf):
    shape = [1, 1] + [2] * (nd - 1) + [n]
    for perm in ([0, 1] + list(range(2, nd + 2)), [0, 1, nd + 1] + list(range(2, nd + 1))):
        # the sized dim last, then first of the spatial dims
        src = (f"T.nn.functional.interpolate(T.arange({int(np.prod(shape))}.).reshape({shape})"
               f".permute({perm}).contiguous(), mode={mode!r}, scale_factor={sf!r})")
        _check(src)


def test_nearest_gradient_follows_source_cells():
    _check("T.autograd.grad(T.nn.functional.interpolate(x, mode='nearest', scale_factor=2.3)"
           ".mul(T.arange(66.).reshape(1, 1, 6, 11)).sum(), x)"
           .replace("x)", "T.cos(T.arange(15.)).reshape(1, 1, 3, 5).requires_grad_())", 1)
           .replace("(x,", "(T.cos(T.arange(15.)).reshape(1, 1, 3, 5).requires_grad_(),"))


# ---- convolution() with a bias of another dtype: torch's own kernels add it in the input's
# dtype, oneDNN (float32 by shapes and threads, transposed or not) and the 3-d transposed
# kernel refuse it; bilinear names the dtypes in C++

_CONV_BIAS = []
for _nd in (1, 2, 3):
    for _dt, _bdt in (("float32", "float64"), ("float32", "int64"), ("float16", "float32"),
                      ("float64", "float32"), ("bfloat16", "float32")):
        for _n, _k, _groups, _stride, _tr, _opad in (
                (1, 3, 1, 1, False, 0), (2, 3, 1, 1, False, 0), (1, 1, 1, 1, False, 0),
                (1, 5, 2, 1, False, 0), (1, 3, 1, 2, False, 0), (1, 3, 1, 1, True, 0),
                (1, 3, 1, 2, True, 1), (16, 1, 1, 1, False, 0), (2, 1, 2, 2, True, 0)):
            if _nd == 3 and _dt != "float32" and _tr:
                continue
            _CONV_BIAS.append(
                f"T.convolution(T.ones({[_n, 4] + [6] * _nd}, dtype=T.{_dt}), "
                f"T.ones({[4, 4 // _groups] + [_k] * _nd}, dtype=T.{_dt}), "
                f"T.arange(4, dtype=T.{_bdt}) / 3, {[_stride] * _nd}, {[0] * _nd}, "
                f"{[1] * _nd}, {_tr}, {[_opad] * _nd}, {_groups})")


for _nd in (1, 2, 3):
    for _dt in ("int64", "int32"):
        for _bdt in ("int8", "float32", "bool"):
            for _tr in (False, True):
                _w = [2, 3] + [2] * _nd if _tr else [3, 2] + [2] * _nd
                _CONV_BIAS.append(
                    f"T.convolution(T.ones({[1, 2] + [4] * _nd}, dtype=T.{_dt}), "
                    f"T.ones({_w}, dtype=T.{_dt}), T.ones(3, dtype=T.{_bdt}), {[1] * _nd}, "
                    f"{[0] * _nd}, {[1] * _nd}, {_tr}, {[0] * _nd}, 1)")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("src", _CONV_BIAS)
def test_convolution_bias_of_another_dtype(src, threads):
    E, torch = _both()
    had = (E.get_num_threads(), torch.get_num_threads())
    try:
        E.set_num_threads(threads)
        torch.set_num_threads(threads)
        e, t = _outcome(src, E), _outcome(src, torch)
    finally:
        E.set_num_threads(had[0])
        torch.set_num_threads(had[1])
    if isinstance(t, tuple) and len(t) == 2 and isinstance(t[1], str):
        assert e == t, (src, e, t)
    else:  # float16 sums may round apart: the dtype, shape and values to float16's precision
        assert e[:2] == t[:2] and np.allclose(e[2], t[2], rtol=1e-3), (src, e, t)


@pytest.mark.parametrize("bdt", ["float64", "float16", "int64", "bfloat16", "complex64"])
def test_bilinear_dtype_message(bdt):
    _check(f"T.nn.functional.bilinear(T.ones(2, 3), T.ones(2, 3), T.ones(4, 3, 3), "
           f"T.ones(4, dtype=T.{bdt}))")


# ---- det's gradient under vmap/jacrev at a singular matrix: no refusal, the SVD form where
# |det| is tiny (a rank n-1 matrix's cofactors are not zero)

@pytest.mark.parametrize("src", [
    "T.func.vmap(T.func.jacrev(T.linalg.det))(T.stack([B, B * 2, A]))",
    "T.func.vmap(T.func.grad(T.linalg.det))(T.stack([B, A, C]))",
    "T.func.jacrev(T.linalg.det)(A)",
    "T.func.jacrev(T.linalg.det)(C)",
    "T.func.vmap(T.func.jacrev(lambda y: T.linalg.det((T.remainder(y, 1.1) + 0 * X)[:, :3])),"
    " in_dims=0)(T.stack([Y, Y * -0.7]))",
])
def test_det_gradient_under_transforms_at_singular_matrices(src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        env = {"A": T.tensor([[0.3, 0.9, 0.2]] * 3, dtype=T.float64),
               "B": T.tensor([[1., 2, 3], [2., 4, 6], [0., 1, 1]], dtype=T.float64),
               "C": T.tensor([[2., 1, 0], [1., 3, 1], [0., 1, 4]], dtype=T.float64),
               "X": T.tensor([[1.42, 1.72, 2.07, -1.26], [0.07, -0.57, -1.51, -1.78],
                              [0.37, 0.37, 1.29, 0.91]], dtype=T.float64),
               "Y": T.tensor([[-0.7669, -0.2026, 0.2655, 0.249]], dtype=T.float64)}
        outs.append(_np(eval(src, {"T": T, **env})))
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-9)


# ---- cholesky_solve of an empty right-hand side: nothing to solve, whatever the factor

@pytest.mark.parametrize("src", [
    "T.cholesky_solve(T.empty((1, 0), dtype=T.complex128), T.zeros(1, 1, dtype=T.complex128), "
    "upper=True, out=T.empty((1, 0), dtype=T.complex128))",
    "T.cholesky_solve(T.empty((2, 0)), T.zeros(2, 2))",
    "T.cholesky_solve(T.ones((3, 2, 0)), T.zeros(2, 2))",
])
def test_cholesky_solve_empty_right_hand_side(src):
    _check(src)


# ---- index_reduce's complex amax/amin: torch's kernel meets its first index before its
# missing complex maximum, so a first index out of range is an IndexError

@pytest.mark.parametrize("idx", [[2, 1], [1, 2], [-1, 0], [0, -1], [5, 5]])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_index_reduce_complex_order_after_first_index(idx, include_self, reduce):
    _check(f"T.index_reduce(T.zeros(2, 1, dtype=T.complex64), 0, T.tensor({idx}), "
           f"T.ones(2, 1, dtype=T.complex64), {reduce!r}, include_self={include_self})")


# ---- a one-element float16/bfloat16 fill: torch checks the number as a double and rounds
# it, past the range to inf; a larger tensor refuses it. Data with a complex number under a
# bfloat16 default dtype has no default complex dtype

@pytest.mark.parametrize("shape", ["()", "(1,)", "(1, 1)", "(2,)", "(0,)"])
@pytest.mark.parametrize("value,dtype", [("1e39", "float16"), ("70000", "float16"),
                                         ("-70000.0", "bfloat16"), ("1e39", "bfloat16"),
                                         ("complex(1, 2)", "float16"), ("65519.0", "float16"),
                                         ("2 ** 63", "bfloat16"), ("3e38", "float32")])
@pytest.mark.parametrize("form", ["T.full({s}, {v}, dtype=T.{d})",
                                  "T.zeros({s}, dtype=T.{d}).fill_({v})",
                                  "T.full_like(T.zeros({s}, dtype=T.{d}), {v})",
                                  "T.zeros({s}, dtype=T.{d}).new_full({s}, {v})"])
def test_fill_of_one_half_element(shape, value, dtype, form):
    _check(form.format(s=shape, v=value, d=dtype))


@pytest.mark.parametrize("src", ["T.tensor(1j)", "T.tensor([1, 2j])", "T.as_tensor([[1j]])",
                                 "T.full((2,), 1j)", "T.tensor([1.5])",
                                 "T.tensor([1.0]).new_tensor([1j])"])
def test_complex_data_under_bfloat16_default(src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        T.set_default_dtype(T.bfloat16)
        try:
            outs.append(_outcome(src, T))
        finally:
            T.set_default_dtype(T.float32)
    assert _same(outs[0], outs[1]), (src, outs)


# ---- take_along_dim without dim gathers from the flattened input; gathering nothing, torch
# checks no index dtype

@pytest.mark.parametrize("src", [
    "T.take_along_dim(T.empty((0, 1)), T.empty((0,), dtype=T.float16))",
    "T.take_along_dim(T.ones((2, 1)), T.empty((0, 2), dtype=T.bool))",
    "T.take_along_dim(T.ones((2, 1)), T.empty((0,), dtype=T.int16))",
    "T.take_along_dim(T.ones((2, 1)), T.ones((1,), dtype=T.float16))",
    "T.take_along_dim(T.ones((2, 1)), T.empty((0, 1), dtype=T.float16), 0)",
])
def test_take_along_dim_of_no_indices(src):
    _check(src)
