"""Custom autograd.Function."""

import pytest

import ember
from ember.autograd import Function, once_differentiable
from tests.conftest import HAS_TORCH


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def ones(*n):
    return ember.ones(*n, dtype=ember.float64)


class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale=1.0):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


class MulSetup(Function):
    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y = inputs
        ctx.save_for_backward(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy


def test_forward_backward_and_name():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.backward(ones(2))
    assert x.grad.tolist() == [6.0, 24.0]


def test_setup_context_and_needs_input_grad():
    x, y = leaf([2.0]), ember.tensor([3.0], dtype=ember.float64)
    z = MulSetup.apply(x, y)
    assert z.grad_fn.needs_input_grad == (True, False)
    z.backward(ones(1))
    assert x.grad.tolist() == [3.0]


def test_no_grad_inputs_give_plain_output():
    z = Cube.apply(ember.ones(2, dtype=ember.float64))
    assert z.grad_fn is None and not z.requires_grad


def test_forward_runs_without_recording():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mode = ember.is_grad_enabled()
            y = x * 2
            ctx.inner_rg = y.requires_grad
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0])
    y = F.apply(x)
    assert y.grad_fn.mode is False and y.grad_fn.inner_rg is False


def test_saved_tensors_version_checked():
    x = leaf([1.0])
    h = x * 1
    y = Cube.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(ones(1))


def test_saved_tensors_freed():
    x = leaf([1.0])
    y = Cube.apply(x)
    y.backward(ones(1))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward(ones(1))


def test_mark_dirty():
    class AddOne_(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    h = x * 2
    out = AddOne_.apply(h)
    assert out is h and h.grad_fn.name() == "AddOne_Backward"
    (h * 3).backward(ones(1))
    assert x.grad.tolist() == [6.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOne_.apply(leaf([1.0]))


def test_mark_non_differentiable_and_materialize_grads():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = ember.tensor([1.0, 0.0], dtype=ember.float64)
            ctx.mark_non_differentiable(idx)
            return x * 1, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            ctx.got = g_idx
            return g

    x = leaf([1.0, 2.0])
    v, idx = SortLike.apply(x)
    assert v.requires_grad and not idx.requires_grad
    v.backward(ones(2))
    assert v.grad_fn.got.tolist() == [0.0, 0.0]  # materialized zeros

    class NoMat(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.got = (g1 is None, g2 is None)
            return g1 if g1 is not None else g2

    x = leaf([1.0])
    a, b = NoMat.apply(x)
    b.backward(ones(1))
    assert b.grad_fn.got == (True, False)


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(leaf([1.0]), leaf([2.0])).backward(ones(1))


def test_double_backward_through_function():
    x = leaf([2.0])
    y = Cube.apply(x)
    (g,) = ember.autograd.grad(y, x, ones(1), create_graph=True)
    assert g.tolist() == [12.0]
    (gg,) = ember.autograd.grad(g, x, ones(1))
    assert gg.tolist() == [12.0]  # 6x


def test_once_differentiable():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not ember.is_grad_enabled()
            return g * 2 * x

    x = leaf([3.0])
    y = Once.apply(x)
    (g,) = ember.autograd.grad(y, x, ones(1), create_graph=True)
    assert g.tolist() == [6.0] and not g.requires_grad  # as torch: grad_output needs no grad
    v = ones(1).requires_grad_()
    y = Once.apply(x)
    (g,) = ember.autograd.grad(y, x, v, create_graph=True)
    assert g.grad_fn.name() == "torch::autograd::Error"  # as torch names its C++ node
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.backward(ones(1))


def test_non_tensor_args_and_returned_input():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x, k, name="n"):
            ctx.k = k
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf([1.0])
    y = Ident.apply(x, 5)
    assert y is not x and y.grad_fn.name() == "IdentBackward"
    y.backward(ones(1))
    assert x.grad.tolist() == [5.0]


def test_gradcheck_on_function():
    x = leaf([0.5, -1.5])
    assert ember.autograd.gradcheck(lambda t: Cube.apply(t, 3.0), (x,))
    assert ember.autograd.gradgradcheck(lambda t: Cube.apply(t, 3.0), (x,))


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_function_matches_torch():
    import torch

    def define(m):
        class Sq(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        return Sq

    res = []
    for m in (ember, torch):
        x = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
        y = define(m).apply(x)
        res.append(y.grad_fn.name())
        (y * 3).backward(m.ones(2, dtype=m.float64))
        res.append(x.grad.tolist())
    assert res[:2] == res[2:]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_function_node_repr_as_torch():
    # a custom Function's node prints as the Python object torch makes (module first),
    # unlike the built-in nodes (``<MulBackward0 object at 0x...>``)
    import torch

    def shape_of(m):
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = m.ones(2, requires_grad=True)
        fn_repr, op_repr = repr(Twice.apply(x).grad_fn), repr((x * 2).grad_fn)
        return fn_repr.rsplit(" at ", 1)[0], op_repr.rsplit(" at ", 1)[0]

    assert shape_of(ember) == shape_of(torch)
    assert shape_of(ember)[0] == "<torch.autograd.function.TwiceBackward object"
