"""``ember.func.vmap``: in_dims/out_dims semantics, errors, randomness, nesting and
composition with grad, against PyTorch's ``torch.func.vmap``."""

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH
from tests.func.test_eager_transforms import assert_same, t

if HAS_TORCH:
    import torch
    import torch.func as TF

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_rng = np.random.default_rng(2)
X = _rng.standard_normal((4, 3))
Y = _rng.standard_normal((3, 4))
V = _rng.standard_normal(3)


def check(fn):
    assert_same(fn(ember, EF), fn(torch, TF))


@needs_torch
def test_vmap_default_dims():
    check(lambda T, F: F.vmap(lambda x: x.sin() * x.sum())(t(T, X)))


@needs_torch
def test_vmap_in_dims_none_broadcasts():
    check(lambda T, F: F.vmap(lambda x, v: T.dot(x, v), in_dims=(0, None))(t(T, X), t(T, V)))


@needs_torch
def test_vmap_in_dim_one_and_negative_out_dim():
    check(lambda T, F: F.vmap(lambda x, y: x[:, None] * y, in_dims=(1, 0), out_dims=-1)(
        t(T, Y), t(T, X)))


@needs_torch
def test_vmap_negative_in_dim():
    check(lambda T, F: F.vmap(lambda y: y.cumsum(0), in_dims=-1)(t(T, Y)))


@needs_torch
def test_vmap_nested_dict_in_dims():
    check(lambda T, F: F.vmap(lambda d: d["a"] * d["b"], in_dims=({"a": 0, "b": None},))(
        {"a": t(T, X), "b": t(T, V)}))


@needs_torch
def test_vmap_int_in_dim_applies_to_whole_subtree():
    check(lambda T, F: F.vmap(lambda pair: pair[0] + pair[1], in_dims=(0,))(
        [t(T, X), t(T, X) * 2]))


@needs_torch
def test_vmap_tuple_out_dims_with_none():
    check(lambda T, F: F.vmap(lambda x: (x * 2, 3.0), out_dims=(1, None))(t(T, X)))


@needs_torch
def test_vmap_output_independent_of_batch_expanded():
    def go(T, F):
        c = t(T, V)
        return F.vmap(lambda x: c * 2)(t(T, X))
    check(go)


@needs_torch
def test_vmap_kwargs_not_mapped():
    check(lambda T, F: F.vmap(lambda x, scale=1.0: x * scale)(t(T, X), scale=t(T, V)))


@needs_torch
def test_vmap_nested():
    check(lambda T, F: F.vmap(F.vmap(lambda a, b: a * b, in_dims=(None, 0)), in_dims=(0, None))(
        t(T, V), t(T, X[0])))


@needs_torch
def test_vmap_nested_outer_product_matrix():
    check(lambda T, F: F.vmap(F.vmap(T.dot, in_dims=(None, 0)), in_dims=(0, None))(
        t(T, X), t(T, Y.T)))


@needs_torch
def test_vmap_of_grad_per_sample():
    check(lambda T, F: F.vmap(F.grad(lambda w, x: (w * x).sin().sum()), in_dims=(None, 0))(
        t(T, V), t(T, X)))


@needs_torch
def test_grad_of_vmap():
    check(lambda T, F: F.grad(lambda w: F.vmap(lambda x: (w * x).sum().exp())(t(T, X)).sum())(
        t(T, V)))


@needs_torch
def test_vmap_of_jacrev():
    check(lambda T, F: F.vmap(F.jacrev(lambda x: x.sin() * x[0]))(t(T, X)))


@needs_torch
def test_vmap_zero_batch():
    check(lambda T, F: F.vmap(lambda x: x * 2)(T.zeros(0, 3, dtype=T.float64)))


def test_vmap_is_differentiable():
    x = ember.tensor(X, requires_grad=True)
    EF.vmap(lambda r: (r ** 2).sum())(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)


def test_vmap_randomness_error_raises():
    with pytest.raises(RuntimeError, match="called random operation while in randomness error "
                                           "mode"):
        EF.vmap(lambda x: x + ember.rand(()))(ember.zeros(3))


