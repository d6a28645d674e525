"""A small ResNet classifying generated 32x32 colour images of shapes.

Each image holds one shape -- disc, square, triangle, ring or cross -- drawn with random
size, position, colour and background noise. A ResNet (pre-activation residual blocks with
batch norm, three stages) trains with SGD + momentum, a one-cycle learning-rate schedule and
light augmentation (random flips); test accuracy is printed per epoch and the model saved.

    python examples/resnet_shapes.py --epochs 4
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

SHAPES = ["disc", "square", "triangle", "ring", "cross"]


def draw(label, rng, size=32):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    cy, cx = rng.uniform(10, 22, 2)
    r = rng.uniform(5, 9)
    dy, dx = yy - cy, xx - cx
    if label == 0:
        mask = dy ** 2 + dx ** 2 <= r ** 2
    elif label == 1:
        mask = (np.abs(dy) <= r * 0.8) & (np.abs(dx) <= r * 0.8)
    elif label == 2:
        mask = (dy <= r * 0.7) & (dy >= -r) & (np.abs(dx) <= (dy + r) * 0.6)
    elif label == 3:
        d = np.sqrt(dy ** 2 + dx ** 2)
        mask = (d <= r) & (d >= r * 0.55)
    else:
        mask = ((np.abs(dy) <= r * 0.25) & (np.abs(dx) <= r)) | \
               ((np.abs(dx) <= r * 0.25) & (np.abs(dy) <= r))
    colour = rng.uniform(0.4, 1.0, 3).astype(np.float32)
    img = rng.normal(0, 0.1, (3, size, size)).astype(np.float32)
    img += mask[None] * colour[:, None, None]
    return img


def make_dataset(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(SHAPES), n)
    images = np.stack([draw(int(k), rng) for k in labels]).astype(np.float32)
    return torch.from_numpy(images), torch.from_numpy(labels)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.short = None if stride == 1 and cin == cout else \
            nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = self.short(out) if self.short is not None else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + shortcut


class ResNet(nn.Module):
    def __init__(self, widths=(16, 32, 64), classes=len(SHAPES)):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks.append(Block(cin, w, 1 if i == 0 else 2))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = F.adaptive_avg_pool2d(F.relu(self.bn(x)), 1).flatten(1)
        return self.fc(x)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--train-size", type=int, default=3000)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    add_output_args(p, "resnet_shapes")
    p.add_argument("--seed", type=int, default=0)
    args = resolve_outputs(p.parse_args(argv), "resnet_shapes")

    torch.manual_seed(args.seed)
    x_train, y_train = make_dataset(args.train_size, args.seed)
    x_test, y_test = make_dataset(args.test_size, args.seed + 1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=args.batch_size, shuffle=True)
    model = ResNet()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                steps_per_epoch=len(loader))
    acc, losses = 0.0, []
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        it = progress(loader, desc=f"epoch {epoch}", unit="batch", leave=False)
        for x, y in it:
            flip = torch.rand(x.shape[0]) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            total += losses[-1] * x.shape[0]
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch}: train loss {total / len(loader.dataset):.4f}, "
              f"test accuracy {acc:.4f}")
    torch.save(model.state_dict(), args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(losses, args.plot, "ResNet on shapes", ylabel="cross-entropy")
    return acc


if __name__ == "__main__":
    main()
