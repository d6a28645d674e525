"""Rows of a profile read the way PyTorch's read (session 13): the engine's gradient sums
beside the node's event, ``.item()``, one-sided ``clamp``, adaptive average pooling (global
and windowed) and its backward, the pooling and convolution backward ops, the foreach ops
of ``clip_grad_norm_``, and ``[memory]`` events for memory outside every op. Comparisons
with PyTorch skip without it; the structure checks run either way."""

import collections
import math

import pytest

import ember

try:
    import torch
except ImportError:  # the structure checks below still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

def _parent(prof, name):
    return [e.cpu_parent.name if e.cpu_parent is not None else None
            for e in prof.events() if e.name == name]


def _profile(lib, fn, setup=None, **kw):
    lib.manual_seed(0)
    state = setup(lib) if setup is not None else None
    kw.setdefault("record_shapes", True)
    with lib.profiler.profile(**kw) as prof:
        fn(lib, state)
    return prof


def _rows(prof, wanted):
    """{(name, input shapes, parent's name): count} of the events named in ``wanted``."""
    return collections.Counter(
        (e.name, str(e.input_shapes), e.cpu_parent.name if e.cpu_parent else None)
        for e in prof.events() if e.name in wanted)


def _same_rows(fn, setup, wanted, **kw):
    """The rows named in ``wanted`` of ``fn``'s profile, in ember and in PyTorch, are the
    same (the ops PyTorch runs inside a kernel that ember runs as one are left out)."""
    mine = _rows(_profile(ember, fn, setup, **kw), wanted)
    theirs = _rows(_profile(torch, fn, setup, **kw), wanted)
    assert mine == theirs
    assert mine   # (the comparison saw rows)
    return mine


# -- gradient sums to an input's shape -------------------------------------------------------


def _broadcast_add(lib, st):
    a, b = st
    (a + b).sum().backward()


def _two_tensors(lib):
    return lib.randn(4, 3, requires_grad=True), lib.randn(3, requires_grad=True)


@needs_torch
def test_sum_to_rows_beside_the_node_as_torch():
    _same_rows(_broadcast_add, _two_tensors, {"aten::sum", "aten::view", "AddBackward0"})


def _expand(lib, x):
    x.expand(4, 3).sum().backward()


@needs_torch
def test_expand_sums_inside_its_node_as_torch():
    # ExpandBackward0's formula is the sum itself (not the engine's): the row stays inside
    _same_rows(_expand, lambda lib: lib.randn(1, 3, requires_grad=True),
               {"aten::sum", "ExpandBackward0"})


def test_sum_to_rows_inside_evaluate_function():
    prof = _profile(ember, _broadcast_add, _two_tensors)
    assert _parent(prof, "aten::sum")[-1] == \
        "autograd::engine::evaluate_function: AddBackward0"
    assert _parent(prof, "aten::view") == ["autograd::engine::evaluate_function: AddBackward0"]
    node = next(e for e in prof.events() if e.name == "AddBackward0")
    total = next(e for e in prof.events() if e.name == "aten::view")
    assert node.time_range.end <= total.time_range.start


def test_sum_to_gradient_unchanged_by_the_profiler():
    ember.manual_seed(0)
    a, b = _two_tensors(ember)
    (a + b).sum().backward()
    plain = b.grad.clone()
    b.grad = None
    with ember.profiler.profile():
        (a + b).sum().backward()
    assert ember.equal(plain, b.grad)


# -- item, clamp ------------------------------------------------------------------------------


def _item(lib, st):
    x = lib.randn(3)
    x.sum().item()
    float(x[0])


@needs_torch
def test_item_rows_as_torch():
    _same_rows(_item, None, {"aten::item", "aten::_local_scalar_dense"})


def test_item_is_one_event_around_the_read():
    prof = _profile(ember, _item)
    assert _parent(prof, "aten::_local_scalar_dense") == ["aten::item"] * 2
    x = ember.tensor([2.5])
    with ember.profiler.profile():
        assert x.item() == 2.5
    assert x.item() == 2.5


def _clamps(lib, st):
    x = lib.randn(3, requires_grad=True)
    y = x.clamp(max=0.5) + x.clamp(min=0.1) + x.clamp_min(0.2) + x.clamp(-1, 1) + \
        lib.clamp(x, max=0.3) + x.clamp_max(0.4)
    y.sum().backward()
    with lib.no_grad():
        x.clamp_(max=2.0)
        x.clamp_min_(-2.0)


