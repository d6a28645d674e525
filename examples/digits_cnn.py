"""A CNN classifier for handwritten-style digits the example draws itself.

Each image is a 16x16 digit rendered from a 5x7 stroke font with random scale, shift,
stroke thickness, slant and noise, so no data set has to be downloaded. A small LeNet-like
network (two conv+pool stages, two linear layers, dropout) trains with Adam; accuracy on a
held-out set is printed per epoch, the loss curve is saved as PNG when matplotlib is
installed, and the model is checkpointed with ``ember.save``.

    python examples/digits_cnn.py --epochs 8
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import ember as torch
from ember import nn
from ember.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, progress, resolve_outputs  # noqa: E402
from _tensorboard import add_tensorboard_arg, open_writer  # noqa: E402

FONT = {  # 5x7 glyphs, one string per row
    0: ["01110", "10001", "10011", "10101", "11001", "10001", "01110"],
    1: ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
    2: ["01110", "10001", "00001", "00010", "00100", "01000", "11111"],
    3: ["11110", "00001", "00001", "01110", "00001", "00001", "11110"],
    4: ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    5: ["11111", "10000", "11110", "00001", "00001", "10001", "01110"],
    6: ["00110", "01000", "10000", "11110", "10001", "10001", "01110"],
    7: ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    8: ["01110", "10001", "10001", "01110", "10001", "10001", "01110"],
    9: ["01110", "10001", "10001", "01111", "00001", "00010", "01100"],
}


def render(digit, rng, size=16):
    """One noisy, randomly placed and slanted image of ``digit``."""
    glyph = np.array([[c == "1" for c in row] for row in FONT[digit]], dtype=np.float32)
    scale = rng.uniform(1.4, 2.0)
    slant = rng.uniform(-0.3, 0.3)
    thick = rng.uniform(0.35, 0.7)
    oy, ox = rng.uniform(0.5, size - 7 * scale - 0.5), rng.uniform(0.5, size - 5 * scale)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    gy = (yy - oy) / scale
    gx = (xx - ox - slant * (yy - oy)) / scale
    img = np.zeros((size, size), np.float32)
    for r, c in zip(*np.nonzero(glyph)):
        d = np.maximum(np.abs(gy - r - 0.5), np.abs(gx - c - 0.5))
        img = np.maximum(img, np.clip((thick + 0.5 - d) * 2, 0, 1))
    img += rng.normal(0, 0.15, img.shape).astype(np.float32)
    return np.clip(img, 0, 1)


def make_dataset(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = np.stack([render(int(d), rng) for d in labels])[:, None].astype(np.float32)
    return torch.from_numpy(images), torch.from_numpy(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def evaluate(model, x, y, batch=500):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--train-size", type=int, default=6000)
    p.add_argument("--test-size", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    add_output_args(p, "digits_cnn")
    add_tensorboard_arg(p)
    p.add_argument("--seed", type=int, default=0)
    args = resolve_outputs(p.parse_args(argv), "digits_cnn")

    torch.manual_seed(args.seed)
    x_train, y_train = make_dataset(args.train_size, args.seed)
    x_test, y_test = make_dataset(args.test_size, args.seed + 1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=args.batch_size, shuffle=True)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    writer = open_writer(args.tensorboard)
    writer.add_graph(model, x_train[:1])
    losses = []
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        it = progress(loader, desc=f"epoch {epoch}", unit="batch", leave=False)
        total = 0.0
        for x, y in it:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            writer.add_scalar("loss/train", losses[-1], len(losses))
            total += loss.item() * x.shape[0]
        acc = evaluate(model, x_test, y_test)
        writer.add_scalar("accuracy/test", acc, epoch)
        print(f"epoch {epoch}: train loss {total / len(loader.dataset):.4f}, "
              f"test accuracy {acc:.4f}")
    writer.close()
    torch.save(model.state_dict(), args.checkpoint)
    save_loss_curve(losses, args.plot, "digits CNN", ylabel="cross-entropy")
    print(f"final test accuracy {acc:.4f}; checkpoint saved to {args.checkpoint}")
    return acc


if __name__ == "__main__":
    main()
