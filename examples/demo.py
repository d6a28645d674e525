"""The smallest example: train a small MLP to separate two interleaved spirals.

Everything here is ember: generated data, tensors, autograd, nn.Linear, cross-entropy and
SGD with momentum. Run ``python examples/demo.py --epochs 300`` for a longer run.
"""

from __future__ import annotations

import argparse
import math
import time

import ember as torch
from ember import nn


def make_spirals(n_per_class: int, noise: float, generator) -> tuple:
    """Two spirals, one per class, in the plane."""
    t = torch.rand(n_per_class, generator=generator) * 3 * math.pi + 0.5
    xs, ys = [], []
    for label, phase in ((0, 0.0), (1, math.pi)):
        x = torch.stack([t * torch.cos(t + phase), t * torch.sin(t + phase)], dim=1) / 10
        x = x + noise * torch.randn(n_per_class, 2, generator=generator)
        xs.append(x)
        ys.append(torch.full((n_per_class,), label, dtype=torch.int64))
    return torch.cat(xs), torch.cat(ys)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    x_train, y_train = make_spirals(500, 0.02, g)
    x_test, y_test = make_spirals(200, 0.02, g)

    model = nn.Sequential(
        nn.Linear(2, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, 2),
    )
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    print(model)

    n = x_train.shape[0]
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        perm = torch.randperm(n, generator=g)
        total = 0.0
        for i in range(0, n, args.batch_size):
            idx = perm[i:i + args.batch_size]
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * idx.shape[0]
        if epoch % 10 == 0 or epoch == 1:
            with torch.no_grad():
                acc = (model(x_test).argmax(1) == y_test).float().mean().item()
            print(f"epoch {epoch:4d}  loss {total / n:.4f}  test accuracy {acc:.3f}  "
                  f"({time.perf_counter() - start:.1f}s)")
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    print(f"final test accuracy {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()
