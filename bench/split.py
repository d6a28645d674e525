"""Where a training step's time goes in ember: ``python -m bench.split [workload ...]``.

Each ``train`` workload (bench/train.py) is built in ember, warmed up, then profiled over a
few steps with cProfile on the process-CPU clock at one thread (``ember.set_num_threads(1)``),
so the split reads the same on a loaded machine (one-thread CPU time does not move with the
load the way two-thread wall time does). Every profiled function's own time is put in one
category by where it lives and what it is:

- ``GEMM``: matrix products (MLAS through onnxruntime, its bindings included, NumPy's BLAS,
  linear's product);
- ``convolution``: Winograd transforms, channels-last copies, im2col and the conv kernels;
- ``attention``: scaled-dot-product attention's own code (its products and softmax rows);
- ``softmax/norms``: softmax, log-softmax, cross-entropy, layer/batch norm;
- ``element-wise``: activations, arithmetic, comparisons, copies and casts;
- ``reductions``: sums and other reductions (NumPy's ``reduce`` included);
- ``pooling``, ``recurrent`` (the fused LSTM steps), ``random`` (dropout's draws);
- ``optimizer``: the fused optimizer steps;
- ``allocation``: NumPy's ``empty``/``zeros``/``ascontiguousarray`` and friends;
- ``Python``: everything else -- the dispatcher, autograd's engine and nodes, modules,
  argument checks: the time torch spends in C++ -- and cProfile's own cost per call, so
  it reads high: the unprofiled step time is printed beside the profiled one.

NumPy operators written inline (``a @ b``, ``a * b``) are not calls cProfile sees: their
time counts in the function that runs them, which is why whole files name categories.

PyTorch's one-thread step is timed beside it for the ratio. Example::

    python -m bench.split mnist_cnn gpt
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

#: (category, substrings of "file:function" that put a function in it), first match wins
RULES = (
    ("GEMM", ("onnxruntime", "_mlas.py:", "_blas.py:", "'matmul'", "'dot'",
              "built-in method numpy.matmul", "_lstm_mlas.py:", "'einsum'", "nn_ops.py:_affine",
              "linalg.py:")),
    ("recurrent", ("_numba_rnn", "nn_rnn.py:", "_lstm_")),
    ("convolution", ("winograd", "_numba_conv", "nn_conv", "im2col", "channels_last",
                     "_conv_paths", "unfold", "_weight_tiles")),
    ("attention", ("nn_attention", "_nn_attention")),
    ("softmax/norms", ("softmax", "cross_entropy", "layer_norm", "batch_norm", "_norm",
                       "nll")),
    ("pooling", ("_numba_pool", "nn_pool", "pool")),
    ("random", ("_numba_random", "random_ops", "rng_", "dropout", "bernoulli")),
    ("optimizer", ("_numba_optim", "adam_into", "adadelta", "sgd_", "_foreach")),
    ("reductions", ("'reduce' of", "_numba_reduce", "reduction.py:", "_reduce.py:",
                    "sum'", "'sum'")),
    ("element-wise", ("_numba.py:", "_numba_par", "_numba_fma", "ufunc", "'astype'",
                      "_elementwise.py:",
                      "'copy'", "copyto", "'fill'", "'where'", "'clip'", "'exp'")),
    ("allocation", ("numpy.empty", "numpy.zeros", "ascontiguousarray", "numpy.ones",
                    "'view'", "'reshape'")),
)
CATEGORIES = [c for c, _ in RULES] + ["Python"]


def category(key):
    """The category of a cProfile key (file, line, function)."""
    path, _, func = key
    text = f"{path.rsplit('/', 1)[-1]}:{func}"
    for name, needles in RULES:
        if any(n in text for n in needles):
            return name
    return "Python"


def split(step, steps):
    """ms per step by category for ``step`` (already warm), on the process-CPU clock."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    out = dict.fromkeys(CATEGORIES, 0.0)
    for key, (_, _, tottime, _, _) in pstats.Stats(prof).stats.items():
        out[category(key)] += tottime * 1e3 / steps
    return out


def _cpu_median(step, steps):
    times = []
    for _ in range(steps):
        t = time.process_time()
        step()
        times.append(time.process_time() - t)
    return statistics.median(times) * 1e3


def main(argv=None):
    from bench import train

    names = ["mlp", "mnist_cnn", "resnet18", "gpt", "lstm_lm"]
    p = argparse.ArgumentParser(prog="python -m bench.split", description=__doc__.split("\n")[0])
    p.add_argument("workloads", nargs="*", default=names, help=f"of {names}")
    p.add_argument("--steps", type=int, default=0, help="profiled steps (default: by size)")
    args = p.parse_args(argv)
    import ember

    try:
        import torch
    except ImportError:
        torch = None
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    header = "| workload | " + " | ".join(CATEGORIES) + " | ember (profiled) | ember | torch |"
    print(header)
    print("|" + "---|" * (len(CATEGORIES) + 4))
    for name in args.workloads:
        steps = args.steps or {"resnet18": 3, "gpt": 5}.get(name, 10)
        step = getattr(train, name)(ember)
        for _ in range(3):
            step()
        plain = _cpu_median(step, steps)
        parts = split(step, steps)
        total = sum(parts.values())
        theirs = "-"
        if torch is not None:
            tstep = getattr(train, name)(torch)
            for _ in range(3):
                tstep()
            theirs = f"{_cpu_median(tstep, steps):.1f}"
        cells = " | ".join(f"{parts[c]:.1f} ({100 * parts[c] / total:.0f}%)" for c in CATEGORIES)
        print(f"| {name} | {cells} | {total:.1f} | {plain:.1f} | {theirs} |", flush=True)
    print("\nms of one-thread process CPU per step (share of the profiled step); 'ember' and "
          "'torch' are unprofiled one-thread step medians.")


if __name__ == "__main__":
    main()
