"""Group ``train``: one optimizer step of real models, ember against PyTorch.

Both frameworks build the same model from one definition (``fw`` is ``ember`` or ``torch``)
and fill its parameters from the same NumPy generator, so they start from identical weights.
The first call runs with dropout off and its loss is compared across frameworks before
anything is timed; timed calls are ordinary training steps.
"""

from __future__ import annotations

import math

import numpy as np

from bench.common import workload


def numpy_init(fw, model, seed=0):
    """Fill every parameter from one NumPy stream (same order in both frameworks)."""
    rng = np.random.default_rng(seed)
    with fw.no_grad():
        for _, p in model.named_parameters():
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / math.sqrt(max(fan_in, 1))
            arr = rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)
            p.copy_(fw.from_numpy(arr))
    return model


class Step:
    """A training step; the first call has dropout off so the loss can be compared."""

    def __init__(self, model, opt, batch, loss_fn):
        self.model, self.opt, self.batch, self.loss_fn = model, opt, batch, loss_fn
        self.first = True

    def __call__(self):
        if self.first:
            self.model.eval()
        x, y = self.batch
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.opt.step()
        if self.first:
            self.model.train()
            self.first = False
        return loss.detach()


def _data(fw, x_shape, n_classes, seed=1, ints=False, vocab=None):
    rng = np.random.default_rng(seed)
    if ints:
        x = fw.from_numpy(rng.integers(0, vocab, x_shape).astype(np.int64))
    else:
        x = fw.from_numpy(rng.standard_normal(x_shape).astype(np.float32))
    y_shape = (x_shape[0],) if not ints else x_shape
    y = fw.from_numpy(rng.integers(0, n_classes, y_shape).astype(np.int64))
    return x, y


# -- MLP ---------------------------------------------------------------------------------------


@workload("train", "MLP 784-512-512-10, batch 128, SGD momentum",
          rtol=1e-4, atol=1e-5, memory=True)
def mlp(fw):
    nn = fw.nn
    model = numpy_init(fw, nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                                         nn.ReLU(), nn.Linear(512, 10)))
    opt = fw.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return Step(model, opt, _data(fw, (128, 784), 10), nn.functional.cross_entropy)


# -- the PyTorch MNIST example CNN -------------------------------------------------------------


def _mnist_net(fw):
    nn, F = fw.nn, fw.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = fw.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


@workload("train", "MNIST example CNN, batch 64, Adadelta",
          rtol=1e-4, atol=1e-5, memory=True)
def mnist_cnn(fw):
    model = numpy_init(fw, _mnist_net(fw))
    opt = fw.optim.Adadelta(model.parameters(), lr=1.0)
    return Step(model, opt, _data(fw, (64, 1, 28, 28), 10), fw.nn.functional.nll_loss)


# -- ResNet-18 for 32x32 inputs ----------------------------------------------------------------


def _resnet18(fw, num_classes=10):
    nn, F = fw.nn, fw.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            layers, cin = [], 64
            for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
                layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layers(x)
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(x)

    return ResNet()


@workload("train", "ResNet-18 (32x32), batch 32, SGD momentum",
          rtol=1e-3, atol=1e-4, memory=True)
def resnet18(fw):
    model = numpy_init(fw, _resnet18(fw))
    opt = fw.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    return Step(model, opt, _data(fw, (32, 3, 32, 32), 10), fw.nn.functional.cross_entropy)


# -- a small GPT -------------------------------------------------------------------------------

VOCAB = 96


def _gpt(fw, n_layer=4, d=256, n_head=4, ctx=128, vocab=VOCAB, approximate="none"):
    """A GPT of ``n_layer`` pre-norm blocks (causal SDPA, GELU MLP), ``fw``'s modules."""
    nn, F = fw.nn, fw.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.fc = nn.Linear(d, 4 * d)
            self.out = nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, n_head, d // n_head).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate=approximate))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(ctx, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(fw.arange(t, device=idx.device))
            return self.head(self.ln(self.blocks(x)))

    return GPT()


def _lm_loss(fw):
    def loss(logits, y):
        return fw.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              y.reshape(-1))

    return loss


@workload("train", "GPT 4 layers, d 256, ctx 128, batch 8, AdamW",
          rtol=1e-3, atol=1e-4, memory=True)
def gpt(fw):
    model = numpy_init(fw, _gpt(fw))
    opt = fw.optim.AdamW(model.parameters(), lr=3e-4)
    return Step(model, opt, _data(fw, (8, 128), VOCAB, ints=True, vocab=VOCAB),
                _lm_loss(fw))


# -- LSTM language model -----------------------------------------------------------------------


def _lstm_lm(fw, hidden=256):
    nn = fw.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, hidden)
            self.rnn = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
            self.head = nn.Linear(hidden, VOCAB)

        def forward(self, x):
            h, _ = self.rnn(self.emb(x))
            return self.head(h)

    return LM()


@workload("train", "LSTM LM 2x256, seq 64, batch 32, Adam",
          rtol=1e-3, atol=1e-4, memory=True)
def lstm_lm(fw):
    model = numpy_init(fw, _lstm_lm(fw))
    opt = fw.optim.Adam(model.parameters(), lr=1e-3)
    return Step(model, opt, _data(fw, (32, 64), VOCAB, ints=True, vocab=VOCAB), _lm_loss(fw))
