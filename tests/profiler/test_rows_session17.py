"""Rows of a profile read the way PyTorch's read (session 17): ``matmul`` of stacks, vectors
and a matrix times a stack as PyTorch's composite (``aten::reshape``, ``aten::mm``/
``aten::bmm``, ``aten::_unsafe_view``, ``aten::expand``, and their nodes in backward), the
``.mT``/``.mH``/``.T`` properties' own events, ``reshape``'s ``ReshapeAliasBackward0`` node,
``stack``'s backward as one ``aten::select`` per input, ``mean`` as ``aten::sum`` and
``aten::div_``, and the unsqueezes of a reduction's gradient. Comparisons with PyTorch skip
without it; the other checks run either way."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

from .test_rows_session13 import _profile, _rows, _same_rows  # noqa: E402
from .test_rows_session15 import _parents, needs_torch  # noqa: E402

#: PyTorch's rows that ember's kernels do not run as ops (allocations, copies inside a
#: kernel, the views PyTorch takes by strides where ember's gradient is contiguous)
_INTERNAL = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::as_strided",
             "aten::as_strided_", "aten::resolve_conj", "aten::clone", "aten::copy_",
             "aten::view", "aten::_reshape_alias", "aten::transpose", "aten::detach",
             "detach", "aten::new_empty_strided", "aten::addmv_", "aten::fill_",
             "aten::zero_", "aten::ones_like", "aten::to", "aten::_to_copy",
             "aten::normal_"}


def _all_rows(prof):
    return {k: n for k, n in _rows(prof, {e.name for e in prof.events()}).items()
            if k[0] not in _INTERNAL and k[2] not in _INTERNAL}


def _same_all_rows(fn, setup=None):
    mine = _all_rows(_profile(ember, fn, setup))
    theirs = _all_rows(_profile(torch, fn, setup))
    assert mine == theirs
    assert mine
    return mine


# -- matmul as PyTorch composes it ------------------------------------------------------------

#: (shape of a, shape of b, a needs grad, b needs grad); PyTorch folds, expands or squeezes by
#: these (``_matmul_impl``)
_PRODUCTS = [((2, 3, 4), (4, 5), True, True), ((2, 3, 4), (4, 5), False, True),
             ((2, 3, 4), (2, 4, 5), True, True), ((3, 2, 3, 4), (4, 2), True, False),
             ((3, 2, 3, 4), (3, 1, 4, 2), True, True), ((3, 4), (2, 4, 5), True, True),
             ((3, 4), (2, 4, 5), False, True), ((1, 3, 4), (2, 4, 5), True, True),
             ((2, 3, 4), (1, 4, 5), True, True), ((4,), (4, 5), True, True),
             ((4,), (2, 4, 5), False, True), ((2, 3, 4), (4,), False, False)]


def _product(sa, sb, ga, gb):
    def setup(lib):
        rng = np.random.default_rng(0)
        a = lib.tensor(rng.standard_normal(sa).astype(np.float32), requires_grad=ga)
        b = lib.tensor(rng.standard_normal(sb).astype(np.float32), requires_grad=gb)
        w = lib.tensor(rng.standard_normal(256).astype(np.float32))
        return a, b, w

    def fn(lib, st):
        a, b, w = st
        r = a @ b
        if r.requires_grad:
            (r * w[:r.numel()].view(tuple(r.shape))).sum().backward()

    return fn, setup


@needs_torch
@pytest.mark.parametrize("sa,sb,ga,gb", _PRODUCTS)
def test_matmul_rows_as_torch(sa, sb, ga, gb):
    fn, setup = _product(sa, sb, ga, gb)
    _same_all_rows(fn, setup)


@needs_torch
@pytest.mark.parametrize("sa,sb,ga,gb", _PRODUCTS)
def test_matmul_node_names_as_torch(sa, sb, ga, gb):
    names = []
    for lib in (ember, torch):
        a = lib.ones(sa, requires_grad=ga)
        b = lib.ones(sb, requires_grad=gb)
        r = a @ b
        names.append(type(r.grad_fn).__name__ if r.grad_fn is not None else None)
    assert names[0] == names[1]


def test_matmul_of_stacks_nests_pytorch_steps():
    fn, setup = _product((2, 3, 4), (2, 4, 5), True, True)
    prof = _profile(ember, fn, setup)
    assert _parents(prof, "aten::bmm")[0] == "aten::matmul"
    assert _parents(prof, "aten::_unsafe_view") == ["aten::matmul"]
    assert _parents(prof, "aten::expand")[:2] == ["aten::matmul"] * 2
    nodes = {e.name for e in prof.events()}
    assert {"BmmBackward0", "UnsafeViewBackward0", "ExpandBackward0"} <= nodes


@pytest.mark.parametrize("sa,sb,ga,gb", _PRODUCTS)
def test_matmul_values_and_gradients_unchanged_by_the_profiler(sa, sb, ga, gb):
    fn, setup = _product(sa, sb, ga, gb)
    got = []
    for profiled in (False, True):
        a, b, w = setup(ember)
        if profiled:
            with ember.profiler.profile(record_shapes=True):
                r = a @ b
                fn(ember, (a, b, w))
        else:
            r = a @ b
            fn(ember, (a, b, w))
        got.append((r, a.grad, b.grad, type(r.grad_fn).__name__ if ga or gb else None))
    for x, y in zip(got[0][:3], got[1][:3]):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-5,
                                       atol=1e-5)
    assert got[0][3] == got[1][3]


def test_matmul_folded_product_is_bitwise_unchanged_by_the_profiler():
    # a stack times a matrix: the same GEMM over all rows either way
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8, 16)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)
    out = []
    for profiled in (False, True):
        a, b = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
        if profiled:
            with ember.profiler.profile():
                r = a @ b
                (r * r).sum().backward()
        else:
            r = a @ b
            (r * r).sum().backward()
        out.append((r.detach().numpy(), a.grad.numpy(), b.grad.numpy()))
    for p, q in zip(*out):
        assert np.array_equal(p, q)


def test_matmul_with_out_keeps_one_kernel():
    a, b = ember.randn(2, 3, 4), ember.randn(4, 5)
    out = ember.empty(2, 3, 5)
    with ember.profiler.profile() as prof:
        ember.matmul(a, b, out=out)
    assert [e.name for e in prof.events()] == ["aten::matmul", "aten::mm"]
    assert ember.allclose(out, a @ b)


def test_matmul_under_a_user_mode_keeps_one_op():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b = ember.randn(2, 3, 4), ember.randn(4, 5)
    with ember.profiler.profile():
        with Names():
            r = a @ b
    assert ember.allclose(r, a @ b)
    assert not any("_unsafe_view" in s for s in seen)


# -- properties, reshape's node ---------------------------------------------------------------


def _properties(lib, st):
    x = lib.randn(2, 4, 3, requires_grad=True)
    y = lib.randn(4, 3, requires_grad=True)
    (x.mT.sum() + x.mH.sum() + y.T.sum() + y.H.sum()).backward()


@needs_torch
def test_transpose_properties_rows_as_torch():
    _same_all_rows(_properties)


@needs_torch
def test_reshape_alias_node_as_torch():
    def names(lib):
        a = lib.randn(2, 4, 3, requires_grad=True)
        b = lib.randn(4, 3, requires_grad=True)
        c = lib.randn(2, 3, 4, requires_grad=True)[:, :, :2]
        return [type(t.grad_fn).__name__ for t in (
            a.mT.reshape(2, 3, 4), b.t().reshape(3, 4), b.t().reshape(12),
            c.reshape(6, 2), c.flatten(), a.reshape(24), a.mT.flatten(0, 1))]

    assert names(ember) == names(torch)


def _reshape_alias(lib, st):
    c = lib.randn(2, 3, 4, requires_grad=True)
    (c[:, :, :2].reshape(6, 2) * 2).sum().backward()


@needs_torch
def test_reshape_alias_backward_rows_as_torch():
    _same_rows(_reshape_alias, None, {
        "ReshapeAliasBackward0", "aten::reshape",
        "autograd::engine::evaluate_function: ReshapeAliasBackward0"})


# -- stack's backward, mean, reductions' gradients --------------------------------------------


def _stacks(lib, st):
    xs = [lib.randn(3, 2, requires_grad=True) for _ in range(3)]
    lib.stack(xs).sum().backward()
    lib.stack(xs, dim=-1).sum().backward()
    lib.stack(xs, dim=1).sum().backward()
    lib.stack(xs[:2], dim=-2).sum().backward()


@needs_torch
def test_stack_backward_selects_as_torch():
    _same_all_rows(_stacks)

    def selects(lib):
        return [(e.input_shapes, e.concrete_inputs) for e in _profile(lib, _stacks).events()
                if e.name == "aten::select"]

    assert selects(ember) == selects(torch)


@pytest.mark.parametrize("options", [{}, {"record_shapes": True}, {"profile_memory": True}])
def test_stack_backward_one_select_per_input(options):
    with ember.profiler.profile(**options) as prof:
        _stacks(ember, None)
    assert _parents(prof, "aten::select") == ["StackBackward0"] * 11
    assert "aten::unbind" not in {e.name for e in prof.events()}


def _means(lib, st):
    x = lib.randn(2, 3, 4, requires_grad=True)
    # (one reduction per backward: PyTorch's engine adds two gradients of an expanded
    # layout out of place, where ember's are contiguous)
    for y in (x.mean(-1), x.mean((1, 2)), x.mean(dim=1, keepdim=True), x.mean(),
              x.sum((0, 2)), x.sum(1)):
        y.sum().backward()
    x.mean(0, dtype=lib.float64)


@needs_torch
def test_mean_and_reduction_gradients_as_torch():
    _same_all_rows(_means)


def test_mean_is_sum_and_div_inside_its_event():
    prof = _profile(ember, _means)
    assert _parents(prof, "aten::div_") == ["aten::mean"] * 5
    assert _parents(prof, "aten::sum").count("aten::mean") == 5
    mean = next(e for e in prof.events() if e.name == "aten::mean")
    inner = next(e for e in prof.events() if e.name == "aten::sum")
    assert mean.time_range.start <= inner.time_range.start <= inner.time_range.end <= \
        mean.time_range.end


def test_mean_and_its_gradient_unchanged_by_the_profiler():
    x = ember.randn(2, 3, 4, requires_grad=True)
    plain = x.mean((0, 2))
    plain.sum().backward()
    g = x.grad.clone()
    x.grad = None
    with ember.profiler.profile(record_shapes=True):
        seen = x.mean((0, 2))
        seen.sum().backward()
    assert ember.equal(plain, seen) and ember.equal(g, x.grad)


# -- batch norm's inputs ----------------------------------------------------------------------


def _batch_norms(lib, st):
    x = lib.randn(2, 4, 3, 3, requires_grad=True)
    lib.nn.BatchNorm2d(4)(x).sum().backward()
    lib.nn.BatchNorm1d(4, affine=False, track_running_stats=False)(x[:, :, 0, 0]).sum() \
        .backward()
    lib.nn.functional.batch_norm(x, None, None, training=True, momentum=0.3, eps=1e-3).sum() \
        .backward()


@needs_torch
def test_batch_norm_inputs_as_torch():
    names = {"aten::batch_norm", "aten::_batch_norm_impl_index", "aten::native_batch_norm",
             "aten::native_batch_norm_backward"}

    def run(lib):
        return [(e.name, e.input_shapes, e.concrete_inputs)
                for e in _profile(lib, _batch_norms).events() if e.name in names]

    mine = run(ember)
    assert mine == run(torch)
    assert len(mine) == 12


def test_batch_norm_backward_lists_running_statistics():
    prof = _profile(ember, _batch_norms)
    shapes = [e.input_shapes for e in prof.events()
              if e.name == "aten::native_batch_norm_backward"]
    assert [s[3:7] for s in shapes] == [[[4]] * 4, [[], [], [4], [4]], [[], [], [4], [4]]]


# -- the Python tracer sleeps through ember's own code ----------------------------------------


class _Twice(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return _user_helper(g)


def _user_helper(g):
    return g * 2


def _after_step():
    return 1


def _traced_program():
    w = ember.nn.Parameter(ember.randn(3))
    opt = ember.optim.SGD([w], lr=0.1)
    x = w * 1
    x.register_hook(lambda g: _user_helper(g))
    (_Twice.apply(x) + w.sin()).sum().backward()
    opt.step()

    def closure():
        opt.zero_grad()
        loss = _user_helper(w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    _after_step()


def test_user_code_inside_backward_and_steps_still_traced():
    with ember.profiler.profile(with_stack=True) as prof:
        _traced_program()
    names = [e.name for e in prof.events()]
    helper = [n for n in names if n.endswith(": _user_helper")]
    # the tensor hook's and the Function's backward calls, and the closure's
    assert len(helper) == 3
    assert any(n.endswith(": backward") for n in names)
    assert any(n.endswith(": closure") for n in names)
    assert any(n.endswith(": _after_step") for n in names)
    assert any(n.startswith("Optimizer.step#SGD.step") for n in names)


def test_tracer_hook_back_after_backward_and_step():
    import sys

    w = ember.nn.Parameter(ember.randn(3))
    opt = ember.optim.SGD([w], lr=0.1)
    with ember.profiler.profile(with_stack=True) as prof:
        hook = sys.getprofile()
        (w * w).sum().backward()
        assert sys.getprofile() is hook
        opt.step()
        assert sys.getprofile() is hook
        w + 1
        assert sys.getprofile() is hook
    assert sys.getprofile() is None
    # (the user's own C calls are events, and the user's call of ``sum`` as PyTorch's C
    # call; none of ember's leak in)
    assert {e.name.split(" at 0x")[0] for e in prof.events()
            if e.name.startswith("<built-in")} == \
        {"<built-in function getprofile>", "<built-in method sum of Tensor object"}


# -- attention with a boolean mask ------------------------------------------------------------


def _attention(lib, st):
    F = lib.nn.functional
    q, k, v = (lib.randn(2, 3, 4, 8, requires_grad=True) for _ in range(3))
    m = lib.ones(4, 4, dtype=lib.bool).tril()
    F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum().backward()
    F.scaled_dot_product_attention(q, k, v, attn_mask=m.float()).sum().backward()
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()


@needs_torch
def test_attention_boolean_mask_rows_as_torch():
    names = {"aten::scaled_dot_product_attention", "aten::where", "aten::scalar_tensor",
             "aten::_scaled_dot_product_flash_attention_for_cpu",
             "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}

    def run(lib):
        return [(e.name, e.input_shapes, e.concrete_inputs,
                 e.cpu_parent.name if e.cpu_parent else None)
                for e in _profile(lib, _attention).events() if e.name in names]

    mine = run(ember)
    assert mine == run(torch)
    assert [r[0] for r in mine].count("aten::where") == 2


def test_attention_boolean_mask_unchanged_by_the_profiler():
    F = ember.nn.functional
    q = ember.randn(2, 3, 4, 8)
    m = ember.ones(4, 4, dtype=ember.bool).tril()
    plain = F.scaled_dot_product_attention(q, q, q, attn_mask=m)
    with ember.profiler.profile(record_shapes=True) as prof:
        seen = F.scaled_dot_product_attention(q, q, q, attn_mask=m)
    assert ember.equal(plain, seen)
    assert _parents(prof, "aten::where") == ["aten::scaled_dot_product_attention",
                                            "aten::where"]


# -- recurrent layers -------------------------------------------------------------------------


def _recurrent(lib, st):
    for mode in ("LSTM", "GRU", "RNN"):
        m = getattr(lib.nn, mode)(4, 5, batch_first=True)
        m(lib.randn(2, 3, 4))[0].sum().backward()
    lib.nn.LSTM(4, 5)(lib.randn(3, 4))


@needs_torch
def test_recurrent_cudnn_check_rows_as_torch():
    from .test_rows_session13 import _same_rows

    _same_rows(_recurrent, None, {"aten::cudnn_is_acceptable"})


@pytest.mark.parametrize("options", [{}, {"record_shapes": True}, {"with_stack": True}])
def test_recurrent_cudnn_check_inside_the_op(options):
    with ember.profiler.profile(**options) as prof:
        _recurrent(ember, None)
    assert _parents(prof, "aten::cudnn_is_acceptable") == \
        ["aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::lstm"]
    prof.key_averages().table()