@needs_torch
def test_clamp_names_as_torch():
    _same_rows(_clamps, None, {"aten::clamp", "aten::clamp_min", "aten::clamp_max",
                               "aten::clamp_", "aten::clamp_min_", "ClampBackward1",
                               "ClampMinBackward0", "ClampMaxBackward0"})


def test_one_sided_clamp_values_unchanged_by_the_profiler():
    x = ember.randn(50)
    plain = [x.clamp(max=0.3), x.clamp(min=-0.2)]
    with ember.profiler.profile():
        profiled = [x.clamp(max=0.3), x.clamp(min=-0.2)]
    assert all(ember.equal(a, b) for a, b in zip(plain, profiled))


# -- pooling and convolution ------------------------------------------------------------------


def _pools(lib, x):
    F = lib.nn.functional
    F.adaptive_avg_pool2d(x, (1, 1)).sum().backward()
    F.adaptive_avg_pool2d(x, 2).sum().backward()
    F.max_pool2d(x, 2).sum().backward()


def _pool_input(lib):
    return lib.randn(2, 3, 4, 4, requires_grad=True)


@needs_torch
def test_pool_rows_as_torch():
    _same_rows(_pools, _pool_input, {
        "aten::adaptive_avg_pool2d", "aten::mean", "aten::_adaptive_avg_pool2d",
        "aten::max_pool2d", "aten::max_pool2d_with_indices", "MeanBackward1",
        "aten::expand", "aten::div", "AdaptiveAvgPool2DBackward0",
        "aten::_adaptive_avg_pool2d_backward", "MaxPool2DWithIndicesBackward0",
        "aten::max_pool2d_with_indices_backward"})


def test_global_average_pool_is_a_mean():
    prof = _profile(ember, _pools, _pool_input)
    assert _parent(prof, "aten::mean") == ["aten::adaptive_avg_pool2d"]
    assert _parent(prof, "aten::_adaptive_avg_pool2d") == ["aten::adaptive_avg_pool2d"]
    assert _parent(prof, "aten::_adaptive_avg_pool2d_backward") == \
        ["AdaptiveAvgPool2DBackward0"]
    assert _parent(prof, "aten::max_pool2d_with_indices_backward") == \
        ["MaxPool2DWithIndicesBackward0"]
    assert _parent(prof, "aten::div") == ["MeanBackward1"]


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (1, 2, 3, 5, 2), (3, 7, 7)])
def test_global_average_pool_gradient(shape):
    # the mean's gradient (spread, divided by the plane's size) against PyTorch's when
    # installed, else against the windowed kernel's (a 1x1 output pools the whole plane)
    nd = 3 if len(shape) == 5 else 2
    pool = getattr(ember.nn.functional, f"adaptive_avg_pool{nd}d")
    x = ember.randn(*shape, dtype=ember.float64, requires_grad=True)
    g = ember.randn(*(shape[:-nd] + (1,) * nd), dtype=ember.float64)
    pool(x, 1).backward(g)
    assert x.grad.shape == x.shape
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        getattr(torch.nn.functional, f"adaptive_avg_pool{nd}d")(tx, 1).backward(
            torch.tensor(g.numpy()))
        assert (x.grad.numpy() == tx.grad.numpy()).all()
    else:
        expected = g.expand(x.shape) / math.prod(shape[-nd:])
        assert ember.allclose(x.grad, expected)


def _conv(lib, st):
    conv, x = st
    conv(x).sum().backward()


def _conv_setup(lib):
    return lib.nn.Conv2d(3, 4, 3), lib.randn(2, 3, 8, 8)


@needs_torch
def test_conv_backward_rows_as_torch():
    _same_rows(_conv, _conv_setup, {"ConvolutionBackward0", "aten::convolution_backward",
                                     "aten::sum", "aten::convolution_weight_grad"})


def test_conv_backward_is_one_event():
    prof = _profile(ember, _conv, _conv_setup)
    ev = next(e for e in prof.events() if e.name == "aten::convolution_backward")
    assert ev.cpu_parent.name == "ConvolutionBackward0" and not ev.cpu_children
    assert ev.input_shapes[:3] == [[2, 4, 6, 6], [2, 3, 8, 8], [4, 3, 3, 3]]


