"""Rows of a profile read the way PyTorch's read (session 14): ``clip`` around its
``clamp``, ``bool(t)`` as ``aten::is_nonzero``, ``c / t`` as ``reciprocal`` then ``mul``
(with PyTorch's bits), stacks only with ``verbose`` and made of the Python events around an
op, multi-head attention's steps, indexing by whole-dim slices, and the shape ops
``chunk``/``split_with_sizes``/``unflatten``/``squeeze(dim)``/``contiguous``. Comparisons
with PyTorch skip without it; the structure checks run either way."""

import collections

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

from .test_rows_session13 import _profile, _rows, _same_rows  # noqa: E402

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _leaf(lib):
    return lib.randn(4, 3, requires_grad=True)


# -- clip, bool(t) ----------------------------------------------------------------------------


def _clips(lib, x):
    x.clip(-0.5, 0.5)
    lib.clip(x, min=-1)
    lib.clip(x, max=1)
    y = x.detach().clone()
    y.clip_(-1, 1)
    x.clamp(0, 1)


@needs_torch
def test_clip_rows_as_torch():
    _same_rows(_clips, _leaf, {"aten::clip", "aten::clip_", "aten::clamp", "aten::clamp_"})


def test_clip_is_an_event_around_clamp():
    prof = _profile(ember, _clips, _leaf)
    parents = [e.cpu_parent.name if e.cpu_parent else None
               for e in prof.events() if e.name == "aten::clamp"]
    assert parents == ["aten::clip"] * 3 + [None]
    x = ember.tensor([-2.0, 0.5, 3.0])
    assert ember.clip(x, -1, 1).tolist() == [-1.0, 0.5, 1.0]
    assert x.clip(max=0).tolist() == [-2.0, 0.0, 0.0]
    out = ember.empty(3)
    ember.clip(x, 0, 1, out=out)
    assert out.tolist() == [0.0, 0.5, 1.0]
    assert x.clip_(0, 1) is x and x.tolist() == [0.0, 0.5, 1.0]


def _truths(lib, x):
    bool(x.sum() > 0)
    if x[0].sum() > 0:
        pass
    x.sum().item()


@needs_torch
def test_truth_tests_as_is_nonzero_as_torch():
    _same_rows(_truths, _leaf, {"aten::is_nonzero", "aten::item", "aten::_local_scalar_dense",
                                "aten::select", "aten::gt"})


