"""Training steps on the NumPy-backed test device never read device values on the host.

On a GPU every host read of a device array (a Python ``if`` on a mask, ``.item()``,
``int(a.max())``) waits until the GPU has run everything queued, so a step that does it once
per layer can never run ahead of the GPU. The test device's ``forbid_synchronize()`` raises
where CuPy's ``cupyx.allow_synchronize(False)`` would, so these steps guard the GPU's host
path on every CI run (NOTE [ Test device ], NOTE [ Deferred device checks ])."""

import numpy as np
import pytest

import ember
from ember._core import checks
from ember.testing._test_device import (DeviceSynchronized, TestDeviceArray,
                                        forbid_synchronize, register_test_device)


@pytest.fixture
def dev(monkeypatch):
    name = register_test_device()
    # value checks on the device are deferred, as CuPy's are (NOTE [ Deferred device checks ])
    monkeypatch.setattr(checks, "deferring_types", checks.deferring_types | {TestDeviceArray})
    yield name
    checks._pending.clear()


class _Block(ember.nn.Module):
    def __init__(self, c):
        super().__init__()
        nn = ember.nn
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(y)) + x)


def _cnn():
    nn = ember.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         nn.MaxPool2d(3, 2, 1), _Block(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(8, 5))


class _GPT(ember.nn.Module):
    def __init__(self, vocab=11, d=16, heads=2, ctx=8):
        super().__init__()
        nn = ember.nn
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(d, vocab, bias=False)
        self.heads = heads

    def forward(self, idx):
        b, t = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(t, device=idx.device))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, -1)))
        x = x + self.out(ember.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.lnf(x))


def _steps(model, opt, x, y, clip=False):
    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = ember.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        loss.backward()
        if clip:
            ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    step()  # first steps make state (momentum buffers, moments)
    step()
    with forbid_synchronize():
        loss = step()
    return loss


def test_cnn_training_step_reads_nothing_on_the_host(dev):
    ember.manual_seed(0)
    model = _cnn().to(dev)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = ember.randn(2, 3, 16, 16).to(dev)
    y = ember.tensor([1, 4]).to(dev)
    loss = _steps(model, opt, x, y)
    assert loss.device.type == dev and np.isfinite(loss.item())


def test_gpt_training_step_reads_nothing_on_the_host(dev):
    ember.manual_seed(0)
    model = _GPT().to(dev)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    x = ember.randint(0, 11, (2, 8)).to(dev)
    y = ember.randint(0, 11, (2, 8)).to(dev)
    y[0, 0] = -100  # an ignored target
    loss = _steps(model, opt, x, y, clip=True)
    assert loss.device.type == dev and np.isfinite(loss.item())


def test_a_host_read_is_caught(dev):
    t = ember.ones(3).to(dev)
    with forbid_synchronize(), pytest.raises(DeviceSynchronized):
        if (t > 0).any():
            pass
    assert bool((t > 0).any())  # outside the context it reads as before

