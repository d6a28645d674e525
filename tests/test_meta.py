"""The meta device: shapes and dtypes without data (NOTE [ Meta device ] in
ember/backends/meta.py), checked against ember's CPU results and, where installed, PyTorch's
meta device."""

from __future__ import annotations

import threading
import tracemalloc
import zlib

import numpy as np
import pytest

import ember
from ember import nn
from ember._core import dtype as _dt
from ember.testing._opinfo import load_op_db
from tests.conftest import HAS_TORCH

op_db = load_op_db()
ids = [info.id for info in op_db]

#: samples PyTorch runs on meta and ember does not, with the reason
KNOWN_LIMITS: dict = {}
#: ops whose kernels read offsets or lengths on the way to their result's shape
KNOWN_OP_LIMITS: dict = {
    # open (its OpInfo entry came with session 27's differential samples)
    "nn.functional.multilabel_margin_loss": "its kernel reads the targets on the host",
}
#: ops whose results after the first have other shapes on PyTorch's meta device than on its
#: CPU (checked against PyTorch's meta device by their own tests below)
META_SHAPES_NOT_CPU = {
    "embedding_bag": "the bookkeeping results are sized without the offsets' values",
}


def _known_limit(info, s):
    return (info.id, s.name) in KNOWN_LIMITS or info.id in KNOWN_OP_LIMITS


#: functions PyTorch's default device leaves alone (they are not in its factory list)
NOT_FACTORIES = {"normal"}


def _torch():
    import torch

    return torch


def _map(x, f):
    if isinstance(x, ember.Tensor):
        return f(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(y, f) for y in x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return x


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _flat(x)]
    return [r]


def _to_torch(x, device):
    torch = _torch()
    if isinstance(x, ember.Tensor):
        a = x.detach().numpy()
        if a.dtype == _dt.bfloat16.np:
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16).to(device)
        return torch.from_numpy(a.copy()).to(device)
    if isinstance(x, _dt.dtype):
        return getattr(torch, x.name)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(y, device) for y in x)
    if isinstance(x, dict):
        return {k: _to_torch(v, device) for k, v in x.items()}
    return x


def _dtype_for(info):
    for d in (_dt.float32, _dt.int64, _dt.float64):
        if d in info.dtypes:
            return d
    return info.dtypes[0]


def _samples(info, dtype):
    rng = np.random.default_rng(zlib.crc32(f"meta/{info.id}/{dtype.name}".encode()))
    return list(info.sample_inputs(dtype, rng))


def _torch_meta_raises(info, s):
    """True when PyTorch runs the sample on the CPU but refuses it on meta; None when
    PyTorch cannot say (not installed, no counterpart, or refuses it on the CPU too)."""
    if not HAS_TORCH:
        return None
    torch = _torch()
    top = info.get_torch_op(torch)
    if top is None:
        return None
    try:
        top(*_to_torch(s.all_args(), "cpu"), **_to_torch(s.kwargs, "cpu"))
    except Exception:
        return None
    try:
        with torch.device("meta"):
            top(*_to_torch(s.all_args(), "meta"), **_to_torch(s.kwargs, "meta"))
    except Exception:
        return True
    return False


def _is_meta_error(e):
    """The two errors meta raises by design: an op whose result shape depends on values
    (NotImplementedError) and a read of a value (RuntimeError, PyTorch's message)."""
    msg = str(e)
    return (isinstance(e, NotImplementedError) and ("device type 'meta'" in msg or
                                                    "Cannot copy out of meta tensor" in msg)) \
        or (isinstance(e, RuntimeError) and "meta tensor" in msg)


@pytest.mark.parametrize("info", op_db, ids=ids)
def test_opinfo_meta_matches_cpu(info):
    """Every OpInfo sample, moved to meta, gives results of the CPU results' shapes and
    dtypes on meta -- or raises the meta error where PyTorch's meta device refuses too."""
    dtype = _dtype_for(info)
    checked = 0
    for s in _samples(info, dtype):
        ctx = f"{info.id} {dtype} {s}"
        try:
            want = _flat(info.get_op()(*s.all_args(), **s.kwargs))
        except Exception:
            continue  # refused on the CPU: not a meta question
        args = _map(s.all_args(), lambda t: t.to("meta"))
        kwargs = _map(s.kwargs, lambda t: t.to("meta"))
        try:
            with ember.device("meta"):
                got = _flat(info.get_op()(*args, **kwargs))
        except Exception as e:
            if _known_limit(info, s):
                continue
            assert _is_meta_error(e), f"{ctx}: meta raised {type(e).__name__}: {e}"
            assert _torch_meta_raises(info, s) is not False, \
                f"{ctx}: PyTorch runs it on meta, ember raised {type(e).__name__}: {e}"
            continue
        assert len(got) == len(want), ctx
        if info.id in META_SHAPES_NOT_CPU:
            got, want = got[:1], want[:1]
        for g, w in zip(got, want):
            if isinstance(w, ember.Tensor):
                if info.name in NOT_FACTORIES and not _float_tensors([args, kwargs], []):
                    # not given the default device, as in torch
                    assert g.device.type == "cpu", ctx
                    continue
                assert isinstance(g, ember.Tensor) and g.is_meta, f"{ctx}: {g!r}"
                assert tuple(g.shape) == tuple(w.shape), f"{ctx}: {g.shape} vs {w.shape}"
                assert g.dtype == w.dtype, f"{ctx}: {g.dtype} vs {w.dtype}"
            elif isinstance(w, (int, float, bool)) and not isinstance(w, bool):
                assert type(g) is type(w), ctx
        checked += 1
    if checked == 0:
        pytest.skip("no sample runs on the CPU in this dtype")


