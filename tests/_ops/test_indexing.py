"""Indexing: a table of ``t[idx]`` / ``t[idx] = v`` expressions compared with PyTorch, views,
errors, in-place forms and gradients of the indexing family (ember/_ops/indexing.py,
ember/_ops/scatter.py). The generic per-op checks live in the OpInfo table."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _x(lib, shape=(3, 4, 5), dtype="float32"):
    n = int(np.prod(shape))
    return lib.arange(n, dtype=getattr(lib, dtype)).reshape(shape)


# Each entry builds an index with ``T`` (ember or torch): the same index for both libraries.
INDEXES = {
    "int": lambda T: 1,
    "negative int": lambda T: -2,
    "slice": lambda T: slice(1, 3),
    "slice with step": lambda T: slice(None, None, 2),
    "slice past end": lambda T: slice(1, 100),
    "empty slice": lambda T: slice(2, 1),
    "ints": lambda T: (0, 1, 2),
    "int slice int": lambda T: (0, slice(None), 2),
    "ellipsis": lambda T: Ellipsis,
    "ellipsis int": lambda T: (Ellipsis, 1),
    "int ellipsis": lambda T: (1, Ellipsis),
    "None": lambda T: None,
    "None middle": lambda T: (slice(None), None, 1),
    "Nones around ellipsis": lambda T: (None, Ellipsis, None),
    "0-dim int tensor": lambda T: T.tensor(2),
    "0-dim int tensor in tuple": lambda T: (0, T.tensor(1)),
    "list": lambda T: [0, 2],
    "list with repeats": lambda T: [2, 2, 0, -1],
    "empty list": lambda T: [],
    "nested list": lambda T: [[0, 1], [2, 0]],
    "long tensor": lambda T: T.tensor([2, 0]),
    "int32 tensor": lambda T: T.tensor([1, 2], dtype=T.int32),
    "2-d long tensor": lambda T: T.tensor([[0, 1], [1, 2]]),
    "numpy int array": lambda T: np.array([0, 2]),
    "numpy bool array": lambda T: np.array([True, False, True]),
    "bool list": lambda T: [True, False, True],
    "bool tensor": lambda T: T.tensor([False, True, True]),
    "2-d mask": lambda T: (T.arange(12).reshape(3, 4) % 3) == 0,
    "3-d mask": lambda T: (T.arange(60).reshape(3, 4, 5) % 7) == 0,
    "all-false mask": lambda T: T.zeros(3, 4, dtype=T.bool),
    "mask then int": lambda T: (T.tensor([True, False, True]), 2),
    "True": lambda T: True,
    "False": lambda T: False,
    "slice True": lambda T: (slice(None), True),
    "0-dim bool tensor": lambda T: T.tensor(True),
    "two tensors": lambda T: (T.tensor([0, 2]), T.tensor([1, 3])),
    "broadcast tensors": lambda T: (T.tensor([[0], [2]]), T.tensor([1, 3, 0])),
    "tensor slice tensor": lambda T: (T.tensor([0, 2]), slice(None), T.tensor([1, 3])),
    "int slice tensor": lambda T: (0, slice(None), T.tensor([1, 3])),
    "tensor int": lambda T: (T.tensor([0, 2]), 1),
    "tensor slice int": lambda T: (T.tensor([0, 2]), slice(None), 1),
    "slice tensor": lambda T: (slice(None), T.tensor([3, 0])),
    "slice tensor tensor": lambda T: (slice(1, None), T.tensor([3, 0]), T.tensor([1, 4])),
    "tensor None tensor": lambda T: (T.tensor([0, 1]), None, T.tensor([0, 1])),
    "None tensor": lambda T: (None, T.tensor([0, 1])),
    "ellipsis tensor": lambda T: (Ellipsis, T.tensor([4, 0])),
    "tensor ellipsis tensor": lambda T: (T.tensor([1]), Ellipsis, T.tensor([2, 3])),
    "slice mask": lambda T: (slice(None), T.tensor([True, False, True, False])),
    "mask slice mask": lambda T: (T.tensor([True, False, True]), slice(None),
                                  T.tensor([True, False, False, True, False])),
    "list of index lists": lambda T: [[0, 1], [1, 2]],
    "uint8 mask": lambda T: T.tensor([1, 0, 1], dtype=T.uint8),
    "two ellipses": lambda T: (Ellipsis, slice(1, 3), Ellipsis),
    "int and two ellipses": lambda T: (-1, Ellipsis, Ellipsis),
    "tensor between ellipses": lambda T: (Ellipsis, T.tensor([[0], [1]]), Ellipsis),
    "ellipses around everything": lambda T: (Ellipsis, 1, slice(None), 2, Ellipsis, None),
}


def _run(lib, name, shape=(3, 4, 5)):
    x = _x(lib, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x, x[INDEXES[name](lib)]


def _shares(a, b):
    return a.numel() > 0 and np.shares_memory(a.detach().numpy(), b.detach().numpy())


@needs_torch
@pytest.mark.parametrize("name", list(INDEXES))
def test_getitem_matches_torch(name):
    import torch

    x, got = _run(ember, name)
    tx, want = _run(torch, name)
    assert_close(got, want, rtol=0, atol=0)
    # views exactly where PyTorch returns views
    t_view = want._base is not None
    assert (got._base is not None) == t_view, f"{name}: view {got._base is not None}"
    if got.numel():
        assert _shares(got, x) == t_view


@pytest.mark.parametrize("name", ["int", "slice", "ellipsis int", "None middle",
                                  "0-dim int tensor in tuple", "int slice int"])
def test_getitem_basic_is_view(name):
    x, v = _run(ember, name)
    assert v._base is (x if x._base is None else x._base)  # views point at the root
    before = v._version
    x.add_(1)
    assert v._version == before + 1
    assert_close(v, _run(ember, name)[1] + 1)


def test_getitem_noncontiguous_input():
    x = _x(ember, (4, 6)).t()  # (6, 4), not contiguous
    assert not x.is_contiguous()
    assert x[1:3, [0, 3]].tolist() == [[1.0, 19.0], [2.0, 20.0]]
    assert x[x > 20].tolist() == [21.0, 22.0, 23.0]
    assert x[2].tolist() == [2.0, 8.0, 14.0, 20.0]


def test_getitem_zero_dim_tensor():
    s = ember.tensor(3.0)
    assert s[...].shape == () and s[...]._base is s
    assert s[None].shape == (1,)
    assert s[True].shape == (1,) and s[False].shape == (0,)
    with pytest.raises(IndexError, match="0-dim"):
        s[0]


def test_getitem_result_is_array_not_scalar():
    v = ember.arange(5.0)[2]
    assert isinstance(v, ember.Tensor) and v.shape == () and v.item() == 2.0


# ------------------------------------------------------------------------------------------------
# setitem

SET_CASES = [
    ("int scalar", lambda T: 1, lambda T: 7.5),
    ("int row", lambda T: 1, lambda T: T.arange(20.0).reshape(4, 5)),
    ("int broadcast row", lambda T: 1, lambda T: T.arange(5.0)),
    ("slice leading ones", lambda T: slice(0, 2), lambda T: T.ones(1, 1, 4, 5)),
    ("ellipsis column", lambda T: (Ellipsis, 2), lambda T: T.tensor(-1.0)),
    ("None", lambda T: (None, 0), lambda T: 3.0),
    ("list", lambda T: [0, 2], lambda T: T.zeros(5)),
    ("tensors", lambda T: (T.tensor([0, 2]), T.tensor([1, 3])), lambda T: T.tensor([[9.0], [8.0]])),
    ("tensors broadcast value", lambda T: (T.tensor([0, 2]), slice(None), T.tensor([1, 3])),
     lambda T: T.tensor([[1.0], [2.0]])),
    ("int slice tensor", lambda T: (0, slice(None), T.tensor([1, 3])), lambda T: T.ones(4, 2)),
    ("mask scalar", lambda T: (T.arange(60).reshape(3, 4, 5) % 7) == 0, lambda T: -5.0),
    ("mask values", lambda T: T.tensor([True, False, True]),
     lambda T: T.arange(20.0).reshape(4, 5)),
    ("mask broadcast", lambda T: (T.arange(12).reshape(3, 4) % 2) == 0, lambda T: T.arange(5.0)),
    ("int64 value cast", lambda T: 2, lambda T: T.arange(5)),
    ("float64 value cast", lambda T: (0, 0), lambda T: T.tensor(2.25, dtype=T.float64)),
    ("mask 0-dim value cast", lambda T: _x(T) > 30, lambda T: T.tensor(2, dtype=T.int8)),
    ("bool value", lambda T: (1, 1), lambda T: T.tensor([True, False, True, True, False])),
    ("python int", lambda T: slice(None), lambda T: 4),
    ("python bool", lambda T: (2, 3), lambda T: True),
    ("zero-size selection", lambda T: slice(2, 2), lambda T: 1.0),
    ("empty index tensor", lambda T: T.tensor([], dtype=T.int64), lambda T: T.ones(4, 5)),
    ("True", lambda T: True, lambda T: 0.0),
    ("duplicates same value", lambda T: [1, 1], lambda T: 2.0),
]


# advanced-index writes need the value in self's dtype (PyTorch casts only for basic indexing)
_CAST_VALUES = {"list", "tensors", "tensors broadcast value", "int slice tensor", "mask values",
                "mask broadcast", "empty index tensor"}


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("case", SET_CASES, ids=[c[0] for c in SET_CASES])
def test_setitem_matches_torch(case, dtype):
    import torch

    _, idx, val = case

    def run(T):
        x = _x(T, dtype=dtype)
        v = val(T)
        if isinstance(v, (T.Tensor,)) and case[0] in _CAST_VALUES:
            v = v.to(getattr(T, dtype))
        x[idx(T)] = v
        return x

    assert_close(run(ember), run(torch), rtol=0, atol=0)


def test_setitem_writes_through_views_and_bumps_version():
    x = ember.zeros(3, 4)
    row = x[1]
    v0 = x._version
    x[1, 2] = 5.0
    assert row.tolist() == [0.0, 0.0, 5.0, 0.0]
    assert x._version == v0 + 1 and row._version == x._version
    row[[0, 3]] = ember.tensor([1.0, 2.0])
    assert x[1].tolist() == [1.0, 0.0, 5.0, 2.0]


def test_setitem_noncontiguous_target():
    base = ember.zeros(4, 6)
    x = base.t()
    x[1:3, [0, 3]] = 7.0
    x[x == 0] = 1.0
    want = np.ones((6, 4))
    want[1:3][:, [0, 3]] = 7.0
    assert_close(x, want.astype(np.float32))
    assert base.t().tolist() == x.tolist()


def test_setitem_value_overlapping_self():
    x = ember.arange(6.0)
    x[1:] = x[:-1].clone()
    assert x.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    x[0:3] = x[3:]  # disjoint memory of the same storage is fine
    assert x.tolist() == [2.0, 3.0, 4.0, 2.0, 3.0, 4.0]
    x[:] = x  # the very same memory is fine too


@pytest.mark.parametrize("write", [
    lambda y: y.__setitem__(slice(1, None), y[:-1]),
    lambda y: y.__setitem__([1, 2], y[3:5]),
    lambda y: y.__setitem__(y > 2, y[:3]),
    lambda y: y.index_put_((ember.tensor([0, 1]),), y[4:]),
    lambda y: y.index_copy_(0, ember.tensor([0, 1]), y[4:]),
    lambda y: y.index_add_(0, ember.tensor([0, 1]), y[4:]),
    lambda y: y.scatter_(0, ember.tensor([0, 1]), y[4:]),
    lambda y: y.put_(ember.tensor([0, 1]), y[4:]),
])
def test_inplace_write_from_overlapping_memory_is_an_error(write):
    y = ember.arange(6.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        write(y)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_setitem_expanded_tensor_is_an_error():
    x = ember.zeros(1, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        x[0] = 1.0


@pytest.mark.parametrize("idx,value,error,match", [
    (0, "a", TypeError, "can't assign a str"),
    (0, [1.0, 2.0], TypeError, "can't assign a list"),
    (5, 1.0, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (slice(None, None, -1), 1.0, ValueError, "step must be greater than zero"),
    (ember.tensor([0, 1]), ember.ones(3), RuntimeError, "shape mismatch"),
    (ember.tensor([True, False]), 1.0, IndexError, "shape of the mask"),
    (ember.tensor([0.0]), 1.0, IndexError, "long, int, byte or bool"),
    ([0], ember.ones(4, dtype=ember.float64), RuntimeError, "dtypes match"),
    ([0], ember.tensor(1.0, dtype=ember.float64), RuntimeError, "dtypes match"),
    (0, 1 + 2j, RuntimeError, "cannot be converted"),
])
def test_setitem_errors_leave_tensor_untouched(idx, value, error, match):
    x = ember.zeros(3, 4)
    with pytest.raises(error, match=match):
        x[idx] = value
    assert x.tolist() == [[0.0] * 4] * 3 and x._version == 0


# ------------------------------------------------------------------------------------------------
# errors of getitem


@needs_torch
@pytest.mark.parametrize("idx,error", [
    (3, IndexError), (-4, IndexError), ((0, 4), IndexError), ((0, 0, 0, 0), IndexError),
    (slice(None, None, -2), ValueError), (slice(None, None, 0), ValueError),
    ([0, 3], IndexError), ([[0, 1], [5, 0]], IndexError), (1.5, IndexError),
    ((Ellipsis, 0, Ellipsis, 1), IndexError),
])
def test_getitem_errors_match_torch(idx, error):
    import torch

    with pytest.raises(error):
        _x(ember)[idx]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error):
            _x(torch)[idx]


def test_getitem_error_messages():
    x = _x(ember, (3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x[0, 4]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[ember.tensor([0.5])]


# ------------------------------------------------------------------------------------------------
# in-place forms write into self


def test_inplace_forms_modify_self_and_bump_version():
    x = ember.zeros(3, 4)
    i = ember.tensor([[0, 1, 2, 0]])
    cases = [
        lambda: x.scatter_(0, i, 1.0),
        lambda: x.scatter_add_(0, i, ember.ones(1, 4)),
        lambda: x.scatter_reduce_(0, i, ember.full((1, 4), 5.0), "amax"),
        lambda: x.index_add_(1, ember.tensor([0, 0]), ember.ones(3, 2), alpha=3),
        lambda: x.index_copy_(0, ember.tensor([2]), ember.full((1, 4), 5.0)),
        lambda: x.index_fill_(1, ember.tensor([-1]), 7.0),
        lambda: x.index_put_((ember.tensor([0]), ember.tensor([1])), ember.tensor(9.0)),
        lambda: x.masked_fill_(x > 8, -1.0),
        lambda: x.masked_scatter_(x < 0, ember.arange(12.0)),
        lambda: x.put_(ember.tensor([11]), ember.tensor([4.0]), accumulate=True),
        lambda: x.index_reduce_(0, ember.tensor([1]), ember.full((1, 4), 2.0), "prod"),
    ]
    for k, f in enumerate(cases):
        before = x.clone()
        v = x._version
        assert f() is x
        assert x._version == v + 1, k
        assert x.tolist() != before.tolist(), k


def test_inplace_on_noncontiguous_self():
    base = ember.zeros(4, 3)
    x = base.t()  # (3, 4) view
    x.scatter_(1, ember.tensor([[3], [2], [1]]), 1.0)
    x.index_fill_(0, ember.tensor([0]), 2.0)
    x.put_(ember.tensor([5]), ember.tensor([8.0]))
    want = np.zeros((3, 4), dtype=np.float32)
    want[[0, 1, 2], [3, 2, 1]] = 1.0
    want[0] = 2.0
    want.reshape(-1)[5] = 8.0
    assert_close(x, want)
    assert_close(base, want.T)


def test_masked_fill_inplace_mask_must_broadcast_to_self():
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(4).masked_fill_(ember.tensor([[True], [False]]), 1.0)


def test_nonzero_as_tuple_and_out():
    x = ember.tensor([[0, 1], [2, 0]])
    rows, cols = ember.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    out = ember.empty(0, dtype=ember.int64)
    assert ember.nonzero(x, out=out) is out and out.tolist() == [[0, 1], [1, 0]]
    assert ember.nonzero(ember.tensor(2.0)).shape == (1, 0)
    assert [t.tolist() for t in ember.nonzero(ember.tensor(0.0), as_tuple=True)] == [[]]


@needs_torch
def test_scatter_reduce_integer_mean_floors_like_torch():
    import torch

    for include_self in (True, False):
        got = ember.tensor([1, 2, -3]).scatter_reduce(
            0, ember.tensor([0, 0, 2]), ember.tensor([4, 6, -2]), "mean",
            include_self=include_self)
        want = torch.tensor([1, 2, -3]).scatter_reduce(
            0, torch.tensor([0, 0, 2]), torch.tensor([4, 6, -2]), "mean",
            include_self=include_self)
        assert got.tolist() == want.tolist()


# ------------------------------------------------------------------------------------------------
# gradients


def _leaf(*shape):
    return ember.arange(float(np.prod(shape)), dtype=ember.float64).reshape(shape) \
        .requires_grad_(True)


needs_backward = pytest.mark.skipif(not hasattr(ember.Tensor, "backward"),
                                    reason="autograd engine is not available")


@needs_backward
def test_getitem_grad_basic_and_advanced():
    x = _leaf(3, 4)
    (x[1] * 2).sum().backward() if hasattr(ember.Tensor, "sum") else None
    if x.grad is not None:
        assert x.grad.tolist() == [[0.0] * 4, [2.0] * 4, [0.0] * 4]
    x = _leaf(3, 4)
    y = x[[0, 0, 2], 1:3]
    y.backward(ember.ones(3, 2, dtype=ember.float64))
    assert x.grad.tolist() == [[0, 2, 2, 0], [0, 0, 0, 0], [0, 1, 1, 0]]


@needs_backward
def test_setitem_grad_flows_to_value_and_base():
    x = _leaf(3, 4)
    v = ember.tensor([10.0, 20.0], dtype=ember.float64, requires_grad=True)
    y = x * 1
    y[1, [0, 2]] = v
    y.backward(ember.arange(12.0, dtype=ember.float64).reshape(3, 4))
    assert v.grad.tolist() == [4.0, 6.0]
    want = np.arange(12.0).reshape(3, 4)
    want[1, [0, 2]] = 0
    assert x.grad.tolist() == want.tolist()


@needs_backward
def test_setitem_on_leaf_requiring_grad_is_an_error():
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        x[0] = 1.0


@needs_backward
def test_setitem_scalar_on_basic_view_grad():
    x = _leaf(2, 3)
    y = x.clone()
    y[0] = 0.0
    y.backward(ember.ones(2, 3, dtype=ember.float64))
    assert x.grad.tolist() == [[0, 0, 0], [1, 1, 1]]


def test_forward_mode_rules_apply_the_op_to_tangents():
    from ember._ops import indexing, masked, scatter

    x = ember.arange(6.0).reshape(2, 3)
    mask = ember.tensor([[True, False, True], [False, False, True]])
    dx = ember.ones(2, 3)
    # masked_fill with a number is affine: the tangent is zero where the mask is set
    t = masked.masked_fill_op.jvp((dx, None, None), x, mask, None, out=None, value=5.0)
    assert t.tolist() == [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]
    # scatter with a value: same
    idx = ember.tensor([[1, 0, 1]])
    t = scatter.scatter_op.jvp((dx, None, None), x, idx, None, out=None, dim=0, value=2.0,
                               reduce=None, include_self=True, src_shape=None)
    assert t.tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    # index_put: tangents of self and values combine; a missing one counts as zero
    v = ember.tensor([7.0, 8.0])
    t = indexing.index_put_op.jvp((None, ember.ones(2)), x, v, ember.tensor([0, 1]),
                                  ember.tensor([2, 0]), out=None,
                                  spec=(indexing._T, indexing._T), accumulate=False)
    assert t.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    assert scatter.gather_op.jvp((None, None), x, idx, out=None, dim=0, shape=(2, 3)) is None


@needs_backward
@needs_torch
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_grad_with_zeros_matches_torch(include_self):
    import torch

    a = [[1.0, 0.0, 2.0], [3.0, 4.0, 0.0]]
    s = [[0.0, 5.0, 2.0], [0.0, 1.0, 3.0], [2.0, 0.0, 0.0]]
    i = [[0, 1, 1], [0, 0, 1], [1, 0, 1]]

    def run(T):
        x = T.tensor(a, dtype=T.float64, requires_grad=True)
        src = T.tensor(s, dtype=T.float64, requires_grad=True)
        y = x.scatter_reduce(0, T.tensor(i), src, "prod", include_self=include_self)
        y.backward(T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=T.float64))
        return x.grad, src.grad

    for got, want in zip(run(ember), run(torch)):
        assert_close(got, want)
