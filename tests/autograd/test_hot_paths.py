"""The engine's and the recorder's hot paths give what the general paths give.

Input buffers that add a second gradient in place (NOTE [ Input buffers ] in
ember/autograd/_engine.py), one- and two-input gradient fitting (``fit_grads``), the
``needs_input_grad`` flags, the direct matrix-product gradients, the zero-dim operand path
of binary element-wise ops and the one-input ``apply`` -- each compared with PyTorch, and
where a path is a shortcut, with the path it shortcuts.
"""

import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(22)


def _pair(shape, dtype="float32", requires_grad=True):
    a = _rng.standard_normal(shape).astype(dtype)
    return (ember.from_numpy(a.copy()).requires_grad_(requires_grad),
            torch.from_numpy(a.copy()).requires_grad_(requires_grad))


def _close(e, t, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# input buffers


def test_input_buffer_sum_of_three_edges_matches_torch():
    xe, xt = _pair((4, 5))
    for x in (xe, xt):
        y = x.exp()
        (y * 2 + y.sin() + y * y).sum().backward()
    _close(xe.grad, xt.grad, rtol=1e-5)


def test_input_buffer_post_hook_keeps_the_gradient_it_saw():
    # the node run first stores its gradient in y's buffer; a post-hook holding it must not
    # see the second gradient added into it
    seen = {}
    for name, fw in (("ember", ember), ("torch", torch)):
        x = fw.ones(3, 3, requires_grad=True)
        y = x * 1.5
        a = y * 2  # recorded before b: runs after it
        b = y * 3
        kept = []
        b.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))
        (a.sum() + b.sum()).backward()
        seen[name] = (kept[0].detach().numpy().copy(), x.grad.numpy().copy())
    np.testing.assert_array_equal(seen["ember"][0], seen["torch"][0])
    np.testing.assert_array_equal(seen["ember"][1], seen["torch"][1])


def test_input_buffer_leaves_user_gradient_unchanged():
    g = ember.full((2, 3), 0.5)
    x = ember.ones(2, 3, requires_grad=True)
    y = x.exp()
    (y + y).backward(g)  # add's formula hands g itself to both of y's edges
    assert g.tolist() == [[0.5] * 3] * 2
    np.testing.assert_allclose(x.grad.numpy(), np.e * np.ones((2, 3)), rtol=1e-6)


def test_input_buffer_tensor_hook_sees_the_sum():
    for fw in (ember, torch):
        x = fw.ones(3, requires_grad=True)
        y = x * 2
        got = []
        y.register_hook(lambda g: got.append(g.clone()))
        (y * 3 + y * 4).sum().backward()
        assert got[0].tolist() == [7.0, 7.0, 7.0]


def test_input_buffer_create_graph_sum_is_differentiable():
    xe, xt = _pair((5,), "float64")
    res = []
    for x, fw in ((xe, ember), (xt, torch)):
        y = x.sin()
        (g,) = fw.autograd.grad((y * y + y.exp()).sum(), x, create_graph=True)
        (gg,) = fw.autograd.grad(g.sum(), x)
        res.append((g, gg))
    _close(res[0][0], res[1][0], rtol=1e-12)
    _close(res[0][1], res[1][1], rtol=1e-12)


def test_input_buffer_under_a_dispatch_mode_matches_torch():
    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    xe, xt = _pair((4,))
    with Count():
        y = xe.exp()
        (y * 2 + y * 3).sum().backward()
    y = xt.exp()
    (y * 2 + y * 3).sum().backward()
    _close(xe.grad, xt.grad, rtol=1e-6)
    assert Count.calls > 0


def test_input_buffer_retain_graph_second_backward_matches():
    xe, xt = _pair((3, 2))
    for x in (xe, xt):
        y = x.tanh()
        z = (y * y + y).sum()
        z.backward(retain_graph=True)
        z.backward()
    _close(xe.grad, xt.grad, rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# fitting gradients to their inputs, needs_input_grad


def test_fit_grads_two_inputs_broadcast_and_cast():
    a = _rng.standard_normal((3, 1)).astype(np.float32)
    b = _rng.standard_normal((1, 4)).astype(np.float64)
    ae, be = (ember.from_numpy(v.copy()).requires_grad_() for v in (a, b))
    at, bt = (torch.from_numpy(v.copy()).requires_grad_() for v in (a, b))
    (ae * be).sum().backward()
    (at * bt).sum().backward()
    assert ae.grad.dtype == ember.float32 and be.grad.dtype == ember.float64
    _close(ae.grad, at.grad)
    _close(be.grad, bt.grad)


def test_fit_grads_one_input_broadcast_sum():
    xe, xt = _pair((1, 3))
    for x in (xe, xt):
        x.expand(4, 3).exp().sum().backward()
    _close(xe.grad, xt.grad, rtol=1e-6)


def test_needs_input_grad_only_the_weight():
    x = _rng.standard_normal((2, 3)).astype(np.float32)
    we, wt = _pair((3, 4))
    (ember.from_numpy(x) @ we).sum().backward()
    (torch.from_numpy(x) @ wt).sum().backward()
    _close(we.grad, wt.grad)


def test_needs_input_grad_flags_per_node():
    xe, xt = _pair((2, 3))
    we, wt = _pair((3, 4), requires_grad=False)
    ve, vt = _pair((4, 3))
    for x, w, v in ((xe, we, ve), (xt, wt, vt)):
        ((x @ w) @ v).sum().backward()
    _close(xe.grad, xt.grad, rtol=1e-5)
    _close(ve.grad, vt.grad, rtol=1e-5)
    assert we.grad is None


# ------------------------------------------------------------------------------------------------
# matrix products' gradients


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_direct_gradients_equal_the_formula(dtype):
    # the direct path (no grad mode, no mode) against the formula (create_graph records it)
    a = _rng.standard_normal((5, 7)).astype(dtype)
    b = _rng.standard_normal((7, 3)).astype(dtype)
    grads = []
    for create in (False, True):
        ae, be = (ember.from_numpy(v.copy()).requires_grad_() for v in (a, b))
        ga, gb = ember.autograd.grad((ae @ be).sin().sum(), (ae, be), create_graph=create)
        grads.append((ga.detach().numpy(), gb.detach().numpy()))
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])


