"""Quantized tensors and quantized modules' state dicts through ember.save / ember.load, in
both directions with torch (NOTE [ Quantized tensors in checkpoints ])."""

import io
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
from tests.ao.test_quantized_modules import _static, weights  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _qtensors(lib):
    x = lib.tensor([[-1.0, 0.0, 0.26], [2.0, 3.5, -0.7]])
    return {
        "u8": lib.quantize_per_tensor(x, 0.1, 10, lib.quint8),
        "i8": lib.quantize_per_tensor(x, 0.05, -3, lib.qint8),
        "i32": lib.quantize_per_tensor(x, 0.01, 7, lib.qint32),
        "pc": lib.quantize_per_channel(x, lib.tensor([0.1, 0.2], dtype=lib.float64),
                                       lib.tensor([0, 2]), 0, lib.qint8),
        "dtype": lib.quint8,
        "scheme": lib.per_channel_affine,
    }


def _same_qtensor(e, t):
    assert str(e.dtype) == str(t.dtype).replace("torch.", "ember.")
    assert str(e.qscheme()) == str(t.qscheme()).replace("torch.", "ember.")
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    if t.qscheme() == torch.per_tensor_affine:
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    else:
        np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                      t.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy(),
                                      t.q_per_channel_zero_points().numpy())
        assert e.q_per_channel_axis() == t.q_per_channel_axis()


def _check_all(e, t):
    for k in ("u8", "i8", "i32", "pc"):
        _same_qtensor(e[k], t[k])
    assert e["dtype"] is ember.quint8 and t["dtype"] is torch.quint8
    assert e["scheme"] is ember.per_channel_affine
    assert t["scheme"] is torch.per_channel_affine


def test_qtensor_ember_save_loads_in_torch_weights_only():
    buf = io.BytesIO()
    ember.save(_qtensors(ember), buf)
    t = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    _check_all(_qtensors(ember), t)


def test_qtensor_torch_save_loads_in_ember_weights_only():
    buf = io.BytesIO()
    torch.save(_qtensors(torch), buf)
    e = ember.load(io.BytesIO(buf.getvalue()), weights_only=True)
    _check_all(e, _qtensors(torch))


def test_qtensor_round_trip_keeps_views_and_values():
    q = _qtensors(ember)["u8"]
    buf = io.BytesIO()
    ember.save({"whole": q, "row": q[1]}, buf)
    buf.seek(0)
    back = ember.load(buf)
    np.testing.assert_array_equal(back["row"].int_repr().numpy(), q[1].int_repr().numpy())
    assert back["row"].q_scale() == 0.1 and back["whole"].q_zero_point() == 10
    np.testing.assert_array_equal(back["whole"].dequantize().numpy(), q.dequantize().numpy())


def test_qtensor_views_load_in_torch_with_their_strides():
    q = _qtensors(ember)["u8"]
    views = {"t": q.t(), "cols": q[:, 1::2], "mean": q.mean(), "empty": q[:0]}
    buf = io.BytesIO()
    ember.save(views, buf)
    back = torch.load(io.BytesIO(buf.getvalue()))
    for k, v in views.items():
        np.testing.assert_array_equal(back[k].int_repr().numpy(), v.int_repr().numpy())
    assert back["t"].stride() == (1, 3)


def test_qtensor_symmetric_scheme_in_checkpoint_raises_like_torch():
    from ember.ao._qserial import rebuild_qtensor
    from ember.serialization._rebuild import typed_storage

    storage = typed_storage(np.zeros(2, np.int8).view(np.uint8), ember.qint8)
    with pytest.raises(RuntimeError, match="Can't deserialize quantized tensor"):
        rebuild_qtensor(storage, 0, (2,), (1,), (ember.per_tensor_symmetric, 0.1, 0))


def _dynamic(lib, seed=0):
    lib.manual_seed(seed)
    m = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.ReLU(), lib.nn.Linear(5, 3))
    return lib.ao.quantization.quantize_dynamic(m, {lib.nn.Linear}, dtype=lib.qint8)


