"""Regressions for session 32's differential run against PyTorch 2.13 (OpInfo cases, random
programs and the transform programs of tests/differential/programs_func.py): each case runs
with ``T = ember`` and ``T = torch`` from the same values where torch is installed, and
compares values, gradients, or the exception raised (class and message)."""

import warnings

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """A library-neutral outcome of ``f()``: (class, message) of what it raised, or its
    tensors (a tuple of them, or one) as (dtype name, shape, values) with NaN kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's fallback performance warnings
        err = _raised(f)
        if err:
            return err[0], err[1].replace("torch", "ember")
        r = f()

    def one(t):
        return str(t.dtype).split(".")[-1], tuple(t.shape), np.round(_np(t), 9).tolist()

    return tuple(one(t) for t in r) if isinstance(r, (tuple, list)) else one(r)


def _same(a, b):
    """Outcomes equal, NaN equal to NaN."""
    return repr(a).replace("nan", "NaN") == repr(b).replace("nan", "NaN")


_X = [[0.3, -1.2, 0.8, 1.5], [-0.7, 0.45, -1.1, 0.6], [1.3, -0.2, 0.9, -0.55]]


# ---- the gradient of narrow/select/diagonal inside a transform whose tangents are batched
# (jacrev(jacfwd)): the scatter back into the input's shape kept the unbatched input shape
# while the view's dims were shifted past the batch dims

_VIEW_FUNCS = [
    "(x * x).narrow(1, 1, 2)",
    "T.trace(x * x)",
    "(x * x).diagonal(1)",
    "(x.sin() * x).select(1, 2)",
    "(x * x).narrow(0, 1, 2).diagonal()",
]


@pytest.mark.parametrize("src", _VIEW_FUNCS)
@pytest.mark.parametrize("comp", ["jacrev(jacfwd)", "jacrev(jacrev)", "vmap(jacrev)"])
def test_view_gradient_under_batched_tangents(src, comp):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        def f(x, T=T):
            return eval(src, {"T": T, "x": x})

        x = T.tensor(_X, dtype=T.float64)
        if comp == "vmap(jacrev)":
            xb = T.stack([x, x.cos()])
            outs.append(_outcome(lambda: T.func.vmap(T.func.jacrev(f))(xb)))
        else:
            o, i = comp[:-1].split("(")
            outs.append(_outcome(lambda: getattr(T.func, o)(getattr(T.func, i)(f))(x)))
    assert _same(*outs), outs


# ---- reverse mode over the tangent formula of an in-place op (jacrev(jacfwd), grad of a
# jvp, forward AD inside autograd.grad): the formula read the written tensor's value and
# tangent, which the write then replaced, so backward refused them as modified
# (NOTE [ Tangent formulas of in-place ops under reverse mode ])

_WRITES = [
    "r.mul_(x)",
    "r[:, 1].mul_(x[:, 0])",
    "r.t()[1:, ::2].mul_(1.5)",
    "r.transpose(0, 1)[0].mul_(x[:, 2])",
    "r.view(12)[::5].sigmoid_()",
    "r.unfold(1, 2, 2).select(-1, 0).div_(x[:, :2] ** 2 + 1)",
    "r[0].addcmul_(x[1], x[2], value=0.5)",
    "r.exp_()",
    "r[1:].pow_(2)",
]


def _written(T, src):
    def f(x):
        r = (x.sin() * x).clone()
        exec(src, {"r": r, "x": x, "T": T})
        return r
    return f


@pytest.mark.parametrize("src", _WRITES)
def test_jacrev_of_jacfwd_through_an_inplace_write(src):
    E, torch = _both()
    outs = [_outcome(lambda T=T: T.func.jacrev(T.func.jacfwd(_written(T, src)))(
        T.tensor(_X, dtype=T.float64))) for T in (E, torch)]
    assert _same(*outs), outs


@pytest.mark.parametrize("src", _WRITES)
def test_grad_of_forward_ad_through_an_inplace_write(src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        def run(T=T):
            x = T.tensor(_X, dtype=T.float64, requires_grad=True)
            t = T.tensor(_X, dtype=T.float64).flip(0).requires_grad_()
            fwAD = T.autograd.forward_ad
            with fwAD.dual_level():
                o = _written(T, src)(fwAD.make_dual(x, t))
                tan = fwAD.unpack_dual(o).tangent
            return T.autograd.grad((tan * tan.cos()).sum(), (x, t))
        outs.append(_outcome(run))
    assert _same(*outs), outs


def test_reading_the_written_tensor_is_still_refused():
    # the other operand a view of the tensor written: autograd refuses at backward in both
    E, torch = _both()
    src = "r.t()[0].mul_(r[:, 2])"
    outs = [_outcome(lambda T=T: T.func.jacrev(T.func.jacfwd(_written(T, src)))(
        T.tensor(_X, dtype=T.float64))) for T in (E, torch)]
    assert outs[0][0] == outs[1][0] == "RuntimeError", outs


# ---- strides and storage offsets of views of empty tensors, and of dims a None index adds:
# NumPy zeroes an empty array's strides (and leaves an empty slice's data pointer at the
# start) and gives a None dim stride 0 (NOTE [ Strides of empty views ] in ember/_dispatch.py)

_EMPTY_VIEWS = [
    "x.t()", "x[:, 1:]", "x[1:1]", "x[:, 5:]", "x.permute(1, 0)", "x.narrow(1, 0, 0)",
    "x.select(1, 0)", "x.diagonal()", "x.unfold(1, 2, 1)", "x.expand(2, *x.shape)",
    "x.unsqueeze(1)", "x.split(1, 1)[0]", "x.chunk(2, 1)[1]", "x.unbind(1)[0]", "x.mT",
    "x.t()[:, 1:]", "x.t().unsqueeze(0)", "x[..., None]", "x[None, 1:1, None]",
    "x[1:1].expand(2, -1, -1)", "x.movedim(0, 1)", "x[-1, 5:]", "x[1:1, -2]",
    "x.t().expand(4, 0)", "x[1:1].t().view(-1)",
]


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (3, 4), (2, 0, 4)])
@pytest.mark.parametrize("src", _EMPTY_VIEWS)
def test_strides_of_empty_views(shape, src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        n = int(np.prod(shape))
        x = T.arange(float(n)).reshape(shape)

        def run(x=x, T=T):
            r = eval(src, {"x": x, "T": T})
            return tuple(r.shape), r.stride(), r.storage_offset(), r.is_contiguous()
        err = _raised(run)
        outs.append(err[0] if err else run())
    assert outs[0] == outs[1], outs


@pytest.mark.parametrize("src", ["x[:, None]", "x[None]", "x[..., None]", "x[None, None, 1, None]",
                                 "x[1:, None][..., None, 0]", "x.t()[None, ::2]",
                                 "x[:, ::2][:, None]", "x[None, :, None, 1:]"])
def test_strides_of_dims_a_none_index_adds(src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        x = T.arange(12.).reshape(3, 4)
        r = eval(src, {"x": x})
        outs.append((tuple(r.shape), r.stride(), r.storage_offset(), r.tolist()))
    assert outs[0] == outs[1], outs


def test_writes_through_restrided_views_reach_the_base():
    E, _ = _both()
    x = E.arange(12.).reshape(3, 4)
    y = x[:, None]
    y.mul_(2)
    x[None, 1:1].add_(1)  # an empty view: nothing written
    assert x.tolist() == (E.arange(12.).reshape(3, 4) * 2).tolist()
    assert x[1:1].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


# ---- index_add / index_reduce / index_copy / index_select / index_fill refuse bad shapes in
# torch's order and words: the dim against self first, index_add and index_reduce through
# their shared checks (named in place), index_copy through its own

_INDEX_SELF = [(), (4,), (3, 4), (2, 3, 4)]
_INDEX_IDX = [((), "int64"), ((2,), "int64"), ((1, 2), "int64"), ((2,), "int32"),
              ((2,), "float32")]
_INDEX_SRC = [(), (1,), (2,), (2, 4), (3, 2), (2, 3), (2, 4, 1), (2, 3, 2)]


def _index_outcomes(op, self_shape, dim, ish, idt, src, sdt="float32"):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        x = T.zeros(self_shape)
        i = T.zeros(ish, dtype=getattr(T, idt))
        s = T.ones(src, dtype=getattr(T, sdt))

        def run(x=x, i=i, s=s):
            if op == "index_select":
                return x.index_select(dim, i)
            if op.startswith("index_fill"):
                return getattr(x, op)(dim, i, 1.0)
            if op.startswith("index_reduce"):
                return getattr(x, op)(dim, i, s, "amax")
            return getattr(x, op)(dim, i, s)
        outs.append(_outcome(run))
    return outs


@pytest.mark.parametrize("op", ["index_add", "index_add_", "index_copy", "index_copy_",
                                "index_reduce", "index_reduce_"])
@pytest.mark.parametrize("self_shape", _INDEX_SELF)
def test_index_ops_refuse_shapes_as_torch(op, self_shape):
    bad = []
    for dim in (0, 1, -1, 2):
        for ish, idt in _INDEX_IDX:
            for src in _INDEX_SRC:
                for sdt in ("float32", "float64"):
                    a, b = _index_outcomes(op, self_shape, dim, ish, idt, src, sdt)
                    if not _same(a, b):
                        bad.append((dim, ish, idt, src, sdt, a, b))
    assert not bad, bad[:3]


@pytest.mark.parametrize("op", ["index_select", "index_fill", "index_fill_"])
def test_index_select_and_fill_check_the_dim_first(op):
    bad = []
    for self_shape in _INDEX_SELF:
        for dim in (0, 1, -1, 2):
            for ish, idt in _INDEX_IDX + [((0,), "int64")]:
                a, b = _index_outcomes(op, self_shape, dim, ish, idt, ())
                if not _same(a, b):
                    bad.append((self_shape, dim, ish, idt, a, b))
    assert not bad, bad[:3]


# ---- norms check dtype= as torch: the input floating or complex first (integer input is
# refused even with a floating dtype=), dtype= of the input's kind and not narrower; the
# nuclear and 2-norms refuse a half input before looking at dtype=; a 0-dim input's dim 0
# is the tensor itself

_NORMS = {
    "vector_norm_bad_dim": lambda T, x, kw: T.linalg.vector_norm(x, 2, dim=5, **kw),
    "vector_norm_0": lambda T, x, kw: T.linalg.vector_norm(x, 0, dim=1, **kw),
    "norm_p_dim": lambda T, x, kw: T.norm(x, 2, 1, **kw),
    "norm_fro": lambda T, x, kw: T.norm(x, "fro", **kw),
    "norm_nuc": lambda T, x, kw: T.norm(x, "nuc", **kw),
    "norm_0dim": lambda T, x, kw: T.norm(x[0, 0], float("-inf"), 0, keepdim=True, **kw),
    "matrix_norm": lambda T, x, kw: T.linalg.matrix_norm(x, **kw),
    "matrix_norm_nuc": lambda T, x, kw: T.linalg.matrix_norm(x, "nuc", **kw),
    "linalg_norm": lambda T, x, kw: T.linalg.norm(x, **kw),
    "linalg_norm_2": lambda T, x, kw: T.linalg.norm(x, 2, **kw),
}


@pytest.mark.parametrize("name", sorted(_NORMS))
@pytest.mark.parametrize("x_dtype", ["int8", "bool", "float16", "bfloat16", "float32",
                                     "complex64", "complex128"])
def test_norm_dtype_checks(name, x_dtype):
    E, torch = _both()
    bad = []
    for dt in [None, "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
               "int32"]:
        outs = []
        for T in (E, torch):
            x = T.ones(2, 2, dtype=getattr(T, x_dtype))
            kw = {} if dt is None else {"dtype": getattr(T, dt)}
            outs.append(_outcome(lambda T=T, x=x, kw=kw: _NORMS[name](T, x, kw)))
        if not _same(*outs):
            bad.append((dt, outs))
    assert not bad, bad[:3]


def test_vector_norm_of_a_0dim_tensor_over_its_dim():
    E, torch = _both()
    for src in ["T.linalg.vector_norm(x, float('inf'), 0)", "T.norm(x, -float('inf'), 0, True)",
                "T.linalg.vector_norm(x, 1, (-1,), True)", "T.norm(x, 0, -1)"]:
        outs = [_outcome(lambda T=T: eval(src, {"T": T, "x": T.tensor(-3.0)}))
                for T in (E, torch)]
        assert _same(*outs), (src, outs)


# ---- reductions check in torch's order: a bad dim before complex input (nansum, nanmean),
# before logcumsumexp's integer input; all/any's result dtype before the dims; nansum's
# NaN-skipping kernel has no complex or (for floating input into out=) integer dtype

_REDUCTION_ORDER = [
    "T.nansum(xc, dim=1, dtype=T.complex128)",
    "T.nansum(xc, dim=1, keepdim=True, out=T.empty(2, dtype=T.complex64))",
    "T.nanmean(xc, dim=3)",
    "T.logcumsumexp(xu, dim=1)",
    "T.all(xh, dim=1, out=T.empty(0, dtype=T.float16))",
    "T.any(xh, dim=(0, 1), out=T.empty(0, dtype=T.int32))",
    "T.nansum(xh, out=T.empty(0, dtype=T.int16))",
    "T.nansum(xh, dtype=T.complex64)",
    "T.nansum(xh, dtype=T.int32)",
    "T.nansum(xu, out=T.empty(0, dtype=T.complex64))",
    "T.nanmean(xh, dim=0, out=T.empty(0, dtype=T.complex64))",
]


@pytest.mark.parametrize("src", _REDUCTION_ORDER)
def test_reduction_refusal_order(src):
    E, torch = _both()
    outs = []
    for T in (E, torch):
        env = {"T": T, "xc": T.ones(3, 1, dtype=T.complex64), "xu": T.ones((), dtype=T.uint8),
               "xh": T.ones(2, 2, dtype=T.float16)}
        outs.append(_outcome(lambda env=env: eval(src, env)))
    assert _same(*outs), outs


# ---- reflect / replicate / circular padding with negative entries crops as torch (ember
# refused them), NOTE [ Negative padding of the non-constant modes ]; its refusals in torch
# 2.13's words; the gradient of a one-plane reflect/replicate pad printed NumPy's read-only
# warning

_NEG_PADS = [((1, 1, 5), (-1, 3)), ((1, 1, 5), (2, -2)), ((1, 1, 5), (-2, 1)),
             ((1, 1, 5), (-4, 1)), ((2, 5), (-1, -1)), ((1, 2, 4, 5), (-1, 2, 1, -2)),
             ((1, 2, 4, 5), (0, 0, -1, -1)), ((1, 1, 3, 4, 5), (1, -1, -1, 1, 0, -1)),
             ((1, 1, 5), (-3, -2)), ((1, 2, 4, 5), (-3, -2, 0, 0))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", _NEG_PADS, ids=[str(c) for c in _NEG_PADS])
def test_negative_padding_of_the_other_modes(mode, case):
    E, torch = _both()
    shape, pads = case
    outs = []
    for T in (E, torch):
        n = int(np.prod(shape))
        x = (T.cos(T.arange(float(n), dtype=T.float64)) * 2).reshape(shape).requires_grad_()

        def run(T=T, x=x):
            y = T.nn.functional.pad(x, pads, mode=mode)
            w = T.arange(float(y.numel()), dtype=T.float64).reshape(y.shape)
            return (y,) + T.autograd.grad((y * w).sum(), x, allow_unused=True,
                                          materialize_grads=True)
        outs.append(_outcome(run))
    assert _same(*outs), outs


@pytest.mark.parametrize("shape, pads, mode", [
    ((5,), (1, 1), "reflect"), ((2, 5), (1, 1, 1, 1), "replicate"),
    ((1, 1, 1, 1, 1, 5), (1, 1), "circular"), ((1, 2, 3, 5), (0, 0, 3, 0), "reflect"),
    ((1, 1, 2, 3, 5), (5, 0, 0, 0, 2, 0), "reflect"), ((1, 2, 5), (5, 0), "reflect")])
def test_padding_refusals_in_torch_words(shape, pads, mode):
    E, torch = _both()
    outs = [_outcome(lambda T=T: T.nn.functional.pad(T.ones(shape), pads, mode=mode))
            for T in (E, torch)]
    assert _same(*outs), outs


def test_one_plane_pad_gradient_warns_nothing():
    E, _ = _both()
    x = E.ones(1, 1, 5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E.nn.functional.pad(x, (1, 2), mode="replicate").sum().backward()
    assert x.grad.tolist() == [[[2.0, 1.0, 1.0, 1.0, 3.0]]]


@pytest.mark.parametrize("kw", ["mode='sum'", "mode='max'", "mode='sum', max_norm=0.5",
                                "mode='mean', per_sample_weights=T.ones(1, 0)"])
def test_embedding_bag_of_width_zero(kw):
    E, torch = _both()
    outs = [_outcome(lambda T=T: eval(
        f"T.nn.functional.embedding_bag(T.zeros(1, 0, dtype=T.int64), T.ones(2, 2), {kw})",
        {"T": T})) for T in (E, torch)]
    assert _same(*outs), outs


# ---- einsum of a bool operand with another dtype: torch's bmm refuses its bool kernel before
# it compares the dtypes (NotImplementedError, not the dtype RuntimeError)

@pytest.mark.parametrize("eq, nd", [("...ij,...jk", 3), ("ij,jk", 2), ("i,i", 1),
                                    ("bij,bjk->bik", 3)])
@pytest.mark.parametrize("other", ["float32", "int64"])
def test_einsum_bool_with_another_dtype(eq, nd, other):
    E, torch = _both()
    outs = [_outcome(lambda T=T: T.einsum(eq, T.ones((2,) * nd, dtype=T.bool),
                                          T.ones((2,) * nd, dtype=getattr(T, other))))
            for T in (E, torch)]
    assert _same(*outs), outs
