"""Group ``func``: the ``torch.func`` transforms batched by ``vmap``.

- per-sample gradients, ``vmap(grad(loss), in_dims=(None, 0, 0))`` over a batch of 64 for a
  784-128-10 MLP, and the same gradients by a Python loop over the samples (the loop is
  what vmap must beat: NOTE [ vmap batching ] in ember/func/_batch_rules.py);
- ``jacrev`` of a 100 -> 100 MLP (one batched backward pass: NOTE [ jacrev by vmap ] in
  ember/func/_batch_jacobian.py);
- ``jacfwd`` of the same MLP and ``hessian`` (``jacfwd(jacrev)``) of a scalar function of it:
  one forward pass with a batch of basis tangents (NOTE [ jacfwd by vmap ] in
  ember/func/_eager_transforms.py);
- the tutorials' other programs: per-sample gradients of a small CNN (conv, max pool,
  log-softmax, NLL) and of a one-block transformer (embedding, layer norm, attention),
  model ensembling (``vmap`` over stacked parameters), and a Hessian-vector product by
  forward-over-reverse (``jvp`` of ``grad``).

Issue 18's targets: the first row <= 1.5x PyTorch, and ember's time in the second row >= 10x
its time in the first (vmap against ember's own loop); jacrev <= 1.5x PyTorch. The weight
gradients of the first layer are 25 MB of products written per call (NOTE [ Batched outer
products ] in ember/func/_batch_kernels.py), so that row is bound by memory bandwidth on a
loaded machine, for both frameworks; ember writes them with streaming stores (NOTE
[ Streaming stores for large products ] in ember/func/_batch_numba.py).
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


def _randn(fw, rng, *shape, scale=1.0):
    return fw.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def _cnn_setup(fw):
    rng = np.random.default_rng(4)
    params = (_randn(fw, rng, 8, 1, 3, 3, scale=1 / 3), _randn(fw, rng, 8, scale=0.1),
              _randn(fw, rng, 16, 8, 3, 3, scale=1 / 8.5), _randn(fw, rng, 16, scale=0.1),
              _randn(fw, rng, 64, 2304, scale=1 / 48), _randn(fw, rng, 64, scale=0.1),
              _randn(fw, rng, 10, 64, scale=1 / 8), _randn(fw, rng, 10, scale=0.1))
    x = _randn(fw, rng, 32, 1, 28, 28)
    y = fw.from_numpy(rng.integers(0, 10, 32))
    F = fw.nn.functional

    def loss(params, xi, yi):
        c1, b1, c2, b2, w1, d1, w2, d2 = params
        h = F.relu(F.conv2d(xi.unsqueeze(0), c1, b1))
        h = F.max_pool2d(F.relu(F.conv2d(h, c2, b2)), 2)
        h = F.relu(F.linear(fw.flatten(h, 1), w1, d1))
        return F.nll_loss(F.log_softmax(F.linear(h, w2, d2), dim=1), yi.unsqueeze(0))

    return params, x, y, loss


@workload("func", "per-sample grads vmap(grad) CNN 2 conv + 2 fc (28x28), batch 32", rtol=1e-3,
          atol=1e-5)
def per_sample_grads_cnn(fw):
    params, x, y, loss = _cnn_setup(fw)
    f = fw.func.vmap(fw.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: f(params, x, y)


def _block_setup(fw):
    rng = np.random.default_rng(5)
    d, vocab, seq = 32, 100, 16
    params = (_randn(fw, rng, vocab, d), _randn(fw, rng, 3 * d, d, scale=d ** -0.5),
              _randn(fw, rng, d, d, scale=d ** -0.5), fw.ones(d), fw.zeros(d),
              _randn(fw, rng, vocab, d, scale=d ** -0.5))
    tokens = fw.from_numpy(rng.integers(0, vocab, (16, seq)))
    F = fw.nn.functional

    def loss(params, t):
        emb, qkv, proj, g, b, head = params
        h = F.embedding(t, emb)                                   # (seq, d)
        q, k, v = F.linear(F.layer_norm(h, (d,), g, b), qkv).reshape(seq, 3, 4, d // 4) \
            .permute(1, 2, 0, 3)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = h + F.linear(a.transpose(0, 1).reshape(seq, d), proj)
        logits = F.linear(F.layer_norm(h, (d,), g, b), head)
        return F.cross_entropy(logits[:-1], t[1:])

    return params, tokens, loss


@workload("func", "per-sample grads vmap(grad) transformer block (embedding, layer norm, "
          "causal attention), 16 x 16 tokens", rtol=1e-3, atol=1e-5)
def per_sample_grads_block(fw):
    params, tokens, loss = _block_setup(fw)
    f = fw.func.vmap(fw.func.grad(loss), in_dims=(None, 0))
    return lambda: f(params, tokens)


@workload("func", "model ensembling: vmap over 8 stacked MLPs 784-128-10, batch 64",
          rtol=1e-4, atol=1e-5)
def ensemble_mlp(fw):
    rng = np.random.default_rng(6)
    stacked = [_mlp_params(fw, (784, 128, 10), seed=10 + i) for i in range(8)]
    params = tuple(fw.stack([p[j] for p in stacked]) for j in range(4))
    x = _randn(fw, rng, 64, 784)
    F = fw.nn.functional

    def model(params, x):
        w1, b1, w2, b2 = params
        return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)

    f = fw.func.vmap(model, in_dims=(0, None))
    return lambda: f(params, x)


@workload("func", "Hessian-vector product jvp(grad) of a scalar MLP 100 -> 1 (tanh)",
          rtol=1e-3, atol=1e-4)
def hvp_mlp(fw):
    f, x = _mlp100(fw)
    v = fw.from_numpy(np.random.default_rng(7).standard_normal(100).astype(np.float32))
    g = fw.func.grad(lambda u: f(u).square().sum())
    return lambda: fw.func.jvp(g, (x,), (v,))[1]