_GRAD_OPS = [info for info in op_db if info.differentiable and _dt.float32 in info.dtypes
             and not info.nondeterministic]


def _float_tensors(x, out):
    if isinstance(x, ember.Tensor):
        if x.is_floating_point():
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _float_tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _float_tensors(y, out)
    return out


def _grads(info, args, kwargs):
    leaves = _float_tensors([args, kwargs], [])
    for t in leaves:
        t.requires_grad_(True)
    outs = [o for o in _flat(info.get_op()(*args, **kwargs))
            if isinstance(o, ember.Tensor) and o.requires_grad]
    if not outs:
        return None
    total = sum(o.sum() for o in outs)
    total.backward()
    return [None if t.grad is None else t.grad for t in leaves]


@pytest.mark.parametrize("info", _GRAD_OPS, ids=[i.id for i in _GRAD_OPS])
def test_opinfo_meta_backward_matches_cpu(info):
    """Backward through each differentiable op on meta gives meta gradients of the CPU
    gradients' shapes and dtypes, for the same inputs."""
    for s in _samples(info, _dt.float32)[:3]:
        def fresh(t, device):
            return t.detach().clone().to(device)

        try:
            cpu_args = _map(s.all_args(), lambda t: fresh(t, "cpu"))
            want = _grads(info, cpu_args, _map(s.kwargs, lambda t: fresh(t, "cpu")))
        except Exception:
            continue
        if want is None:
            continue
        try:
            got = _grads(info, _map(s.all_args(), lambda t: fresh(t, "meta")),
                         _map(s.kwargs, lambda t: fresh(t, "meta")))
        except Exception as e:
            if _is_meta_error(e) or _known_limit(info, s):
                continue
            raise
        for g, w in zip(got, want):
            assert (g is None) == (w is None), f"{info.id} {s}"
            if w is not None:
                assert g.is_meta and tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype, \
                    f"{info.id} {s}: {g!r} vs {tuple(w.shape)} {w.dtype}"


# ------------------------------------------------------------------------------------------------
# tensors


def test_factories_on_meta_have_shape_dtype_and_no_data():
    for t in (ember.empty(2, 3, device="meta"), ember.zeros(2, 3, device="meta"),
              ember.ones((2, 3), device="meta"), ember.full((2, 3), 7.0, device="meta"),
              ember.randn(2, 3, device="meta"), ember.rand(2, 3, device="meta")):
        assert t.is_meta and t.device == ember.device("meta")
        assert tuple(t.shape) == (2, 3) and t.dtype == ember.float32
        assert t.data_ptr() == 0
    assert ember.arange(5, device="meta").dtype == ember.int64
    assert tuple(ember.arange(1, 10, 2, device="meta").shape) == (5,)
    assert tuple(ember.linspace(0, 1, 7, device="meta").shape) == (7,)
    assert tuple(ember.eye(3, 4, device="meta").shape) == (3, 4)
    assert tuple(ember.randint(0, 5, (4,), device="meta").shape) == (4,)
    assert tuple(ember.randperm(6, device="meta").shape) == (6,)
    assert not ember.ones(2).is_meta


