"""ember.autocast against torch.autocast: the op lists (output dtypes), the state functions,
nesting, gradients and a small training loop (NOTE [ Autocast ] in ember/amp)."""

import warnings

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.random(s).astype(np.float32) + 0.5 for s in shapes]


# name -> (shapes of the float inputs, function of (lib, F, *inputs))
_SQ = (4, 4)
CASES = {
    # low precision
    "mm": ([_SQ, _SQ], lambda t, F, a, b: t.mm(a, b)),
    "matmul_op": ([(3, 4), _SQ], lambda t, F, a, b: a @ b),
    "matmul_3d": ([(2, 3, 4), _SQ], lambda t, F, a, b: t.matmul(a, b)),
    "bmm": ([(2, 3, 4), (2, 4, 5)], lambda t, F, a, b: t.bmm(a, b)),
    "addmm": ([_SQ, _SQ, _SQ], lambda t, F, a, b, c: t.addmm(a, b, c)),
    "addbmm": ([_SQ, (2, 4, 4), (2, 4, 4)], lambda t, F, a, b, c: t.addbmm(a, b, c)),
    "baddbmm": ([(2, 4, 4), (2, 4, 4), (2, 4, 4)], lambda t, F, a, b, c: t.baddbmm(a, b, c)),
    "linear": ([(3, 4), (2, 4), (2,)], lambda t, F, x, w, b: F.linear(x, w, b)),
    "conv1d": ([(1, 2, 8), (3, 2, 3)], lambda t, F, x, w: F.conv1d(x, w)),
    "conv2d": ([(1, 2, 6, 6), (3, 2, 3, 3), (3,)], lambda t, F, x, w, b: F.conv2d(x, w, b)),
    "conv3d": ([(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)], lambda t, F, x, w: F.conv3d(x, w)),
    "conv_transpose2d": ([(1, 2, 4, 4), (2, 3, 3, 3)],
                         lambda t, F, x, w: F.conv_transpose2d(x, w)),
    "sdpa": ([(1, 2, 4, 8)] * 3, lambda t, F, q, k, v: F.scaled_dot_product_attention(q, k, v)),
    "einsum": ([_SQ, _SQ], lambda t, F, a, b: t.einsum("ij,jk->ik", a, b)),
    "cov": ([_SQ], lambda t, F, a: t.cov(a)),
    # float32
    "mse_loss": ([_SQ, _SQ], lambda t, F, a, b: F.mse_loss(a, b)),
    "cross_entropy": ([_SQ], lambda t, F, a: F.cross_entropy(a, t.tensor([0, 1, 2, 3]))),
    "nll_loss": ([_SQ], lambda t, F, a: F.nll_loss(a, t.tensor([0, 1, 2, 3]))),
    "prod": ([_SQ], lambda t, F, a: t.prod(a)),
    "trace": ([_SQ], lambda t, F, a: t.trace(a)),
    "cdist": ([_SQ, _SQ], lambda t, F, a, b: t.cdist(a, b)),
    "fft": ([(8,)], lambda t, F, a: t.fft.fft(a)),
    "rfft": ([(8,)], lambda t, F, a: t.fft.rfft(a)),
    "irfft": ([(8,)], lambda t, F, a: t.fft.irfft(a)),
    "polar": ([_SQ, _SQ], lambda t, F, a, b: t.polar(a, b)),
    "avg_pool3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.avg_pool3d(a, 2)),
    "max_pool3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.max_pool3d(a, 2)),
    "adaptive_avg_pool3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.adaptive_avg_pool3d(a, 2)),
    "adaptive_max_pool3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.adaptive_max_pool3d(a, 2)),
    "reflect_pad1d": ([(1, 2, 8)], lambda t, F, a: F.pad(a, (1, 1), mode="reflect")),
    "reflect_pad2d": ([(1, 2, 4, 4)], lambda t, F, a: F.pad(a, (1, 1, 1, 1), mode="reflect")),
    "replicate_pad3d": ([(1, 2, 4, 4, 4)],
                        lambda t, F, a: F.pad(a, (1,) * 6, mode="replicate")),
    "inverse": ([_SQ], lambda t, F, a: t.linalg.inv(a + 4 * t.eye(4, dtype=a.dtype))),
    "solve": ([_SQ, (4, 1)], lambda t, F, a, b: t.linalg.solve(a + 4 * t.eye(4, dtype=a.dtype), b)),
    "svdvals": ([_SQ], lambda t, F, a: t.linalg.svdvals(a)),
    "qr": ([_SQ], lambda t, F, a: t.linalg.qr(a)[0]),
    "pinverse": ([_SQ], lambda t, F, a: t.pinverse(a)),
    # promote
    "cat": ([(2,), (2,)], lambda t, F, a, b: t.cat([a, b])),
    "stack": ([(2,), (2,)], lambda t, F, a, b: t.stack([a, b])),
    "index_copy": ([(4, 3), (1, 3)], lambda t, F, a, b: a.index_copy(0, t.tensor([1]), b)),
    # in no list
    "relu": ([_SQ], lambda t, F, a: F.relu(a)),
    "softmax": ([_SQ], lambda t, F, a: F.softmax(a, -1)),
    "layer_norm": ([_SQ], lambda t, F, a: F.layer_norm(a, (4,))),
    "sum": ([_SQ], lambda t, F, a: a.sum()),
    "add": ([_SQ, _SQ], lambda t, F, a, b: a + b),
    "avg_pool2d": ([(1, 2, 4, 4)], lambda t, F, a: F.avg_pool2d(a, 2)),
    "reflect_pad3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.pad(a, (1,) * 6, mode="reflect")),
    "circular_pad": ([(1, 2, 4, 4)], lambda t, F, a: F.pad(a, (1, 1, 1, 1), mode="circular")),
    "tensordot": ([_SQ, _SQ], lambda t, F, a, b: t.tensordot(a, b, 1)),
    "dot": ([(4,), (4,)], lambda t, F, a, b: t.dot(a, b)),
}


