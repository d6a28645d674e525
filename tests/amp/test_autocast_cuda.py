"""Autocast's CUDA lists (NOTE [ Autocast on CUDA ] in ember/amp/_policy.py) against
PyTorch 2.13: the door table against torch's AutocastCUDA kernels, the output dtypes against
``torch.autocast("cuda")`` run on fake CUDA tensors (no GPU needed), and on a GPU the real
thing against torch.cuda."""

import warnings

import numpy as np
import pytest

import ember
from ember.amp import _policy

torch = pytest.importorskip("torch")

needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")

# ember's own names for ops PyTorch splits or names otherwise (NOTE [ Autocast op lists ])
_EMBER_ONLY = {"convolution_input_grad", "cross_entropy_loss", "lstm_layer"}


@pytest.mark.skipif(not torch.__version__.startswith("2.13"),
                    reason="the lists are PyTorch 2.13's (2.11 lacks rms_norm, has _cudnn_rnn)")
def test_cuda_door_table_matches_torch_autocast_cuda_kernels():
    names = {s.split("::")[1].split(".")[0] for s in torch._C._dispatch_get_all_op_names()
             if torch._C._dispatch_has_kernel_for_dispatch_key(s, "AutocastCUDA")}
    assert set(_policy.POLICIES["cuda"]) - _EMBER_ONLY == names


_SQ = (4, 4)
# name -> (shapes of the float inputs, function of (lib, F, *inputs))
CASES = {
    "mm": ([_SQ, _SQ], lambda t, F, a, b: t.mm(a, b)),
    "matmul_op": ([(3, 4), _SQ], lambda t, F, a, b: a @ b),
    "mv": ([_SQ, (4,)], lambda t, F, a, b: t.mv(a, b)),
    "addmv": ([(4,), _SQ, (4,)], lambda t, F, a, b, c: t.addmv(a, b, c)),
    "addr": ([_SQ, (4,), (4,)], lambda t, F, a, b, c: t.addr(a, b, c)),
    "multi_dot": ([_SQ, _SQ, _SQ], lambda t, F, a, b, c: t.linalg.multi_dot([a, b, c])),
    "linear": ([(3, 4), (2, 4), (2,)], lambda t, F, x, w, b: F.linear(x, w, b)),
    "conv2d": ([(1, 2, 6, 6), (3, 2, 3, 3)], lambda t, F, x, w: F.conv2d(x, w)),
    "sdpa": ([(1, 2, 4, 8)] * 3, lambda t, F, q, k, v: F.scaled_dot_product_attention(q, k, v)),
    "einsum": ([_SQ, _SQ], lambda t, F, a, b: t.einsum("ij,jk->ik", a, b)),
    "exp": ([_SQ], lambda t, F, a: t.exp(a)),
    "log": ([_SQ], lambda t, F, a: t.log(a)),
    "pow": ([_SQ], lambda t, F, a: t.pow(a, 2)),
    "rsqrt": ([_SQ], lambda t, F, a: t.rsqrt(a)),
    "softplus": ([_SQ], lambda t, F, a: F.softplus(a)),
    "layer_norm": ([_SQ], lambda t, F, a: F.layer_norm(a, (4,))),
    "group_norm": ([(2, 4, 3)], lambda t, F, a: F.group_norm(a, 2)),
    "norm": ([_SQ], lambda t, F, a: t.norm(a)),
    "cosine_similarity": ([_SQ, _SQ], lambda t, F, a, b: F.cosine_similarity(a, b)),
    "logsumexp": ([_SQ], lambda t, F, a: t.logsumexp(a, 0)),
    "pdist": ([_SQ], lambda t, F, a: F.pdist(a)),
    "renorm": ([_SQ], lambda t, F, a: t.renorm(a, 2, 0, 1.0)),
    "upsample_nearest": ([(1, 2, 4, 4)], lambda t, F, a: F.interpolate(a, scale_factor=2)),
    "upsample_bilinear": ([(1, 2, 4, 4)],
                          lambda t, F, a: F.interpolate(a, scale_factor=2, mode="bilinear")),
    "mse_loss": ([_SQ, _SQ], lambda t, F, a, b: F.mse_loss(a, b)),
    "cross_entropy": ([_SQ], lambda t, F, a: F.cross_entropy(a, t.tensor([0, 1, 2, 3]))),
    "sum": ([_SQ], lambda t, F, a: a.sum()),
    "sum_dtype": ([_SQ], lambda t, F, a: t.sum(a, dtype=t.float16)),
    "softmax": ([_SQ], lambda t, F, a: F.softmax(a, -1)),
    "softmax_dtype": ([_SQ], lambda t, F, a: F.softmax(a, -1, dtype=t.float16)),
    "log_softmax": ([_SQ], lambda t, F, a: F.log_softmax(a, -1)),
    "cumsum": ([_SQ], lambda t, F, a: t.cumsum(a, 0)),
    "prod": ([_SQ], lambda t, F, a: t.prod(a)),
    "vector_norm": ([_SQ], lambda t, F, a: t.linalg.vector_norm(a)),
    "addcmul": ([_SQ, _SQ, _SQ], lambda t, F, a, b, c: t.addcmul(a, b, c)),
    "atan2": ([_SQ, _SQ], lambda t, F, a, b: t.atan2(a, b)),
    "dot": ([(4,), (4,)], lambda t, F, a, b: t.dot(a, b)),
    "vdot": ([(4,), (4,)], lambda t, F, a, b: t.vdot(a, b)),
    "tensordot": ([_SQ, _SQ], lambda t, F, a, b: t.tensordot(a, b, 1)),
    "bilinear": ([(2, 3), (2, 4), (5, 3, 4)], lambda t, F, a, b, w: F.bilinear(a, b, w)),
    "cat": ([(2,), (2,)], lambda t, F, a, b: t.cat([a, b])),
    "relu": ([_SQ], lambda t, F, a: F.relu(a)),
    "trace": ([_SQ], lambda t, F, a: t.trace(a)),
    "avg_pool3d": ([(1, 2, 4, 4, 4)], lambda t, F, a: F.avg_pool3d(a, 2)),
    "rdiv": ([_SQ], lambda t, F, a: 1 / a),
    "rpow": ([_SQ], lambda t, F, a: 2 ** a),
    "normalize": ([_SQ], lambda t, F, a: F.normalize(a)),
    "softmin": ([_SQ], lambda t, F, a: F.softmin(a, -1)),
    "upsample_area": ([(1, 2, 4, 4)],
                      lambda t, F, a: F.interpolate(a, scale_factor=0.5, mode="area")),
    "mean": ([_SQ], lambda t, F, a: a.mean()),
    "scatter_add": ([_SQ, _SQ],
                    lambda t, F, a, b: a.scatter_add(0, t.zeros(4, 4, dtype=t.int64), b)),
}


