"""Observers, fake quantization and qconfigs against torch.ao.quantization."""

import warnings

import numpy as np
import pytest

import ember
import ember.ao.quantization as Q

torch = pytest.importorskip("torch")
TQ = pytest.importorskip("torch.ao.quantization")


def _t(v):
    # ember dtype/qscheme -> torch's
    if isinstance(v, (ember.dtype, ember.qscheme)):
        return getattr(torch, repr(v).split(".")[-1])
    return v


def _batches(rng):
    return [(rng.standard_normal((4, 6)) * s + o).astype(np.float32)
            for s, o in ((1, 0), (3, 0.5), (0.5, -1))]


def _both(name, rng, **kw):
    eo = getattr(Q, name)(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to = getattr(TQ, name)(**{k: _t(v) for k, v in kw.items()})
    for x in _batches(rng):
        eo(ember.from_numpy(x))
        to(torch.from_numpy(x))
    return eo, to


def _same_qparams(eo, to):
    es, ez = eo.calculate_qparams()
    ts, tz = to.calculate_qparams()
    np.testing.assert_array_equal(es.numpy(), ts.numpy())
    np.testing.assert_array_equal(ez.numpy(), tz.numpy())
    assert repr(ez.dtype).split(".")[-1] == repr(tz.dtype).split(".")[-1]


@pytest.mark.parametrize("kw", [
    {}, {"dtype": ember.qint8, "qscheme": ember.per_tensor_symmetric},
    {"reduce_range": True}, {"dtype": ember.qint8, "reduce_range": True},
    {"quant_min": 0, "quant_max": 15}, {"eps": 2 ** -12},
])
def test_minmax_observer_qparams_match_torch(rng, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_qparams(*_both("MinMaxObserver", rng, **kw))


@pytest.mark.parametrize("kw", [{}, {"averaging_constant": 0.3, "dtype": ember.qint8,
                                     "qscheme": ember.per_tensor_symmetric}])
def test_moving_average_observer_qparams_match_torch(rng, kw):
    _same_qparams(*_both("MovingAverageMinMaxObserver", rng, **kw))


@pytest.mark.parametrize("kw", [
    {}, {"ch_axis": 1, "dtype": ember.qint8, "qscheme": ember.per_channel_symmetric},
    {"qscheme": ember.per_channel_affine_float_qparams},
])
def test_per_channel_observer_qparams_match_torch(rng, kw):
    _same_qparams(*_both("PerChannelMinMaxObserver", rng, **kw))


def test_moving_average_per_channel_observer_qparams_match_torch(rng):
    _same_qparams(*_both("MovingAveragePerChannelMinMaxObserver", rng, ch_axis=1))


@pytest.mark.parametrize("kw", [{}, {"reduce_range": True}, {"bins": 64},
                                {"dtype": ember.qint8, "qscheme": ember.per_tensor_symmetric}])
def test_histogram_observer_matches_torch(rng, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eo, to = _both("HistogramObserver", rng, **kw)
    np.testing.assert_array_equal(eo.histogram.numpy(), to.histogram.numpy())
    _same_qparams(eo, to)


def test_observer_repr_and_state_dict_keys_match_torch(rng):
    for name in ("MinMaxObserver", "PerChannelMinMaxObserver", "HistogramObserver"):
        eo, to = _both(name, rng)
        assert repr(eo) == repr(to).replace("torch.", "ember.")
        assert list(eo.state_dict()) == list(to.state_dict())


def test_observer_without_data_returns_default_qparams():
    with pytest.warns(UserWarning, match="must run observer"):
        s, z = Q.MinMaxObserver().calculate_qparams()
    assert s.tolist() == [1.0] and z.tolist() == [0] and z.dtype == ember.int64


@pytest.mark.parametrize("name", ["PlaceholderObserver", "NoopObserver", "RecordingObserver",
                                  "ReuseInputObserver"])
def test_passthrough_observer_refuses_qparams(name):
    obs = getattr(Q, name)()
    x = ember.tensor([1.0, 2.0])
    assert obs(x) is x
    with pytest.raises(Exception, match="should not be called"):
        obs.calculate_qparams()


def test_fixed_qparams_observer_returns_its_parameters():
    s, z = Q.FixedQParamsObserver(scale=1.0 / 256, zero_point=0).calculate_qparams()
    assert s.tolist() == [1.0 / 256] and z.dtype == ember.int32


def test_observer_rejects_instance_in_qconfig():
    with pytest.raises(ValueError, match="observer instance"):
        Q.QConfig(activation=Q.MinMaxObserver(), weight=Q.default_weight_observer)


def test_minmax_observer_rejects_per_channel_scheme():
    with pytest.raises(NotImplementedError):
        Q.MinMaxObserver(qscheme=ember.per_channel_affine)


def test_partial_wrapper_repr_matches_torch():
    assert repr(Q.default_observer) == repr(TQ.default_observer).replace("torch.", "ember.")


# ---- functional fake quantization -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale,zp", [(0.037, 3), (1 / 3, -7), (0.1, 0)])
def test_fake_quantize_per_tensor_matches_torch(rng, dtype, scale, zp):
    x = (rng.standard_normal(2000) * 4).astype(dtype)
    a = ember.fake_quantize_per_tensor_affine(ember.from_numpy(x), scale, zp, -128, 127)
    b = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x), scale, zp, -128, 127)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("zp_dtype", [np.int32, np.float32])
def test_fake_quantize_per_channel_matches_torch(rng, zp_dtype):
    x = (rng.standard_normal((3, 500)) * 2).astype(np.float32)
    s = np.array([0.1, 0.2, 0.037], np.float32)
    z = np.array([3, 1, -2.3], np.float64).astype(zp_dtype)
    a = ember.fake_quantize_per_channel_affine(ember.from_numpy(x), ember.from_numpy(s),
                                               ember.from_numpy(z), 0, -128, 127)
    b = torch.fake_quantize_per_channel_affine(torch.from_numpy(x), torch.from_numpy(s),
                                               torch.from_numpy(z), 0, -128, 127)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_fake_quantize_gradient_is_straight_through():
    x = ember.tensor([-1.0, 0.1, 0.5, 2.7, 3.0], requires_grad=True)
    ember.fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 25).sum().backward()
    tx = torch.tensor([-1.0, 0.1, 0.5, 2.7, 3.0], requires_grad=True)
    torch.fake_quantize_per_tensor_affine(tx, 0.1, 3, 0, 25).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()