def test_vmap_randomness_error_leaves_generator_untouched():
    state = ember.get_rng_state()
    with pytest.raises(RuntimeError):
        EF.vmap(lambda x: x + ember.rand(()))(ember.zeros(3))
    assert ember.equal(state, ember.get_rng_state())


def test_vmap_randomness_same():
    out = EF.vmap(lambda x: x + ember.rand(()), randomness="same")(ember.zeros(3))
    assert out[0].item() == out[1].item() == out[2].item()


def test_vmap_randomness_different():
    out = EF.vmap(lambda x: x + ember.rand(()), randomness="different")(ember.zeros(3))
    assert len(set(out.tolist())) == 3


def test_vmap_randomness_invalid():
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', "
                                           "'different', or 'same'. Got foo"):
        EF.vmap(lambda x: x, randomness="foo")


def test_vmap_chunk_size_invalid():
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        EF.vmap(lambda x: x, chunk_size=0)


def test_vmap_chunk_size_same_result():
    assert EF.vmap(lambda x: x * 2, chunk_size=2)(ember.ones(3)).tolist() == [2.0] * 3


def test_vmap_inconsistent_batch_sizes():
    with pytest.raises(ValueError, match=r"got sizes \[2, 3\] for the mapped dimension"):
        EF.vmap(lambda x, y: x * y)(ember.ones(2), ember.ones(3))


def test_vmap_in_dims_list_rejected():
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially "
                                         "nested\\) tuple"):
        EF.vmap(lambda x, y: x, in_dims=[0, 0])(ember.ones(2), ember.ones(2))


def test_vmap_in_dims_structure_mismatch():
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of "
                                         "`inputs`"):
        EF.vmap(lambda x, y: x, in_dims=(0,))(ember.ones(2), ember.ones(2))


def test_vmap_all_in_dims_none():
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        EF.vmap(lambda x: x, in_dims=(None,))(ember.ones(2))


def test_vmap_in_dim_out_of_range():
    with pytest.raises(ValueError, match="Got in_dim=2 for some input, but that input is a "
                                         "Tensor of dimensionality 2"):
        EF.vmap(lambda x: x, in_dims=2)(ember.ones(2, 3))


def test_vmap_in_dim_on_non_tensor():
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        EF.vmap(lambda x: x)(3.0)


def test_vmap_in_dim_not_int():
    with pytest.raises(ValueError, match="in_dim must be either an integer dimension or None"):
        EF.vmap(lambda x: x, in_dims=(1.0,))(ember.ones(2))


def test_vmap_no_inputs():
    with pytest.raises(ValueError, match="got no inputs"):
        EF.vmap(lambda: ember.ones(2))()


def test_vmap_non_tensor_output():
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'float'>"):
        EF.vmap(lambda x: 3.0)(ember.ones(2))


def test_vmap_out_dims_structure_mismatch():
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of "
                                         "`outputs`"):
        EF.vmap(lambda x: x, out_dims=(0, 0))(ember.ones(2))


def test_vmap_out_dims_none_batched_output():
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        EF.vmap(lambda x: x, out_dims=None)(ember.arange(3.0))


def test_vmap_out_dims_bad_type():
    with pytest.raises(ValueError, match="`out_dims` must be an int, None or a python "
                                         "collection of ints"):
        EF.vmap(lambda x: x, out_dims=1.0)(ember.ones(2))


def test_per_sample_grads_leave_no_reference_cycles():
    # results (and the per-example gradients they hold) are freed as soon as they are
    # dropped, not at the next garbage collection
    import gc

    w = ember.randn(4, 3, requires_grad=True)

    def loss(w, x):
        return ember.nn.functional.linear(x, w).relu().sum()

    f = EF.vmap(EF.grad(loss), in_dims=(None, 0))
    x = ember.randn(5, 3)
    f(w, x)
    gc.collect()
    gc.disable()
    try:
        f(w, x)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_vmap_input_mapped_over_dim_zero_writes_through():
    # the mapped input is the physical tensor itself: in-place writes reach it, as in torch
    x = ember.zeros(3, 2)
    EF.vmap(lambda r: r.add_(1))(x)
    assert x.sum().item() == 6
