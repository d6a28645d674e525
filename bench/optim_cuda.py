"""Fused optimizer steps on a GPU (NOTE [ Fused optimizer kernels on CUDA ]): ember's one-
kernel AdamW/SGD step against its unfused CuPy path and torch.cuda's fused and foreach
steps, on a GPT-2-small-like set of parameters. Run from the repository root as
``python -m bench.optim_cuda`` (``python bench/optim_cuda.py`` puts bench/ first on the path,
where bench/cuda.py hides the ``cuda`` package CuPy imports).

Measured on an NVIDIA H200 (CuPy 14.2, torch 2.11 cu130), 146 tensors, 124.4M float32
parameters, median ms per step: AdamW ember fused 7.08, ember unfused 35.17, torch fused
1.34, torch foreach 3.30; SGD (momentum 0.9) 4.96, 11.62, 0.90, 1.28."""

import statistics
import time

import numpy as np

import ember
from ember.optim import _fused_cuda

SHAPES = [(768, 2304), (2304,), (768, 768), (768,), (768, 3072), (3072,), (3072, 768),
          (768,), (768,), (768,), (768,), (768,)] * 12 + [(50257, 768), (1024, 768)]


def _sync(lib):
    if lib is ember:
        ember.cuda.synchronize()
    else:
        lib.cuda.synchronize()


def _time(lib, name, kw, steps=10):
    rng = np.random.default_rng(0)
    ps = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s, dtype=np.float32),
                                      device="cuda")) for s in SHAPES]
    for p in ps:
        p.grad = lib.tensor(rng.standard_normal(p.shape, dtype=np.float32), device="cuda")
    opt = getattr(lib.optim, name)(ps, lr=1e-3, **kw)
    for _ in range(3):
        opt.step()
    times = []
    for _ in range(steps):
        _sync(lib)
        t0 = time.perf_counter()
        opt.step()
        _sync(lib)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    import torch

    n = sum(int(np.prod(s)) for s in SHAPES)
    print(f"{len(SHAPES)} tensors, {n / 1e6:.1f}M parameters, float32, "
          f"{ember.cuda.get_device_name()}")
    for name, kw in (("AdamW", {}), ("SGD", {"momentum": 0.9})):
        fused = _time(ember, name, kw)
        real = _fused_cuda.is_cupy
        _fused_cuda.is_cupy = lambda a: False
        try:
            unfused = _time(ember, name, kw)
        finally:
            _fused_cuda.is_cupy = real
        t_fused = _time(torch, name, {**kw, "fused": True})
        t_foreach = _time(torch, name, {**kw, "foreach": True})
        print(f"{name:6s} step ms: ember fused {fused:.2f}  ember unfused {unfused:.2f}  "
              f"torch fused {t_fused:.2f}  torch foreach {t_foreach:.2f}")


if __name__ == "__main__":
    main()
