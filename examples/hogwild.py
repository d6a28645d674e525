"""Hogwild training: several processes update one model's shared parameters, lock-free.

The model's parameters are moved to shared memory (``model.share_memory()``); each worker
process trains on its own shard of generated data with its own optimizer, and every update
lands in the same memory. Run ``python examples/hogwild.py --processes 4``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import ember as torch
import ember.multiprocessing as mp
from ember import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, resolve_outputs  # noqa: E402


def make_data(n, seed):
    """A linearly separable-ish 3-class problem in 10 dimensions."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    w = torch.randn(10, 3, generator=torch.Generator().manual_seed(1234))
    y = (x @ w).argmax(1)
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))


def train(rank, model, args):
    torch.manual_seed(args.seed + rank)
    x, y = make_data(args.samples, seed=args.seed + 100 + rank)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.5)
    for _ in range(args.epochs):
        perm = torch.randperm(x.shape[0])
        for i in range(0, x.shape[0], args.batch_size):
            idx = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def test_loss(model, x, y):
    with torch.no_grad():
        return nn.functional.cross_entropy(model(x), y).item()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    add_output_args(parser, "hogwild", "the shared model's test loss while the workers train")
    args = resolve_outputs(parser.parse_args(argv), "hogwild")

    torch.manual_seed(args.seed)
    model = build_model()
    model.share_memory()
    x_test, y_test = make_data(1000, seed=999)
    print(f"accuracy before: {accuracy(model, x_test, y_test):.3f}")
    start = time.perf_counter()
    procs = []
    for rank in range(args.processes):
        p = mp.Process(target=train, args=(rank, model, args))
        p.start()
        procs.append(p)
    # the parameters are shared: the parent sees every worker's updates as they land
    curve = [test_loss(model, x_test, y_test)]
    while any(p.is_alive() for p in procs):
        time.sleep(0.05)
        curve.append(test_loss(model, x_test, y_test))
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"worker {p.pid} failed with exit code {p.exitcode}")
    acc = accuracy(model, x_test, y_test)
    print(f"accuracy after {args.processes} hogwild workers x {args.epochs} epochs: "
          f"{acc:.3f} ({time.perf_counter() - start:.1f}s)")
    torch.save(model.state_dict(), args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(curve, args.plot, "hogwild: shared model while workers train",
                    ylabel="test loss", xlabel="sample (every 50 ms)")
    return acc


if __name__ == "__main__":
    main()
