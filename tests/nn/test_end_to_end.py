"""End to end: small CNN, LSTM language model and transformer train on generated data with
loss curves equal to PyTorch's from the same initial weights (float64, rtol 1e-6)."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.nn._compare import copy_weights

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
RTOL = 1e-6


def _cnn(mod):
    nn = mod.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        nn.Dropout(0.0), nn.Linear(32, 3)).double()


class _LM:
    @staticmethod
    def build(mod):
        nn = mod.nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(11, 6)
                self.rnn = nn.LSTM(6, 8, num_layers=2, batch_first=True)
                self.head = nn.Linear(8, 11)

            def forward(self, x):
                h, _ = self.rnn(self.emb(x))
                return self.head(h)

        return LM().double()


class _TX:
    @staticmethod
    def build(mod):
        nn = mod.nn

        class TX(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(11, 8)
                layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                   norm_first=True)
                self.enc = nn.TransformerEncoder(layer, 2)
                self.head = nn.Linear(8, 11)

            def forward(self, x):
                mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]).double()
                return self.head(self.enc(self.emb(x), mask=mask))

        return TX().double()


def _train(mod, model, data, targets, loss_fn, opt_name, steps, **opt_kw):
    opt = getattr(mod.optim, opt_name)(model.parameters(), **opt_kw)
    losses = []
    for i in range(steps):
        x, y = data[i % len(data)], targets[i % len(targets)]
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _pair(builder):
    import torch

    torch.manual_seed(0)
    t = builder(torch)
    e = builder(ember)
    copy_weights(e, t)
    return e, t


def test_cnn_classifier_loss_curve_matches_torch():
    import torch

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 1, 10, 10)) for _ in range(3)]
    ys = [rng.integers(0, 3, 8) for _ in range(3)]
    e, t = _pair(_cnn)
    el = _train(ember, e, [ember.from_numpy(x) for x in xs], [ember.from_numpy(y) for y in ys],
                ember.nn.functional.cross_entropy, "SGD", 12, lr=0.05, momentum=0.9)
    tl = _train(torch, t, [torch.from_numpy(x) for x in xs], [torch.from_numpy(y) for y in ys],
                torch.nn.functional.cross_entropy, "SGD", 12, lr=0.05, momentum=0.9)
    assert np.allclose(el, tl, rtol=RTOL), (el, tl)
    assert el[-1] < el[0]


@pytest.mark.parametrize("builder", [_LM.build, _TX.build], ids=["lstm_lm", "transformer"])
def test_language_model_loss_curve_matches_torch(builder):
    import torch

    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, 11, (4, 7)) for _ in range(3)]

    def loss_fn(f):
        return lambda logits, y: f.cross_entropy(logits.reshape(-1, 11), y.reshape(-1))

    e, t = _pair(builder)
    el = _train(ember, e, [ember.from_numpy(s[:, :-1]) for s in seqs],
                [ember.from_numpy(s[:, 1:]) for s in seqs], loss_fn(ember.nn.functional),
                "Adam", 10, lr=0.01)
    tl = _train(torch, t, [torch.from_numpy(s[:, :-1]) for s in seqs],
                [torch.from_numpy(s[:, 1:]) for s in seqs], loss_fn(torch.nn.functional),
                "Adam", 10, lr=0.01)
    assert np.allclose(el, tl, rtol=RTOL), (el, tl)
    assert el[-1] < el[0]
