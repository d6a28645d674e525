"""Group ``func``: the ``torch.func`` transforms batched by ``vmap``.

- per-sample gradients, ``vmap(grad(loss), in_dims=(None, 0, 0))`` over a batch of 64 for a
  784-128-10 MLP, and the same gradients by a Python loop over the samples (the loop is
  what vmap must beat: NOTE [ vmap batching ] in ember/func/_batch_rules.py);
- ``jacrev`` of a 100 -> 100 MLP (one batched backward pass: NOTE [ jacrev by vmap ] in
  ember/func/_batch_jacobian.py);
- ``jacfwd`` of the same MLP and ``hessian`` (``jacfwd(jacrev)``) of a scalar function of it:
  one forward pass with a batch of basis tangents (NOTE [ jacfwd by vmap ] in
  ember/func/_eager_transforms.py).

Issue 18's targets: the first row <= 1.5x PyTorch, and ember's time in the second row >= 10x
its time in the first (vmap against ember's own loop); jacrev <= 1.5x PyTorch. The weight
gradients of the first layer are 25 MB of products written per call (NOTE [ Batched outer
products ] in ember/func/_batch_kernels.py), so that row is bound by memory bandwidth on a
loaded machine, for both frameworks.
"""

from __future__ import annotations

import numpy as np

from bench.common import workload

BATCH = 64


def _mlp_params(fw, sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        w = (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        b = (rng.standard_normal(n_out) * 0.1).astype(np.float32)
        params += [fw.from_numpy(w), fw.from_numpy(b)]
    return tuple(params)


def _psg_setup(fw):
    rng = np.random.default_rng(1)
    params = _mlp_params(fw, (784, 128, 10))
    x = fw.from_numpy(rng.standard_normal((BATCH, 784)).astype(np.float32))
    y = fw.from_numpy(rng.integers(0, 10, BATCH))
    F = fw.nn.functional

    def loss(params, xi, yi):
        w1, b1, w2, b2 = params
        out = F.linear(F.relu(F.linear(xi, w1, b1)), w2, b2)
        return F.cross_entropy(out.unsqueeze(0), yi.unsqueeze(0))

    return params, x, y, loss


@workload("func", "per-sample grads vmap(grad) MLP 784-128-10, batch 64", rtol=1e-4,
          atol=1e-5)
def per_sample_grads(fw):
    params, x, y, loss = _psg_setup(fw)
    f = fw.func.vmap(fw.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: f(params, x, y)


@workload("func", "per-sample grads by a Python loop over 64 samples (784-128-10)",
          rtol=1e-4, atol=1e-5)
def per_sample_grads_loop(fw):
    params, x, y, loss = _psg_setup(fw)
    g = fw.func.grad(loss)

    def step():
        grads = [g(params, x[i], y[i]) for i in range(BATCH)]
        return tuple(fw.stack([gr[k] for gr in grads]) for k in range(len(params)))

    return step


def _mlp100(fw):
    w1, b1, w2, b2 = _mlp_params(fw, (100, 100, 100), seed=2)
    x = fw.from_numpy(np.random.default_rng(3).standard_normal(100).astype(np.float32))

    def f(v):
        return fw.nn.functional.linear(fw.tanh(fw.nn.functional.linear(v, w1, b1)), w2, b2)

    return f, x


@workload("func", "jacrev of an MLP 100 -> 100 (tanh, hidden 100)", rtol=1e-4, atol=1e-5)
def jacrev_mlp(fw):
    f, x = _mlp100(fw)
    jac = fw.func.jacrev(f)
    return lambda: jac(x)


@workload("func", "jacfwd of an MLP 100 -> 100 (tanh, hidden 100)", rtol=1e-4, atol=1e-5)
def jacfwd_mlp(fw):
    f, x = _mlp100(fw)
    jac = fw.func.jacfwd(f)
    return lambda: jac(x)


@workload("func", "hessian of a scalar MLP 100 -> 1 (tanh, hidden 100)", rtol=1e-3,
          atol=1e-4)
def hessian_mlp(fw):
    f, x = _mlp100(fw)
    hess = fw.func.hessian(lambda v: f(v).square().sum())
    return lambda: hess(x)