def test_to_meta_and_like_keep_shape_and_dtype():
    x = ember.arange(6, dtype=ember.float64).reshape(2, 3).to("meta")
    assert x.is_meta and x.dtype == ember.float64 and tuple(x.shape) == (2, 3)
    for like in (ember.empty_like(x), ember.zeros_like(x), ember.ones_like(x),
                 ember.full_like(x, 2), ember.rand_like(x), ember.randn_like(x),
                 x.new_zeros(4), x.new_empty(4)):
        assert like.is_meta and like.dtype == ember.float64
    assert tuple(ember.zeros_like(x, dtype=ember.int32).shape) == (2, 3)
    assert ember.zeros_like(x, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("shape,dtype,rg", [((2, 3), "float32", False), ((), "float32", False),
                                            ((0,), "float32", False), ((2, 3), "int64", False),
                                            ((4,), "float64", True), ((2, 3), "bool", False),
                                            ((5,), "float16", False)])
def test_repr_matches_torch(shape, dtype, rg):
    t = ember.empty(shape, dtype=getattr(ember, dtype), device="meta", requires_grad=rg)
    text = repr(t)
    assert text.startswith("tensor(..., device='meta', size=")
    if HAS_TORCH:
        torch = _torch()
        want = repr(torch.empty(shape, dtype=getattr(torch, dtype), device="meta",
                                requires_grad=rg))
        assert text == want.replace("torch.", "ember.")


def test_repr_shows_grad_fn():
    x = ember.empty(2, device="meta", requires_grad=True)
    assert repr(x * 2) == "tensor(..., device='meta', size=(2,), grad_fn=<MulBackward0>)"


def _error(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


@pytest.mark.parametrize("what", ["cpu", "numpy", "item1", "item6", "tolist", "bool", "float",
                                  "to_cpu", "array"])
def test_copying_data_out_raises_as_torch(what):
    calls = {
        "cpu": lambda t, n: t(n).cpu(), "numpy": lambda t, n: t(n).numpy(),
        "item1": lambda t, n: t(1).item(), "item6": lambda t, n: t(6).item(),
        "tolist": lambda t, n: t(n).tolist(), "bool": lambda t, n: bool(t(1)),
        "float": lambda t, n: float(t(1)), "to_cpu": lambda t, n: t(n).to("cpu"),
        "array": lambda t, n: np.asarray(t(n)),
    }
    got = _error(lambda: calls[what](lambda n: ember.empty(n, device="meta"), 3))
    assert got is not None
    if what in ("cpu", "tolist", "to_cpu"):
        assert got == (NotImplementedError, "Cannot copy out of meta tensor; no data!")
    if HAS_TORCH and what != "array":
        torch = _torch()
        want = _error(lambda: calls[what](lambda n: torch.empty(n, device="meta"), 3))
        assert got[0] is want[0] or issubclass(got[0], want[0]), (got, want)
        assert got[1] == want[1].replace("torch", "ember"), (got, want)


def test_stride_is_contiguous_as_torch():
    x = ember.empty(2, 3, 4, device="meta")
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    assert ember.empty(0, 3, device="meta").stride() == (3, 1)
    assert x.storage_offset() == 0
    assert x.untyped_storage().device == ember.device("meta")


# ------------------------------------------------------------------------------------------------
# layouts (NOTE [ Meta layouts ]): strides as PyTorch's meta device reports them

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="compares with PyTorch")


def _both(shape, stride=None, dtype="float32"):
    """The same meta tensor in ember and in PyTorch (given strides, else contiguous)."""
    torch = _torch()
    if stride is None:
        return (ember.empty(shape, dtype=getattr(ember, dtype), device="meta"),
                torch.empty(shape, dtype=getattr(torch, dtype), device="meta"))
    return (ember.empty_strided(shape, stride, dtype=getattr(ember, dtype), device="meta"),
            torch.empty_strided(shape, stride, dtype=getattr(torch, dtype), device="meta"))


def _strides(r):
    return [t.stride() for t in _flat(r) if hasattr(t, "stride")]


VIEWS = {
    "t": lambda lib, x: x[0].t(),
    "transpose": lambda lib, x: x.transpose(0, 2),
    "permute": lambda lib, x: x.permute(2, 0, 1),
    "mT": lambda lib, x: x.mT,
    "slice_step": lambda lib, x: x[:, ::2, 1:],
    "select": lambda lib, x: x[:, 1],
    "narrow": lambda lib, x: x.narrow(2, 1, 2),
    "unsqueeze": lambda lib, x: x.unsqueeze(1),
    "none_index": lambda lib, x: x[1:, None, ..., None],
    "expand": lambda lib, x: x[:, :1].expand(2, 5, 4),
    "diagonal": lambda lib, x: x.diagonal(0, 1, 2),
    "unfold": lambda lib, x: x.unfold(2, 2, 1),
    "movedim": lambda lib, x: x.movedim(0, -1),
    "view_of_permuted": lambda lib, x: x.permute(1, 0, 2).reshape(3, 8),
    "reshape_copies": lambda lib, x: x.transpose(1, 2).reshape(2, 12),
    "flatten_permuted": lambda lib, x: x.transpose(0, 1).flatten(1),
    "split": lambda lib, x: x.split(2, dim=2),
    "chunk_t": lambda lib, x: x.transpose(1, 2).chunk(2, 1),
    "as_strided": lambda lib, x: x.as_strided((3, 2), (1, 3)),
    "real_imag": lambda lib, x: (x.to(lib.complex64).mT.real, x.to(lib.complex64).mT.imag),
    "view_as_real": lambda lib, x: lib.view_as_real(x.to(lib.complex64).transpose(0, 1)),
    "squeeze": lambda lib, x: x[:, :1].transpose(0, 2).squeeze(1),
}


@needs_torch
@pytest.mark.parametrize("name", list(VIEWS))
def test_view_strides_match_torch(name):
    e, t = _both((2, 3, 4))
    assert _strides(VIEWS[name](ember, e)) == _strides(VIEWS[name](_torch(), t))


#: (shape, strides) of inputs: contiguous, permuted, expanded, sliced, size-1 dims
LAYOUTS = [((3, 4), (1, 3)), ((2, 3, 4), (1, 2, 6)), ((2, 3, 4), (12, 1, 3)),
           ((2, 3, 4), (0, 4, 1)), ((3, 4), (8, 2)), ((3, 2, 4), (1, 12, 3)),
           ((2, 3, 4), (12, 4, 1)), ((4, 1), (1, 4))]


@needs_torch
@pytest.mark.parametrize("layout", LAYOUTS, ids=[str(s) for _, s in LAYOUTS])
def test_elementwise_result_layout_matches_torch(layout):
    """PyTorch's TensorIterator layout: unary, binary with each operand order, with a
    broadcast row and a scalar, a comparison and a mixed-dtype sum."""
    e, t = _both(*layout)
    er, tr = _both(layout[0][-1:])
    ec, tc = _both(layout[0])
    ops = [lambda x, r, c: x.exp(), lambda x, r, c: x + c, lambda x, r, c: c * x,
           lambda x, r, c: x + r, lambda x, r, c: r - x, lambda x, r, c: x * 2,
           lambda x, r, c: x > c, lambda x, r, c: x.int() + c,
           lambda x, r, c: c.double() - x]
    for i, op in enumerate(ops):
        assert op(e, er, ec).stride() == op(t, tr, tc).stride(), (i, layout)


@needs_torch
@pytest.mark.parametrize("layout", LAYOUTS, ids=[str(s) for _, s in LAYOUTS])
def test_layout_keeping_copies_match_torch(layout):
    """clone, empty_like, zeros_like, a dtype change and contiguous() keep or drop the layout
    as PyTorch's preserve_format does."""
    e, t = _both(*layout)
    for op in (lambda x: x.clone(), lambda x: x.double(), lambda x: x.contiguous(),
               lambda x: x.clone().contiguous()):
        assert op(e).stride() == op(t).stride(), layout
    assert ember.empty_like(e).stride() == _torch().empty_like(t).stride()
    assert ember.zeros_like(e).stride() == _torch().zeros_like(t).stride()


@needs_torch
def test_to_meta_keeps_cpu_layout_as_torch():
    torch = _torch()
    for make in (lambda lib: lib.ones(3, 4).t(), lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1),
                 lambda lib: lib.ones(4, 6)[:, ::2], lambda lib: lib.ones(3, 1).expand(3, 4)):
        assert make(ember).to("meta").stride() == make(torch).to("meta").stride()


