"""Quantized tensors against torch's."""

import copy
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _quiet():
    # torch 2.13 warns that quantized tensors are deprecated; ember does not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _tdt(d):
    return getattr(torch, repr(d).split(".")[-1])


@pytest.mark.parametrize("dtype", [ember.quint8, ember.qint8, ember.qint32])
@pytest.mark.parametrize("scale,zp", [(0.037, 3), (1 / 3, 10), (0.1, 0)])
def test_quantize_per_tensor_matches_torch(rng, dtype, scale, zp):
    x = (rng.standard_normal(5000) * 5).astype(np.float32)
    e = ember.quantize_per_tensor(ember.from_numpy(x), scale, zp, dtype)
    t = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, _tdt(dtype))
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    assert e.q_scale() == t.q_scale() and e.q_zero_point() == t.q_zero_point()


def test_quantize_per_channel_matches_torch(rng):
    w = rng.standard_normal((3, 400)).astype(np.float32)
    s, z = np.array([0.01, 0.037, 0.1]), np.array([0, 3, -2])
    e = ember.quantize_per_channel(ember.from_numpy(w), ember.from_numpy(s),
                                   ember.from_numpy(z), 0, ember.qint8)
    t = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(s),
                                   torch.from_numpy(z), 0, torch.qint8)
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                  t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy(),
                                  t.q_per_channel_zero_points().numpy())
    assert e.q_per_channel_axis() == t.q_per_channel_axis() == 0


def test_quantized_tensor_metadata_matches_torch():
    e = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.1, 0, ember.qint8)
    t = torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.1, 0, torch.qint8)
    assert (e.is_quantized, t.is_quantized) == (True, True)
    assert repr(e.dtype) == "ember.qint8" and repr(e.qscheme()) == "ember.per_tensor_affine"
    assert repr(t.qscheme()) == "torch.per_tensor_affine"
    assert e.is_floating_point() == t.is_floating_point()
    assert tuple(e.shape) == tuple(t.shape) and e.element_size() == t.element_size()
    assert not ember.zeros(1).is_quantized


@pytest.mark.parametrize("make", [
    lambda lib: lib.quantize_per_tensor(lib.tensor([-1.0, 0.0, 0.26, 1.0, 100.0]), 0.1, 10,
                                        lib.quint8),
    lambda lib: lib.quantize_per_tensor(lib.tensor(2.5), 0.5, 0, lib.qint32),
    lambda lib: lib.quantize_per_channel(lib.tensor([[0.5, -0.3, 1.2], [0.7, -2.0, 0.1]]),
                                         lib.tensor([0.1, 0.2]), lib.tensor([0, 1]), 0,
                                         lib.qint8),
])
def test_quantized_tensor_print_matches_torch(make):
    assert repr(make(ember)) == repr(make(torch)).replace("torch.", "ember.")


def test_quantized_reshape_and_index_keep_parameters():
    e = ember.quantize_per_tensor(ember.arange(6.0), 0.5, 2, ember.quint8)
    t = torch.quantize_per_tensor(torch.arange(6.0), 0.5, 2, torch.quint8)
    for f in (lambda q: q.reshape(2, 3), lambda q: q[1:4], lambda q: q.view(3, 2).permute(1, 0),
              lambda q: q.unsqueeze(0), lambda q: q.clone()):
        assert repr(f(e)) == repr(f(t)).replace("torch.", "ember.")


def test_quantized_tensor_deepcopy_is_independent():
    q = ember.quantize_per_tensor(ember.tensor([1.0]), 0.1, 0, ember.qint8)
    c = copy.deepcopy(q)
    assert c.int_repr().tolist() == [10] and c._data.ints is not q._data.ints


@pytest.mark.parametrize("op", [lambda lib, q: q + q, lambda lib, q: lib.exp(q),
                                lambda lib, q: q.sum(), lambda lib, q: q @ q])
def test_unsupported_op_on_quantized_raises_not_implemented(op):
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        op(ember, q)
    tq = torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError):
        op(torch, tq)


def test_quantized_numpy_and_tolist_raise_like_torch():
    q = ember.quantize_per_tensor(ember.tensor([1.0]), 0.1, 0, ember.qint8)
    with pytest.raises(TypeError):
        q.numpy()
    with pytest.raises(RuntimeError):
        q.tolist()


def test_quantize_integer_input_raises_runtime_error():
    with pytest.raises(RuntimeError, match="Float Tensor"):
        ember.quantize_per_tensor(ember.tensor([1, 2]), 0.1, 0, ember.quint8)


def test_quantize_to_float_dtype_raises_runtime_error():
    with pytest.raises(RuntimeError, match="not supported"):
        ember.quantize_per_tensor(ember.tensor([1.0]), 0.1, 0, ember.float32)


def test_quantized_accessors_on_float_tensor_raise_not_implemented():
    x = ember.tensor([1.0])
    for f in (x.int_repr, x.q_scale, x.q_zero_point, x.qscheme):
        with pytest.raises(NotImplementedError, match="'CPU' backend"):
            f()
    assert x.dequantize() is x


def test_per_channel_accessor_on_per_tensor_raises_runtime_error():
    q = ember.quantize_per_tensor(ember.tensor([1.0]), 0.1, 0, ember.qint8)
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()
    qc = ember.quantize_per_channel(ember.ones(2, 2), ember.tensor([0.1, 0.2]),
                                    ember.tensor([0, 0]), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        qc.q_scale()


def test_quantize_per_tensor_list_input():
    qs = ember.quantize_per_tensor([ember.tensor([1.0]), ember.tensor([2.0])],
                                   ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), ember.qint8)
    assert [q.int_repr().tolist() for q in qs] == [[10], [11]]


def test_quantized_dtypes_and_schemes_match_torch_names():
    for name in ("qint8", "quint8", "qint32", "per_tensor_affine", "per_channel_affine",
                 "per_tensor_symmetric", "per_channel_symmetric",
                 "per_channel_affine_float_qparams"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name)).replace("torch", "ember")
    assert ember.qint8.itemsize == torch.qint8.itemsize
    assert ember.qint32.itemsize == torch.qint32.itemsize


@pytest.mark.parametrize("op", [lambda lib, q: lib.relu(q), lambda lib, q: lib.nn.ReLU()(q),
                                lambda lib, q: lib.nn.functional.relu(q)])
def test_relu_on_quantized_matches_torch(op):
    e = op(ember, ember.quantize_per_tensor(ember.tensor([-1.0, 0.5, 2.0]), 0.1, 10,
                                            ember.quint8))
    t = op(torch, torch.quantize_per_tensor(torch.tensor([-1.0, 0.5, 2.0]), 0.1, 10,
                                            torch.quint8))
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_quantized_equality_compares_values():
    q = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.1, 0, ember.qint8)
    assert (q == q).tolist() == [True, True]
