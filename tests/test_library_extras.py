"""ember.library's smaller names: get_kernel, register_vmap, get_ctx, triton_op, EffectType."""

import numpy as np
import pytest

import ember
from ember import library as L


def test_get_kernel_aten_runs_the_array_kernel():
    k = L.get_kernel("aten::add.Tensor", "CPU")
    assert k.call_boxed(None, ember.ones(2), ember.ones(2)).tolist() == [2.0, 2.0]


def test_get_kernel_lets_a_replacement_call_the_original():
    original = L.get_kernel("aten::sin", "CPU")
    x = ember.tensor([0.5])
    assert abs(original.call_boxed(None, x).item() - 0.479425538604203) < 1e-6


def test_get_kernel_custom_op():
    @L.custom_op("tlx::scale3", mutates_args=())
    def scale3(x: ember.Tensor) -> ember.Tensor:
        return x * 3

    k = L.get_kernel("tlx::scale3", "CPU")
    assert k.call_boxed(None, ember.ones(1)).item() == 3.0


def test_get_kernel_unknown_op_raises():
    with pytest.raises(RuntimeError):
        L.get_kernel("aten::no_such_op_here", "CPU")


def test_register_vmap_stores_rule_on_custom_op():
    @L.custom_op("tlx::mul2", mutates_args=())
    def mul2(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x * y

    def rule(info, in_dims, x, y):
        return x * y, 0

    assert L.register_vmap("tlx::mul2", rule) is rule
    assert L.vmap_rule(mul2._op) is rule
    out = ember.vmap(mul2)(ember.ones(3, 2), ember.full((3, 2), 2.0))
    assert out.shape == (3, 2) and out.sum().item() == 12.0


def test_register_vmap_rejects_non_callable():
    @L.custom_op("tlx::ident", mutates_args=())
    def ident(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    with pytest.raises(TypeError):
        L.register_vmap(ident, 3)


def test_get_ctx_dynamic_size_refused_on_meta():
    with pytest.raises(NotImplementedError, match="meta"):
        L.get_ctx().new_dynamic_size()


def test_triton_op_is_a_custom_op():
    @L.triton_op("tlx::plus1", mutates_args=())
    def plus1(x: ember.Tensor) -> ember.Tensor:
        return x + 1

    assert plus1(ember.zeros(2)).tolist() == [1.0, 1.0]
    assert isinstance(plus1, L.CustomOpDef)


def test_wrap_triton_rejects_plain_function():
    with pytest.raises(RuntimeError, match="triton.jit"):
        L.wrap_triton(lambda: None)


def test_effect_type_and_schema_regex():
    assert L.EffectType.ORDERED.value == "Ordered"
    assert L.NAMELESS_SCHEMA.fullmatch("(Tensor x) -> Tensor")
    assert L.OpOverload is ember._dispatch.OpOverload


def _movemul_rule(op):
    def rule(info, in_dims, x, y):
        xb, yb = in_dims
        x = x.movedim(xb, -1) if xb is not None else x.unsqueeze(-1)
        y = y.movedim(yb, -1) if yb is not None else y.unsqueeze(-1)
        return op(x, y).movedim(-1, 0), 0
    return rule


def test_register_vmap_rule_runs_once_per_level_nested():
    @L.custom_op("tlx::mul3", mutates_args=())
    def mul3(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x * y

    seen = []
    inner = _movemul_rule(mul3)

    def rule(info, in_dims, x, y):
        seen.append((info.batch_size, in_dims))
        return inner(info, in_dims, x, y)

    L.register_vmap(mul3, rule)
    a, b = ember.randn(3, 5, 2), ember.randn(3, 5, 2)
    r = ember.vmap(ember.vmap(mul3))(a, b)
    assert r.shape == (3, 5, 2) and ember.allclose(r, a * b)
    assert seen == [(5, (0, 0)), (3, (0, 0))]


def test_register_vmap_unbatched_argument_gets_none():
    @L.custom_op("tlx::mul4", mutates_args=())
    def mul4(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return x * y

    L.register_vmap(mul4, _movemul_rule(mul4))
    x, y = ember.randn(4, 3), ember.randn(3)
    assert ember.allclose(ember.vmap(mul4, in_dims=(0, None))(x, y), x * y)


class _SubArray(np.ndarray):
    """The arrays of a device registered on plain NumPy."""


def _to_subdev(a):
    return np.array(a if isinstance(a, np.ndarray) else a.get(), copy=True).view(_SubArray)


@pytest.fixture(scope="module")
def subdev():
    if "subdev" not in ember.library.backends():
        L.register_backend("subdev", np, _SubArray, _to_subdev)
    return "subdev"


@pytest.mark.parametrize("program", ["square_sum", "exp_mean", "softmax", "linear"])
def test_numpy_subclass_device_backward_stays_on_device(subdev, program):
    x = ember.ones(3).to(subdev).requires_grad_()
    y = {"square_sum": lambda: (x * x).sum(),
         "exp_mean": lambda: x.exp().mean(),
         "softmax": lambda: ember.softmax(x, 0)[0],
         "linear": lambda: ember.nn.functional.linear(
             x[None], ember.ones(2, 3).to(subdev)).sum()}[program]()
    y.backward()
    assert y.device.type == subdev and x.grad.device.type == subdev


def test_numpy_subclass_device_trains(subdev):
    ember.manual_seed(0)
    m = ember.nn.Linear(3, 2).to(subdev)
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    x = ember.randn(8, 3).to(subdev)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert m.weight.device.type == subdev and m.weight.grad.device.type == subdev
    assert losses[-1] < losses[0]
