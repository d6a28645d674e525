"""fuse_modules, prepare, prepare_qat and QAT training against torch.ao.quantization."""

import warnings

import numpy as np
import pytest

import ember
import ember.ao.quantization as Q

torch = pytest.importorskip("torch")


def _model(lib):
    nn = lib.nn
    aq = lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = aq.QuantStub()
            self.conv = nn.Conv2d(2, 3, 3)
            self.bn = nn.BatchNorm2d(3)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(12, 4)
            self.relu2 = nn.ReLU()
            self.fc2 = nn.Linear(4, 2)
            self.dequant = aq.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            x = self.fc2(self.relu2(self.fc(x.reshape(x.shape[0], -1))))
            return self.dequant(x)

    return Net()


@pytest.fixture
def weights():
    torch.manual_seed(0)
    m = _model(torch)
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _load(lib, weights):
    m = _model(lib)
    m.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    return m


def _same_print(e, t):
    assert str(e) == str(t).replace("torch.", "ember.")


def test_fuse_modules_eval_folds_batch_norm_like_torch(weights, rng):
    names = [["conv", "bn", "relu"], ["fc", "relu2"]]
    e = Q.fuse_modules(_load(ember, weights).eval(), names)
    t = torch.ao.quantization.fuse_modules(_load(torch, weights).eval(), names)
    _same_print(e, t)
    x = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_fuse_modules_qat_keeps_batch_norm_module(weights):
    names = [["conv", "bn", "relu"], ["fc", "relu2"]]
    e = Q.fuse_modules_qat(_load(ember, weights), names)
    t = torch.ao.quantization.fuse_modules_qat(_load(torch, weights), names)
    _same_print(e, t)
    assert type(e.conv).__name__ == "ConvBnReLU2d" and type(e.bn).__name__ == "Identity"


def test_fuse_modules_batch_norm_in_train_mode_raises(weights):
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        Q.fuse_modules(_load(ember, weights).train(), ["conv", "bn"])


def test_fuse_modules_unknown_pattern_raises_not_implemented():
    m = ember.nn.Sequential(ember.nn.ReLU(), ember.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="Cannot fuse"):
        Q.fuse_modules(m, ["0", "1"])


def test_prepare_inserts_observers_where_torch_does(weights):
    e = _load(ember, weights).eval()
    t = _load(torch, weights).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.qconfig = Q.get_default_qconfig("x86")
        t.qconfig = torch.ao.quantization.get_default_qconfig("x86")
        e, t = Q.prepare(e), torch.ao.quantization.prepare(t)
    _same_print(e, t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert not hasattr(e.relu, "activation_post_process")


def test_prepare_without_qconfig_warns(weights):
    with pytest.warns(UserWarning, match="None of the submodule got qconfig"):
        Q.prepare(_load(ember, weights))


def test_prepare_qat_in_eval_mode_raises(weights):
    m = _load(ember, weights).eval()
    m.qconfig = Q.get_default_qat_qconfig("x86")
    with pytest.raises(AssertionError, match="training mode"):
        Q.prepare_qat(m)


def test_propagate_qconfig_dict_by_name_and_type():
    nn = ember.nn
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    Q.propagate_qconfig_(m, {"1": Q.default_qconfig, nn.ReLU: None})
    assert m[0].qconfig is None and m[1][0].qconfig is Q.default_qconfig
    assert m[1][1].qconfig is None


def test_quant_wrapper_matches_torch_print():
    e = Q.QuantWrapper(ember.nn.Linear(2, 2))
    t = torch.ao.quantization.QuantWrapper(torch.nn.Linear(2, 2))
    _same_print(e, t)


def _qat(lib, weights, xs, backend, version):
    aq = lib.ao.quantization
    m = _load(lib, weights).train()
    m.qconfig = aq.get_default_qat_qconfig(backend, version)
    m = aq.fuse_modules_qat(m, [["conv", "bn", "relu"], ["fc", "relu2"]])
    m = aq.prepare_qat(m)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    outs = []
    for i, x in enumerate(xs):
        opt.zero_grad()
        y = m(lib.tensor(x))
        (y * y).mean().backward()
        opt.step()
        outs.append(y.detach().numpy().copy())
        if i == 1:
            m.apply(aq.disable_observer)
    m.eval()
    outs.append(m(lib.tensor(xs[0])).detach().numpy())
    return m, outs


@pytest.mark.parametrize("backend,version", [("x86", 1), ("qnnpack", 1), ("fbgemm", 0)])
def test_qat_training_matches_torch(weights, rng, backend, version):
    xs = [rng.standard_normal((4, 2, 4, 4)).astype(np.float32) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em, eo = _qat(ember, weights, xs, backend, version)
        tm, to = _qat(torch, weights, xs, backend, version)
    for a, b in zip(eo, to):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    esd, tsd = em.state_dict(), tm.state_dict()
    assert list(esd) == list(tsd)
    for k in esd:
        np.testing.assert_allclose(esd[k].numpy().astype(np.float64),
                                   tsd[k].numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


def test_prepare_qat_print_matches_torch(weights):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = _load(ember, weights)
        e.qconfig = Q.get_default_qat_qconfig("x86")
        t = _load(torch, weights)
        t.qconfig = torch.ao.quantization.get_default_qat_qconfig("x86")
        names = [["conv", "bn", "relu"], ["fc", "relu2"]]
        e = Q.prepare_qat(Q.fuse_modules_qat(e, names))
        t = torch.ao.quantization.prepare_qat(torch.ao.quantization.fuse_modules_qat(t, names))
    _same_print(e, t)


def test_observer_state_dict_round_trips_like_torch(weights, rng):
    x = rng.standard_normal((2, 2, 4, 4)).astype(np.float32)
    saved = {}
    for lib in (ember, torch):
        aq = lib.ao.quantization
        m = _load(lib, weights).eval()
        m.qconfig = aq.default_per_channel_qconfig
        p = aq.prepare(m)
        p(lib.tensor(x))
        saved[lib.__name__] = list(aq.get_observer_state_dict(p))
        fresh = aq.prepare(m)
        aq.load_observer_state_dict(fresh, aq.get_observer_state_dict(p))
        assert float(fresh.fc.activation_post_process.max_val) == \
            float(p.fc.activation_post_process.max_val)
    assert saved["ember"] == saved["torch"]


def test_default_eval_fn_runs_each_input():
    seen = []
    Q.default_eval_fn(seen.append, [(1, 0), (2, 0)])
    assert seen == [1, 2]


def test_default_qconfig_dict_is_deprecated():
    with pytest.warns(FutureWarning):
        d = Q.get_default_qconfig_dict()
    assert set(d) == set(torch.ao.quantization.get_default_qconfig_mapping().to_dict())