def test_truth_test_nests_the_read():
    prof = _profile(ember, _truths, _leaf)
    names = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()
             if e.name in ("aten::is_nonzero", "aten::item", "aten::_local_scalar_dense")]
    assert names[:3] == [("aten::is_nonzero", None), ("aten::item", "aten::is_nonzero"),
                         ("aten::_local_scalar_dense", "aten::item")]
    with ember.profiler.profile():
        assert bool(ember.tensor([2.0])) and not bool(ember.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value"):
        bool(ember.ones(2))


# -- a number over a tensor -------------------------------------------------------------------


def _number_over(lib, x):
    (2.0 / x).sum().backward()


@needs_torch
def test_number_over_tensor_rows_as_torch():
    _same_rows(_number_over, _leaf, {"aten::reciprocal", "aten::mul", "aten::div",
                                     "aten::neg", "MulBackward0", "ReciprocalBackward0"})


def test_number_over_tensor_is_reciprocal_times_number():
    x = ember.randn(50, requires_grad=True)
    y = 3.0 / x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "ReciprocalBackward0"
    want = x.detach().reciprocal() * 3.0
    assert ember.equal(y.detach(), want)
    assert (1 / ember.tensor([0, 1, 2])).tolist() == [float("inf"), 1.0, 0.5]
    with pytest.raises(TypeError):
        [1, 2] / ember.tensor([1.0, 2.0])


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("c", [2.0, 0.1, 7.3, 3, 1.0])
def test_number_over_tensor_bits_as_torch(dtype, c):
    # two rounded steps, as PyTorch's: the quotient ``c / t`` can differ by one ulp
    g = torch.Generator().manual_seed(1)
    t = torch.randn(2000, generator=g) * 10
    t = t > 0 if dtype == "bool" else t.to(getattr(torch, dtype))
    e = ember.tensor(t.numpy())
    theirs, mine = c / t, c / e
    assert str(mine.dtype) == str(theirs.dtype).replace("torch", "ember")
    assert np.array_equal(mine.numpy().view(np.uint8), theirs.numpy().view(np.uint8))


@needs_torch
def test_number_over_tensor_gradient_bits_as_torch():
    t = torch.randn(300, generator=torch.Generator().manual_seed(2), requires_grad=True)
    e = ember.tensor(t.detach().numpy(), requires_grad=True)
    (0.7 / t).sum().backward()
    (0.7 / e).sum().backward()
    assert np.array_equal(e.grad.numpy(), t.grad.numpy())


# -- stacks -----------------------------------------------------------------------------------


def _nested(lib, x):
    def inner(n):
        if n == 0:
            return x + 1
        return inner(n - 1)

    def outer():
        return inner(3) * 2

    outer()


def _stacks(prof, names=("aten::add", "aten::mul")):
    return [(e.name, e.stack) for e in prof.events() if e.name in names]


@needs_torch
def test_stacks_empty_without_verbose_as_torch(tmp_path):
    for lib in (ember, torch):
        prof = _profile(lib, _nested, lambda lib: lib.ones(3), with_stack=True)
        assert all(e.stack == [] for e in prof.events())
        path = str(tmp_path / "stacks.txt")
        prof.export_stacks(path, "self_cpu_time_total")
        assert open(path).read() == ""
        table = prof.key_averages(group_by_stack_n=5).table()
        assert "Source Location" not in table


@needs_torch
def test_verbose_stacks_are_the_python_events_as_torch():
    def run(lib):
        cfg = lib._C._profiler._ExperimentalConfig(verbose=True)
        prof = _profile(lib, _nested, lambda lib: lib.ones(3), with_stack=True,
                        experimental_config=cfg)
        # the part of each stack inside this file (PyTorch's also has pytest's frames)
        here = __file__.rsplit("/", 1)[1]
        return [(name, [s for s in stack if here in s]) for name, stack in _stacks(prof)]

    mine, theirs = run(ember), run(torch)   # (one line: the test's frame names it)
    assert mine == theirs
    # inner x4, outer, _nested, run, the test (``_profile`` lives in test_rows_session13.py)
    assert [len(s) for _, s in mine] == [8, 4]


def test_verbose_stacks_name_modules_and_functions(tmp_path):
    net = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU())

    def step():
        net(ember.randn(4, 3)).sum().backward()

    cfg = ember._C._profiler._ExperimentalConfig(verbose=True)
    with ember.profiler.profile(with_stack=True, experimental_config=cfg) as prof:
        step()
    linear = next(e for e in prof.events() if e.name == "aten::linear")
    assert linear.stack[:2] == ["nn.Module: Linear_0", "nn.Module: Sequential_0"]
    assert linear.stack[2].endswith("): step")
    path = str(tmp_path / "stacks.txt")
    prof.export_stacks(path, "self_cpu_time_total")
    lines = open(path).read().splitlines()
    assert any(line.split(" ")[0].endswith(";nn.Module:_Sequential_0;nn.Module:_Linear_0")
               for line in lines)
    table = prof.key_averages(group_by_stack_n=2).table(row_limit=-1)
    assert "Source Location" in table


# -- multi-head attention ---------------------------------------------------------------------


_MHA_ROWS = {"aten::linear", "aten::unflatten", "aten::unsqueeze", "aten::squeeze",
             "aten::contiguous", "aten::select", "aten::view", "aten::transpose", "aten::mul",
             "aten::bmm", "aten::baddbmm", "aten::softmax", "aten::_softmax", "aten::mean",
             "aten::zeros_like", "aten::masked_fill_", "aten::split_with_sizes",
             "aten::chunk", "aten::scaled_dot_product_attention", "aten::permute",
             "aten::reshape", "aten::add"}


def _mha(lib):
    kpm = lib.zeros(2, 4, dtype=lib.bool)
    kpm[0, -1] = True
    return (lib.nn.MultiheadAttention(8, 2), lib.nn.MultiheadAttention(8, 2, batch_first=True),
            lib.randn(5, 2, 8), lib.randn(4, 2, 8), kpm,
            lib.triu(lib.ones(5, 4, dtype=lib.bool), 1))


def _attend(lib, st):
    mha, mha_bf, x, m, kpm, am = st
    mha(x, x, x)
    mha(x, m, m, key_padding_mask=kpm, attn_mask=am)
    mha(x, m, m.clone(), need_weights=False)
    mha_bf(x, x, x, average_attn_weights=False)
    mha(x[:, 0], m[:, 0], m[:, 0])


#: where PyTorch lists ops that ember's rows leave out: inside kernels (``t``'s transpose,
#: the attention kernel's) and the reshapes of a 3-d ``matmul`` that folds its batch (the
#: attention output's reshape views it as PyTorch's does since session 15)
_NOT_LISTED = {"aten::t", "aten::_scaled_dot_product_flash_attention_for_cpu",
               "aten::matmul", "aten::reshape"}


@needs_torch
def test_multihead_attention_rows_as_torch():
    with ember.no_grad():
        mine = _rows(_profile(ember, _attend, _mha), _MHA_ROWS)
    with torch.no_grad():
        theirs = _rows(_profile(torch, _attend, _mha), _MHA_ROWS)
    assert not mine - theirs
    assert all(k[2] in _NOT_LISTED for k in theirs - mine)
    assert sum(mine.values()) > 150