def _out_dtype(out):
    if isinstance(out, (tuple, list)):
        out = out[0]
    return str(out.dtype).split(".")[-1]


def _run(lib, case, in_dtypes, ac_dtype, seed=0):
    shapes, fn = CASES[case]
    F = lib.nn.functional
    ins = [lib.tensor(a).to(getattr(lib, d))
           for a, d in zip(_arrays(seed, *shapes), in_dtypes)]
    with lib.autocast("cpu", dtype=getattr(lib, ac_dtype)):
        return fn(lib, F, *ins)


@needs_torch
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
def test_autocast_dtype_table_matches_torch(case, in_dtype):
    n = len(CASES[case][0])
    e = _run(ember, case, [in_dtype] * n, "bfloat16")
    t = _run(torch, case, [in_dtype] * n, "bfloat16")
    assert _out_dtype(e) == _out_dtype(t)


@needs_torch
@pytest.mark.parametrize("case", ["mm", "linear", "conv2d", "mse_loss", "cat", "relu"])
def test_autocast_float16_dtype_matches_torch(case):
    n = len(CASES[case][0])
    e = _run(ember, case, ["float32"] * n, "float16")
    t = _run(torch, case, ["float32"] * n, "float16")
    assert _out_dtype(e) == _out_dtype(t)


@needs_torch
@pytest.mark.parametrize("case", ["mm", "linear", "conv2d", "einsum", "sdpa"])
def test_autocast_lower_values_match_torch(case):
    n = len(CASES[case][0])
    e = _run(ember, case, ["float32"] * n, "bfloat16").float().numpy()
    t = _run(torch, case, ["float32"] * n, "bfloat16").float().numpy()
    np.testing.assert_allclose(e, t, rtol=1e-2, atol=1e-2)


@needs_torch
@pytest.mark.parametrize("case", ["cat", "stack", "index_copy"])
def test_autocast_promote_mixed_inputs_matches_torch(case):
    e = _run(ember, case, ["bfloat16", "float32"], "bfloat16")
    t = _run(torch, case, ["bfloat16", "float32"], "bfloat16")
    assert _out_dtype(e) == _out_dtype(t) == "float32"


