"""Group ``kernels``: the heavy ops of training, one at a time, ember against PyTorch."""

from __future__ import annotations

import numpy as np

from bench.common import rand, tensors, workload


#: (framework, shape) -> the cotangent ``_grad_of`` feeds backward, made once: drawing 1M
#: normal numbers takes ~10 ms, which every forward+backward row timed as well (the GELU
#: row's 1M elements measured ~10 ms in both frameworks for ~1 ms of GELU)
_COTANGENTS: dict = {}


def _grad_of(fw, out):
    """Backprop a fixed cotangent through ``out`` (the same values for both frameworks,
    drawn once per shape, outside the timed calls)."""
    key = (fw.__name__, tuple(out.shape))
    g = _COTANGENTS.get(key)
    if g is None:
        g = _COTANGENTS[key] = fw.from_numpy(
            np.random.default_rng(7).standard_normal(key[1]).astype(np.float32))
    out.backward(g)


@workload("kernels", "conv2d 3x3 64->64, 32x64x32x32, forward+backward", rtol=1e-3,
          atol=1e-3)
def conv2d_fwd_bwd(fw):
    x, w = tensors(fw, rand(32, 64, 32, 32), rand(64, 64, 3, 3, seed=1) * 0.05)
    x.requires_grad_(True)
    w.requires_grad_(True)

    def step():
        x.grad = w.grad = None
        out = fw.nn.functional.conv2d(x, w, padding=1)
        _grad_of(fw, out)
        return w.grad

    return step


@workload("kernels", "conv2d 3x3 64->64, 32x64x32x32, forward", rtol=1e-3, atol=1e-3)
def conv2d_fwd(fw):
    x, w = tensors(fw, rand(32, 64, 32, 32), rand(64, 64, 3, 3, seed=1) * 0.05)
    return lambda: fw.nn.functional.conv2d(x, w, padding=1)


@workload("kernels", "max_pool2d 2x2, 32x64x32x32")
def max_pool(fw):
    (x,) = tensors(fw, rand(32, 64, 32, 32))
    return lambda: fw.nn.functional.max_pool2d(x, 2)


@workload("kernels", "max_pool2d 2x2, 64x64x24x24 (MNIST CNN), forward+backward")
def max_pool_fwd_bwd(fw):
    (x,) = tensors(fw, rand(64, 64, 24, 24))
    x.requires_grad_(True)

    def step():
        x.grad = None
        _grad_of(fw, fw.nn.functional.max_pool2d(x, 2))
        return x.grad

    return step


@workload("kernels", "batch_norm training, 32x64x32x32, forward+backward", rtol=1e-4,
          atol=1e-4)
def batch_norm(fw):
    x, w, b = tensors(fw, rand(32, 64, 32, 32), rand(64, seed=1), rand(64, seed=2))
    for t in (x, w, b):
        t.requires_grad_(True)
    rm, rv = fw.zeros(64), fw.ones(64)

    def step():
        x.grad = w.grad = b.grad = None
        _grad_of(fw, fw.nn.functional.batch_norm(x, rm, rv, w, b, training=True))
        return x.grad

    return step


def _optimizer_step(fw, make):
    """A step of ``make(params)`` over the MNIST CNN's parameter shapes (1.2M floats)."""
    shapes = [(32, 1, 3, 3), (32,), (64, 32, 3, 3), (64,), (128, 9216), (128,), (10, 128),
              (10,)]
    params = [fw.from_numpy(rand(*s, seed=i)).requires_grad_() for i, s in enumerate(shapes)]
    for i, p in enumerate(params):
        p.grad = fw.from_numpy(rand(*tuple(p.shape), seed=100 + i) * 0.01)
    opt = make(params)
    opt.step()  # the state exists before timing

    def step():
        opt.step()
        return params[4]

    return step


@workload("kernels", "Adadelta step, MNIST CNN parameters (1.2M)", check=None)
def adadelta_step(fw):
    return _optimizer_step(fw, lambda ps: fw.optim.Adadelta(ps, lr=1.0))


@workload("kernels", "SGD momentum step, MNIST CNN parameters (1.2M)", check=None)
def sgd_step(fw):
    return _optimizer_step(fw, lambda ps: fw.optim.SGD(ps, lr=0.01, momentum=0.9))


@workload("kernels", "softmax (256x1000)")
def softmax(fw):
    (x,) = tensors(fw, rand(256, 1000))
    return lambda: fw.softmax(x, dim=-1)


@workload("kernels", "log_softmax (256x1000)", rtol=1e-5, atol=1e-6)
def log_softmax(fw):
    (x,) = tensors(fw, rand(256, 1000))
    return lambda: fw.log_softmax(x, dim=-1)


@workload("kernels", "gelu over 1M float32, forward+backward", rtol=1e-5, atol=1e-6)
def gelu(fw):
    (x,) = tensors(fw, rand(1024, 1024) * 2)
    x.requires_grad_(True)

    def step():
        x.grad = None
        _grad_of(fw, fw.nn.functional.gelu(x))
        return x.grad

    return step


@workload("kernels", "silu over 1M float32", rtol=1e-5, atol=1e-6)
def silu(fw):
    (x,) = tensors(fw, rand(1024, 1024) * 2)
    return lambda: fw.nn.functional.silu(x)


@workload("kernels", "layer_norm (64x128x256), forward+backward", rtol=1e-4, atol=1e-4)
def layer_norm(fw):
    x, w, b = tensors(fw, rand(64, 128, 256), rand(256, seed=1), rand(256, seed=2))
    x.requires_grad_(True)

    def step():
        x.grad = None
        out = fw.nn.functional.layer_norm(x, (256,), w, b)
        _grad_of(fw, out)
        return x.grad

    return step


@workload("kernels", "cross_entropy (256x1000), forward+backward", rtol=1e-4, atol=1e-5)
def cross_entropy(fw):
    (x,) = tensors(fw, rand(256, 1000))
    y = fw.from_numpy(np.random.default_rng(3).integers(0, 1000, 256))
    x.requires_grad_(True)

    def step():
        x.grad = None
        fw.nn.functional.cross_entropy(x, y).backward()
        return x.grad

    return step


@workload("kernels", "exp over 4M float32", rtol=1e-5)
def exp(fw):
    (x,) = tensors(fw, rand(4 * 1024 * 1024))
    return lambda: x.exp()


@workload("kernels", "sum over 4M float32", rtol=1e-4, atol=1e-2)
def sum_(fw):
    (x,) = tensors(fw, rand(4 * 1024 * 1024))
    return lambda: x.sum()


@workload("kernels", "a + b over 4M float32")
def add_large(fw):
    a, b = tensors(fw, rand(4 * 1024 * 1024), rand(4 * 1024 * 1024, seed=1))
    return lambda: a + b