@needs_torch
def test_linalg_results_are_column_major_as_torch():
    torch = _torch()
    (ea, ta), (eb, tb) = _both((2, 4, 4)), _both((2, 4, 3))
    ev, tv = _both((2, 4))
    calls = [lambda l, a, b, v: l.linalg.inv(a), lambda l, a, b, v: l.linalg.cholesky(a),
             lambda l, a, b, v: l.linalg.qr(b), lambda l, a, b, v: l.linalg.svd(b),
             lambda l, a, b, v: l.linalg.eigh(a), lambda l, a, b, v: l.linalg.solve(a, b),
             lambda l, a, b, v: l.linalg.solve(a, v),
             lambda l, a, b, v: l.linalg.solve(a, b.mT, left=False),
             lambda l, a, b, v: l.linalg.lu_factor(a),
             lambda l, a, b, v: l.linalg.solve_triangular(a, b, upper=True),
             lambda l, a, b, v: l.cholesky_solve(b, a)]
    for i, call in enumerate(calls):
        assert _strides(call(ember, ea, eb, ev)) == _strides(call(torch, ta, tb, tv)), i


@needs_torch
def test_sort_and_softmax_layouts_match_torch():
    torch = _torch()
    e, t = _both((3, 4, 5))
    e, t = e.transpose(0, 2), t.transpose(0, 2)
    for op in (lambda x: x.sort(1), lambda x: x.argsort(1), lambda x: x.softmax(1),
               lambda x: x.log_softmax(0), lambda x: x.logcumsumexp(1), lambda x: x.cumsum(0),
               lambda x: x.sum(1, keepdim=True), lambda x: x.flip(0)):
        assert _strides(op(e)) == _strides(op(t))
    assert torch is not None


BOOL_INDICES = [True, False, (True, [0, 1]), ([0, 1], True), (True, True), (Ellipsis, False),
                 (True, 1), (slice(None), True), (None, True, Ellipsis)]


@needs_torch
@pytest.mark.parametrize("key", BOOL_INDICES, ids=[repr(k) for k in BOOL_INDICES])
def test_python_bool_index_on_meta_matches_torch(key):
    """A Python bool index adds a dim of size 1 (True) or 0 (False) without reading any
    value, so it works on meta as in PyTorch; getting and setting."""
    e, t = _both((3, 4))
    got, want = e[key], t[key]
    assert (tuple(got.shape), got.stride()) == (tuple(want.shape), want.stride())
    e[key] = 1.0
    t[key] = 1.0


def test_python_bool_index_on_cpu_values_match_torch():
    torch = pytest.importorskip("torch")
    for key in BOOL_INDICES:
        x, y = ember.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
        assert x[key].tolist() == y[key].tolist(), key
        x[key] = -1.0
        y[key] = -1.0
        assert x.tolist() == y.tolist(), key


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_with_list_lengths_on_meta_matches_torch(reduction):
    torch = _torch()
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        lp = lib.empty(6, 2, 5, device="meta")
        targets = lib.empty(2, 3, dtype=lib.long, device="meta")
        out.append(lib.nn.functional.ctc_loss(lp, targets, [6, 5], [3, 2],
                                              reduction=reduction))
        out.append(lib.nn.functional.ctc_loss(lp[:, 0], targets[0], [6], [3],
                                              reduction=reduction))
        out.append(lib.nn.functional.ctc_loss(lp.double(), targets.flatten(), [6, 5], [3, 3],
                                              reduction=reduction))
    for g, w in zip(got, want):
        assert g.is_meta and tuple(g.shape) == tuple(w.shape) and g.dtype.name == \
            str(w.dtype).split(".")[1]


def test_ctc_loss_on_meta_gives_a_meta_gradient():
    lp = ember.empty(6, 2, 5, device="meta", requires_grad=True)
    targets = ember.empty(2, 3, dtype=ember.long, device="meta")
    ember.nn.functional.ctc_loss(lp, targets, ember.tensor([6, 5]), ember.tensor([3, 2])
                                 ).backward()
    assert lp.grad.is_meta and lp.grad.shape == lp.shape


