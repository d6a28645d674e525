"""Focused tests, compared with PyTorch, for the everyday extras without an OpInfo entry:
fill_diagonal_, apply_/map_/map2_, scalar_tensor, empty_permuted, frombuffer, from_file,
unravel_index, and the unsafe splits' in-place semantics."""

from __future__ import annotations

import array

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@needs_torch
@pytest.mark.parametrize("shape, wrap", [((2, 3), False), ((5, 3), True), ((7, 3), True),
                                         ((3, 5), True), ((2, 2, 2), False), ((4, 2), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    import torch

    e = ember.zeros(*shape).fill_diagonal_(9, wrap=wrap)
    t = torch.zeros(*shape).fill_diagonal_(9, wrap=wrap)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("shape, match", [((3,), "larger than 1"), ((2, 2, 3), "equal length")])
def test_fill_diagonal_errors(shape, match):
    with pytest.raises(RuntimeError, match=match):
        ember.zeros(*shape).fill_diagonal_(1)


def test_fill_diagonal_gradient_zeroes_diagonal():
    x = ember.zeros(3, 3, requires_grad=True)
    y = x * 1
    y.fill_diagonal_(2.0)
    y.sum().backward()
    assert x.grad.diagonal().tolist() == [0, 0, 0] and x.grad.sum().item() == 6


def test_apply_map_map2():
    x = ember.arange(6.).reshape(2, 3)
    assert x.clone().apply_(lambda v: v * 2).tolist() == (x * 2).tolist()
    assert x.clone().map_(ember.ones(3), lambda a, b: a + b).tolist() == (x + 1).tolist()
    assert x.clone().map2_(x, x, lambda a, b, c: a + b + c).tolist() == (x * 3).tolist()
    assert ember.tensor([1, 2]).apply_(lambda v: v * 1.9).tolist() == [1, 3]


def test_apply_refuses_requires_grad():
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(2, requires_grad=True).apply_(lambda v: v)


def test_apply_passes_python_numbers():
    seen = []
    ember.ones(1, dtype=ember.float32).apply_(lambda v: seen.append(type(v)) or v)
    assert seen == [float]


@needs_torch
@pytest.mark.parametrize("args, kwargs", [((3,), {}), ((True,), {}),
                                          ((3,), {"dtype": "int32"}), ((2.5,), {})])
def test_scalar_tensor_matches_torch(args, kwargs):
    import torch

    e = ember.scalar_tensor(*args, **{k: getattr(ember, v) for k, v in kwargs.items()})
    t = torch.scalar_tensor(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert e.item() == t.item() and str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]


@needs_torch
@pytest.mark.parametrize("size, perm", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)),
                                        ((3,), (0,))])
def test_empty_permuted_strides_match_torch(size, perm):
    import torch

    assert ember.empty_permuted(size, perm).stride() == torch.empty_permuted(size, perm).stride()


def test_empty_permuted_errors():
    with pytest.raises(RuntimeError, match="Duplicate"):
        ember.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="does not match"):
        ember.empty_permuted((2, 3), (0,))


def test_frombuffer_shares_memory():
    b = bytearray(8)
    t = ember.frombuffer(b, dtype=ember.int32)
    t[0] = 5
    assert b[0] == 5 and t.shape == (2,)
    assert ember.frombuffer(array.array("f", [1, 2]), dtype=ember.float32).tolist() == [1, 2]
    assert ember.frombuffer(bytearray(8), dtype=ember.int32, count=1, offset=4).shape == (1,)


@pytest.mark.parametrize("buf, kwargs, match", [
    (bytearray(7), {}, "multiple of element size"), (bytearray(0), {}, "must not be 0"),
    (bytearray(8), {"count": 3}, "greater than actual"), (bytearray(8), {"offset": 9}, "offset")])
def test_frombuffer_errors(buf, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ember.frombuffer(buf, dtype=ember.int32, **kwargs)


def test_from_file_shared_and_private(tmp_path):
    path = str(tmp_path / "t.bin")
    np.arange(4, dtype=np.float32).tofile(path)
    private = ember.from_file(path, size=4)
    private[0] = 9
    assert np.fromfile(path, np.float32)[0] == 0
    shared = ember.from_file(path, shared=True, size=4)
    shared[1] = 7
    del shared
    assert np.fromfile(path, np.float32)[1] == 7
    with pytest.raises(RuntimeError, match="smaller than"):
        ember.from_file(path, size=8)


@needs_torch
@pytest.mark.parametrize("idx, shape", [([5, 7], (3, 4)), ([12, -1], (3, 4)), (5, (3, 4)),
                                        ([[1, 2]], (3, 4)), ([0], 5), ([0], ())])
def test_unravel_index_matches_torch(idx, shape):
    import torch

    e = ember.unravel_index(ember.tensor(idx), shape)
    t = torch.unravel_index(torch.tensor(idx), shape)
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert a.tolist() == b.tolist() and a.dtype == ember.int64


def test_unravel_index_errors():
    with pytest.raises(TypeError, match="integer"):
        ember.unravel_index(ember.tensor([1.0]), (3,))
    with pytest.raises(ValueError, match="negative"):
        ember.unravel_index(ember.tensor([1]), (-1,))


def test_unsafe_split_allows_inplace_and_shares_memory():
    a = ember.arange(4.)
    pieces = ember.unsafe_chunk(a, 2)
    pieces[0][0] = 9
    assert a[0].item() == 9
    x = ember.arange(4., requires_grad=True).clone()
    p = x.unsafe_split(2)
    p[0].mul_(2)  # the safe split refuses this
    assert x.grad_fn is not None and type(x.grad_fn).__name__ == "CloneBackward0"


def test_unsafe_split_rejects_sizes_list():
    with pytest.raises(TypeError, match="must be int"):
        ember.unsafe_split(ember.arange(4.), [1, 3])


def test_isin_errors():
    with pytest.raises(TypeError):
        ember.isin(1, 2)
    with pytest.raises(RuntimeError, match="ComplexFloat"):
        ember.isin(ember.tensor([1j]), ember.tensor([1.0]))


def test_nonzero_static_size_error():
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.nonzero_static(ember.ones(2), size=-1)


def test_ldexp_inplace_refuses_integers():
    with pytest.raises(RuntimeError, match="cast"):
        ember.tensor([1, 2]).ldexp_(ember.tensor([1]))