@needs_torch
def test_multihead_attention_values_as_torch():
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    mine = ember.nn.MultiheadAttention(8, 2, batch_first=True)
    mine.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x = torch.randn(3, 5, 8, requires_grad=True)
    ex = ember.tensor(x.detach().numpy(), requires_grad=True)
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    for kw in ({}, {"need_weights": False}, {"average_attn_weights": False}):
        o, w = theirs(x, x, x, attn_mask=mask, **kw)
        eo, ew = mine(ex, ex, ex, attn_mask=ember.tensor(mask.numpy()), **kw)
        np.testing.assert_allclose(eo.detach().numpy(), o.detach().numpy(), atol=1e-6)
        if w is not None:
            np.testing.assert_allclose(ew.detach().numpy(), w.detach().numpy(), atol=1e-6)
        o.sum().backward()
        eo.sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), x.grad.numpy(), atol=1e-5)
        x.grad = ex.grad = None


# -- indexing and shape ops -------------------------------------------------------------------


_KEYS = [(slice(None),), (Ellipsis,), (slice(None), 0), (0, slice(None)),
         (slice(None), slice(1, 3)), (Ellipsis, 0), (slice(None), slice(None), 1),
         (slice(0, 4),), (slice(0, 9),), (slice(-4, None),), (slice(None, None, 2),)]


def _index(lib, x):
    for key in _KEYS:
        x[key].sum().backward()
    x[:].sum().backward()   # a bare slice: PyTorch's slice even over the whole dim
    x[0:4].sum().backward()


def _outside_backward_ops(rows):
    # (PyTorch's ``select_backward``/``slice_backward`` run a ``select``/``slice`` inside,
    # which ember's one backward kernel does not)
    return collections.Counter({k: v for k, v in rows.items()
                                if k[2] not in ("aten::select_backward",
                                                "aten::slice_backward")})


@needs_torch
def test_whole_dim_slices_run_no_op_as_torch():
    wanted = {"aten::alias", "aten::select", "aten::slice", "AliasBackward0",
              "SelectBackward0", "SliceBackward0"}
    setup = lambda lib: lib.randn(4, 6, 8, requires_grad=True)  # noqa: E731
    mine = _outside_backward_ops(_rows(_profile(ember, _index, setup), wanted))
    theirs = _outside_backward_ops(_rows(_profile(torch, _index, setup), wanted))
    assert mine == theirs
    assert sum(v for k, v in mine.items() if k[0] == "aten::alias") == 4


def test_whole_dim_slices_keep_values_and_nodes():
    x = ember.arange(24.0).reshape(2, 3, 4).requires_grad_()
    assert type(x[:, 1].grad_fn).__name__ == "SelectBackward0"
    assert type(x[0:2, :].grad_fn).__name__ == "AliasBackward0"
    # a bare slice is always a slice in PyTorch, even over the whole dim
    assert type(x[0:2].grad_fn).__name__ == "SliceBackward0"
    assert type(x[:].grad_fn).__name__ == "SliceBackward0"
    assert type(x[:, 0:2].grad_fn).__name__ == "SliceBackward0"
    assert ember.equal(x[:, 1], x.detach()[:, 1, :])
    x[:, 1].sum().backward()
    assert x.grad[:, 1].eq(1).all() and x.grad.sum().item() == 8


def _shape_ops(lib, x):
    x.chunk(3, 1)
    x.split([2, 4], 1)
    x.split(2, 1)
    x.unflatten(-1, (2, 4))
    x.unsqueeze(-2).squeeze(-2).sum().backward()
    x.transpose(0, 1).contiguous()
    x.contiguous()


@needs_torch
def test_shape_op_rows_as_torch():
    _same_rows(_shape_ops, lambda lib: lib.randn(4, 6, 8, requires_grad=True),
               {"aten::chunk", "aten::split", "aten::split_with_sizes", "aten::unflatten",
                "aten::squeeze", "aten::unsqueeze", "aten::contiguous", "aten::clone",
                "SqueezeBackward1", "UnsqueezeBackward0"})


def test_shape_ops_unchanged_by_the_profiler():
    x = ember.randn(4, 6, 8)
    plain = [x.chunk(3, 1), x.split([2, 4], 1), (x.unflatten(-1, (2, 4)),),
             (x.unsqueeze(-2).squeeze(-2),), (x.transpose(0, 1).contiguous(),)]
    with ember.profiler.profile(record_shapes=True):
        seen = [x.chunk(3, 1), x.split([2, 4], 1), (x.unflatten(-1, (2, 4)),),
                (x.unsqueeze(-2).squeeze(-2),), (x.transpose(0, 1).contiguous(),)]
    for a, b in zip(plain, seen):
        assert len(a) == len(b) and all(ember.equal(p, q) for p, q in zip(a, b))
