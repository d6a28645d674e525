"""Products keep each operand only for the other's gradient (``Op.saved_for`` with
``Op.unsaved_layout`` on matmul and addmm), as PyTorch's mm/bmm/mv/addmm nodes do: a weight
stepped in place between forward and backward breaks only a backward that reads it."""

import numpy as np
import pytest

import ember


CASES = {
    "mm": lambda T, x, w, b: T.mm(x, w),
    "matmul": lambda T, x, w, b: T.matmul(x, w),
    "at": lambda T, x, w, b: x @ w,
    "addmm": lambda T, x, w, b: T.addmm(b, x, w),
    "addmm_scaled": lambda T, x, w, b: T.addmm(b, x, w, beta=0.5, alpha=2.0),
    "stacked": lambda T, x, w, b: T.matmul(x.unsqueeze(0).expand(3, 2, 4), w),
    "column_major_x": lambda T, x, w, b: x.t().contiguous().t() @ w,
    "column_major_w": lambda T, x, w, b: x @ w.t().contiguous().t(),
    "bmm": lambda T, x, w, b: T.bmm(x.unsqueeze(0), w.unsqueeze(0)),
    "baddbmm": lambda T, x, w, b: T.baddbmm(b, x.unsqueeze(0), w.unsqueeze(0)),
}


def _run(T, case, data_requires_grad):
    g = np.random.default_rng(3)
    x = T.tensor(g.standard_normal((2, 4)), dtype=T.float32, requires_grad=data_requires_grad)
    w = T.tensor(g.standard_normal((4, 3)), dtype=T.float32, requires_grad=True)
    b = T.tensor(g.standard_normal(3), dtype=T.float32, requires_grad=True)
    y = CASES[case](T, x, w, b)
    with T.no_grad():
        w.add_(1.0)  # an optimizer step between forward and backward
    try:
        (y * y.detach()).sum().backward()
    except RuntimeError as e:
        return "raised", str(e).split(":")[0]
    return w.grad.numpy(), b.grad.numpy() if b.grad is not None else None


@pytest.mark.parametrize("case", sorted(CASES))
def test_weight_stepped_in_place_before_backward(case):
    got = _run(ember, case, data_requires_grad=False)
    assert not (isinstance(got[0], str)), got  # the data operand never needed the weight
    torch = pytest.importorskip("torch")
    want = _run(torch, case, data_requires_grad=False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    if want[1] is not None:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_weight_stepped_in_place_breaks_the_input_gradient(case):
    got = _run(ember, case, data_requires_grad=True)
    if case == "column_major_w":  # a copy of the weight is multiplied: nothing to break
        assert not isinstance(got[0], str)
        return
    assert isinstance(got[0], str) and got[0] == "raised"
    assert "modified by an inplace operation" in got[1]


@pytest.mark.parametrize("name", ["ember", "torch"])
def test_unsaved_operand_reads_none(name):
    T = ember if name == "ember" else pytest.importorskip("torch")
    x = T.randn(2, 4)
    w = T.randn(4, 3, requires_grad=True)
    node = (x @ w).grad_fn
    assert type(node).__name__ == "MmBackward0"
    assert node._saved_mat2 is None  # only the data operand is kept, for w's gradient
    assert node._saved_self is not None
    assert tuple(node._saved_self_sym_sizes) == (2, 4)
    lin = T.nn.functional.linear(x, w.t())
    assert lin.grad_fn._saved_mat2 is None


def test_column_major_unsaved_operand_keeps_its_gradients_layout():
    # the input is not saved (the other operand is data), yet its column-major layout
    # still picks the transposed product for its gradient, as PyTorch's mm formula does
    base = ember.randn(4, 2, requires_grad=True)
    a = base.t()
    w = ember.randn(4, 3)
    (a @ w).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(),
                               np.broadcast_to(w.numpy().sum(1), (2, 4)).T, rtol=1e-6)
    node = (a @ w).grad_fn
    assert node._saved_self is None and node._saved_mat2 is not None


def test_create_graph_through_an_unsaved_operand():
    x = ember.randn(2, 4, requires_grad=True)
    w = ember.randn(4, 3, requires_grad=True)
    gx, = ember.autograd.grad((x @ w).pow(2).sum(), x, create_graph=True)
    gx.sum().backward()
    assert w.grad is not None and x.grad is not None
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    tg, = torch.autograd.grad((tx @ tw).pow(2).sum(), tx, create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_operands_modified_in_place_before_the_product():
    # versions are read from what the node keeps: an operand bumped before the product
    # (a stand-in has no version counter) must not look modified afterwards
    x = ember.randn(3, 4)
    x.mul_(2.0)
    w = ember.randn(4, 2, requires_grad=True)
    with ember.no_grad():
        w.mul_(1.5)
    w2 = w * 1  # a non-leaf, also bumped
    w2.add_(0.0)
    (x @ w2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(x.numpy().sum(0)[:, None], (4, 2)),
                               rtol=1e-6)
