"""ember.library's smaller names: get_kernel, register_vmap, get_ctx, triton_op, EffectType."""

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
