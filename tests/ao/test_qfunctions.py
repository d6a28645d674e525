"""The quantized-tensor functions of the top-level namespace, compared with torch."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_DT = {"quint8": (ember.quint8, torch.quint8), "qint8": (ember.qint8, torch.qint8)}


def _both(x, scale=0.1, zp=3, dt="quint8"):
    e, t = _DT[dt]
    return (ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, e),
            torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, t))


def _same_q(e, t):
    assert e.dtype.name == str(t.dtype).split(".")[1]
    assert e.q_scale() == t.q_scale() and e.q_zero_point() == t.q_zero_point()
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())


def test_function_forms_match_methods():
    e, t = _both(np.array([0.5, -0.2], np.float32))
    assert ember.q_scale(e) == torch.q_scale(t)
    assert ember.q_zero_point(e) == torch.q_zero_point(t)
    np.testing.assert_array_equal(ember.int_repr(e).numpy(), torch.int_repr(t).numpy())


def test_per_channel_function_forms():
    x = np.random.default_rng(0).random((3, 2)).astype(np.float32)
    s, z = np.array([0.1, 0.2, 0.3]), np.array([0, 1, 2])
    e = ember.quantize_per_channel(ember.from_numpy(x), ember.tensor(s), ember.tensor(z), 0,
                                   ember.quint8)
    t = torch.quantize_per_channel(torch.from_numpy(x), torch.tensor(s), torch.tensor(z), 0,
                                   torch.quint8)
    assert ember.q_per_channel_axis(e) == torch.q_per_channel_axis(t)
    np.testing.assert_array_equal(ember.q_per_channel_scales(e).numpy(),
                                  torch.q_per_channel_scales(t).numpy())
    np.testing.assert_array_equal(ember.q_per_channel_zero_points(e).numpy(),
                                  torch.q_per_channel_zero_points(t).numpy())


@pytest.mark.parametrize("dt", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic_matches_torch(dt, reduce_range):
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = (rng.standard_normal(rng.integers(1, 40)) * rng.uniform(0.01, 50)
             + rng.uniform(-20, 20)).astype(np.float32)
        e = ember.quantize_per_tensor_dynamic(ember.from_numpy(x), _DT[dt][0], reduce_range)
        t = torch.quantize_per_tensor_dynamic(torch.from_numpy(x), _DT[dt][1], reduce_range)
        _same_q(e, t)


@pytest.mark.parametrize("x", [np.zeros(3, np.float32), np.ones(3, np.float32),
                               -np.ones(3, np.float32)])
def test_quantize_per_tensor_dynamic_degenerate_ranges(x):
    _same_q(ember.quantize_per_tensor_dynamic(ember.from_numpy(x), ember.qint8, False),
            torch.quantize_per_tensor_dynamic(torch.from_numpy(x), torch.qint8, False))


def test_quantize_per_tensor_dynamic_rejects_double_and_qint32():
    with pytest.raises(RuntimeError, match="Float Tensor"):
        ember.quantize_per_tensor_dynamic(ember.zeros(2, dtype=ember.float64), ember.quint8,
                                          False)
    with pytest.raises(RuntimeError, match="not supported"):
        ember.quantize_per_tensor_dynamic(ember.zeros(2), ember.qint32, False)


def test_empty_quantized_takes_qparams():
    e, t = _both(np.array([0.5], np.float32), 0.25, 7)
    ee, tt = ember.empty_quantized([2, 3], e), torch.empty_quantized([2, 3], t)
    assert tuple(ee.shape) == tuple(tt.shape)
    assert ee.q_scale() == tt.q_scale() and ee.q_zero_point() == tt.q_zero_point()
    assert str(ember.empty_quantized([2], e, dtype=ember.qint8).dtype) == "ember.qint8"


def test_empty_quantized_dense_raises():
    with pytest.raises(NotImplementedError):
        torch.empty_quantized([2], torch.zeros(2))
    with pytest.raises(NotImplementedError):
        ember.empty_quantized([2], ember.zeros(2))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_quantized_max_pool_matches_torch(nd):
    x = np.random.default_rng(nd).random((1, 2) + (5,) * nd).astype(np.float32)
    e, t = _both(x)
    fe = getattr(ember, f"quantized_max_pool{nd}d")
    ft = getattr(torch, f"quantized_max_pool{nd}d")
    _same_q(fe(e, [2] * nd), ft(t, [2] * nd))
    _same_q(fe(e, [3] * nd, [2] * nd, 1, 1, True), ft(t, [3] * nd, [2] * nd, 1, 1, True))


def test_quantized_max_pool_dense_raises():
    with pytest.raises(NotImplementedError):
        ember.quantized_max_pool2d(ember.zeros(1, 1, 2, 2), [2, 2])


@pytest.mark.parametrize("dt,shape", [("quint8", (2, 3, 4, 4)), ("qint8", (2, 3)),
                                      ("quint8", (1, 3, 2, 2, 2))])
def test_quantized_batch_norm_matches_torch(dt, shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    w, b, m, v = (rng.standard_normal(3).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    zp = 100 if dt == "quint8" else 0
    e, t = _both(x, 0.05, zp, dt)
    eo = ember.quantized_batch_norm(e, *(ember.from_numpy(a) for a in (w, b, m, v)), 1e-5,
                                    0.07, 3)
    to = torch.quantized_batch_norm(t, *(torch.from_numpy(a) for a in (w, b, m, v)), 1e-5,
                                    0.07, 3)
    _same_q(eo, to)


def test_quantized_batch_norm_needs_weight():
    e, _ = _both(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="Weight must be provided"):
        ember.quantized_batch_norm(e, None, ember.zeros(3), ember.zeros(3), ember.ones(3),
                                   1e-5, 0.1, 0)


def test_quantized_batch_norm_rejects_1d():
    e, _ = _both(np.zeros(3, np.float32))
    with pytest.raises(RuntimeError, match="2d, 3d, 4d or 5d"):
        ember.quantized_batch_norm(e, ember.ones(3), ember.zeros(3), ember.zeros(3),
                                   ember.ones(3), 1e-5, 0.1, 0)


def _fused_steps(m, per_row, sym, observer_on, fake_quant_on, shape=(3, 4)):
    if per_row:
        rmin, rmax = m.empty(0), m.empty(0)
        scale, zp = m.ones(shape[0]), m.zeros(shape[0], dtype=m.int32)
    else:
        rmin, rmax = m.tensor(float("inf")), m.tensor(float("-inf"))
        scale, zp = m.tensor([1.0]), m.tensor([0], dtype=m.int32)
    qmin, qmax = (-128, 127) if sym else (0, 255)
    rng = np.random.default_rng(1)
    out = []
    for i in range(3):
        x = m.from_numpy((rng.standard_normal(shape) * (i + 1)).astype(np.float32))
        obs = 1 if i == 1 else observer_on  # the middle step always observes
        y = m.fused_moving_avg_obs_fake_quant(x, m.tensor([obs]), m.tensor([fake_quant_on]),
                                              rmin, rmax, scale, zp, 0.01, qmin, qmax, 0,
                                              per_row, sym)
        out.append([t.numpy().copy() for t in (y, rmin, rmax, scale, zp)])
    return out


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("sym", [False, True])
@pytest.mark.parametrize("switches", [(1, 1), (1, 0), (0, 1)])
def test_fused_moving_avg_obs_fake_quant_matches_torch(per_row, sym, switches):
    shape = (2, 5, 3) if per_row else (3, 4)
    e = _fused_steps(ember, per_row, sym, *switches, shape=shape)
    t = _fused_steps(torch, per_row, sym, *switches, shape=shape)
    for es, ts in zip(e, t):
        for a, b in zip(es, ts):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_fused_moving_avg_obs_fake_quant_per_row_axis_1_raises():
    def call(m):
        return m.fused_moving_avg_obs_fake_quant(
            m.zeros(2, 3), m.tensor([1]), m.tensor([1]), m.empty(0), m.empty(0), m.ones(3),
            m.zeros(3, dtype=m.int32), 0.01, 0, 255, 1, True, False)
    with pytest.raises(RuntimeError, match="axis == 0"):
        call(torch)
    with pytest.raises(RuntimeError, match="axis == 0"):
        call(ember)


def test_choose_qparams_optimized_matches_torch():
    rng = np.random.default_rng(0)
    for i in range(40):
        n = int(rng.integers(2, 200))
        x = (rng.standard_normal(n) * rng.uniform(0.1, 10)).astype(np.float32)
        n_bins, ratio, bits = [(200, 0.16, 8), (50, 0.5, 4), (10, 0.9, 2)][i % 3]
        e = ember.choose_qparams_optimized(ember.from_numpy(x), n, n_bins, ratio, bits)
        t = torch.choose_qparams_optimized(torch.from_numpy(x), n, n_bins, ratio, bits)
        assert [v.item() for v in e] == [v.item() for v in t]
        assert tuple(e[0].shape) == (1,) and str(e[0].dtype) == "ember.float32"


def test_choose_qparams_optimized_rejects_double_and_overlong_numel():
    with pytest.raises(RuntimeError, match="Float"):
        ember.choose_qparams_optimized(ember.zeros(3, dtype=ember.float64), 3, 10, 0.5, 8)
    with pytest.raises(RuntimeError, match="out of the bound"):
        ember.choose_qparams_optimized(ember.zeros(3), 4, 10, 0.5, 8)