@pytest.mark.parametrize("args", [(0.1, 3, 5, 2), (0.1, 30, 0, 25)])
def test_fake_quantize_bad_range_raises_runtime_error(args):
    with pytest.raises(RuntimeError):
        torch.fake_quantize_per_tensor_affine(torch.ones(2), *args)
    with pytest.raises(RuntimeError):
        ember.fake_quantize_per_tensor_affine(ember.ones(2), *args)


def test_fake_quantize_per_channel_wrong_channel_count_raises():
    with pytest.raises(RuntimeError, match="not consistent"):
        ember.fake_quantize_per_channel_affine(
            ember.ones(3, 4), ember.ones(2), ember.zeros(2, dtype=ember.int32), 0, -128, 127)


# ---- fake-quantize modules --------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "default_fake_quant", "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
    "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
    "default_fused_per_channel_wt_fake_quant", "default_fixed_qparams_range_0to1_fake_quant",
    "default_histogram_fake_quant",
])
def test_fake_quantize_module_matches_torch(rng, name):
    e, t = getattr(Q, name)(), getattr(TQ, name)()
    for x in _batches(rng):
        ex = ember.from_numpy(x).requires_grad_()
        tx = torch.from_numpy(x).requires_grad_()
        ey, ty = e(ex), t(tx)
        (ey * ey).sum().backward()
        (ty * ty).sum().backward()
        np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert list(e.state_dict()) == list(t.state_dict())


def test_fake_quantize_switches_stop_observing_and_quantizing():
    fq = Q.FakeQuantize()
    fq.apply(Q.disable_observer)
    fq.apply(Q.disable_fake_quant)
    x = ember.tensor([0.123456])
    assert fq(x).tolist() == x.tolist()
    assert float(fq.activation_post_process.min_val) == float("inf")
    fq.apply(Q.enable_fake_quant)
    fq.apply(Q.enable_observer)
    assert int(fq.fake_quant_enabled[0]) == 1 and int(fq.observer_enabled[0]) == 1