def _arrays(shapes):
    rng = np.random.default_rng(0)
    return [rng.random(s).astype(np.float32) + 0.5 for s in shapes]


def _out_dtype(out):
    if isinstance(out, (tuple, list)):
        out = out[0]
    return str(out.dtype).split(".")[-1]


def _torch_fake_cuda(case, in_dtypes, ac_dtype):
    """torch.autocast("cuda")'s dtype for ``case``, on fake CUDA tensors (the autocast
    kernels run; the context manager would refuse without a GPU, so set the state)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    shapes, fn = CASES[case]
    with FakeTensorMode(), torch.device("cuda"):
        ins = [torch.empty(s, dtype=getattr(torch, d)) for s, d in zip(shapes, in_dtypes)]
        prev = torch.get_autocast_dtype("cuda")
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", getattr(torch, ac_dtype))
        try:
            return _out_dtype(fn(torch, torch.nn.functional, *ins))
        finally:
            torch.set_autocast_enabled("cuda", False)
            torch.set_autocast_dtype("cuda", prev)
            torch.clear_autocast_cache()


@pytest.fixture
def cuda_lists_on_cpu(monkeypatch):
    """ember's CUDA tables applied to CPU tensors: the op-list logic is the same for every
    device type, only the tables differ."""
    monkeypatch.setitem(_policy.POLICIES, "cpu", _policy.POLICIES["cuda"])
    monkeypatch.setitem(_policy.FUNCTION_POLICIES, "cpu", _policy.FUNCTION_POLICIES["cuda"])


def _ember(case, in_dtypes, ac_dtype):
    shapes, fn = CASES[case]
    ins = [ember.tensor(a).to(getattr(ember, d)) for a, d in zip(_arrays(shapes), in_dtypes)]
    with ember.autocast("cpu", dtype=getattr(ember, ac_dtype)):
        return _out_dtype(fn(ember, ember.nn.functional, *ins))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("in_dtype", ["float32", "float16"])
def test_cuda_lists_dtype_matches_torch(cuda_lists_on_cpu, case, in_dtype):
    n = len(CASES[case][0])
    assert _ember(case, [in_dtype] * n, "float16") == \
        _torch_fake_cuda(case, [in_dtype] * n, "float16")


@pytest.mark.parametrize("case", ["mm", "linear", "addcmul", "atan2", "dot", "tensordot",
                                  "mse_loss", "cat", "scatter_add"])
def test_cuda_lists_mixed_inputs_match_torch(cuda_lists_on_cpu, case):
    n = len(CASES[case][0])
    dts = ["float16"] + ["float32"] * (n - 1)
    assert _ember(case, dts, "float16") == _torch_fake_cuda(case, dts, "float16")


@pytest.mark.parametrize("case", ["mm", "exp", "sum", "softmax_dtype"])
def test_cuda_lists_bfloat16_matches_torch(cuda_lists_on_cpu, case):
    n = len(CASES[case][0])
    assert _ember(case, ["float32"] * n, "bfloat16") == \
        _torch_fake_cuda(case, ["float32"] * n, "bfloat16")


def test_cuda_lists_binary_cross_entropy_raises_as_torch(cuda_lists_on_cpu):
    a = ember.full((4,), 0.5)
    with ember.autocast("cpu", dtype=ember.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            ember.nn.functional.binary_cross_entropy(a, a)


def test_cpu_lists_keep_binary_cross_entropy_in_float32():
    a = ember.full((4,), 0.5)
    with ember.autocast("cpu"):
        assert ember.nn.functional.binary_cross_entropy(a, a).dtype == ember.float32


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("spelling", ["ember", "amp"])
def test_autocast_cuda_spellings_disable_without_gpu(spelling):
    ctx = ember.autocast if spelling == "ember" else ember.amp.autocast
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ac = ctx("cuda", dtype=ember.bfloat16)
    with ac:
        assert not ember.is_autocast_enabled("cuda")


# ---- on a GPU: ember.autocast("cuda") on CuPy tensors against torch.cuda ----------------


def _ember_cuda(case, in_dtypes, ac_dtype, spelling="ember"):
    shapes, fn = CASES[case]
    ins = [ember.tensor(a, device="cuda").to(getattr(ember, d))
           for a, d in zip(_arrays(shapes), in_dtypes)]
    if spelling == "ember":
        ctx = ember.autocast("cuda", dtype=getattr(ember, ac_dtype))
    elif spelling == "amp":
        ctx = ember.amp.autocast("cuda", dtype=getattr(ember, ac_dtype))
    else:
        with pytest.warns(FutureWarning, match="torch.amp.autocast"):
            ctx = ember.cuda.amp.autocast(dtype=getattr(ember, ac_dtype))
    with ctx:
        out = fn(ember, ember.nn.functional, *ins)
    return _out_dtype(out), out


@needs_gpu
@pytest.mark.parametrize("case", ["mm", "linear", "conv2d", "exp", "layer_norm", "sum",
                                  "softmax_dtype", "addcmul", "mse_loss", "relu"])
def test_cuda_autocast_dtype_matches_torch(case):
    n = len(CASES[case][0])
    got, _ = _ember_cuda(case, ["float32"] * n, "float16")
    assert got == _torch_fake_cuda(case, ["float32"] * n, "float16")


@needs_gpu
@pytest.mark.parametrize("spelling", ["ember", "amp", "cuda_amp"])
def test_cuda_autocast_spellings_lower_mm(spelling):
    got, out = _ember_cuda("mm", ["float32", "float32"], "float16", spelling)
    assert got == "float16" and out.device.type == "cuda"


@needs_gpu
@pytest.mark.parametrize("case", ["mm", "linear", "conv2d"])
def test_cuda_autocast_values_match_torch(case):
    shapes, fn = CASES[case]
    _, e = _ember_cuda(case, ["float32"] * len(shapes), "float16")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    ins = [torch.tensor(a, device=dev) for a in _arrays(shapes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autocast(dev, dtype=torch.float16):
            t = fn(torch, torch.nn.functional, *ins)
    np.testing.assert_allclose(e.float().cpu().numpy(), t.float().cpu().numpy(),
                               rtol=2e-3, atol=2e-3)


@needs_gpu
def test_cuda_autocast_linear_grads_stay_float32():
    lin = ember.nn.Linear(4, 3).to("cuda")
    x = ember.ones(2, 4, device="cuda")
    with ember.autocast("cuda"):
        y = lin(x)
    assert y.dtype == ember.float16
    y.float().sum().backward()
    assert lin.weight.grad.dtype == ember.float32


@needs_gpu
def test_cuda_autocast_binary_cross_entropy_raises():
    a = ember.full((4,), 0.5, device="cuda")
    with ember.autocast("cuda"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            ember.nn.functional.binary_cross_entropy(a, a)
