"""Small torch.* functions (ember/_small_functions.py, ember/_sync_batch_norm.py,
ember.functional, ember.storage), compared with torch."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import ember
import ember._small_functions
import ember._sync_batch_norm
import ember.functional
import ember.storage

torch = pytest.importorskip("torch")

DATA = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
LENGTHS = [2, 0, 3, 1]


def _both(fn, *args, **kwargs):
    def conv(lib, a):
        if isinstance(a, np.ndarray):
            return lib.from_numpy(a.copy())
        return a
    t = fn(torch, *[conv(torch, a) for a in args], **{k: conv(torch, v) for k, v in kwargs.items()})
    e = fn(ember, *[conv(ember, a) for a in args], **{k: conv(ember, v) for k, v in kwargs.items()})
    return t, e


def _close(t, e, **kw):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **kw)


# -- segment_reduce ----------------------------------------------------------------------------


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 10.0])
def test_segment_reduce_matches_torch(reduce, initial):
    t, e = _both(lambda lib: lib.segment_reduce(lib.tensor(DATA), reduce,
                                                lengths=lib.tensor(LENGTHS), initial=initial))
    _close(t, e)


def test_segment_reduce_offsets_match_torch():
    t, e = _both(lambda lib: lib.segment_reduce(lib.tensor(DATA), "sum",
                                                offsets=lib.tensor([0, 2, 2, 5, 6])))
    _close(t, e)


def test_segment_reduce_two_dimensional_lengths_match_torch():
    t, e = _both(lambda lib: lib.segment_reduce(lib.arange(6.).reshape(3, 2), "sum",
                                                lengths=lib.tensor([[1, 1], [2, 0], [0, 2]]),
                                                axis=1))
    _close(t, e)


def test_segment_reduce_trailing_dims_match_torch():
    t, e = _both(lambda lib: lib.segment_reduce(lib.arange(12.).reshape(4, 3), "mean",
                                                lengths=lib.tensor([1, 3])))
    _close(t, e)


def test_segment_reduce_unsafe_short_lengths_match_torch():
    t, e = _both(lambda lib: lib.segment_reduce(lib.tensor(DATA), "sum",
                                                lengths=lib.tensor([2, 2]), unsafe=True))
    _close(t, e)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "prod"])
def test_segment_reduce_gradient_matches_torch(reduce):
    values = [2.0, 2.0, 1.0, 0.0, 3.0, 5.0]
    xt = torch.tensor(values, requires_grad=True)
    xe = ember.tensor(values, requires_grad=True)
    torch.segment_reduce(xt, reduce, lengths=torch.tensor([3, 0, 2, 1])).sum().backward()
    ember.segment_reduce(xe, reduce, lengths=ember.tensor([3, 0, 2, 1])).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("kwargs,error,match", [
    ({"reduce": "foo", "lengths": [2, 4]}, RuntimeError, "reduce argument"),
    ({"reduce": "sum", "lengths": [2, 2]}, RuntimeError, "sum to data.size"),
    ({"reduce": "sum", "lengths": [2, -1, 5]}, RuntimeError, "negative"),
    ({"reduce": "sum"}, RuntimeError, "Either lengths or offsets"),
])
def test_segment_reduce_bad_arguments_raise_like_torch(kwargs, error, match):
    for lib in (torch, ember):
        kw = dict(kwargs)
        if "lengths" in kw:
            kw["lengths"] = lib.tensor(kw["lengths"])
        with pytest.raises(error, match=match):
            lib.segment_reduce(lib.tensor(DATA), **kw)


def test_segment_reduce_integer_data_raises_not_implemented():
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError):
            lib.segment_reduce(lib.tensor([1, 2]), "sum", lengths=lib.tensor([2]))


# -- hash_tensor, slice_inverse, ldexp_, to_dlpack, is_distributed ------------------------------


@pytest.mark.parametrize("make", [
    lambda lib: lib.hash_tensor(lib.arange(10)),
    lambda lib: lib.hash_tensor(lib.arange(10.)),
    lambda lib: lib.hash_tensor(lib.arange(10.).reshape(2, 5), 1),
    lambda lib: lib.hash_tensor(lib.arange(10.).reshape(2, 5), 0, keepdim=True),
    lambda lib: lib.hash_tensor(lib.tensor([True, False, True])),
    lambda lib: lib.hash_tensor(lib.tensor([-3, 7], dtype=lib.int8)),
    lambda lib: lib.hash_tensor(lib.tensor([1.5, -2.25], dtype=lib.float16)),
    lambda lib: lib.hash_tensor(lib.tensor(2.5)),
])
def test_hash_tensor_matches_torch(make):
    t, e = make(torch), make(ember)
    assert e.dtype == ember.uint64 and tuple(e.shape) == tuple(t.shape)
    assert e.numpy().tolist() == t.numpy().tolist()


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(6.).reshape(2, 3).t().hash_tensor(1, keepdim=True),
    lambda lib: lib.arange(6.).reshape(2, 3).t().hash_tensor(dim=(0, 1)),
    lambda lib: lib.arange(6.).reshape(2, 3).hash_tensor(dim=[]),
    lambda lib: lib.ones(2, 3).hash_tensor(dim=None, keepdim=True),
    lambda lib: lib.empty(2, 0).hash_tensor(dim=0),
    lambda lib: lib.tensor([float("nan"), -0.0]).hash_tensor(),
    lambda lib: lib.tensor(3.0).hash_tensor(dim=0, keepdim=True),
    lambda lib: lib.tensor([[1, 2], [3, 4]], dtype=lib.uint8).hash_tensor(-1),
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.bfloat16, requires_grad=True).hash_tensor(),
    lambda lib: lib.hash_tensor(lib.ones(2, 3), out=lib.empty((), dtype=lib.uint64)),
])
def test_hash_tensor_edges_match_torch(make):
    t, e = make(torch), make(ember)
    assert e.dtype == ember.uint64 and tuple(e.shape) == tuple(t.shape)
    assert e.numpy().tolist() == t.numpy().tolist()


@pytest.mark.parametrize("call", [
    lambda lib: lib.hash_tensor(lib.ones(2, 3), 5),
    lambda lib: lib.hash_tensor(lib.ones(2, 3), dim=(0, 0)),
    lambda lib: lib.hash_tensor(lib.empty(0)),
    lambda lib: lib.hash_tensor(lib.empty(0), dim=0),
    lambda lib: lib.tensor([7], dtype=lib.uint32).hash_tensor(),
    lambda lib: lib.tensor([1 + 1j]).hash_tensor(),
    lambda lib: lib.hash_tensor(lib.ones(2), out=lib.empty((), dtype=lib.int64)),
])
def test_hash_tensor_refusals_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(ember)
    assert str(ours.value) == str(theirs.value)


def test_hash_tensor_unknown_mode_raises_runtime_error():
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        ember.hash_tensor(ember.ones(2), mode=1)


def test_slice_inverse_views_the_base():
    base = ember.arange(10.)
    whole = ember.slice_inverse(base[2:6:2], base, 0, 2, 6, 2)
    assert whole.tolist() == base.tolist()
    whole[0] = 100.0
    assert base[0].item() == 100.0


def test_ldexp_in_place_matches_torch():
    t, e = torch.tensor([1.0, 2.0, -3.0]), ember.tensor([1.0, 2.0, -3.0])
    assert ember.ldexp_(e, ember.tensor([2, 3, -1])) is e
    torch.ldexp_(t, torch.tensor([2, 3, -1]))
    assert e.tolist() == t.tolist()


def test_to_dlpack_is_read_by_torch():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert torch.from_dlpack(ember.to_dlpack(x)).tolist() == [1.0, 2.0, 3.0]


def test_is_distributed_is_false():
    assert ember.is_distributed(ember.ones(2)) is torch.is_distributed(torch.ones(2)) is False


def test_classproperty_reads_from_the_class():
    for lib in (torch, ember):
        class Config:
            scale = 3

            @lib.classproperty
            def doubled(cls):
                return cls.scale * 2

        assert Config.doubled == 6 and Config().doubled == 6


# -- while_loop --------------------------------------------------------------------------------


def test_while_loop_runs_body_until_condition_fails():
    # torch.while_loop gives (tensor(5), tensor([32., 32.])) here; calling it costs seconds
    # of graph capture, so the values are written out
    out = ember.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * 2),
                           (ember.tensor(0), ember.ones(2)))
    assert isinstance(out, tuple) and out[0].item() == 5 and out[1].tolist() == [32.0, 32.0]


def test_while_loop_carries_python_numbers():
    out = ember.while_loop(lambda i, n: i < n, lambda i, n: (i + 1, n), (ember.tensor(0), 3))
    assert out[0].item() == 3 and out[1] == 3


def test_while_loop_false_at_start_returns_inputs():
    x = ember.tensor(10)
    assert ember.while_loop(lambda i: i < 5, lambda i: (i + 1,), (x,)) == (x,)


@pytest.mark.parametrize("cond,body,carried", [
    (lambda i: i < 5, lambda i: (i + 1.0,), (0,)),  # dtype changes
    (lambda i: i < 5, lambda i: (i + 1,), 0),  # carried not a tuple
    (lambda i: True, lambda i: (i + 1,), (0,)),  # constant True
    (lambda i: i < 5, lambda i: (ember.stack([i, i]),), (0,)),  # shape changes
])
def test_while_loop_bad_loop_raises_runtime_error(cond, body, carried):
    if isinstance(carried, tuple):
        carried = tuple(ember.tensor(c) for c in carried)
    else:
        carried = ember.tensor(carried)
    with pytest.raises(RuntimeError):
        ember.while_loop(cond, body, carried)


# -- batch-norm primitives ---------------------------------------------------------------------

X = np.random.default_rng(0).standard_normal((4, 3, 5))
G = np.random.default_rng(1).standard_normal((4, 3, 5))


def test_batch_norm_update_stats_matches_torch():
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    rm_e, rv_e = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    t = torch.batch_norm_update_stats(torch.from_numpy(X), rm_t, rv_t, 0.1)
    e = ember.batch_norm_update_stats(ember.from_numpy(X), rm_e, rv_e, 0.1)
    for a, b in zip(t + (rm_t, rv_t), e + (rm_e, rv_e)):
        _close(a, b, rtol=1e-12)


def test_batch_norm_stats_and_elemt_match_torch_batch_norm():
    w, b = np.array([0.5, 1.0, 2.0]), np.array([0.0, 1.0, -1.0])
    mean, invstd = ember.batch_norm_stats(ember.from_numpy(X), 1e-5)
    y = ember.batch_norm_elemt(ember.from_numpy(X), ember.from_numpy(w), ember.from_numpy(b),
                               mean, invstd, 1e-5)
    ref = torch.nn.functional.batch_norm(torch.from_numpy(X), None, None, torch.from_numpy(w),
                                         torch.from_numpy(b), training=True, eps=1e-5)
    _close(ref, y, rtol=1e-10, atol=1e-12)


def test_batch_norm_gather_stats_merges_processes_as_whole_batch():
    x = ember.from_numpy(X)
    parts = [x[:1], x[1:4]]
    stats = [ember.batch_norm_stats(p, 1e-5) for p in parts]
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    mean, invstd = ember.batch_norm_gather_stats_with_counts(
        x, ember.stack([s[0] for s in stats]), ember.stack([s[1] for s in stats]), rm, rv,
        0.1, 1e-5, ember.tensor([5.0, 15.0], dtype=ember.float64))
    whole_mean, whole_invstd = ember.batch_norm_stats(x, 1e-5)
    _close(whole_mean, mean, rtol=1e-12)
    _close(whole_invstd, invstd, rtol=1e-10)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    torch.batch_norm_update_stats(torch.from_numpy(X), rm_t, rv_t, 0.1)
    _close(rm_t, rm, rtol=1e-12)
    _close(rv_t, rv, rtol=1e-10)


def test_batch_norm_gather_stats_ignores_empty_processes():
    m = ember.tensor([[1.0], [3.0], [float("nan")]])
    s = ember.tensor([[1.0], [1.0], [0.0]])
    mean, invstd = ember.batch_norm_gather_stats_with_counts(
        ember.ones(2, 1), m, s, None, None, 0.1, 0.0, ember.tensor([4.0, 4.0, 0.0]))
    assert mean.tolist() == [2.0] and abs(invstd.item() - 0.5**0.5) < 1e-6


def test_batch_norm_gather_stats_equal_counts():
    m = ember.tensor([[1.0], [3.0]])
    s = ember.tensor([[1.0], [1.0]])
    a = ember.batch_norm_gather_stats(ember.ones(2, 1), m, s, None, None, 0.1, 0.0, 4)
    b = ember.batch_norm_gather_stats_with_counts(ember.ones(2, 1), m, s, None, None, 0.1, 0.0,
                                                  ember.tensor([4.0, 4.0]))
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()


def test_batch_norm_backward_matches_torch_autograd():
    w = np.array([0.5, 1.0, 2.0])
    xt = torch.from_numpy(X).requires_grad_()
    wt = torch.from_numpy(w).requires_grad_()
    bt = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.batch_norm(xt, None, None, wt, bt, training=True,
                                   eps=1e-5).backward(torch.from_numpy(G))
    x, g, we = ember.from_numpy(X), ember.from_numpy(G), ember.from_numpy(w)
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    sum_dy, sum_dy_xmu, gw, gb = ember.batch_norm_backward_reduce(g, x, mean, invstd, we,
                                                                  True, True, True)
    gx = ember.batch_norm_backward_elemt(g, x, mean, invstd, we, sum_dy, sum_dy_xmu,
                                         ember.tensor([20], dtype=ember.int32))
    _close(xt.grad, gx, rtol=1e-9, atol=1e-12)
    _close(wt.grad, gw, rtol=1e-10)
    _close(bt.grad, gb, rtol=1e-10)


def test_batch_norm_backward_reduce_skips_unasked_outputs():
    x = ember.from_numpy(X)
    mean, invstd = ember.batch_norm_stats(x, 1e-5)
    out = ember.batch_norm_backward_reduce(ember.from_numpy(G), x, mean, invstd, None,
                                           False, True, False)
    assert out[0] is None and out[1] is None and out[3] is None and out[2] is not None


def test_batch_norm_stats_one_dimensional_input_raises_index_error():
    with pytest.raises(IndexError):
        ember.batch_norm_update_stats(ember.ones(3), None, None, 0.1)


# -- modules under torch's paths ---------------------------------------------------------------


def test_functional_module_has_torch_names():
    import torch.functional

    assert sorted(ember.functional.__all__) == sorted(torch.functional.__all__)
    assert ember.functional.einsum is ember.einsum


def test_storage_module_has_torch_names():
    import torch.storage

    for name in torch.storage.__all__:
        assert getattr(ember.storage, name) is getattr(ember, name)


@pytest.mark.parametrize("module", [ember._small_functions, ember._sync_batch_norm,
                                    ember.functional, ember.storage])
def test_docstring_examples_pass(module):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(module):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name


# -- symbolic-size checks and build hooks ------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda lib: lib.sym_constrain_range(3, min=0, max=5),
    lambda lib: lib.sym_constrain_range(7, min=0, max=5),
    lambda lib: lib.sym_constrain_range(-7, max=5),
    lambda lib: lib.sym_constrain_range_for_size(3),
    lambda lib: lib.sym_constrain_range_for_size(-1),
    lambda lib: lib.sym_constrain_range_for_size(1, min=2),
])
def test_sym_constrain_range_matches_torch(call):
    outcomes = []
    for lib in (torch, ember):
        try:
            outcomes.append(("ok", call(lib)))
        except RuntimeError as err:
            outcomes.append(("error", str(err)))
    assert outcomes[0] == outcomes[1]


def test_sym_fresh_size_returns_the_value():
    assert ember.sym_fresh_size(3) == torch.sym_fresh_size(3) == 3


def test_build_flags_and_hooks_match_torch():
    assert ember.USE_GLOBAL_DEPS == torch.USE_GLOBAL_DEPS
    assert ember.USE_RTLD_GLOBAL_WITH_LIBTORCH == torch.USE_RTLD_GLOBAL_WITH_LIBTORCH
    assert (ember.profiler_allow_cudagraph_cupti_lazy_reinit_cuda12()
            == torch.profiler_allow_cudagraph_cupti_lazy_reinit_cuda12())
    assert ember.prepare_multiprocessing_environment("/tmp") is None


def test_thread_safe_generator_is_none_outside_thread_workers():
    assert ember.thread_safe_generator() is None and torch.thread_safe_generator() is None


def test_thread_safe_generator_is_none_in_process_workers():
    class Items(ember.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return ember.thread_safe_generator() is None

    loader = ember.utils.data.DataLoader(Items(), batch_size=None, num_workers=1)
    assert list(loader) == [True, True]
