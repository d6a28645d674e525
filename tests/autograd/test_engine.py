"""The engine: backward / grad, retain_graph, create_graph, inputs=, errors, memory."""

import gc
import sys
import weakref

import numpy as np
import pytest

import ember
from ember import autograd
from tests.conftest import HAS_TORCH


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def test_backward_simple():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x + x * 3
    y.backward(ember.ones(3, dtype=ember.float64))
    assert x.grad.tolist() == [5.0, 7.0, 9.0]


def test_backward_scalar_implicit():
    x = leaf(2.0)
    y = x * x * x
    y.backward()
    assert x.grad.item() == 12.0


def test_implicit_grad_only_for_scalars():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        ember.ones(1).backward()


def test_grad_shape_mismatch():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(3, dtype=ember.float64))


def test_second_backward_raises_and_retain_graph_allows():
    x = leaf([1.0, 2.0])
    y = x * x
    y.backward(ember.ones(2, dtype=ember.float64), retain_graph=True)
    y.backward(ember.ones(2, dtype=ember.float64))
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward(ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn._saved_a  # noqa: B018


def test_second_backward_without_saved_values_is_fine():
    x = leaf([1.0, 2.0])
    y = x + 1
    y.backward(ember.ones(2, dtype=ember.float64))
    y.backward(ember.ones(2, dtype=ember.float64))
    assert x.grad.tolist() == [2.0, 2.0]


def test_broadcast_gradient_reduced_and_cast():
    a = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float32, requires_grad=True)
    c = ember.tensor(2.0, dtype=ember.float32, requires_grad=True)
    y = a * b * c
    y.backward(ember.ones(2, 3, dtype=ember.float64))
    assert b.grad.dtype == ember.float32 and b.grad.shape == (3,)
    assert b.grad.tolist() == [10.0, 14.0, 18.0]
    assert c.grad.shape == () and c.grad.item() == pytest.approx(1 + 4 + 9 + 4 + 10 + 18)
    b2 = leaf([[2.0], [3.0]])
    (a * b2).backward(ember.ones(2, 3, dtype=ember.float64))
    assert b2.grad.tolist() == [[6.0], [15.0]]


def test_complex_gradient_to_real_input_takes_real_part():
    x = leaf([1.0, 2.0])
    z = x * ember.tensor([1 + 2j, 3 - 1j], dtype=ember.complex128)
    z.backward(ember.ones(2, dtype=ember.complex128))
    assert x.grad.dtype == ember.float64
    assert x.grad.tolist() == [1.0, 3.0]


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_complex_gradients_match_torch():
    import torch

    vals = [1 + 2j, -0.5 + 1j]
    go = [0.3 - 1j, 2 + 0.5j]
    res = []
    for m in (ember, torch):
        z = m.tensor(vals, dtype=m.complex128, requires_grad=True)
        w = m.tensor([2 - 1j, 1 + 1j], dtype=m.complex128, requires_grad=True)
        y = z * w / (z + 1)
        y.backward(m.tensor(go, dtype=m.complex128))
        res.append((np.array(z.grad.tolist()), np.array(w.grad.tolist())))
    np.testing.assert_allclose(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1])


def test_autograd_grad_basic_and_leaves_grad_untouched():
    x = leaf([1.0, 2.0])
    y = (x * x).sum() if hasattr(ember.Tensor, "sum") else None
    if y is None:
        pytest.skip("sum not available")
    (g,) = autograd.grad(y, x)
    assert g.tolist() == [2.0, 4.0]
    assert x.grad is None


def test_autograd_grad_grad_outputs_and_multiple_inputs():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = x * w
    gx, gw = autograd.grad([y], [x, w], grad_outputs=[ember.ones(2, dtype=ember.float64)])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]


