"""Leaves and .grad: accumulation rules, tensor hooks, retain_grad, detach, hook order."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def ones(n):
    return ember.ones(n, dtype=ember.float64)


def test_grad_accumulates_in_place():
    x = leaf([1.0, 2.0])
    (x * 2).backward(ones(2))
    g = x.grad
    (x * 3).backward(ones(2))
    assert x.grad is g and g.tolist() == [5.0, 5.0]


def test_grad_accumulates_out_of_place_under_create_graph():
    x = leaf([1.0, 2.0])
    (x * 2).backward(ones(2))
    g = x.grad
    with pytest.warns(UserWarning, match="reference cycle"):
        (x * x).backward(ones(2), create_graph=True)
    assert x.grad is not g and x.grad.requires_grad
    assert x.grad.tolist() == [4.0, 6.0]


def test_first_grad_not_aliased_with_user_gradient():
    x = leaf([1.0, 2.0])
    g = ones(2)
    (x * 1).backward(g)
    x.grad.add_(1)
    assert g.tolist() == [1.0, 1.0]
    y = leaf([1.0, 2.0])
    g2 = ones(2)
    y.backward(g2)
    assert y.grad is not g2 and y.grad.data_ptr() != g2.data_ptr()


def test_grad_layout_follows_param():
    base = ember.zeros(3, 4, dtype=ember.float64)
    p = base.t() if hasattr(base, "t") else None
    if p is None:
        pytest.skip("t() not available")
    p = p.detach().requires_grad_(True)
    (p * 2).backward(ember.ones(4, 3, dtype=ember.float64))
    assert p.grad.stride() == p.stride()


def test_grad_setter_checks():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        x.grad = ember.ones(3, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        x.grad = ember.ones(2, dtype=ember.float32)
    with pytest.raises(TypeError):
        x.grad = 3
    x.grad = ones(2)
    del x.grad
    assert x.grad is None


def test_requires_grad_rules():
    x = ember.ones(2)
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    # torch's method words it without complex (its constructors and attribute name both)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        ember.ones(2, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        ember.ones(2, dtype=ember.int64, requires_grad=True)


def test_tensor_hook_replaces_gradient_and_handle_removes():
    x = leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 10)
    (x * 1).backward(ones(2))
    assert x.grad.tolist() == [10.0, 10.0]
    h.remove()
    x.grad = None
    (x * 1).backward(ones(2))
    assert x.grad.tolist() == [1.0, 1.0]


def test_hook_on_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g + 1)
    (y * 3).backward(ones(2))
    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [8.0, 8.0]


def test_register_hook_requires_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't "
                                           "require gradient"):
        ember.ones(2).register_hook(lambda g: g)


def test_retain_grad():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).backward(ones(2))
    assert y.grad.tolist() == [4.0, 8.0]
    x.retain_grad()
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        ember.ones(1).retain_grad()


def test_retained_grad_sees_hooked_value():
    x = leaf([1.0])
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    y.backward(ones(1))
    assert y.grad.tolist() == [2.0]


def test_post_accumulate_grad_hook():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 2).backward(ones(2))
    assert seen == [[2.0, 2.0]]
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


HOOK_ORDER = [
    "tensor_hook", "prehook", "retain", "posthook", "leaf tensor hook", "post acc"]


def _hook_order(m):
    a = m.ones(2, requires_grad=True)
    b = a * 2
    log = []
    b.register_hook(lambda g: log.append("tensor_hook"))
    b.grad_fn.register_prehook(lambda go: log.append("prehook"))
    b.retain_grad()
    b.register_hook(lambda g: log.append("retain" if b.grad is None else "late"))
    b.grad_fn.register_hook(lambda gi, go: log.append("posthook"))
    a.register_hook(lambda g: log.append("leaf tensor hook"))
    a.register_post_accumulate_grad_hook(lambda t: log.append("post acc"))
    b.sum().backward() if hasattr(b, "sum") else b.backward(m.ones(2))
    return log


def test_hook_order():
    log = _hook_order(ember)
    assert log == ["tensor_hook", "retain", "prehook", "posthook", "leaf tensor hook",
                   "post acc"]


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_hook_order_matches_torch():
    import torch

    assert _hook_order(ember) == _hook_order(torch)


def test_detach_shares_storage_and_version():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1)
    assert y._version == 1 and y.tolist() == [3.0, 5.0]


def test_detach_inplace():
    x = leaf([1.0])
    y = x * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_data_is_outside_autograd():
    x = leaf([1.0, 2.0])
    y = x * x
    x.data.add_(1)  # not tracked: no version error
    y.backward(ones(2))
    assert np.allclose(x.grad.tolist(), [4.0, 6.0])


def test_non_leaf_grad_access_warns():
    y = leaf([1.0]) * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None


def test_stolen_gradients_never_alias():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    ((x + y) * 2).backward(ones(2))  # AddBackward0 hands one tensor to both leaves
    x.grad.add_(1)
    assert y.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [3.0, 3.0]
    z = leaf([1.0])
    h = z * 1
    seen = []
    h.register_hook(lambda g: seen.append(g) or g)
    (h * 3).backward(ones(1))
    z.grad.add_(1)
    assert seen[0].tolist() == [3.0]
