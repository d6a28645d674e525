"""Pooling, mean, resampling, hardtanh and cat/stack on quantized tensors: the same integers,
scale and zero point as torch's quantized kernels (NOTE [ Quantized ops on centred
integers ])."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


_X = np.random.default_rng(7).standard_normal((2, 3, 7, 9)).astype(np.float32) * 3
_QPARAMS = {"quint8": (0.05, 127), "qint8": (0.05, 3), "qint32": (0.05, -5)}


def _q(lib, qdtype, x=_X):
    scale, zp = _QPARAMS[qdtype]
    return lib.quantize_per_tensor(lib.tensor(x), scale, zp, getattr(lib, qdtype))


def _same(e, t):
    assert str(e.dtype) == str(t.dtype).replace("torch.", "ember.")
    assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


_CASES = {
    "max_pool2d": lambda lib, q: lib.nn.functional.max_pool2d(q, 3, 2, 1, ceil_mode=True),
    "max_pool2d_module": lambda lib, q: lib.nn.MaxPool2d(2)(q),
    "max_pool1d": lambda lib, q: lib.nn.functional.max_pool1d(q[0], 2),
    "avg_pool2d": lambda lib, q: lib.nn.functional.avg_pool2d(q, 3, 2, 1),
    "avg_pool2d_no_pad_count": lambda lib, q: lib.nn.functional.avg_pool2d(
        q, (2, 3), (1, 2), 1, count_include_pad=False),
    "avg_pool2d_ceil_divisor": lambda lib, q: lib.nn.functional.avg_pool2d(
        q, 3, padding=1, ceil_mode=True, divisor_override=4),
    "avg_pool1d": lambda lib, q: lib.nn.functional.avg_pool1d(q[0], 2),
    "adaptive_avg_pool2d": lambda lib, q: lib.nn.functional.adaptive_avg_pool2d(q, (5, 4)),
    "adaptive_avg_pool2d_module": lambda lib, q: lib.nn.AdaptiveAvgPool2d(1)(q),
    "adaptive_avg_pool1d": lambda lib, q: lib.nn.functional.adaptive_avg_pool1d(q[0], 4),
    "mean_all": lambda lib, q: q.mean(),
    "mean_dims_keepdim": lambda lib, q: lib.mean(q, (2, 3), keepdim=True),
    "mean_dim": lambda lib, q: q.mean(1),
    "interpolate_nearest": lambda lib, q: lib.nn.functional.interpolate(q, scale_factor=2),
    "interpolate_bilinear": lambda lib, q: lib.nn.functional.interpolate(
        q, size=(10, 5), mode="bilinear"),
    "interpolate_bilinear_corners": lambda lib, q: lib.nn.functional.interpolate(
        q, scale_factor=1.5, mode="bilinear", align_corners=True),
    "interpolate_bilinear_up": lambda lib, q: lib.nn.functional.interpolate(
        q, size=(13, 17), mode="bilinear"),
    "interpolate_nearest_exact": lambda lib, q: lib.nn.functional.interpolate(
        q, size=(11, 4), mode="nearest-exact"),
    "interpolate_nearest_3d": lambda lib, q: lib.nn.functional.interpolate(
        q[:, :, None], scale_factor=(2, 1, 1.5)),
    "interpolate_area": lambda lib, q: lib.nn.functional.interpolate(q, size=(3, 4),
                                                                     mode="area"),
    "hardtanh": lambda lib, q: lib.nn.functional.hardtanh(q, -0.5, 2.0),
    "relu6": lambda lib, q: lib.nn.ReLU6()(q),
    "relu": lambda lib, q: lib.nn.functional.relu(q),
    "flatten": lambda lib, q: lib.flatten(q, 1),
    "cat": lambda lib, q: lib.cat([q, q[:, :1]], 1),
    "stack": lambda lib, q: lib.stack([q, q], 2),
}


@pytest.mark.parametrize("qdtype", ["quint8", "qint8", "qint32"])
@pytest.mark.parametrize("case", list(_CASES))
def test_quantized_op_matches_torch_integers(case, qdtype):
    fn = _CASES[case]
    _same(fn(ember, _q(ember, qdtype)), fn(torch, _q(torch, qdtype)))


def test_quantized_max_pool_with_indices_raises_like_torch():
    with pytest.raises(NotImplementedError):
        torch.nn.functional.max_pool2d(_q(torch, "quint8"), 2, return_indices=True)
    with pytest.raises(NotImplementedError, match="max_pool2d_with_indices"):
        ember.nn.functional.max_pool2d(_q(ember, "quint8"), 2, return_indices=True)


def _two(lib):
    a = lib.quantize_per_tensor(lib.tensor(_X), 0.05, 3, lib.quint8)
    b = lib.quantize_per_tensor(lib.tensor(_X * 2), 0.1, 5, lib.quint8)
    return a, b


def test_quantized_cat_requantizes_to_first_params_like_torch():
    _same(ember.cat(_two(ember), 0), torch.cat(_two(torch), 0))


def test_float_functional_cat_matches_torch():
    e = ember.ao.nn.quantized.FloatFunctional().cat(list(_two(ember)), 1)
    t = torch.ao.nn.quantized.FloatFunctional().cat(list(_two(torch)), 1)
    _same(e, t)


def test_qfunctional_cat_matches_torch():
    qe, qt = ember.ao.nn.quantized.QFunctional(), torch.ao.nn.quantized.QFunctional()
    qe.scale, qe.zero_point = qt.scale, qt.zero_point = 0.07, 9
    _same(qe.cat(list(_two(ember)), 1), qt.cat(list(_two(torch)), 1))


def _per_channel(lib):
    return lib.quantize_per_channel(lib.tensor(_X), lib.ones(3, dtype=lib.float64) * 0.1,
                                    lib.zeros(3, dtype=lib.int64), 1, lib.qint8)


@pytest.mark.parametrize("op", ["max_pool2d", "mean", "cat"])
def test_quantized_op_per_channel_raises_like_torch(op):
    calls = {"max_pool2d": lambda lib, q: lib.nn.functional.max_pool2d(q, 2),
             "mean": lambda lib, q: q.mean(), "cat": lambda lib, q: lib.cat([q, q])}
    with pytest.raises(RuntimeError) as te:
        calls[op](torch, _per_channel(torch))
    with pytest.raises(RuntimeError) as ee:
        calls[op](ember, _per_channel(ember))
    assert str(ee.value).split("(")[0].strip() in str(te.value)


def test_quantized_linear_interpolate_1d_raises_like_torch():
    with pytest.raises(NotImplementedError):
        torch.nn.functional.interpolate(_q(torch, "quint8")[0], scale_factor=2, mode="linear")
    with pytest.raises(NotImplementedError):
        ember.nn.functional.interpolate(_q(ember, "quint8")[0], scale_factor=2, mode="linear")
