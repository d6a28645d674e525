"""Group ``autograd``: the cost of recording the graph and of running backward.

On 10-element tensors the arithmetic is nothing: what is timed is node creation (with saved
tensors) and the engine's per-node overhead. See NOTE [ Engine ] in ember/autograd/_engine.py.
"""

from __future__ import annotations

from bench.common import rand, tensors, workload

N = 10


def _leaves(fw, *arrays):
    return tuple(t.requires_grad_(True) for t in tensors(fw, *arrays))


@workload("autograd", "a + b, a requires grad (10 float32)")
def add_rg(fw):
    (a,) = _leaves(fw, rand(N))
    (b,) = tensors(fw, rand(N, seed=1))
    return lambda: a + b


@workload("autograd", "a * b, both require grad (10 float32)")
def mul_rg(fw):
    a, b = _leaves(fw, rand(N), rand(N, seed=1))
    return lambda: a * b


def _grads(fw, a, b):
    return (a.grad.clone(), b.grad.clone())


@workload("autograd", "(a * b).sum().backward() (10 float32)", check=None)
def mul_sum_backward(fw):
    a, b = _leaves(fw, rand(N), rand(N, seed=1))

    def step():
        a.grad = None
        b.grad = None
        (a * b).sum().backward()
        return a.grad

    return step


@workload("autograd", "20-op chain forward+backward (10 float32)", check=None)
def chain_backward(fw):
    (a,) = _leaves(fw, rand(N))

    def step():
        a.grad = None
        x = a
        for _ in range(10):
            x = x * 1.01 + 0.5
        x.sum().backward()
        return a.grad

    return step


@workload("autograd", "autograd.grad of x*x+x (10 float64), create_graph", check=None)
def grad_create_graph(fw):
    (x,) = _leaves(fw, rand(N, dtype="float64"))

    def step():
        y = (x * x + x).sum()
        (g,) = fw.autograd.grad(y, x, create_graph=True)
        return g

    return step


@workload("autograd", "20-layer MLP (width 32) forward+backward, batch 1", rtol=1e-4,
          atol=1e-5)
def mlp20_batch1(fw):
    import numpy as np

    rng = np.random.default_rng(0)
    layers = []
    for _ in range(20):
        w = fw.from_numpy((rng.standard_normal((32, 32)) / np.sqrt(32)).astype(np.float32))
        layers.append(w.requires_grad_(True))
    (x,) = tensors(fw, rand(1, 32))

    def step():
        for w in layers:
            w.grad = None
        h = x
        for w in layers:
            h = (h @ w).tanh()
        h.sum().backward()
        return layers[0].grad

    return step


@workload("autograd", "20-layer MLP backward only (61 nodes, retain_graph), batch 1",
          check=None)
def mlp20_backward_only(fw):
    """The engine's per-node cost: one recorded graph (20 matmul, 20 tanh, a sum and 20
    leaves' AccumulateGrad nodes) run backward again and again; divide by 61 for per node."""
    import numpy as np

    rng = np.random.default_rng(0)
    layers = []
    for _ in range(20):
        w = fw.from_numpy((rng.standard_normal((32, 32)) / np.sqrt(32)).astype(np.float32))
        layers.append(w.requires_grad_(True))
    (x,) = tensors(fw, rand(1, 32))
    h = x
    for w in layers:
        h = (h @ w).tanh()
    loss = h.sum()

    def step():
        loss.backward(retain_graph=True)
        return layers[0].grad

    return step