def test_dynamic_linear_state_dict_torch_to_ember(rng):
    buf = io.BytesIO()
    torch.save(_dynamic(torch).state_dict(), buf)  # as print_size_of_model does
    e = _dynamic(ember, seed=1)
    e.load_state_dict(ember.load(io.BytesIO(buf.getvalue())))
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(e(ember.tensor(x)).numpy(),
                                  _dynamic(torch)(torch.tensor(x)).numpy())


def test_dynamic_linear_state_dict_ember_to_torch(rng):
    e = _dynamic(ember, seed=3)
    buf = io.BytesIO()
    ember.save(e.state_dict(), buf)
    t = _dynamic(torch)
    t.load_state_dict(torch.load(io.BytesIO(buf.getvalue())))
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy())


def _dynamic_lstm(lib, seed):
    lib.manual_seed(seed)
    m = lib.nn.Sequential(lib.nn.LSTM(3, 4, num_layers=2, bidirectional=True))
    return lib.ao.quantization.quantize_dynamic(m, {lib.nn.LSTM}, dtype=lib.qint8)


def _lstm_out(m, lib, x):
    return m(lib.tensor(x))[0].detach().numpy()


_SEQ = np.random.default_rng(5).standard_normal((5, 2, 3)).astype(np.float32)


def test_dynamic_lstm_state_dict_round_trips_in_ember():
    a, b = _dynamic_lstm(ember, 0), _dynamic_lstm(ember, 1)
    buf = io.BytesIO()
    ember.save(a.state_dict(), buf)
    buf.seek(0)
    b.load_state_dict(ember.load(buf, weights_only=False))
    np.testing.assert_array_equal(_lstm_out(a, ember, _SEQ), _lstm_out(b, ember, _SEQ))


def test_dynamic_lstm_state_dict_torch_to_ember():
    t, e = _dynamic_lstm(torch, 0), _dynamic_lstm(ember, 1)
    buf = io.BytesIO()
    torch.save(t.state_dict(), buf)
    e.load_state_dict(ember.load(io.BytesIO(buf.getvalue()), weights_only=False))
    np.testing.assert_allclose(_lstm_out(e, ember, _SEQ), _lstm_out(t, torch, _SEQ),
                               atol=1e-6)


def test_dynamic_lstm_state_dict_ember_to_torch():
    e, t = _dynamic_lstm(ember, 2), _dynamic_lstm(torch, 3)
    buf = io.BytesIO()
    ember.save(e.state_dict(), buf)
    t.load_state_dict(torch.load(io.BytesIO(buf.getvalue()), weights_only=False))
    np.testing.assert_allclose(_lstm_out(t, torch, _SEQ), _lstm_out(e, ember, _SEQ),
                               atol=1e-6)


def test_dynamic_lstm_checkpoint_refused_by_weights_only_like_torch():
    buf = io.BytesIO()
    ember.save(_dynamic_lstm(ember, 0).state_dict(), buf)
    with pytest.raises(pickle.UnpicklingError, match="ScriptObject"):
        ember.load(io.BytesIO(buf.getvalue()))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(buf.getvalue()))


def test_static_quantized_state_dict_both_ways(weights, rng):  # noqa: F811
    from tests.conftest import skip_unless_torch_avx512

    # (on AVX2 torch's quantized flatten asks for a _reshape_copy its QuantizedCPU lacks)
    skip_unless_torch_avx512("torch's quantized model run")
    cal = [rng.standard_normal((4, 2, 4, 4)).astype(np.float32) for _ in range(2)]
    x = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    e, t = _static(ember, weights, cal, "x86"), _static(torch, weights, cal, "x86")
    buf = io.BytesIO()
    torch.save(t.state_dict(), buf)
    e2 = _static(ember, weights, cal[:1], "x86")
    e2.load_state_dict(ember.load(io.BytesIO(buf.getvalue())))
    np.testing.assert_allclose(e2(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy(),
                               atol=1e-6)
    buf = io.BytesIO()
    ember.save(e.state_dict(), buf)
    t2 = _static(torch, weights, cal[:1], "x86")
    t2.load_state_dict(torch.load(io.BytesIO(buf.getvalue())))
    np.testing.assert_allclose(t2(torch.tensor(x)).numpy(), e(ember.tensor(x)).numpy(),
                               atol=1e-6)
