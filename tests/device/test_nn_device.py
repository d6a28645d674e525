"""Whole models and optimizers on every device: the same training steps on a device and on
the CPU give the same losses and weights, and everything stays on the device."""

from __future__ import annotations

import unittest

import numpy as np

import ember
from ember import nn
from ember.testing import assert_close, instantiate_device_type_tests
from ember.testing._device_type import skipCPUIf


def _train(make, x, y, device, steps=3, opt=lambda p: ember.optim.SGD(p, lr=0.05),
           loss=nn.functional.mse_loss):
    """Build a model (seeded), train ``steps`` steps on ``device``; losses and state on the
    CPU."""
    ember.manual_seed(0)
    model = make().double().to(device)
    o = opt(model.parameters())
    xs, ys = x.to(device), y.to(device)
    losses = []
    for _ in range(steps):
        o.zero_grad()
        out = model(xs)
        out = out[0] if isinstance(out, tuple) else out
        value = loss(out, ys)
        value.backward()
        o.step()
        losses.append(value.item())
    for name, t in list(model.state_dict().items()) + [("grad", p.grad) for p in
                                                      model.parameters()]:
        assert t.device.type == ember.device(device).type, f"{name} is on {t.device}"
    return losses, {k: v.cpu() for k, v in model.state_dict().items()}


def _x(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape))


class TestModelsOnDevice(unittest.TestCase):
    """Training steps of small models, compared with the same steps on the CPU."""

    def _same_as_cpu(self, device, make, x, y, **kw):
        got = _train(make, x, y, device, **kw)
        want = _train(make, x, y, "cpu", **kw)
        assert_close(got[0], want[0], rtol=1e-7, atol=1e-9)
        for k in want[1]:
            assert_close(got[1][k], want[1][k], rtol=1e-7, atol=1e-9, msg=k)

    def test_convnet_with_batch_norm_trains_as_on_the_cpu(self, device):
        def make():
            return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                 nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 3))

        self._same_as_cpu(device, make, _x(5, 2, 6, 6), _x(5, 3, seed=1),
                          opt=lambda p: ember.optim.Adam(p, lr=0.01))

    def test_lstm_trains_as_on_the_cpu(self, device):
        self._same_as_cpu(device, lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
                          _x(2, 5, 3), _x(2, 5, 4, seed=1),
                          opt=lambda p: ember.optim.RMSprop(p, lr=0.01))

    def test_transformer_layer_trains_as_on_the_cpu(self, device):
        def make():
            return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                              batch_first=True)

        self._same_as_cpu(device, make, _x(2, 5, 8), _x(2, 5, 8, seed=1),
                          opt=lambda p: ember.optim.AdamW(p, lr=0.01))

    def test_embedding_classifier_trains_as_on_the_cpu(self, device):
        def make():
            return nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 5))

        tokens = ember.tensor([[1, 2, 3], [4, 5, 9], [0, 0, 7]])
        self._same_as_cpu(device, make, tokens, ember.tensor([0, 4, 2]),
                          loss=nn.functional.cross_entropy,
                          opt=lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9))

    def test_foreach_optimizers_match_the_loop(self, device):
        for name in ("SGD", "Adam", "AdamW"):
            kw = {"lr": 0.01} if name != "SGD" else {"lr": 0.01, "momentum": 0.9}
            results = []
            for foreach in (False, True):
                results.append(_train(
                    lambda: nn.Linear(3, 2), _x(4, 3), _x(4, 2, seed=1), device,
                    opt=lambda p, n=name, f=foreach: getattr(ember.optim, n)(p, foreach=f,
                                                                             **kw))[1])
            for k in results[0]:
                assert_close(results[1][k], results[0][k], msg=f"{name} {k}")

    def test_module_to_moves_parameters_and_buffers(self, device):
        m = nn.BatchNorm1d(3).to(device)
        for t in list(m.parameters()) + list(m.buffers()):
            self.assertEqual(t.device.type, ember.device(device).type)

    @skipCPUIf(True, "loads across devices")
    def test_state_dict_loads_across_devices(self, device):
        src = nn.Linear(3, 2)
        dst = nn.Linear(3, 2).to(device)
        dst.load_state_dict(src.state_dict())
        self.assertEqual(dst.weight.device.type, ember.device(device).type)
        assert_close(dst.weight.cpu(), src.weight)

    @skipCPUIf(True, "needs two devices")
    def test_module_on_the_device_refuses_cpu_input(self, device):
        m = nn.Linear(3, 2).to(device)
        with self.assertRaisesRegex(RuntimeError, "same device"):
            m(ember.ones(4, 3))


instantiate_device_type_tests(TestModelsOnDevice, globals())