def test_autograd_grad_unused():
    x, u = leaf([1.0]), leaf([1.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not "
                                           "have been used in the graph"):
        autograd.grad(y, [x, u], ember.ones(1, dtype=ember.float64), retain_graph=True)
    gx, gu = autograd.grad(y, [x, u], ember.ones(1, dtype=ember.float64), allow_unused=True,
                           retain_graph=True)
    assert gu is None
    gx, gu = autograd.grad(y, [x, u], ember.ones(1, dtype=ember.float64),
                           materialize_grads=True)
    assert gu.tolist() == [0.0]


def test_autograd_grad_batched_rows_of_the_jacobian():
    # grad_outputs with a leading batch dim: one vector-Jacobian product per row; the
    # identity gives the whole Jacobian
    x, z = leaf([1.0, 2.0, 3.0]), leaf([1.0, 2.0])
    y, y2 = x ** 3, x.sin()
    eye = ember.eye(3, dtype=ember.float64)
    jx, jz = autograd.grad([y, y2], [x, z], [eye, 2 * eye], is_grads_batched=True,
                           materialize_grads=True)
    expected = np.diag(3 * np.array([1.0, 2.0, 3.0]) ** 2 + 2 * np.cos([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(jx.numpy(), expected)
    assert jz.tolist() == [0.0, 0.0]  # as PyTorch: materialised without the batch dim
    # create_graph keeps the batched result differentiable
    w = leaf([1.0, 2.0, 3.0])
    jw, = autograd.grad(w ** 2, w, eye, is_grads_batched=True, create_graph=True)
    assert jw.requires_grad and autograd.grad(jw.sum(), w)[0].tolist() == [2.0, 2.0, 2.0]
    # the graph is freed after the last row unless retained
    v = leaf([1.0, 2.0, 3.0])
    out = v ** 2
    autograd.grad(out, v, eye, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        autograd.grad(out, v, eye, is_grads_batched=True)


def test_autograd_grad_batched_errors():
    x, u = leaf([1.0, 2.0, 3.0]), leaf([1.0])
    with pytest.raises(RuntimeError, match="first dimension of each grad_output as the batch"):
        autograd.grad(x ** 2, x, ember.ones(2, 4, dtype=ember.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        autograd.grad(x ** 2, [x, u], ember.eye(3, dtype=ember.float64),
                      is_grads_batched=True)
    gx, gu = autograd.grad(x ** 2, [x, u], ember.eye(3, dtype=ember.float64),
                           is_grads_batched=True, allow_unused=True)
    assert gu is None and gx.shape == (3, 3)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_autograd_grad_batched_matches_torch():
    import torch

    rng = np.random.default_rng(0)
    a, gs = rng.standard_normal((4, 3)), rng.standard_normal((5, 4, 2))
    b = rng.standard_normal((3, 2))
    res = []
    for fw in (ember, torch):
        x = fw.tensor(a, requires_grad=True)
        w = fw.tensor(b, requires_grad=True)
        y = (x @ w).tanh()
        res.append([t.detach().numpy() for t in fw.autograd.grad(
            y, [x, w], fw.tensor(gs), is_grads_batched=True)])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_autograd_grad_non_leaf_input():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = h * h
    (gh,) = autograd.grad(y, h, ember.ones(2, dtype=ember.float64))
    assert gh.tolist() == [6.0, 12.0]


def test_autograd_grad_runs_only_needed_nodes():
    x, w = leaf([1.0]), leaf([2.0])
    a = x * 2
    b = w * 3
    ran = []
    b.grad_fn.register_prehook(lambda g: ran.append("b"))
    a.grad_fn.register_prehook(lambda g: ran.append("a"))
    autograd.grad(a + b, x, ember.ones(1, dtype=ember.float64))
    assert ran == ["a"]


def test_backward_inputs_restricts_accumulation():
    x, w = leaf([1.0]), leaf([2.0])
    y = x * w
    y.backward(ember.ones(1, dtype=ember.float64), inputs=[x])
    assert x.grad.tolist() == [2.0] and w.grad is None


def test_backward_inputs_non_leaf():
    x = leaf([1.0])
    h = x * 2
    y = h * h
    y.backward(ember.ones(1, dtype=ember.float64), inputs=[h])
    assert h.grad.tolist() == [4.0] and x.grad is None


def test_create_graph_double_backward():
    x = leaf([2.0])
    y = x * x * x
    (g,) = autograd.grad(y, x, ember.ones(1, dtype=ember.float64), create_graph=True)
    assert g.requires_grad and g.tolist() == [12.0]
    (gg,) = autograd.grad(g, x, ember.ones(1, dtype=ember.float64))
    assert gg.tolist() == [12.0]


def test_grad_mode_inside_backward_equals_create_graph():
    x = leaf([2.0])
    modes = []
    y = x * 2
    y.grad_fn.register_prehook(lambda g: modes.append(ember.is_grad_enabled()))
    y.backward(ember.ones(1, dtype=ember.float64), retain_graph=True)
    with pytest.warns(UserWarning, match="reference cycle"):
        y.backward(ember.ones(1, dtype=ember.float64), create_graph=True)
    assert modes == [False, True]
    assert ember.is_grad_enabled()


def test_formula_returning_none_is_fine():
    from ember._ops._registry import Op
    from ember import _dispatch

    op = Op("_test_half_grad", lambda xp, a, b: a + b, vjp=lambda g, _a, _b: (g, None))
    x, y = leaf([1.0]), leaf([1.0])
    z = _dispatch.apply(op, (x, y), {})
    z.backward(ember.ones(1, dtype=ember.float64))
    assert x.grad.tolist() == [1.0] and y.grad is None


def test_execution_order_most_recent_first():
    x = leaf([1.0])
    order = []
    a = x * 2
    b = x * 3
    a.grad_fn.register_prehook(lambda g: order.append("a"))
    b.grad_fn.register_prehook(lambda g: order.append("b"))
    (a + b).backward(ember.ones(1, dtype=ember.float64))
    assert order == ["b", "a"]


def test_long_chain_no_recursion_error_and_graph_freed():
    x = leaf([1.0], dtype=ember.float32)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    last = weakref.ref(y.grad_fn)
    y.backward(ember.ones(1))
    assert x.grad.tolist() == [1.0]
    del y
    gc.collect()
    assert last() is None


def test_intermediates_freed_after_backward():
    x = leaf([1.0, 2.0])
    h = x * 2
    y = h * h
    ref_h = weakref.ref(h)
    ref_node = weakref.ref(h.grad_fn)
    del h
    y.backward(ember.ones(2, dtype=ember.float64))
    # h is saved by y's node until the backward released it
    gc.collect()
    assert ref_h() is None
    del y
    gc.collect()
    assert ref_node() is None


def test_no_reference_cycles_from_recording():
    x = leaf([1.0, 2.0])
    gc.collect()
    gc.disable()
    try:
        y = (x * 2) * x
        r = weakref.ref(y.grad_fn)
        del y
        assert r() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_engine_has_no_recursion_limit_dependence():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        x = leaf([1.0])
        y = x
        for _ in range(1000):
            y = y + 1
        y.backward(ember.ones(1, dtype=ember.float64))
    finally:
        sys.setrecursionlimit(limit)
    assert x.grad.tolist() == [1.0]


def test_backward_function_and_grad_tensors():
    x = leaf([1.0, 2.0])
    y1, y2 = x * 2, x * 3
    autograd.backward([y1, y2], [ember.ones(2, dtype=ember.float64),
                                 ember.ones(2, dtype=ember.float64)])
    assert x.grad.tolist() == [5.0, 5.0]


def test_variable_alias():
    t = autograd.Variable(ember.ones(2), requires_grad=True)
    assert isinstance(t, ember.Tensor) and t.requires_grad
