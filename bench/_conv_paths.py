"""ResNet-18's and the MNIST CNN's convolutions, each candidate path forced in turn.

NOTE [ Convolution paths by layer ]
ember picks a convolution's path (F(4x4) or F(2x2) Winograd with compiled transforms, the
NumPy F(2x2) Winograd path, gathered columns) from measured rules on channels and plane
size (the table in ``ember/_ops/nn_conv.py``'s docstring). Those rules were measured under
one BLAS kernel type; the same products run about 1.9x slower under OpenBLAS's AVX2
kernels (``OPENBLAS_CORETYPE=Haswell``) than under its AVX-512 ones on the machines here,
which moves the balance between a path's products and its transforms and copies. This tool
times every candidate path of each layer of the two training workloads (forward, and the
two adjoints of a training step together), with PyTorch's time for the same convolution
beside it, so that the rules can be checked under whatever BLAS the environment selects:

    python -m bench._conv_paths                      # all layers, one thread, CPU time
    python -m bench._conv_paths -k 16x16 --rounds 9  # layers whose name contains "16x16"
    python -m bench._conv_paths --threads 2          # wall time at two threads

Paths are forced by swapping the rules' functions (``pays`` in ``_winograd43``, ``_pays``
in ``nn_conv_winograd``, ``_winograd_pays`` in ``nn_winograd``) for the duration of a
call, and restored after. One thread is timed in process CPU time (robust to other
processes' load); more threads in wall time, which only a quiet machine makes meaningful.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import numpy as np

# (name, (batch, in channels, plane, out channels, kernel, stride, padding))
LAYERS = (
    ("ResNet-18 stem 3->64 32x32", (32, 3, 32, 64, 3, 1, 1)),
    ("ResNet-18 3x3 64->64 32x32", (32, 64, 32, 64, 3, 1, 1)),
    ("ResNet-18 3x3 128->128 16x16", (32, 128, 16, 128, 3, 1, 1)),
    ("ResNet-18 3x3 256->256 8x8", (32, 256, 8, 256, 3, 1, 1)),
    ("ResNet-18 3x3 512->512 4x4", (32, 512, 4, 512, 3, 1, 1)),
    ("ResNet-18 stride-2 3x3 64->128 32x32", (32, 64, 32, 128, 3, 2, 1)),
    ("ResNet-18 stride-2 3x3 128->256 16x16", (32, 128, 16, 256, 3, 2, 1)),
    ("ResNet-18 stride-2 3x3 256->512 8x8", (32, 256, 8, 512, 3, 2, 1)),
    ("ResNet-18 stride-2 1x1 64->128 32x32", (32, 64, 32, 128, 1, 2, 0)),
    ("ResNet-18 stride-2 1x1 128->256 16x16", (32, 128, 16, 256, 1, 2, 0)),
    ("ResNet-18 stride-2 1x1 256->512 8x8", (32, 256, 8, 512, 1, 2, 0)),
    ("MNIST CNN 3x3 1->32 28x28", (64, 1, 28, 32, 3, 1, 0)),
    ("MNIST CNN 3x3 32->64 26x26", (64, 32, 26, 64, 3, 1, 0)),
)

# the rules each path is forced by: (F(4x4) pays, compiled F(2x2) pays, NumPy F(2x2) pays);
# None keeps ember's own choice
PATHS = {
    "chosen": None,
    "F(4x4)": (True, True, False),
    "F(2x2) compiled": (False, True, False),
    "F(2x2) NumPy": (False, False, True),
    "columns": (False, False, False),
}


def _rules():
    from ember._kernels import _winograd43
    from ember._ops import nn_conv_winograd, nn_winograd

    return ((_winograd43, "pays"), (nn_conv_winograd, "_pays"), (nn_winograd, "_winograd_pays"))


@contextlib.contextmanager
def forced(path):
    """Run the body with convolutions taking ``path`` (a key of ``PATHS``) wherever it
    applies; the rules are restored on exit.

    Args:
        path: ``"chosen"`` (ember's own rules) or one of the forced paths.

    Example::

        >>> with forced("columns"):
        ...     pass
    """
    choice = PATHS[path]
    if choice is None:
        yield
        return
    rules = _rules()
    saved = [getattr(mod, name) for mod, name in rules]
    try:
        for (mod, name), on in zip(rules, choice):
            setattr(mod, name, (lambda *a: True) if on else (lambda *a: False))
        yield
    finally:
        for (mod, name), fn in zip(rules, saved):
            setattr(mod, name, fn)


def candidates(layer):
    """The paths worth timing for ``layer`` (a ``LAYERS`` shape): every path for a stride-1
    3x3 convolution with more than one input channel (the compiled ones only with numba),
    ember's own choice otherwise.

    Example::

        >>> candidates((32, 64, 32, 128, 1, 2, 0))
        ['chosen']
    """
    from ember import _kernels

    _, c, _, _, k, stride, _ = layer
    if k != 3 or stride != 1 or c == 1:
        return ["chosen"]
    paths = list(PATHS)
    if _kernels.backend() != "numba":
        paths = [p for p in paths if "compiled" not in p and p != "F(4x4)"]
    return paths


def steps(fw, layer, seed=0):
    """``(forward, backward)`` callables of ``layer`` in framework ``fw``: the forward
    without grad, the backward one ``autograd.grad`` of both operands less its forward.

    Example::

        >>> import ember
        >>> fwd, bwd = steps(ember, (2, 4, 6, 4, 3, 1, 1))
        >>> tuple(fwd().shape), [tuple(g.shape) for g in bwd()]
        ((2, 4, 6, 6), [(2, 4, 6, 6), (4, 4, 3, 3)])
    """
    n, c, h, o, k, stride, pad = layer
    rng = np.random.default_rng(seed)
    out = (h + 2 * pad - k) // stride + 1
    x = fw.from_numpy(rng.standard_normal((n, c, h, h)).astype(np.float32))
    w = fw.from_numpy((rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(
        np.float32))
    g = fw.from_numpy(rng.standard_normal((n, o, out, out)).astype(np.float32))
    # a network's first convolution reads data that needs no gradient
    x.requires_grad_(c > 3)
    w.requires_grad_(True)

    def forward():
        with fw.no_grad():
            return fw.nn.functional.conv2d(x, w, None, stride, pad)

    def backward():
        y = fw.nn.functional.conv2d(x, w, None, stride, pad)
        return fw.autograd.grad(y, (x, w) if x.requires_grad else (w,), g)

    return forward, backward


def time_layer(layer, paths, rounds, clock, torch=None):
    """Median forward and backward milliseconds of each path (and of PyTorch, key
    ``"torch"``, when given), alternating within each round; the backward is the time of
    a forward and ``autograd.grad`` less the forward's median.

    Example::

        >>> t = time_layer((2, 4, 6, 4, 3, 1, 1), ["chosen"], 1, time.process_time)
        >>> sorted(t["chosen"])
        ['backward', 'forward']
    """
    import ember

    fns = {p: steps(ember, layer) for p in paths}
    if torch is not None:
        fns["torch"] = steps(torch, layer)
    times = {p: ([], []) for p in fns}
    for r in range(rounds + 1):          # the first round warms up
        for p, (fwd, bwd) in fns.items():
            with forced(p if p in PATHS else "chosen"):
                t0 = clock()
                fwd()
                t1 = clock()
                bwd()
                t2 = clock()
            if r:
                times[p][0].append(t1 - t0)
                times[p][1].append(t2 - t1)
    out = {}
    for p, (f, b) in times.items():
        fm = statistics.median(f)
        out[p] = {"forward": 1e3 * fm, "backward": 1e3 * (statistics.median(b) - fm)}
    return out


def blas_kernels():
    """The loaded BLAS libraries' kernel types as threadpoolctl reports them (e.g.
    ``['Haswell']`` under ``OPENBLAS_CORETYPE=Haswell``), or ``[]`` without threadpoolctl.

    Example::

        >>> isinstance(blas_kernels(), list)
        True
    """
    try:
        import threadpoolctl
    except ImportError:
        return []
    return sorted({i.get("architecture") or "?" for i in threadpoolctl.threadpool_info()
                   if i.get("user_api") == "blas"})


def main(argv=None):
    """``python -m bench._conv_paths [-k TEXT] [--rounds R] [--threads N]``."""
    ap = argparse.ArgumentParser(prog="python -m bench._conv_paths", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="keyword", default="", help="layers whose name contains this")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds (7)")
    ap.add_argument("--threads", type=int, default=1, help="ember's and PyTorch's threads")
    args = ap.parse_args(argv)
    import ember

    try:
        import torch
    except ImportError:
        torch = None
    ember.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    clock = time.process_time if args.threads == 1 else time.perf_counter
    print(f"BLAS kernels {blas_kernels()}, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, {args.threads} thread(s), "
          f"{'process CPU' if args.threads == 1 else 'wall'} ms, forward / backward, "
          f"load {os.getloadavg()[0]:.1f}")
    for name, layer in LAYERS:
        if args.keyword not in name:
            continue
        t = time_layer(layer, candidates(layer), args.rounds, clock, torch)
        cells = [f"{p} {v['forward']:.2f} / {v['backward']:.2f}" for p, v in t.items()]
        print(f"{name}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
