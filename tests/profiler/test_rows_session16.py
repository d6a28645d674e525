"""Rows of a profile read the way PyTorch's read (session 16): ``aten::broadcast_tensors``
before the element-wise losses (and for ``broadcast_tensors`` itself), the losses'
reduction as PyTorch's code, SGD's first momentum step (``grad.detach().clone()``), and
``AccumulateGrad`` keeping a linear layer's weight gradient (``aten::detach``, no copy)
while a profiler records. Also what made a profiled training step cheaper: the gradient
a transposed product leaves is kept, not copied, when nothing else holds its buffer, and
``addmm`` adds the input into its product in place. Comparisons with PyTorch skip without
it; the other checks run either way."""

import cProfile
import sys
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

from .test_rows_session13 import _profile, _same_rows  # noqa: E402
from .test_rows_session15 import _parents, needs_torch  # noqa: E402


# -- broadcast_tensors and the element-wise losses ---------------------------------------------


_LOSS_ROWS = {"aten::broadcast_tensors", "aten::expand", "ExpandBackward0", "aten::mse_loss",
              "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss", "aten::sub"}


def _losses(lib, st):
    F = lib.nn.functional
    x = lib.randn(4, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the size warning of a broadcast target)
        F.mse_loss(x, lib.randn(3)).backward()
        F.mse_loss(x, lib.randn(4, 3), reduction="sum").backward()
        F.l1_loss(x, lib.randn(4, 1)).backward()
        F.l1_loss(x, lib.randn(4, 3), reduction="none").sum().backward()
        F.smooth_l1_loss(x, lib.randn(3), beta=0.5).backward()
        F.smooth_l1_loss(x, lib.randn(3), beta=0.0)
        F.huber_loss(x, lib.randn(1, 3), delta=2.0).backward()


@needs_torch
def test_losses_broadcast_as_torch():
    _same_rows(_losses, None, _LOSS_ROWS)


@needs_torch
def test_losses_reduction_codes_as_torch():
    names = {"aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss"}

    def run(lib):
        return [(e.name, e.input_shapes, e.concrete_inputs)
                for e in _profile(lib, _losses).events() if e.name in names]

    assert run(ember) == run(torch)


def test_losses_expand_only_a_target_of_another_shape():
    prof = _profile(ember, _losses)
    assert _parents(prof, "aten::expand").count("aten::broadcast_tensors") == 5
    assert _parents(prof, "aten::broadcast_tensors") == [None] * 7
    # the input, already of the common shape, stays itself: no node of an expand
    assert "ExpandBackward0" not in {e.name for e in prof.events()}