def test_conv_gradients_unchanged_by_the_profiler():
    ember.manual_seed(0)
    conv, x = _conv_setup(ember)
    conv(x).sum().backward()
    plain = [conv.weight.grad.clone(), conv.bias.grad.clone()]
    conv.zero_grad()
    with ember.profiler.profile():
        conv(x).sum().backward()
    assert ember.equal(plain[0], conv.weight.grad) and ember.equal(plain[1], conv.bias.grad)


# -- clip_grad_norm_ --------------------------------------------------------------------------


def _clip_setup(lib):
    m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Linear(3, 2))
    m(lib.randn(5, 4)).sum().backward()
    return m


def _clip(lib, m):
    lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)


@needs_torch
def test_clip_grad_norm_rows_as_torch():
    _same_rows(_clip, _clip_setup, {
        "aten::_foreach_norm", "aten::linalg_vector_norm", "aten::stack", "aten::add",
        "aten::reciprocal", "aten::mul", "aten::clamp", "aten::_foreach_mul_", "aten::mul_",
        "aten::div"})


@needs_torch
@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_norm_bits_as_torch(foreach):
    def run(lib):
        lib.manual_seed(0)
        m = _clip_setup(lib)
        grads = [p.grad.detach().numpy().copy() for p in m.parameters()]
        return m, grads

    m, grads = run(ember)
    tm = _clip_setup(torch)
    for p, g in zip(tm.parameters(), grads):
        p.grad = torch.tensor(g)
    total = ember.nn.utils.clip_grad_norm_(m.parameters(), 0.5, foreach=foreach)
    ttotal = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.5, foreach=foreach)
    assert total.item() == ttotal.item()
    for p, q in zip(m.parameters(), tm.parameters()):
        assert (p.grad.numpy() == q.grad.numpy()).all()


def test_clip_grad_norm_foreach_events():
    prof = _profile(ember, _clip, _clip_setup)
    assert _parent(prof, "aten::linalg_vector_norm")[:4] == ["aten::_foreach_norm"] * 4
    assert _parent(prof, "aten::mul_") == ["aten::_foreach_mul_"] * 4
    m = _clip_setup(ember)
    with ember.profiler.profile() as prof:
        ember.nn.utils.clip_grad_norm_(m.parameters(), 0.5, foreach=False)
    names = collections.Counter(e.name for e in prof.events())
    assert names["aten::_foreach_norm"] == names["aten::_foreach_mul_"] == 0
    assert names["aten::mul_"] == 4 and names["aten::linalg_vector_norm"] == 5


# -- [memory] ---------------------------------------------------------------------------------


def _memory(lib, st):
    m, x = st
    y = m(x).relu()
    del y
    z = x * 2
    del z


def _memory_setup(lib):
    return lib.nn.Linear(8, 4), lib.randn(16, 8)


@needs_torch
def test_memory_events_as_torch():
    def rows(lib):
        prof = _profile(lib, _memory, _memory_setup, profile_memory=True)
        # (PyTorch's 8-byte rows are its own scalar wrappers: ember keeps numbers as they are)
        return [(e.name, e.cpu_memory_usage) for e in prof.events()
                if e.cpu_parent is None and not (e.name == "[memory]" and
                                                 abs(e.cpu_memory_usage) < 16)]
    assert rows(ember) == rows(torch)


def test_memory_events_fields():
    prof = _profile(ember, _memory, _memory_setup, profile_memory=True)
    mem = [e for e in prof.events() if e.name == "[memory]"]
    assert [e.cpu_memory_usage for e in mem] == [-256, -256, -512]
    assert all(e.cpu_parent is None and e.time_range.elapsed_us() == 0 for e in mem)
    row = next(e for e in prof.key_averages() if e.key == "[memory]")
    assert row.count == 3 and row.cpu_memory_usage == -1024 and row.cpu_time_total == 0
    assert "[memory]" in prof.key_averages().table(row_limit=20)
    without = _profile(ember, _memory, _memory_setup)
    assert not [e for e in without.events() if e.name == "[memory]"]


# -- reshape of a non-viewable tensor ---------------------------------------------------------


def _reshape(lib, a):
    a.t().reshape(12).sum().backward()


def _matrix(lib):
    return lib.randn(3, 4, requires_grad=True)


@needs_torch
def test_reshape_copy_rows_as_torch():
    _same_rows(_reshape, _matrix, {"aten::reshape", "aten::clone", "aten::_unsafe_view",
                                   "UnsafeViewBackward0", "CloneBackward0", "TBackward0"})