@needs_torch
@pytest.mark.parametrize("mode,include_last", [(0, False), (1, False), (2, False), (2, True)])
def test_embedding_bag_on_meta_matches_torch_without_reading_offsets(mode, include_last):
    torch = _torch()

    def call(lib):
        return lib.embedding_bag(lib.empty(6, 3, device="meta"),
                                 lib.empty(7, dtype=lib.int64, device="meta"),
                                 lib.empty(4, dtype=lib.int64, device="meta"), False, mode,
                                 False, None, include_last)

    got = [(tuple(t.shape), t.stride(), t.dtype.name) for t in call(ember)]
    assert got == [(tuple(t.shape), t.stride(), str(t.dtype).split(".")[1])
                   for t in call(torch)]


def test_embedding_bag_on_meta_gives_meta_gradients():
    w = ember.empty(6, 3, device="meta", requires_grad=True)
    psw = ember.empty(7, device="meta", requires_grad=True)
    out = ember.nn.functional.embedding_bag(ember.empty(7, dtype=ember.int64, device="meta"), w,
                                            ember.empty(4, dtype=ember.int64, device="meta"),
                                            mode="sum", per_sample_weights=psw)
    out.sum().backward()
    assert tuple(out.shape) == (4, 3)
    assert w.grad.is_meta and w.grad.shape == w.shape and psw.grad.shape == psw.shape


@needs_torch
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 3)])
def test_nonzero_static_on_meta_is_column_major_as_torch(shape):
    torch = _torch()
    for size in (0, 1, 4):
        got = ember.nonzero_static(ember.empty(shape, device="meta"), size=size)
        want = torch.nonzero_static(torch.empty(shape, device="meta"), size=size)
        assert (tuple(got.shape), got.stride()) == (tuple(want.shape), want.stride()), size


@needs_torch
def test_copies_of_empty_meta_tensors_keep_their_strides_as_torch():
    torch = _torch()
    for shape, strides in (((0, 3), (0, 0)), ((0, 3), (5, 7)), ((2, 0, 3), (1, 0, 2))):
        e = ember.empty_strided(shape, strides, device="meta")
        t = torch.empty_strided(shape, strides, device="meta")
        for lib, x in ((ember, e), (torch, t)):
            copies = (x.clone(), x.to(lib.float64), x.roll(1, 0))
            assert [c.stride() for c in copies] == [strides] * 3, (lib.__name__, shape)
            # empty_like gives a fresh, contiguous layout
            assert lib.empty_like(x).stride() == torch.empty(shape).stride()


def test_inplace_on_expanded_meta_tensor_raises_as_torch():
    x = ember.empty(3, 1, device="meta").expand(3, 4)
    assert x.stride() == (1, 0)
    with pytest.raises(RuntimeError, match="more than one element"):
        x.add_(1)


#: OpInfo samples whose meta strides differ from PyTorch's, with the reason
KNOWN_STRIDE_DIFFERENCES = {
    ("conj_physical", "(0, 3)"): "PyTorch's conj_physical of a real tensor is the tensor itself "
                                 "(an alias, whatever its strides); ember's is a copy",
}


def _meta_like(x, lib):
    """A meta tensor (ember's or PyTorch's) of ``x``'s shape, dtype and strides."""
    if isinstance(x, ember.Tensor):
        if lib == "ember":
            return ember.empty_strided(tuple(x.shape), x.stride(), dtype=x.dtype,
                                       device="meta")
        torch = _torch()
        return torch.empty_strided(tuple(x.shape), x.stride(),
                                   dtype=getattr(torch, x.dtype.name), device="meta")
    if isinstance(x, _dt.dtype):
        return x if lib == "ember" else getattr(_torch(), x.name)
    if isinstance(x, (list, tuple)):
        return type(x)(_meta_like(y, lib) for y in x)
    if isinstance(x, dict):
        return {k: _meta_like(v, lib) for k, v in x.items()}
    return x


@needs_torch
@pytest.mark.parametrize("info", op_db, ids=ids)
def test_opinfo_result_strides_match_torch_meta(info):
    """Every OpInfo sample, given as meta tensors of the sample's strides (factories under
    the meta device), gives results of PyTorch's meta strides -- or is a listed exception."""
    torch = _torch()
    top = info.get_torch_op(torch)
    if top is None:
        pytest.skip("no PyTorch counterpart")
    compared = 0
    for s in _samples(info, _dtype_for(info)):
        try:
            with torch.device("meta"):
                want = _flat(top(*_meta_like(s.all_args(), "torch"),
                                 **_meta_like(s.kwargs, "torch")))
        except Exception:
            continue
        if (info.id, s.name) in KNOWN_STRIDE_DIFFERENCES or _known_limit(info, s):
            continue
        with ember.device("meta"):
            got = _flat(info.get_op()(*_meta_like(s.all_args(), "ember"),
                                      **_meta_like(s.kwargs, "ember")))
        pairs = [(g, w) for g, w in zip(got, want) if isinstance(w, torch.Tensor)]
        assert [g.stride() for g, _ in pairs] == [w.stride() for _, w in pairs], \
            f"{info.id} {s}"
        compared += 1
    if compared == 0:
        pytest.skip("no sample runs on PyTorch's meta device")


def _fft_input(lib, perm, is_complex):
    """A meta (3, 4, 5, 2) tensor laid out with its dims in memory order ``perm``."""
    shape = (3, 4, 5, 2)
    base = lib.empty(*[shape[p] for p in perm], device="meta",
                     dtype=lib.complex64 if is_complex else lib.float32)
    return base.permute(*[perm.index(i) for i in range(4)])