def test_fake_quantize_state_dict_round_trips_per_channel():
    a = Q.default_per_channel_weight_fake_quant()
    a(ember.randn(3, 4))
    b = Q.default_per_channel_weight_fake_quant()
    b.load_state_dict(a.state_dict())
    assert b.scale.tolist() == a.scale.tolist()


# ---- qconfigs ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
def test_default_qconfigs_match_torch(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e, t in [(Q.get_default_qconfig(backend), TQ.get_default_qconfig(backend)),
                     (Q.get_default_qat_qconfig(backend), TQ.get_default_qat_qconfig(backend)),
                     (Q.get_default_qat_qconfig(backend, 0),
                      TQ.get_default_qat_qconfig(backend, 0))]:
            assert repr(e).replace("ember.", "torch.") == repr(t)


def test_default_qconfig_unknown_backend_raises():
    with pytest.raises(AssertionError, match="not supported"):
        Q.get_default_qconfig("cuda")


def test_qconfig_dynamic_warns_deprecated():
    with pytest.warns(FutureWarning):
        Q.QConfigDynamic(weight=Q.default_weight_observer)


def test_quantization_alias_module_is_same():
    assert ember.quantization.prepare is Q.prepare
    assert ember.quantization.QuantStub is Q.QuantStub


@pytest.mark.parametrize("qat", [False, True])
def test_default_qconfig_mapping_matches_torch(qat):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if qat:
            e, t = Q.get_default_qat_qconfig_mapping(), TQ.get_default_qat_qconfig_mapping()
        else:
            e, t = Q.get_default_qconfig_mapping(), TQ.get_default_qconfig_mapping()
    assert [repr(v) for v in e.object_type_qconfigs.values()] == \
        [repr(v).replace("torch.", "ember.") for v in t.object_type_qconfigs.values()]
    assert repr(e.global_qconfig) == repr(t.global_qconfig).replace("torch.", "ember.")


def test_qconfig_mapping_dict_round_trip_keeps_repr():
    m = (Q.QConfigMapping().set_global(Q.default_qconfig)
         .set_object_type(ember.nn.Linear, None).set_module_name("fc", Q.default_qconfig)
         .set_module_name_regex("foo.*", None)
         .set_module_name_object_type_order("a", ember.nn.Linear, 0, None))
    assert repr(Q.QConfigMapping.from_dict(m.to_dict())) == repr(m)


def test_default_dynamic_fake_quant_matches_torch():
    x = [0.0, 1.0, 2.0]
    e = Q.default_dynamic_fake_quant()
    t = TQ.default_dynamic_fake_quant()
    assert e.is_dynamic and e.activation_post_process.is_dynamic
    np.testing.assert_array_equal(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy())


def test_moving_average_observer_dynamic_needs_constant_one_raises():
    with pytest.raises(NotImplementedError):
        TQ.MovingAverageMinMaxObserver(is_dynamic=True)
    with pytest.raises(NotImplementedError, match="averaging constant"):
        Q.MovingAverageMinMaxObserver(is_dynamic=True)


def test_with_args_factory_doc_names_class_and_arguments():
    doc = Q.default_weight_observer.__doc__
    assert "MinMaxObserver" in doc and "qscheme: bound to ``ember.per_tensor_symmetric``" in doc
    assert repr(Q.default_weight_observer) == repr(TQ.default_weight_observer).replace(
        "torch.", "ember.")
    assert "Example" in type(Q.default_observer).__doc__  # the class keeps its own


def test_with_args_factory_doc_examples_pass():
    import doctest
    from ember.ao.quantization.observer import _PartialWrapper

    names = [n for n in Q.__all__ if isinstance(getattr(Q, n), _PartialWrapper)]
    assert len(names) >= 25
    failed = []
    for name in names:
        test = doctest.DocTestParser().get_doctest(getattr(Q, name).__doc__,
                                                   {"ember": ember}, name, None, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not test.examples or doctest.DocTestRunner().run(
                    test, out=lambda s: None).failed:
                failed.append(name)
    assert not failed