def test_reshape_copy_graph_under_the_profiler():
    ember.manual_seed(0)
    a = _matrix(ember)
    with ember.profiler.profile() as prof:
        b = a.t().reshape(12)
        b.sum().backward()
    assert b.grad_fn.name() == "UnsafeViewBackward0" and b._base is None
    assert b.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    assert _parent(prof, "aten::clone") == ["aten::reshape"]
    assert _parent(prof, "aten::_unsafe_view") == ["aten::reshape"]
    plain = a.t().reshape(12)
    assert ember.equal(plain, b) and plain.grad_fn.name() == "UnsafeViewBackward0"
    assert ember.equal(a.grad, ember.ones(3, 4) * 1)


# -- std and var, layer norm's backward, the DataLoader ---------------------------------------


def _moments(lib, x):
    x.std(dim=0, keepdim=True).sum().backward()
    x.var(0)


def _moments_input(lib):
    return lib.randn(8, 6, requires_grad=True)


@needs_torch
def test_std_var_rows_as_torch():
    _same_rows(_moments, _moments_input, {"aten::std", "aten::var", "StdBackward0"})


def _layer_norm(lib, st):
    ln, x = st
    ln(x).sum().backward()


def _layer_norm_setup(lib):
    return lib.nn.LayerNorm(8), lib.randn(2, 3, 8, requires_grad=True)


@needs_torch
def test_layer_norm_backward_inputs_as_torch():
    mine = _profile(ember, _layer_norm, _layer_norm_setup)
    theirs = _profile(torch, _layer_norm, _layer_norm_setup)
    pick = lambda p: [(e.input_shapes, e.input_dtypes, e.concrete_inputs)  # noqa: E731
                      for e in p.events() if e.name == "aten::native_layer_norm_backward"]
    assert pick(mine) == pick(theirs) and pick(mine)


def _embedding(lib, st):
    emb, tok = st
    emb(tok).sum().backward()


def _embedding_setup(lib):
    return lib.nn.Embedding(20, 8), lib.randint(0, 20, (2, 5))


@needs_torch
def test_embedding_backward_rows_as_torch():
    _same_rows(_embedding, _embedding_setup, {"aten::embedding_backward",
                                              "aten::embedding_dense_backward"})


def test_embedding_backward_chain():
    for kw in ({}, {"record_shapes": False}):
        prof = _profile(ember, _embedding, _embedding_setup, **kw)
        assert _parent(prof, "aten::embedding_dense_backward") == ["aten::embedding_backward"]
        assert _parent(prof, "aten::embedding_backward") == ["EmbeddingBackward0"]


def _loader(lib, st):
    data = lib.utils.data
    loader = data.DataLoader(data.TensorDataset(lib.arange(12.0).view(6, 2)), batch_size=2)
    for (xb,) in loader:
        xb.sum()


@needs_torch
def test_dataloader_rows_as_torch():
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    mine, theirs = _profile(ember, _loader), _profile(torch, _loader)
    count = lambda p: sum(e.name == name for e in p.events())  # noqa: E731
    assert count(mine) == count(theirs) == 4


def test_dataloader_event_wraps_each_batch():
    prof = _profile(ember, _loader)
    fetches = [e for e in prof.events() if e.name.startswith("enumerate(DataLoader)#")]
    assert len(fetches) == 4 and all(e.cpu_parent is None for e in fetches)
    # the last one ends the loop (StopIteration), as PyTorch's does
    sums = [e for e in prof.events() if e.name == "aten::sum"]
    assert all(f.time_range.end <= s.time_range.start for f, s in zip(fetches, sums))


# -- a profiled optimizer step computes what the unprofiled one does --------------------------


@pytest.mark.parametrize("kernels", ["numpy", "auto"])
@pytest.mark.parametrize("options", [{}, {"foreach": False}, {"fused": True}])
def test_profiled_adamw_same_bits(kernels, options):
    from ember import _kernels

    def run(profiled):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 4))
        opt = ember.optim.AdamW(m.parameters(), lr=1e-2, **options)
        x = ember.randn(5, 8)
        for _ in range(3):
            opt.zero_grad()
            if profiled:
                with ember.profiler.profile(record_shapes=True):
                    m(x).pow(2).sum().backward()
                    opt.step()
            else:
                m(x).pow(2).sum().backward()
                opt.step()
        return [p.detach().clone() for p in m.parameters()]

    old = _kernels.set_backend(kernels)
    try:
        plain, profiled = run(False), run(True)
    finally:
        _kernels.set_backend(old)
    assert all(ember.equal(a, b) for a, b in zip(plain, profiled))