# bfloat16 activations meeting float32 weights: cast before ember's argument checks
MIXED = {
    "linear": lambda t, F, x, w: F.linear(x, w),
    "conv2d": lambda t, F, x, w: F.conv2d(x.reshape(1, 1, 4, 4), w.reshape(1, 1, 4, 4)),
    "mm": lambda t, F, x, w: t.mm(x, w),
    "matmul_op": lambda t, F, x, w: x @ w,
    "einsum": lambda t, F, x, w: t.einsum("ij,jk->ik", x, w),
    "l1_loss": lambda t, F, x, w: F.l1_loss(x, w),
    "bce_with_logits": lambda t, F, x, w: F.binary_cross_entropy_with_logits(x, w),
    "inv": lambda t, F, x, w: t.linalg.inv(x + 4 * t.eye(4, dtype=x.dtype)),
    "fft": lambda t, F, x, w: t.fft.fft(x),
    "prelu": lambda t, F, x, w: F.prelu(w, t.tensor([0.25])),
    "tensordot_full": lambda t, F, x, w: t.tensordot(w, w, 2),
    "tensordot_partial": lambda t, F, x, w: t.tensordot(w, w, 1),
    "inner_vectors": lambda t, F, x, w: t.inner(w[0], w[1]),
    "inner_matrices": lambda t, F, x, w: t.inner(w, w),
    "dot": lambda t, F, x, w: t.dot(w[0], w[1]),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(MIXED))
def test_autocast_mixed_inputs_match_torch(case):
    x, w = _arrays(5, _SQ, _SQ)
    dts = []
    for lib in (ember, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = MIXED[case](lib, lib.nn.functional, lib.tensor(x).to(lib.bfloat16),
                              lib.tensor(w))
        dts.append(_out_dtype(out))
    assert dts[0] == dts[1]


def test_autocast_promote_float16_beside_bfloat16_raises():
    a, b = ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.bfloat16)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        with pytest.raises(RuntimeError, match="prioritize"):
            ember.cat([a, b])


def test_autocast_float64_inputs_are_left_alone():
    a = ember.ones(3, 3, dtype=ember.float64)
    with ember.autocast("cpu"):
        assert (a @ a).dtype == ember.float64


def test_autocast_integer_inputs_are_left_alone():
    a = ember.ones(2, 2, dtype=ember.int64)
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype == ember.int64


def test_autocast_out_form_is_not_cast():
    a = ember.ones(2, 2)
    out = ember.empty(2, 2)
    with ember.autocast("cpu"):
        ember.mm(a, a, out=out)
    assert out.dtype == ember.float32


def test_autocast_inplace_form_is_not_cast():
    a = ember.ones(2, 2)
    with ember.autocast("cpu"):
        assert a.clone().addmm_(a, a).dtype == ember.float32


# ------------------------------------------------------------------------------------------
# state, nesting, context manager and decorator


def test_autocast_state_inside_and_after():
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        assert not ember.is_autocast_enabled()  # no argument: CUDA
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember._dispatch.state.modes == ()


def test_autocast_nested_enabled_false_runs_in_float32():
    a = ember.ones(2, 2)
    with ember.autocast("cpu"):
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (a @ a).dtype == ember.float32
        assert (a @ a).dtype == ember.bfloat16


def test_autocast_nested_dtype_restored():
    with ember.autocast("cpu"):
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16


def test_autocast_as_decorator():
    @ember.autocast("cpu")
    def f(a):
        return a @ a

    assert f(ember.ones(2, 2)).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")


def test_autocast_exit_on_exception_restores_state():
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("boom")
    assert not ember.is_autocast_enabled("cpu")
    assert ember._dispatch.state.modes == ()


def test_autocast_unsupported_cpu_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        ac = ember.autocast("cpu", dtype=ember.float64)
    with ac:
        assert not ember.is_autocast_enabled("cpu")


def test_autocast_device_type_not_str_raises_value_error():
    with pytest.raises(ValueError, match="device_type"):
        ember.autocast(ember.device("cpu"))


def test_autocast_unknown_device_type_raises_runtime_error():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.autocast("xyz")


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_autocast_cuda_without_gpu_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ac = ember.autocast("cuda")
    with ac:
        assert not ember.is_autocast_enabled("cuda")


def test_set_autocast_enabled_turns_casting_on_and_off():
    a = ember.ones(2, 2)
    ember.set_autocast_enabled("cpu", True)
    try:
        assert (a @ a).dtype == ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert (a @ a).dtype == ember.float32


def test_legacy_cpu_functions_warn_deprecation():
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype"):
        assert ember.get_autocast_cpu_dtype() == ember.bfloat16
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled"):
        assert ember.is_autocast_cpu_enabled() is False