def test_matmul_gradients_of_transposed_operands_match_torch():
    ae, at = _pair((6, 4))
    be, bt = _pair((5, 6))
    for a, b in ((ae, be), (at, bt)):
        (a.t() @ b.t()).pow(2).sum().backward()
    _close(ae.grad, at.grad, rtol=1e-5)
    _close(be.grad, bt.grad, rtol=1e-5)


def test_matmul_complex_gradients_match_torch():
    a = (_rng.standard_normal((3, 4)) + 1j * _rng.standard_normal((3, 4))).astype(np.complex64)
    b = (_rng.standard_normal((4, 2)) + 1j * _rng.standard_normal((4, 2))).astype(np.complex64)
    ae, be = (ember.from_numpy(v.copy()).requires_grad_() for v in (a, b))
    at, bt = (torch.from_numpy(v.copy()).requires_grad_() for v in (a, b))
    (ae @ be).abs().sum().backward()
    (at @ bt).abs().sum().backward()
    _close(ae.grad, at.grad, rtol=1e-5, atol=1e-5)
    _close(be.grad, bt.grad, rtol=1e-5, atol=1e-5)


def test_matmul_backward_under_a_mode_shows_torch_ops():
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a = ember.ones(2, 3, requires_grad=True)
    b = ember.ones(3, 4, requires_grad=True)
    y = (a @ b).sum()
    with Log():
        y.backward()
    assert "aten.t.default" in seen and "aten.mm.default" in seen


# ------------------------------------------------------------------------------------------------
# zero-dim operands of binary element-wise ops


_ZERO_DIM_CASES = [
    ("float32", "float64"), ("float64", "float32"), ("float16", "float64"),
    ("float32", "float16"), ("complex64", "complex128"),
]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtypes", _ZERO_DIM_CASES, ids=lambda d: "-".join(d))
def test_zero_dim_operand_keeps_dtype_and_values(op, dtypes):
    big, small = dtypes
    x = _rng.standard_normal(6).astype(big) if big[0] == "f" else \
        (_rng.standard_normal(6) + 1j * _rng.standard_normal(6)).astype(big)
    c = np.asarray(1.37 + (0.5j if small[0] == "c" else 0)).astype(small)
    for args in ((x, c), (c, x)):
        e = getattr(ember, op)(*(ember.from_numpy(np.array(v)) for v in args))
        t = getattr(torch, op)(*(torch.from_numpy(np.array(v)) for v in args))
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        tol = 1e-3 if "float16" in dtypes else 1e-6
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=tol)


def test_zero_dim_operand_gradient_has_its_dtype():
    xe, xt = _pair((4,))
    ce = ember.tensor(2.5, dtype=ember.float64, requires_grad=True)
    ct = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)
    (xe * ce).sum().backward()
    (xt * ct).sum().backward()
    assert ce.grad.dtype == ember.float64
    _close(ce.grad, ct.grad, rtol=1e-6)
    _close(xe.grad, xt.grad)


def test_zero_dim_operand_int_tensor_promotes_as_torch():
    e = ember.arange(4) * ember.tensor(1.5, dtype=ember.float64)
    t = torch.arange(4) * torch.tensor(1.5, dtype=torch.float64)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert e.tolist() == t.tolist()


def test_zero_dim_operand_float8_refused_as_torch():
    f8 = getattr(ember, "float8_e4m3fn", None)
    if f8 is None:
        pytest.skip("no float8 dtypes")
    x = ember.ones(4).to(f8)
    with pytest.raises(NotImplementedError):
        x * ember.tensor(2.0).to(f8)


# ------------------------------------------------------------------------------------------------
# one-input apply


def test_one_input_view_chain_gradients_match_torch():
    xe, xt = _pair((3, 4))
    for x in (xe, xt):
        x.t().reshape(2, 6).transpose(0, 1)[1:].exp().sum().backward()
    _close(xe.grad, xt.grad, rtol=1e-6)


def test_one_input_op_without_grad_records_nothing():
    x = ember.ones(2, 3)
    assert x.t().grad_fn is None and x.sum(0).grad_fn is None
    w = ember.ones(2, 3, requires_grad=True)
    with ember.no_grad():
        assert w.t().grad_fn is None
    assert type(w.t().grad_fn).__name__ == "TBackward0"