def test_losses_unchanged_by_the_profiler():
    F = ember.nn.functional
    ember.manual_seed(0)
    x, t = ember.randn(4, 3), ember.randn(4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = [F.mse_loss(x, t), F.l1_loss(x, t, reduction="none"),
                 F.smooth_l1_loss(x, t, beta=0.0), F.huber_loss(x, t, delta=0.5)]
        with ember.profiler.profile():
            seen = [F.mse_loss(x, t), F.l1_loss(x, t, reduction="none"),
                    F.smooth_l1_loss(x, t, beta=0.0), F.huber_loss(x, t, delta=0.5)]
    for a, b in zip(plain, seen):
        assert ember.equal(a, b)


def _broadcast(lib, st):
    a, b = lib.randn(2, 1, requires_grad=True), lib.randn(3)
    x, y = lib.broadcast_tensors(a, b)
    (x * y).sum().backward()
    lib.broadcast_tensors(lib.randn(2, 3), lib.randn(2, 3))


@needs_torch
def test_broadcast_tensors_rows_as_torch():
    _same_rows(_broadcast, None, {"aten::broadcast_tensors", "aten::expand",
                                  "ExpandBackward0"})


# -- SGD's first momentum step ----------------------------------------------------------------


def _sgd_steps(lib, w):
    opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        (w * 2).sum().backward()
        opt.step()


@needs_torch
def test_sgd_momentum_first_step_as_torch():
    _same_rows(_sgd_steps, lambda lib: lib.nn.Parameter(lib.randn(3, 2)),
               {"aten::detach", "detach", "aten::clone", "aten::add_", "aten::mul_"})


def test_sgd_first_buffer_is_a_copy_outside_the_graph():
    w = ember.nn.Parameter(ember.randn(3, 2))
    with ember.profiler.profile() as prof:
        _sgd_steps(ember, w)
    assert _parents(prof, "aten::detach").count("Optimizer.step#SGD.step") == 1
    assert _parents(prof, "detach").count("aten::detach") == 3
    opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = ember.ones(3, 2)
    with ember.profiler.profile():
        opt.step()
    buf = opt.state[w]["momentum_buffer"]
    assert not buf.requires_grad and buf.data_ptr() != w.grad.data_ptr()
    assert ember.equal(buf, ember.ones(3, 2))


# -- AccumulateGrad under the profiler --------------------------------------------------------


def _linear_step(lib, st):
    lin, x3 = st
    lin.zero_grad(set_to_none=True)
    lin(x3).sum().backward()
    lin.zero_grad(set_to_none=True)
    lin(x3[0]).sum().backward()


def _linear(lib):
    return lib.nn.Linear(4, 3), lib.randn(2, 5, 4)


@needs_torch
def test_linear_gradients_kept_as_torch():
    # (PyTorch's ``addmm`` and ``clone`` copy inside: ``aten::copy_`` is checked below)
    _same_rows(_linear_step, _linear, {"aten::detach", "detach", "aten::new_empty_strided",
                                       "torch::autograd::AccumulateGrad"})


def test_linear_gradients_kept_without_a_copy():
    prof = _profile(ember, _linear_step, _linear)
    names = {e.name for e in prof.events()}
    assert "aten::new_empty_strided" not in names and "aten::copy_" not in names
    assert _parents(prof, "aten::detach") == ["torch::autograd::AccumulateGrad"] * 4


def test_linear_gradients_equal_with_and_without_the_profiler():
    ember.manual_seed(0)
    lin, x = _linear(ember)
    lin(x).sum().backward()
    plain = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad(set_to_none=True)
    with ember.profiler.profile():
        lin(x).sum().backward()
    for a, p in zip(plain, lin.parameters()):
        assert ember.allclose(a, p.grad, rtol=1e-6, atol=1e-6)
        assert p.grad.is_contiguous()


class _Held(ember.autograd.Function):
    """Backward returns a transposed view of a buffer someone else keeps."""

    held = None

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        _Held.held = np.ones((g.shape[1], g.shape[0]), np.float32)
        return ember.from_numpy(_Held.held).t()


@pytest.mark.parametrize("profiled", [False, True])
def test_a_gradient_view_of_a_held_buffer_is_copied(profiled):
    x = ember.zeros(2, 3, requires_grad=True)
    if profiled:
        with ember.profiler.profile():
            _Held.apply(x).sum().backward()
    else:
        _Held.apply(x).sum().backward()
    assert not np.shares_memory(x.grad.numpy(), _Held.held)
    x.grad.add_(1)
    assert (_Held.held == 1).all()


def test_a_gradient_view_nothing_else_holds_is_kept():
    w = ember.randn(3, 4, requires_grad=True)
    x = ember.randn(5, 4)
    # (x @ w.t()): the weight's gradient is the transpose of a new product
    (x @ w.t()).sum().backward()
    g = w.grad
    assert g.is_contiguous()
    expected = ember.ones(5, 3).t() @ x
    assert ember.allclose(g, expected, rtol=1e-6, atol=1e-6)


# -- addmm adds into its product --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_addmm_sums_as_before(dtype):
    # the same GEMM, then the same element-wise sum (half precision: both in float32, then
    # rounded once), so the same bits
    ember.manual_seed(0)
    a, b = ember.randn(5, 4, dtype=dtype), ember.randn(4, 3, dtype=dtype)
    wide = ember.float32 if dtype == ember.float16 else dtype
    for c in (ember.randn(3, dtype=dtype), ember.randn(5, 3, dtype=dtype),
              ember.randn(1, 1, dtype=dtype)):
        expected = (c.to(wide) + a.to(wide) @ b.to(wide)).to(dtype)
        assert ember.equal(ember.addmm(c, a, b), expected)
        got = ember.addmm(c, a, b, beta=0.5, alpha=2.0)
        assert got.dtype == dtype and got.shape == (5, 3)
        assert ember.allclose(got, c * 0.5 + (a @ b) * 2.0, rtol=1e-2, atol=1e-2)
    # an input that only broadcasts the other way is not summed in place
    with pytest.raises(RuntimeError):
        ember.addmm(ember.randn(2, 5, 3, dtype=dtype), a, b)


@needs_torch
def test_addmm_against_torch():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (4, 3), (3,)))
    mine = ember.addmm(ember.from_numpy(c), ember.from_numpy(a), ember.from_numpy(b)).numpy()
    theirs = torch.addmm(*(torch.from_numpy(v) for v in (c, a, b))).numpy()
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)


# -- with_stack inside another profiler -------------------------------------------------------


def test_with_stack_gives_the_hook_back_to_cprofile():
    outer = cProfile.Profile()
    outer.enable()
    try:
        with ember.profiler.profile(with_stack=True):
            ember.ones(2) + 1
        back = sys.getprofile()
    finally:
        outer.disable()
    assert back is outer


# -- stack ------------------------------------------------------------------------------------


_STACK_ROWS = {"aten::stack", "aten::cat", "aten::view", "aten::unsqueeze"}


def _stacks(lib, st):
    for shape, dim in (((2, 3), 1), ((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((2, 3), -3),
                       ((3,), -1), ((), 0), ((2, 0), 1), ((3, 1, 2), 1)):
        lib.stack([lib.randn(shape) for _ in range(3)], dim)
    x = lib.randn(2, 3, requires_grad=True)
    lib.stack([x, x * 2], 1).sum().backward()


@needs_torch
def test_stack_rows_as_torch():
    _same_rows(_stacks, None, _STACK_ROWS)


@needs_torch
def test_stack_rows_arguments_as_torch():
    def run(lib):
        return [(e.name, e.input_shapes, e.concrete_inputs)
                for e in _profile(lib, _stacks).events() if e.name in _STACK_ROWS]

    assert run(ember) == run(torch)


@pytest.mark.parametrize("options", [{}, {"record_shapes": True},
                                     {"with_stack": True, "profile_memory": True}])
def test_stack_rows_nest_inside_it(options):
    kw = {"record_shapes": False, **options}
    prof = _profile(ember, _stacks, **kw)
    assert _parents(prof, "aten::cat") == ["aten::stack"] * 10
    assert _parents(prof, "aten::unsqueeze") == ["aten::stack"] * 12
    assert _parents(prof, "aten::view") == ["aten::stack"] * 6
    for e in prof.events():
        if e.cpu_parent is not None and e.cpu_parent.name == "aten::stack":
            assert e.cpu_parent.time_range.start <= e.time_range.start
            assert e.time_range.end <= e.cpu_parent.time_range.end


def test_stack_unchanged_by_the_profiler():
    xs = [ember.randn(2, 3) for _ in range(3)]
    with ember.profiler.profile(record_shapes=True):
        seen = [ember.stack(xs, d) for d in (0, 1, 2, -1)]
    for d, got in zip((0, 1, 2, -1), seen):
        assert ember.equal(got, ember.stack(xs, d))
