"""In-place ops: version checks, leaf errors, history rebasing, views (CopySlices)."""

import numpy as np
import pytest

import ember

try:
    import torch as _torch  # noqa: F401

    HAS_TORCH_HERE = True
except ImportError:
    HAS_TORCH_HERE = False
from tests.conftest import HAS_TORCH


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def ones(*n):
    return ember.ones(*n, dtype=ember.float64)


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.add_(ember.ones(2, dtype=ember.float64))
    assert x.tolist() == [1.0, 2.0]


def test_inplace_on_view_of_leaf_raises():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x[0:2].mul_(2)


def test_modified_saved_input_raises_version_error():
    x = leaf([1.0, 2.0, 3.0])
    z = x * 1
    w = z * z
    z.add_(1)
    with pytest.raises(RuntimeError) as e:
        w.backward(ones(3))
    msg = str(e.value)
    assert msg.startswith("one of the variables needed for gradient computation has been "
                          "modified by an inplace operation: [torch.DoubleTensor [3]], which is "
                          "output 0 of Add, is at version 1; expected version 0 instead. Hint:")


def test_modified_saved_output_raises_version_error():
    x = leaf([1.0, 2.0])
    q = x.exp()
    q.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[torch.DoubleTensor \[2\]\], which is output 0 "
                                           r"of Exp, is at version 1; expected version 0"):
        q.backward(ones(2))


def test_modified_saved_leaf_under_no_grad_raises():
    x = leaf([1.0, 2.0])
    w = x * x
    with ember.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match=r"\[torch.DoubleTensor \[2\]\] is at version 1; "
                                           "expected version 0"):
        w.backward(ones(2))


def test_inplace_rebases_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(y)  # y = (2x)^2 -> dy/dx = 8x
    assert y.grad_fn.name() == "MulBackward0"
    y.backward(ones(2))
    assert x.grad.tolist() == [8.0, 16.0]


def test_inplace_with_grad_input_into_plain_tensor():
    w = leaf([3.0, 4.0])
    t = ember.ones(2, dtype=ember.float64)
    t.mul_(w)
    assert t.requires_grad and not t.is_leaf
    t.backward(ones(2))
    assert w.grad.tolist() == [1.0, 1.0]


def test_copy_into_plain_tensor_tracks_grad():
    w = leaf([3.0, 4.0])
    t = ember.zeros(2, dtype=ember.float64)
    t.copy_(w * 2)
    t.backward(ones(2))
    assert w.grad.tolist() == [2.0, 2.0]


def test_setitem_gradients():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    v = leaf([10.0, 20.0])
    y = x * 1
    y[1] = v * 3
    assert y.grad_fn.name() == "CopySlices"
    (y * y).backward(ones(2, 2))
    assert x.grad.tolist() == [[2.0, 4.0], [0.0, 0.0]]
    assert v.grad.tolist() == [180.0, 360.0]


def test_setitem_into_plain_tensor():
    v = leaf([1.0, 2.0])
    y = ember.zeros(3, 2, dtype=ember.float64)
    y[0] = v
    y[2] = v * 2
    y.backward(ones(3, 2))
    assert v.grad.tolist() == [3.0, 3.0]


def test_inplace_on_view_updates_base_and_view_grad_fn():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    v = y[0:2]
    v.mul_(2)
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn is not None and v.grad_fn.next_functions[0][0] is y.grad_fn
    (y * y).backward(ones(3))
    assert x.grad.tolist() == [8.0, 16.0, 6.0]


def test_other_view_grad_fn_regenerated_after_base_changed():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    a = y[1:]
    y.mul_(3)
    (a * a).backward(ones(2))  # a = 3 x[1:], d/dx = 18 x
    assert x.grad.tolist() == [0.0, 36.0, 54.0]


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.parametrize("case", ["col_mul", "diag_zero", "chained_views", "setitem_slice"])
def test_view_inplace_matches_torch(case):
    import torch

    data = np.arange(1.0, 10.0).reshape(3, 3)

    def run(m):
        x = m.tensor(data, dtype=m.float64, requires_grad=True)
        w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        y = x * 1
        if case == "col_mul":
            y[:, 0].mul_(2)
        elif case == "diag_zero":
            if not hasattr(y, "diagonal"):
                pytest.skip("diagonal not available")
            y.diagonal().mul_(0)
        elif case == "chained_views":
            y[1:][0].mul_(w)
        else:
            y[0:2, 1] = w[:2] * w[1:]
        loss = (y * y * x)
        loss.backward(m.ones(3, 3, dtype=m.float64))
        return np.array(x.grad.tolist()), np.array(
            w.grad.tolist() if w.grad is not None else [0.0, 0.0, 0.0])

    (ex, ew), (tx, tw) = run(ember), run(torch)
    np.testing.assert_allclose(ex, tx)
    np.testing.assert_allclose(ew, tw)


def test_multi_output_view_refuses_inplace():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = x * 2
    if not hasattr(y, "unbind"):
        pytest.skip("unbind not available")
    parts = y.unbind(0)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace. This view "
                                           "is the output of a function that returns multiple "
                                           "views."):
        parts[0].mul_(2)


def test_version_counter_shared_by_views():
    x = ember.ones(4)
    v = x[1:3]
    v.add_(1)
    assert x._version == v._version == 1


def test_allow_mutation_on_saved_tensors():
    from ember.autograd.graph import allow_mutation_on_saved_tensors

    with allow_mutation_on_saved_tensors():
        x = leaf([1.0, 2.0])
        z = x * 1
        w = z * z
        z.add_(1)
        w.backward(ones(2))
    assert x.grad.tolist() == [2.0, 4.0]


def test_increment_version():
    from ember.autograd.graph import increment_version

    x = leaf([1.0, 2.0])
    w = x * x
    increment_version(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward(ones(2))


def test_view_made_under_no_grad_refuses_use_after_base_changes():
    # as torch: the view is a leaf that requires grad until its memory is written; then
    # reading its history is an error
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    with ember.no_grad():
        v = y[0:2]
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    y.mul_(2)
    with pytest.raises(RuntimeError, match="created in no_grad mode and its base"):
        _ = v.grad_fn
    with pytest.raises(RuntimeError, match="created in no_grad mode and its base"):
        v * 2


def test_scaling_a_slice_in_place_keeps_backward_valid():
    # mul by a number saves nothing of the slice (Op.saved_for), so writing the product back
    # into the tensor it came from leaves the graph valid, as in PyTorch
    x = ember.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    y = x * 1
    y[:, 0] = y[:, 0] * 2
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 1.0], [2.0, 1.0]]


def test_mul_saves_each_input_for_the_other_only():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2)
    node = (a * b).grad_fn
    assert node._saved[0] is None and node._saved[1] is not None


@pytest.mark.skipif(not HAS_TORCH_HERE, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", ["gt_", "eq_", "fill_", "zero_", "uniform_", "lt_t"])
def test_overwriting_a_tensor_in_a_graph_gives_zero_gradient_as_torch(name):
    # NOTE [ Overwriting a tensor in a graph ]
    import torch

    def apply(m, y):
        return {"gt_": lambda: y.gt_(0), "eq_": lambda: y.eq_(1), "fill_": lambda: y.fill_(2),
                "zero_": lambda: y.zero_(), "uniform_": lambda: y.uniform_(),
                "lt_t": lambda: y.lt_(m.zeros(3))}[name]()

    grads = []
    for m in (ember, torch):
        x = m.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = x * 2
        apply(m, y)
        assert y.requires_grad
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [0.0, 0.0, 0.0]