@needs_torch
@pytest.mark.parametrize("perm", [(0, 1, 2, 3), (3, 1, 0, 2)])
def test_fft_result_strides_match_torch_meta(perm):
    """NOTE [ Meta FFT layouts ]: one-dim transforms with crops and pads, and n-dim ones over
    dims in every kind of order (one stage, more than three dims, dims starting 0, 1)."""
    torch = _torch()
    checked = 0
    for is_complex in (False, True):
        for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
            if is_complex and name in ("rfft", "ihfft"):
                continue  # real input only
            for dim, n in ((0, None), (1, 3), (2, 7), (3, None)):
                call = (lambda lib: getattr(lib.fft, name)(
                    _fft_input(lib, perm, is_complex), n=n, dim=dim))
                assert call(ember).stride() == call(torch).stride(), (name, dim, n)
                checked += 1
        for name in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "rfft2", "hfft2"):
            if is_complex and name in ("rfftn", "ihfftn", "rfft2"):
                continue
            for dims in ((2, 0), (0, 1), (1, 3, 0), (0, 1, 2), (3, 1, 0, 2)):
                if name.endswith("2") and len(dims) != 2:
                    continue
                call = (lambda lib: getattr(lib.fft, name)(
                    _fft_input(lib, perm, is_complex), dim=dims))
                assert call(ember).stride() == call(torch).stride(), (name, dims)
                checked += 1
    assert checked == 96


@needs_torch
@pytest.mark.parametrize("eq,shape", [("ii->i", (3, 3)), ("ij->ji", (3, 4)),
                                      ("iji->ij", (3, 4, 3)), ("bii->ib", (2, 3, 3)),
                                      ("ij->j", (3, 4)), ("ijk->ki", (2, 3, 4))])
def test_one_operand_einsum_strides_match_torch_meta(eq, shape):
    """An einsum of one operand that sums nothing is a view (diagonals, permutations) in
    PyTorch; one that sums is contiguous."""
    torch = _torch()
    for transposed in (False, True):
        def call(lib):
            x = lib.empty(*shape, device="meta")
            return lib.einsum(eq, x.mT.contiguous().mT if transposed else x).stride()

        assert call(ember) == call(torch), transposed


def test_inplace_ops_do_nothing_and_bump_the_version():
    x = ember.empty(3, 4, device="meta")
    v = x._version
    assert x.add_(1) is x and x.mul_(2) is x and x.fill_(3) is x and x.zero_() is x
    x[0] = 5
    x[:, 1] = ember.ones(3).to("meta")
    x.copy_(ember.ones(3, 4))
    x.uniform_()
    x.normal_()
    assert x._version > v and x.is_meta and tuple(x.shape) == (3, 4)


def test_random_on_meta_draws_nothing():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    ember.randn(1000, generator=g2, device="meta")
    ember.empty(50, 50, device="meta").uniform_(generator=g2)
    ember.empty(50, 50, device="meta").normal_(generator=g2)
    assert ember.equal(ember.rand(5, generator=g1), ember.rand(5, generator=g2))


def test_huge_linear_builds_and_runs_without_memory():
    tracemalloc.start()
    try:
        with ember.device("meta"):
            layer = nn.Linear(100_000, 100_000)
            x = ember.randn(8, 100_000, requires_grad=True)
        y = layer(x)
        y.sum().backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f"peak {peak} bytes"
    assert layer.weight.is_meta and tuple(layer.weight.grad.shape) == (100_000, 100_000)
    assert tuple(y.shape) == (8, 100_000) and x.grad.is_meta


