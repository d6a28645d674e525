"""Random float16/bfloat16 calls of nn ops in ember and in torch, compared bit for bit.

Usage::

    python tools/half_sweep.py                     # 20 calls per op, seed 0
    python tools/half_sweep.py --calls 100 --seed 3 --ops conv2d,layer_norm
    python tools/half_sweep.py --verbose           # print each mismatching call

Each call draws a shape, a dtype (float16 or bfloat16), whether the input is a transposed
(non-contiguous) view, and the op's arguments; builds the same values in both libraries;
runs the op forward and backward (an upstream gradient of the output's dtype), and counts
the call as a mismatch if the output, any gradient, or the exception raised (type and
message) differs in a single bit. torch runs on ember's thread count
(``ember.get_num_threads()``), since some of its half kernels sum per-thread chunks. The
report prints, per op, the calls run and the share that mismatched, split by what differed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# this script's folder is sys.path[0]: its coverage.py would shadow the coverage package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
sys.path.insert(0, ROOT)

HALF = ("float16", "bfloat16")
VERBOSE = False  # --verbose: what differed says what was raised


class Lib:
    """One library (ember or torch) and how to build its tensors from float32 values."""

    def __init__(self, mod):
        self.T = mod
        self.F = mod.nn.functional

    def t(self, values, dtype, grad=False, strided=False):
        a = np.asarray(values, np.float32)
        if strided and a.ndim >= 2:  # the same values, laid out transposed in memory
            x = self.T.tensor(np.ascontiguousarray(a.swapaxes(-1, -2))).to(
                getattr(self.T, dtype)).transpose(-1, -2)
        else:
            x = self.T.tensor(a).to(getattr(self.T, dtype))
        return x.requires_grad_() if grad else x

    def i(self, values):
        return self.T.tensor(np.asarray(values, np.int64))


def _arr(t):
    t = t.detach()
    if str(t.dtype).endswith(("float16", "bfloat16")):
        t = t.float()
    return np.asarray(t.numpy(), np.float64)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    a, b = _arr(a), _arr(b)
    return a.shape == b.shape and bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


# ------------------------------------------------------------------------------------------------
# the ops: each draws its arguments from ``rng`` and returns ``call(L) -> (output, leaves)``


def _normal(rng, shape, scale=1.0):
    return rng.standard_normal(shape).astype(np.float32) * scale


def _conv(nd, transposed):
    def draw(rng, dtype, strided):
        g = int(rng.choice([1, 2]))
        n, cin, cout = int(rng.integers(1, 4)), g * int(rng.integers(1, 4)), \
            g * int(rng.integers(1, 4))
        sp = tuple(int(s) for s in rng.integers(3, 8, nd))
        k = tuple(int(s) for s in rng.integers(1, 4, nd))
        kw = dict(stride=int(rng.integers(1, 3)), padding=int(rng.integers(0, 2)),
                  dilation=int(rng.integers(1, 3)), groups=g)
        w_shape = (cin, cout // g) + k if transposed else (cout, cin // g) + k
        x, w, b = _normal(rng, (n, cin) + sp), _normal(rng, w_shape), _normal(rng, (cout,))
        has_bias = rng.random() < 0.7
        name = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"

        def call(L):
            leaves = [L.t(x, dtype, True, strided), L.t(w, dtype, True)]
            if has_bias:
                leaves.append(L.t(b, dtype, True))
            return getattr(L.F, name)(*leaves, **kw), leaves
        return call
    return draw


def _norm_draw(kind):
    def draw(rng, dtype, strided):
        n, c = int(rng.integers(1, 4)), int(rng.choice([2, 4, 6]))
        sp = tuple(int(s) for s in rng.integers(1, 9, int(rng.integers(1, 3))))
        x = _normal(rng, (n, c) + sp, float(rng.choice([1.0, 10.0])))
        affine = rng.random() < 0.7
        w, b = _normal(rng, (c,)), _normal(rng, (c,))
        groups = int(rng.choice([d for d in (1, 2, 3) if c % d == 0]))
        nshape = tuple(int(s) for s in (x.shape[-int(rng.integers(1, 3)):]))
        lw, lb = _normal(rng, nshape), _normal(rng, nshape)

        def call(L):
            xt = L.t(x, dtype, True, strided)
            if kind == "batch_norm":
                leaves = [xt] + ([L.t(w, dtype, True), L.t(b, dtype, True)] if affine else [])
                wb = leaves[1:] or [None, None]
                return L.F.batch_norm(xt, None, None, wb[0], wb[1], training=True), leaves
            if kind == "group_norm":
                leaves = [xt] + ([L.t(w, dtype, True), L.t(b, dtype, True)] if affine else [])
                return L.F.group_norm(xt, groups, *leaves[1:]), leaves
            if kind == "instance_norm":
                leaves = [xt] + ([L.t(w, dtype, True), L.t(b, dtype, True)] if affine else [])
                wb = leaves[1:] or [None, None]
                return L.F.instance_norm(xt, weight=wb[0], bias=wb[1]), leaves
            leaves = [xt] + ([L.t(lw, dtype, True), L.t(lb, dtype, True)] if affine else [])
            wb = leaves[1:] or [None, None]
            return L.F.layer_norm(xt, nshape, wb[0], wb[1]), leaves
        return call
    return draw


def _prod(rng, dtype, strided):
    shape = tuple(int(s) for s in rng.integers(1, 6, int(rng.integers(1, 4))))
    x = rng.uniform(0.5, 1.5, shape).astype(np.float32) * rng.choice([-1, 1], shape)
    if rng.random() < 0.2:
        x.flat[int(rng.integers(x.size))] = 0.0
    dim = None if rng.random() < 0.4 else int(rng.integers(len(shape)))
    keepdim = bool(rng.random() < 0.5)

    def call(L):
        xt = L.t(x, dtype, True, strided)
        return (xt.prod() if dim is None else xt.prod(dim, keepdim=keepdim)), [xt]
    return call


def _embedding(rng, dtype, strided):
    num, dim = int(rng.integers(2, 8)), int(rng.integers(1, 6))
    w = _normal(rng, (num, dim))
    idx = rng.integers(0, num, tuple(int(s) for s in rng.integers(1, 6, int(rng.integers(1, 3)))))
    pad = None if rng.random() < 0.5 else int(rng.integers(num))
    sgrad = False

    def call(L):
        wt = L.t(w, dtype, True)
        return L.F.embedding(L.i(idx), wt, padding_idx=pad, sparse=sgrad), [wt]
    return call


def _embedding_bag(rng, dtype, strided):
    num, dim = int(rng.integers(2, 8)), int(rng.integers(1, 5))
    w = _normal(rng, (num, dim))
    n = int(rng.integers(0, 8))
    idx = rng.integers(0, num, n)
    last = bool(rng.random() < 0.4)
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0 if not last else 1, 5))))
    if len(cuts) and rng.random() < 0.8:
        cuts[0] = 0
    mode = str(rng.choice(["sum", "mean", "max"]))
    if last and len(cuts):
        cuts[-1] = n  # the last offset past indices' end: torch reads out of bounds
    if not len(cuts) and n:
        cuts = np.zeros(1, np.int64)  # torch 2.13 reads out of bounds (may crash)
    pad = None if rng.random() < 0.6 else int(rng.integers(num))
    psw = mode == "sum" and rng.random() < 0.3
    weights = _normal(rng, (n,))

    def call(L):
        wt = L.t(w, dtype, True)
        kw = dict(mode=mode, include_last_offset=last, padding_idx=pad)
        if psw:
            kw["per_sample_weights"] = L.t(weights, dtype)
        return L.F.embedding_bag(L.i(idx), wt, L.i(cuts), **kw), [wt]
    return call


def _unary(name, **kw):
    def draw(rng, dtype, strided):
        shape = tuple(int(s) for s in rng.integers(1, 7, int(rng.integers(1, 4))))
        x = _normal(rng, shape, float(rng.choice([1.0, 4.0])))

        def call(L):
            xt = L.t(x, dtype, True, strided)
            return getattr(L.F, name)(xt, **kw), [xt]
        return call
    return draw


def _softmax(name):
    def draw(rng, dtype, strided):
        shape = tuple(int(s) for s in rng.integers(1, 9, int(rng.integers(1, 4))))
        x = _normal(rng, shape, float(rng.choice([1.0, 8.0])))
        dim = int(rng.integers(len(shape)))

        def call(L):
            xt = L.t(x, dtype, True, strided)
            return getattr(L.F, name)(xt, dim=dim), [xt]
        return call
    return draw


def _linear(rng, dtype, strided):
    n, i, o = (int(s) for s in rng.integers(1, 40, 3))
    x, w, b = _normal(rng, (n, i)), _normal(rng, (o, i)), _normal(rng, (o,))

    def call(L):
        leaves = [L.t(x, dtype, True, strided), L.t(w, dtype, True), L.t(b, dtype, True)]
        return L.F.linear(*leaves), leaves
    return call


def _pool(name, nd):
    def draw(rng, dtype, strided):
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        sp = tuple(int(s) for s in rng.integers(3, 9, nd))
        x = _normal(rng, (n, c) + sp)
        k = int(rng.integers(1, 4))
        kw = dict(kernel_size=k, stride=int(rng.integers(1, 3)),
                  padding=int(rng.integers(0, k // 2 + 1)))

        def call(L):
            xt = L.t(x, dtype, True, strided)
            return getattr(L.F, name)(xt, **kw), [xt]
        return call
    return draw


def _loss(name):
    def draw(rng, dtype, strided):
        shape = (int(rng.integers(1, 6)), int(rng.integers(2, 6)))
        x, y = _normal(rng, shape), _normal(rng, shape)
        red = str(rng.choice(["mean", "sum", "none"]))

        def call(L):
            xt = L.t(x, dtype, True, strided)
            return getattr(L.F, name)(xt, L.t(y, dtype), reduction=red), [xt]
        return call
    return draw


OPS = {
    **{f"conv{d}d": _conv(d, False) for d in (1, 2, 3)},
    **{f"conv_transpose{d}d": _conv(d, True) for d in (1, 2, 3)},
    "batch_norm": _norm_draw("batch_norm"),
    "group_norm": _norm_draw("group_norm"),
    "instance_norm": _norm_draw("instance_norm"),
    "layer_norm": _norm_draw("layer_norm"),
    "prod": _prod,
    "embedding": _embedding,
    "embedding_bag": _embedding_bag,
    "linear": _linear,
    "softmax": _softmax("softmax"),
    "log_softmax": _softmax("log_softmax"),
    "gelu": _unary("gelu"),
    "silu": _unary("silu"),
    "tanh": _unary("tanh"),
    "sigmoid": _unary("sigmoid"),
    "elu": _unary("elu"),
    "softplus": _unary("softplus"),
    "mish": _unary("mish"),
    "avg_pool2d": _pool("avg_pool2d", 2),
    "max_pool2d": _pool("max_pool2d", 2),
    "mse_loss": _loss("mse_loss"),
    "l1_loss": _loss("l1_loss"),
    "smooth_l1_loss": _loss("smooth_l1_loss"),
}


def run_call(libs, draw_call, rng):
    """Run one call in both libraries; returns a list of what differed (empty: none)."""
    results = []
    g_values = None
    for L in libs:
        try:
            out, leaves = draw_call(L)
            if g_values is None:
                g_values = rng.standard_normal(tuple(out.shape)).astype(np.float32)
            dt = str(out.dtype).split(".")[-1]
            if out.requires_grad:
                grads = L.T.autograd.grad(out, leaves, L.t(g_values, dt), allow_unused=True)
            else:
                grads = (None,) * len(leaves)
            results.append(("ok", out, grads))
        except Exception as e:  # noqa: BLE001 - an exception is a result to compare
            # ember names its own types where torch names torch's (ember.Size, torch.Size)
            results.append(("raised", type(e).__name__,
                            str(e).replace("ember.", "").replace("torch.", "")))
    a, b = results
    if a[0] != b[0]:
        kind = "raises" if b[0] == "raised" else "raised"
        return [f"{kind} ({(a if a[0] == 'raised' else b)[2][:100]!r})" if VERBOSE else kind]
    if a[0] == "raised":
        return [] if a[1:] == b[1:] else [f"error ({a[1]}: {a[2][:80]!r} / {b[1]}: "
                                          f"{b[2][:80]!r})" if VERBOSE else "error"]
    diff = []
    if str(a[1].dtype).split(".")[-1] != str(b[1].dtype).split(".")[-1]:
        return ["dtype"]
    if not _same(a[1], b[1]):
        diff.append("output")
    for i, (ga, gb) in enumerate(zip(a[2], b[2])):
        if not _same(ga, gb):
            diff.append(f"grad{i}")
    return diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20, help="random calls per op")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    import ember
    import torch

    torch.set_num_threads(ember.get_num_threads())
    libs = (Lib(ember), Lib(torch))
    names = [n for n in args.ops.split(",") if n] or list(OPS)
    total = bad = 0
    print(f"{'op':<20}{'calls':>6}{'mismatch':>10}  what differed")
    for k, name in enumerate(names):
        rng = np.random.default_rng([args.seed, k])
        counts = collections.Counter()
        n_bad = 0
        for c in range(args.calls):
            dtype = HALF[int(rng.integers(2))]
            strided = bool(rng.random() < 0.3)
            call = OPS[name](rng, dtype, strided)
            diff = run_call(libs, call, rng)
            if diff:
                n_bad += 1
                counts.update(diff)
                if args.verbose:
                    print(f"  {name} call {c} ({dtype}{', strided' if strided else ''}): "
                          f"{', '.join(diff)}")
        total += args.calls
        bad += n_bad
        what = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{name:<20}{args.calls:>6}{100 * n_bad / max(args.calls, 1):>9.1f}%  {what}")
    print(f"{'all':<20}{total:>6}{100 * bad / max(total, 1):>9.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
