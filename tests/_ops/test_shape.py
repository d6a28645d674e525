"""Focused tests for shape and view ops (ember/_ops/shape.py, ember/_ops/join.py).

The OpInfo table (ember/testing/opinfos/shape.py) checks values, dtypes, errors and
gradients; here: strides and storage offsets against PyTorch, memory sharing both ways,
version counters, in-place metadata ops and layout corner cases.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._ops import ops
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _pair(shape, dtype="float32"):
    """The same tensor (arange values, contiguous) in ember and in torch."""
    import torch

    n = int(np.prod(shape))
    a = np.arange(n, dtype=dtype).reshape(shape)
    return ember.tensor(a), torch.tensor(a)


def _layout(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


# Each case: (input shape, function applied identically to the ember and the torch tensor).
# Inputs are made non-contiguous by the functions themselves where that matters.
VIEW_CASES = {
    "view_contiguous": ((2, 3, 4), lambda x: x.view(6, 4)),
    "view_merge_noncontiguous": ((2, 3, 4), lambda x: x[:, :, ::2].view(6, 2)),
    "view_split_transposed": ((4, 6), lambda x: x.t().view(2, 3, 4)),
    "view_size1_dims": ((4, 6), lambda x: x.t().view(6, 1, 4, 1)),
    "view_trailing_size1_weird_stride": ((1, 3), lambda x: x.t().view(3, 1)),
    "view_empty": ((0, 3), lambda x: x.view(3, 0)),
    "view_dtype_smaller": ((3, 4), lambda x: x.view(_i16(x))),
    "reshape_view": ((2, 3, 4), lambda x: x.permute(1, 0, 2).reshape(3, 8)),
    "reshape_copy": ((2, 3, 4), lambda x: x.permute(2, 0, 1).reshape(4, 6)),
    "flatten_partial": ((2, 3, 4), lambda x: x.transpose(0, 1).flatten(1)),
    "unflatten": ((2, 12), lambda x: x.unflatten(1, (3, 4))),
    "squeeze_keeps_strides": ((1, 3, 1, 4), lambda x: x[:, :, :, ::2].squeeze()),
    "unsqueeze_front": ((3, 4), lambda x: x.t().unsqueeze(0)),
    "unsqueeze_middle": ((3, 4), lambda x: x[:, ::2].unsqueeze(1)),
    "unsqueeze_end_noncontiguous": ((3, 4), lambda x: x[:, ::2].unsqueeze(2)),
    "unsqueeze_end_transposed": ((3, 4), lambda x: x.t().unsqueeze(2)),
    "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1)),
    "movedim": ((2, 3, 4), lambda x: x.movedim(0, 2)),
    "mT": ((2, 3, 4), lambda x: x.mT),
    "expand_new_dims": ((3, 1), lambda x: x.expand(2, 3, 4)),
    "expand_size1_new_dim": ((3, 1), lambda x: x.expand(1, 3, 1)),
    "expand_scalar": ((), lambda x: x.expand(2)),
    "narrow": ((3, 4), lambda x: x.narrow(1, 1, 2)),
    "narrow_empty": ((3, 4), lambda x: x.narrow(0, 2, 0)),
    "select_last": ((3, 4), lambda x: x.select(1, -1)),
    "diagonal_above": ((3, 4), lambda x: x.diagonal(1)),
    "diagonal_below_batched": ((2, 3, 4), lambda x: x.diagonal(-1, 1, 2)),
    "diagonal_empty": ((3, 4), lambda x: x.diagonal(5)),
    "unfold": ((3, 7), lambda x: x.unfold(1, 3, 2)),
    "unfold_scalar": ((), lambda x: x.unfold(0, 1, 1)),
    "as_strided_from_view": ((3, 4), lambda x: x[1:].as_strided((2, 2), (1, 3))),
    "as_strided_offset": ((3, 4), lambda x: x[1:].as_strided((2, 2), (1, 3), 2)),
    "split_pieces": ((5, 4), lambda x: x.split(2, 1)[1]),
    "chunk_pieces": ((5, 4), lambda x: x.t().chunk(3, 1)[2]),
    "unbind_piece": ((3, 4), lambda x: x.unbind(1)[2]),
    "tensor_split_piece": ((7,), lambda x: x.tensor_split(3)[2]),
}


def _i16(x):
    return ember.int16 if isinstance(x, ember.Tensor) else __import__("torch").int16


@needs_torch
@pytest.mark.parametrize("case", sorted(VIEW_CASES))
def test_view_layout_matches_torch(case):
    """Shape, strides, storage offset and values of views agree with PyTorch."""
    shape, fn = VIEW_CASES[case]
    e, t = _pair(shape)
    re, rt = fn(e), fn(t)
    assert _layout(re) == _layout(rt), case
    np.testing.assert_array_equal(re.numpy(), rt.numpy())


@needs_torch
@pytest.mark.parametrize("case", ["reshape_copy", "view_contiguous", "narrow", "permute",
                                  "expand_new_dims", "diagonal_above", "unfold"])
def test_view_is_view_matches_torch(case):
    """An op returns a view exactly where PyTorch does (``_base`` set iff torch's is)."""
    shape, fn = VIEW_CASES[case]
    e, t = _pair(shape)
    assert (fn(e)._base is not None) == (fn(t)._base is not None)


COPY_CASES = {
    "flip_transposed": ((3, 4), lambda x: x.t().flip(0)),
    "flip_strided": ((2, 3), lambda x: x[:, ::2].flip(0)),
    "flip_permuted_strided": ((2, 3, 4), lambda x: x.permute(1, 0, 2)[:, :, ::2].flip(0)),
    "roll_transposed": ((2, 3), lambda x: x.t().roll(1)),
    "tril_transposed": ((2, 3), lambda x: x.t().tril()),
    "repeat_transposed": ((2, 3), lambda x: x.t().repeat(2, 1)),
    "rot90_once": ((3, 4), lambda x: x.rot90()),
    "rot90_twice": ((3, 4), lambda x: x.rot90(2)),
    "narrow_copy_transposed": ((3, 4), lambda x: x.t().narrow_copy(0, 1, 2)),
    "diag_of_transposed": ((3, 4), lambda x: x.t().diag()),
    "repeat_interleave_transposed": ((3, 4), lambda x: x.t().repeat_interleave(2, 0)),
    "cat_transposed": ((2, 3), lambda x: __import__("torch").cat([x.t(), x.t()], 1)
                       if not isinstance(x, ember.Tensor) else ember.cat([x.t(), x.t()], 1)),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(COPY_CASES))
def test_copy_layout_matches_torch(case):
    """Ops that copy lay out their result as PyTorch does and never leak negative strides."""
    shape, fn = COPY_CASES[case]
    e, t = _pair(shape)
    re, rt = fn(e), fn(t)
    assert tuple(re.shape) == tuple(rt.shape)
    assert re.stride() == rt.stride(), case
    assert all(s >= 0 for s in re.numpy().strides)
    np.testing.assert_array_equal(re.numpy(), rt.numpy())


@pytest.mark.parametrize("fn", [lambda x: x.flip(0), lambda x: x.roll(1, 0),
                                lambda x: x.repeat(1, 1), lambda x: x.tril(),
                                lambda x: ember.rot90(x, 2), lambda x: x.narrow_copy(0, 0, 2)],
                         ids=["flip", "roll", "repeat", "tril", "rot90", "narrow_copy"])
def test_copy_ops_do_not_share_memory(fn):
    x = ember.ones(2, 3)
    r = fn(x)
    assert r._base is None
    assert not np.shares_memory(r.numpy(), x.numpy())


# ------------------------------------------------------------------------------------------------
# memory sharing and version counters


@pytest.mark.parametrize("fn", [lambda x: x.view(-1), lambda x: x.t(), lambda x: x.narrow(0, 1, 1),
                                lambda x: x.select(1, 2), lambda x: x.diagonal(),
                                lambda x: x.unfold(1, 2, 1), lambda x: x.as_strided((2,), (4,), 1),
                                lambda x: x.unsqueeze(0).expand(2, 3, 4),
                                lambda x: x.split(1)[1], lambda x: x.unbind(1)[0]],
                         ids=["view", "t", "narrow", "select", "diagonal", "unfold",
                              "as_strided", "expand", "split", "unbind"])
def test_view_shares_memory_both_ways(fn):
    """Writing through a view shows in its base, writing the base shows in the view."""
    x = ember.zeros(3, 4)
    v = fn(x)
    assert v.untyped_storage() == x.untyped_storage()
    x.numpy()[...] = 7
    assert (v.numpy() == 7).all()
    v.numpy().flat[0] = -1
    assert (x.numpy() == -1).sum() == 1


def test_view_version_counter_is_shared():
    x = ember.zeros(3, 4)
    v = x.t().narrow(0, 1, 2)
    before = v._version
    x.add_(1)
    assert v._version == before + 1
    v.add_(1)
    assert x._version == before + 2


def test_view_of_view_has_root_base():
    x = ember.zeros(3, 4)
    v = x.t().unsqueeze(0).squeeze(0)
    assert v._base is x


def test_expand_result_is_writable_but_inplace_overlap_raises():
    x = ember.zeros(3, 1)
    e = x.expand(3, 4)
    assert e.numpy().flags.writeable
    with pytest.raises(RuntimeError, match="single memory location"):
        e.add_(1)


def test_multi_output_views_are_marked():
    assert ops["split"].multi_output_view
    assert ops["unbind"].multi_output_view
    assert not ops["view"].multi_output_view


def test_iter_uses_unbind_views():
    x = ember.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert all(r._base is x for r in rows)


# ------------------------------------------------------------------------------------------------
# view rules and errors


def test_view_incompatible_strides_raises():
    x = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        x.t().view(12)


def test_reshape_incompatible_strides_copies():
    x = ember.arange(12.0).reshape(3, 4)
    r = x.t().reshape(12)
    assert r._base is None
    assert r.tolist() == x.numpy().T.reshape(-1).tolist()


def test_view_accepts_all_shape_spellings():
    x = ember.zeros(2, 6)
    for r in (x.view(3, 4), x.view((3, 4)), x.view([3, 4]), x.view(ember.Size([3, 4])),
              x.view(size=(3, 4)), x.view(-1, 4)):
        assert tuple(r.shape) == (3, 4)


def test_view_float_size_raises_type_error():
    with pytest.raises(TypeError, match="view"):
        ember.zeros(3).view(3.0)


def test_ravel_noncontiguous_copies_contiguous():
    x = ember.zeros(3, 4)
    r = x.narrow(1, 0, 1).ravel()
    assert r.is_contiguous() and not np.shares_memory(r.numpy(), x.numpy())


def test_flatten_same_dim_is_alias_view():
    x = ember.zeros(3, 4)
    r = x.flatten(1, 1)
    assert r is not x and r._base is x


def test_T_on_3d_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        ember.zeros(2, 3, 4).T  # noqa: B018


def test_as_strided_out_of_bounds_raises():
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        ember.zeros(3, 4).as_strided((4, 4), (4, 1))


@needs_torch
def test_view_dtype_layout_matches_torch():
    import torch

    e, t = _pair((4, 6))
    for fe, ft in [(lambda x: x.view(ember.uint8), lambda x: x.view(torch.uint8)),
                   (lambda x: x.view(ember.float64), lambda x: x.view(torch.float64)),
                   (lambda x: x.narrow(0, 2, 2).view(ember.complex64),
                    lambda x: x.narrow(0, 2, 2).view(torch.complex64))]:
        assert _layout(fe(e)) == _layout(ft(t))


@needs_torch
def test_view_as_real_layout_matches_torch():
    import torch

    a = (np.arange(12) + 1j * np.arange(12)).astype(np.complex64).reshape(3, 4)
    e, t = ember.tensor(a), torch.tensor(a)
    re = ember.view_as_real(e.t())
    rt = torch.view_as_real(t.t())
    assert _layout(re) == _layout(rt)
    back = ember.view_as_complex(ember.view_as_real(e))
    assert _layout(back) == _layout(torch.view_as_complex(torch.view_as_real(t)))


# ------------------------------------------------------------------------------------------------
# in-place metadata ops


def test_inplace_view_ops_change_shape_keep_storage():
    x = ember.zeros(3, 1)
    storage = x.untyped_storage()
    assert x.squeeze_() is x and tuple(x.shape) == (3,)
    assert x.unsqueeze_(0) is x and tuple(x.shape) == (1, 3)
    assert x.t_() is x and tuple(x.shape) == (3, 1)
    assert x.transpose_(0, 1) is x and tuple(x.shape) == (1, 3)
    assert x.untyped_storage() == storage


@needs_torch
def test_resize_grow_and_shrink_match_torch():
    import torch

    e = ember.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).clone()
    e.resize_(2, 2)
    t.resize_(2, 2)
    assert _layout(e) == _layout(t)
    # (t.numpy() would pin torch's storage and make it non-resizable)
    assert e.tolist() == t.tolist()
    e.resize_(8)
    t.resize_(8)
    assert tuple(e.shape) == (8,)
    assert e.tolist()[:6] == t.tolist()[:6]


def test_resize_as_takes_shape():
    x = ember.zeros(4)
    x.resize_as_(ember.zeros(2, 2))
    assert tuple(x.shape) == (2, 2)


def test_resize_requires_grad_raises():
    x = ember.zeros(4, dtype=ember.float64).requires_grad_()
    with pytest.raises(RuntimeError, match="require grad"):
        x.resize_(2)


# ------------------------------------------------------------------------------------------------
# joining


@needs_torch
@pytest.mark.parametrize("dtypes", [("int32", "float32"), ("uint8", "int8"), ("bool", "int16"),
                                    ("float16", "float64"), ("int64", "complex64")])
def test_cat_promotes_like_torch(dtypes):
    import torch

    es = [ember.ones(2, dtype=getattr(ember, d)) for d in dtypes]
    ts = [torch.ones(2, dtype=getattr(torch, d)) for d in dtypes]
    assert ember.cat(es).dtype.name == str(torch.cat(ts).dtype).replace("torch.", "")
    assert ember.stack(es).dtype.name == str(torch.stack(ts).dtype).replace("torch.", "")


def test_cat_skips_legacy_empty_but_promotes_with_it():
    r = ember.cat([ember.ones(2, 3), ember.zeros(0, dtype=ember.float64), ember.ones(1, 3)])
    assert tuple(r.shape) == (3, 3)
    assert r.dtype == ember.float64


def test_tensor_split_pieces_may_overlap_and_are_views():
    x = ember.arange(5.0)
    a, b, c = ember.tensor_split(x, (3, 1))
    assert a.tolist() == [0.0, 1.0, 2.0] and b.tolist() == [] and c.tolist() == [1.0, 2.0, 3.0,
                                                                                    4.0]
    assert a._base is x and c._base is x


def test_broadcast_shapes_matches_rules():
    assert ember.broadcast_shapes((2, 1), (3,), 1) == ember.Size([2, 3])
    with pytest.raises(RuntimeError, match="broadcast"):
        ember.broadcast_shapes((2, 3), (4,))


# ------------------------------------------------------------------------------------------------
# gradients of the backward helpers (double backward goes through them)


def _grad_available():
    return hasattr(ember.autograd, "gradcheck")


@pytest.mark.skipif(not _grad_available(), reason="autograd.gradcheck is not available")
@pytest.mark.parametrize("fn", [
    lambda x: x.narrow(1, 1, 2) * x.narrow(1, 0, 2),
    lambda x: x.unfold(1, 3, 1).unfold(0, 2, 1),
    lambda x: x.as_strided((3, 3), (1, 1), 1) * 2,
    lambda x: ember.cat(ember.tensor_split(x, (3, 1), 1), 1),
    lambda x: x.repeat(2, 1, 2).diagonal(0, 1, 2),
    lambda x: x.repeat_interleave(ember.tensor([1, 0, 3]), 0),
], ids=["narrow_product", "unfold_twice", "as_strided_overlapping", "tensor_split_overlap",
        "repeat_diagonal", "repeat_interleave_tensor"])
def test_gradients_compose(fn):
    from ember.autograd import gradcheck, gradgradcheck

    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 4))).requires_grad_()
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


@needs_torch
@pytest.mark.skipif(not _grad_available(), reason="autograd.gradcheck is not available")
@pytest.mark.parametrize("case", ["narrow_then_reach_outside", "transposed_input"])
def test_as_strided_gradient_matches_torch(case):
    """as_strided reads the storage; its gradient goes to the input's elements at the same
    storage positions (none for positions outside the input), as in PyTorch."""
    import torch

    fn = {"narrow_then_reach_outside": lambda x: x.narrow(1, 1, 2).as_strided((2, 2), (1, 1), 0),
          "transposed_input": lambda x: x.t().as_strided((3, 2), (2, 3), 1)}[case]
    a = np.random.default_rng(1).standard_normal((3, 4))
    xe = ember.tensor(a).requires_grad_()
    xt = torch.tensor(a, requires_grad=True)
    ye, yt = fn(xe), fn(xt)
    g = np.arange(ye.numel(), dtype=np.float64).reshape(tuple(ye.shape))
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())