def test_ops_on_huge_meta_tensors_use_no_memory():
    x = ember.empty(100_000, 100_000, device="meta")
    mask = ember.empty(100_000, 100_000, dtype=ember.bool, device="meta")
    tracemalloc.start()
    try:
        x.add_(1).mul_(2).fill_(3).zero_().uniform_().normal_().clamp_(0, 1).exp_()
        x[0] = 5
        x.masked_fill_(mask, 0)
        results = [x.t().contiguous(), x.reshape(-1), x.half(), x.sum(0), x.max(1)[1],
                   x.sort(1)[1], ember.cat([x, x]), x @ x, ember.einsum("ij,jk->ik", x, x),
                   x.softmax(1), ember.where(mask, x, 0.0)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f"peak {peak} bytes"
    assert [tuple(r.shape) for r in results[-5:]] == [(200_000, 100_000), (100_000, 100_000),
                                                      (100_000, 100_000), (100_000, 100_000),
                                                      (100_000, 100_000)]
    assert results[5].dtype == ember.int64 and results[2].dtype == ember.float16


@pytest.mark.parametrize("op", ["nonzero", "unique", "masked_select", "bool_index",
                                "bincount"])
def test_data_dependent_ops_raise_as_torch(op):
    calls = {
        "nonzero": lambda m, x, b: m.nonzero(x), "unique": lambda m, x, b: m.unique(x),
        "masked_select": lambda m, x, b: m.masked_select(x, b),
        "bool_index": lambda m, x, b: x[b],
        "bincount": lambda m, x, b: m.bincount(x.long()),
    }

    def run(m):
        return calls[op](m, m.empty(4, device="meta"), m.empty(4, dtype=m.bool, device="meta"))

    with pytest.raises(NotImplementedError, match="device type 'meta'|Meta"):
        run(ember)
    if HAS_TORCH:
        with pytest.raises(NotImplementedError):
            run(_torch())


def test_op_without_meta_kernel_raises_naming_op_and_device():
    from ember._dispatch import apply
    from ember._ops._registry import Op, ops

    op = ops.get("_meta_test_reads_values") or Op(
        "_meta_test_reads_values", lambda xp, a: a * float(a.max()))
    with pytest.raises(NotImplementedError,
                       match="'_meta_test_reads_values'.*device type 'meta'"):
        apply(op, (ember.empty(3, device="meta"),), {})
    assert ember.equal(apply(op, (ember.ones(2),), {}), ember.ones(2))


def test_library_impl_gives_an_op_a_meta_kernel():
    from ember._dispatch import apply
    from ember._ops._registry import Op, ops

    op = ops.get("_meta_test_own_kernel") or Op(
        "_meta_test_own_kernel", lambda xp, a: a[: int(a[0])])
    calls = []

    @ember.library.impl("_meta_test_own_kernel", "meta")
    def meta_kernel(a):
        calls.append(a.shape)
        return np.empty((2,) + a.shape[1:], a.dtype)  # plain NumPy: made a placeholder

    r = apply(op, (ember.empty(5, 3, device="meta"),), {})
    assert calls == [(5, 3)] and r.is_meta and tuple(r.shape) == (2, 3)


def test_custom_op_fake_rule_runs_on_meta():
    name = "meta_test::scale_rows"
    if not hasattr(ember.ops, "meta_test") or not hasattr(ember.ops.meta_test, "scale_rows"):
        @ember.library.custom_op(name, mutates_args=())
        def scale_rows(x: ember.Tensor) -> ember.Tensor:
            return x * x.sum(1, keepdim=True)

        @scale_rows.register_fake
        def _(x):
            return ember.empty_like(x)

    r = ember.ops.meta_test.scale_rows(ember.empty(4, 3, device="meta"))
    assert r.is_meta and tuple(r.shape) == (4, 3)


# ------------------------------------------------------------------------------------------------
# default device


def test_device_context_makes_factories_and_modules_meta():
    with ember.device("meta"):
        assert ember.get_default_device() == ember.device("meta")
        assert ember.zeros(2).is_meta and ember.tensor([1.0, 2.0]).is_meta
        assert ember.arange(3).is_meta and ember.randn(2).is_meta
        assert ember.as_tensor([1.0]).is_meta and ember.empty_strided((2, 3), (3, 1)).is_meta
        assert ember.zeros(2, device="cpu").device.type == "cpu"
        layer = nn.Linear(3, 4)
        with ember.device("cpu"):
            assert not ember.ones(1).is_meta
    assert layer.weight.is_meta and layer.bias.is_meta
    assert ember.get_default_device() == ember.device("cpu") and not ember.zeros(1).is_meta
    cpu = ember.ones(2)
    with ember.device("meta"):
        assert not ember.zeros_like(cpu).is_meta  # *_like keep their input's device


def test_set_default_device_is_per_thread():
    seen = []
    ember.set_default_device("meta")
    try:
        assert ember.empty(2).is_meta and ember.get_default_device().type == "meta"
        t = threading.Thread(target=lambda: seen.append(ember.empty(2).device.type))
        t.start()
        t.join()
    finally:
        ember.set_default_device(None)
    assert seen == ["cpu"] and not ember.empty(2).is_meta


# ------------------------------------------------------------------------------------------------
# models


def _small_transformer():
    return nn.Sequential(nn.Embedding(50, 16),
                         nn.TransformerEncoder(nn.TransformerEncoderLayer(
                             16, 4, 32, dropout=0.0, batch_first=True), 2),
                         nn.LayerNorm(16), nn.Linear(16, 50))


def test_transformer_built_on_meta_runs_forward_and_backward_with_cpu_shapes():
    ember.manual_seed(0)
    cpu = _small_transformer()
    with ember.device("meta"):
        meta = _small_transformer()
    tokens = ember.randint(0, 50, (3, 7))
    target = ember.randint(0, 50, (3 * 7,))
    grads = {}
    for name, model, dev in (("cpu", cpu, "cpu"), ("meta", meta, "meta")):
        logits = model(tokens.to(dev))
        loss = nn.functional.cross_entropy(logits.reshape(-1, 50), target.to(dev))
        loss.backward()
        grads[name] = [(tuple(p.grad.shape), p.grad.dtype, p.grad.device.type)
                       for p in model.parameters()]
        assert tuple(logits.shape) == (3, 7, 50)
    assert [g[:2] for g in grads["meta"]] == [g[:2] for g in grads["cpu"]]
    assert {g[2] for g in grads["meta"]} == {"meta"}
    assert [n for n, _ in meta.named_parameters()] == [n for n, _ in cpu.named_parameters()]


def test_convnet_on_meta_gives_cpu_shapes():
    def net():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(8, 4, 3, stride=2), nn.AvgPool2d(1),
                             nn.Flatten(), nn.Dropout(0.5), nn.Linear(4 * 3 * 3, 10),
                             nn.LogSoftmax(dim=1))

    cpu = net()
    with ember.device("meta"):
        meta = net()
    x = ember.randn(2, 3, 16, 16)
    a, b = cpu(x), meta(x.to("meta"))
    assert tuple(a.shape) == tuple(b.shape) == (2, 10) and b.is_meta
    b.sum().backward()
    assert meta[0].weight.grad.is_meta
    assert tuple(meta[1].running_mean.shape) == (8,)