def test_cpu_amp_autocast_warns_future_warning():
    with pytest.warns(FutureWarning, match="torch.amp.autocast\\('cpu'"):
        ac = ember.cpu.amp.autocast()
    with ac:
        assert ember.is_autocast_enabled("cpu")


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_amp_autocast_warns_and_disables_without_gpu():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ac = ember.cuda.amp.autocast()
    cats = {x.category for x in w}
    assert FutureWarning in cats and UserWarning in cats
    with ac:
        assert not ember.is_autocast_enabled("cuda")


def test_is_autocast_available():
    assert ember.amp.is_autocast_available("cpu")
    assert ember.amp.is_autocast_available("cuda")
    assert not ember.amp.is_autocast_available("meta")


def test_autocast_is_thread_local():
    import threading

    seen = []
    with ember.autocast("cpu"):
        th = threading.Thread(target=lambda: seen.append(
            (ember.is_autocast_enabled("cpu"), (ember.ones(2, 2) @ ember.ones(2, 2)).dtype)))
        th.start()
        th.join()
    assert seen == [(False, ember.float32)]


# ------------------------------------------------------------------------------------------
# gradients, cache, custom Functions


def test_autocast_parameter_grads_are_float32():
    lin = ember.nn.Linear(4, 3)
    with ember.autocast("cpu"):
        y = lin(ember.ones(2, 4))
    assert y.dtype == ember.bfloat16
    y.float().sum().backward()
    assert lin.weight.grad.dtype == ember.float32
    assert lin.bias.grad.dtype == ember.float32


@needs_torch
def test_autocast_grads_match_torch():
    x, w, b = _arrays(3, (5, 4), (3, 4), (3,))
    grads = []
    for lib in (ember, torch):
        wt = lib.tensor(w, requires_grad=True)
        bt = lib.tensor(b, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            y = lib.nn.functional.linear(lib.tensor(x), wt, bt).relu()
            loss = lib.nn.functional.mse_loss(y, lib.ones(5, 3))
        loss.backward()
        grads.append((str(loss.dtype), wt.grad.numpy(), bt.grad.numpy()))
    assert grads[0][0].split(".")[-1] == grads[1][0].split(".")[-1] == "float32"
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(grads[0][2], grads[1][2], rtol=2e-2, atol=2e-2)


def test_autocast_cache_reuses_parameter_copy():
    w = ember.ones(2, 2, requires_grad=True)
    with ember.autocast("cpu"):
        ember.mm(w, w)
        from ember.amp.autocast_mode import _state
        assert len(_state.cache) == 1
    assert len(_state.cache) == 0


def test_autocast_cache_disabled_keeps_no_copy():
    w = ember.ones(2, 2, requires_grad=True)
    with ember.autocast("cpu", cache_enabled=False):
        ember.mm(w, w)
        from ember.amp.autocast_mode import _state
        assert len(_state.cache) == 0


def test_custom_fwd_cast_inputs_runs_in_float32():
    class Mul(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b):
            ctx.inside = ember.is_autocast_enabled("cpu")
            return a @ b

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g, g

    a = ember.ones(2, 2, dtype=ember.bfloat16)
    with ember.autocast("cpu"):
        out = Mul.apply(a, a)
    assert out.dtype == ember.float32


def test_custom_fwd_requires_device_type():
    with pytest.raises(TypeError):
        ember.amp.custom_fwd(lambda ctx, x: x)


# ------------------------------------------------------------------------------------------
# a training loop


def _mlp_losses(lib, steps=8):
    x, y = _arrays(7, (16, 6), (16, 1))
    w1, b1, w2, b2 = [a - 1.0 for a in _arrays(8, (8, 6), (8,), (1, 8), (1,))]
    model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.ReLU(), lib.nn.Linear(8, 1))
    with lib.no_grad():
        for p, v in zip(model.parameters(), (w1, b1, w2, b2)):
            p.copy_(lib.tensor(v))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = model(lib.tensor(x))
            loss = lib.nn.functional.mse_loss(out, lib.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    dtypes = {str(p.grad.dtype).split(".")[-1] for p in model.parameters()}
    return losses, dtypes, str(out.dtype).split(".")[-1]


@needs_torch
def test_autocast_mlp_training_matches_torch():
    e_losses, e_dtypes, e_out = _mlp_losses(ember)
    t_losses, t_dtypes, t_out = _mlp_losses(torch)
    assert e_dtypes == t_dtypes == {"float32"}
    assert e_out == t_out == "bfloat16"
    np.testing.assert_allclose(e_losses, t_losses, rtol=3e-2, atol=1e-3)