def test_to_empty_then_load_state_dict_matches_the_original():
    ember.manual_seed(1)
    original = _small_transformer().eval()
    with ember.device("meta"):
        model = _small_transformer().eval()
    params = list(model.parameters())
    assert model.to_empty(device="cpu") is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]  # same Parameters
    for p in model.parameters():
        assert isinstance(p, nn.Parameter) and p.requires_grad and p.device.type == "cpu"
    model.load_state_dict(original.state_dict())
    tokens = ember.randint(0, 50, (2, 5))
    assert ember.equal(model(tokens), original(tokens))


def test_to_empty_then_reset_parameters_and_buffers():
    with ember.device("meta"):
        bn = nn.BatchNorm1d(4)
        layer = nn.Linear(4, 3)
    bn.to_empty(device="cpu")
    layer.to_empty(device="cpu").reset_parameters()
    bn.reset_parameters()
    assert bn.running_mean.device.type == "cpu" and ember.equal(bn.running_var, ember.ones(4))
    assert layer.weight.abs().max().item() <= 0.5 + 1e-6
    assert not layer.weight.is_meta and layer.weight.requires_grad


def test_to_empty_without_recurse_moves_only_the_module_itself():
    with ember.device("meta"):
        outer = nn.Sequential(nn.Linear(2, 2))
        outer.register_parameter("extra", nn.Parameter(ember.empty(3)))
    outer.to_empty(device="cpu", recurse=False)
    assert outer.extra.device.type == "cpu" and outer[0].weight.is_meta


def _r(*s):
    return ember.randn(*s)


def _i(hi, *s):
    return ember.randint(0, hi, s)


#: name -> (module builder, inputs builder); every layer family and loss, built on meta
MODULES = {
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), lambda: (_r(2, 3, 9),)),
    "Conv3d": (lambda: nn.Conv3d(2, 4, 3), lambda: (_r(1, 2, 5, 5, 5),)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2), lambda: (_r(2, 3, 5, 5),)),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), lambda: (_r(2, 3, 8),)),
    "MaxPool3d": (lambda: nn.MaxPool3d(2), lambda: (_r(1, 2, 4, 4, 4),)),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, 2, 1), lambda: (_r(2, 3, 7, 7),)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), lambda: (_r(2, 3, 7, 7),)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(3), lambda: (_r(2, 3, 7, 7),)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: (_r(2, 4, 5),)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), lambda: (_r(2, 3, 4, 4),)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda: (_r(5, 4),)),
    "LSTM": (lambda: nn.LSTM(4, 6, 2, batch_first=True), lambda: (_r(3, 5, 4),)),
    "GRU": (lambda: nn.GRU(4, 6, bidirectional=True), lambda: (_r(5, 3, 4),)),
    "RNN": (lambda: nn.RNN(4, 6), lambda: (_r(5, 3, 4),)),
    "LSTMCell": (lambda: nn.LSTMCell(4, 6), lambda: (_r(3, 4),)),
    "Embedding": (lambda: nn.Embedding(10, 3, padding_idx=0), lambda: (_i(10, 2, 5),)),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 3, mode="mean"), lambda: (_i(10, 2, 5),)),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                           lambda: (_r(2, 5, 8), _r(2, 6, 8), _r(2, 6, 8))),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16, batch_first=True),
                    lambda: (_r(2, 5, 8), _r(2, 4, 8))),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: (_r(1, 8, 3, 3),)),
    "Upsample": (lambda: nn.Upsample(size=(5, 7), mode="bilinear"), lambda: (_r(1, 2, 3, 3),)),
    "Fold": (lambda: nn.Fold((4, 4), 2), lambda: (_r(1, 8, 9),)),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d(1), lambda: (_r(1, 2, 4, 4),)),
    "Dropout2d": (lambda: nn.Dropout2d(0.3), lambda: (_r(2, 3, 4, 5),)),
    "PReLU": (lambda: nn.PReLU(3), lambda: (_r(2, 3, 4),)),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 5), lambda: (_r(2, 3), _r(2, 4))),
    "BCELoss": (lambda: nn.BCELoss(), lambda: (ember.rand(3, 4), ember.rand(3, 4))),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
                         lambda: (_r(3, 5, 2), _i(5, 3, 2))),
    "NLLLoss": (lambda: nn.NLLLoss(weight=ember.rand(5), ignore_index=1),
                lambda: (_r(3, 5), _i(5, 3))),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), lambda: (_r(3, 5), _r(3, 5))),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(), lambda: (_r(4, 3), _i(3, 4))),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(), lambda: (_r(4, 3), _r(4, 3),
                                                                   _r(4, 3))),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_module_on_meta_matches_cpu(name):
    """Each layer built under ``with ember.device("meta")`` gives the CPU layer's output and
    gradient shapes and dtypes, all on meta."""
    build, make_inputs = MODULES[name]
    ember.manual_seed(0)
    inputs = make_inputs()
    cpu = build()
    with ember.device("meta"):
        meta = build()
    meta.train(cpu.training)

    def run(model, device):
        xs = [x.detach().clone().to(device) for x in inputs]
        for x in xs:
            if x.is_floating_point():
                x.requires_grad_(True)
        outs = [o for o in _flat(model(*xs)) if isinstance(o, ember.Tensor)]
        sum(o.sum() for o in outs if o.requires_grad).backward()
        return outs + [x.grad for x in xs if x.grad is not None] + \
            [p.grad for p in model.parameters()]

    want, got = run(cpu, "cpu"), run(meta, "meta")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            assert g.is_meta and tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype
