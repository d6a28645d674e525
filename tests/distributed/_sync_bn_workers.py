"""Workers for tests/distributed/test_sync_batch_norm.py: SyncBatchNorm over two processes,
each with its own part of one batch (NOTE [ Synchronized batch norm ])."""

import numpy as np

from tests.distributed._workers import _dump, _init


def batch(n0, n1, c, spatial, seed=0):
    """The whole batch, the output weights of the loss, and the split point."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n0 + n1, c) + spatial) * 2 + 1
    w = rng.standard_normal((n0 + n1, c) + spatial)
    return x, w, n0


def sync_bn(rank, fw, init_method, out_dir, n0, n1, c, spatial, momentum, steps):
    ember, dist = _init(fw, rank, 2, init_method)
    from ember.nn.modules import normalization

    # the CPU stands in for an accelerator here (torch refuses CPU batches under a group)
    normalization.SYNC_DEVICE_TYPES.add("cpu")
    x, w, split = batch(n0, n1, c, spatial)
    part = slice(0, split) if rank == 0 else slice(split, None)
    bn = ember.nn.SyncBatchNorm(c, momentum=momentum).double()
    with ember.no_grad():
        bn.weight.copy_(ember.linspace(0.5, 1.5, c))
        bn.bias.copy_(ember.linspace(-1, 1, c))
    res = {}
    for step in range(steps):
        xi = ember.tensor(x[part] * (step + 1)).requires_grad_()
        out = bn(xi)
        (out * ember.tensor(w[part])).sum().backward()
        res[f"out{step}"] = out.detach().numpy()
        # (an empty part gets no input gradient, as in torch)
        res[f"grad{step}"] = np.zeros(xi.shape) if xi.grad is None else xi.grad.numpy()
    res["grad_fn"] = type(out.grad_fn).__name__
    for name in ("weight", "bias"):  # (None for an empty part, as in torch)
        g = getattr(bn, name).grad
        res[f"{name}_grad"] = np.zeros(c) if g is None else g.numpy()
    res["running_mean"] = bn.running_mean.numpy()
    res["running_var"] = bn.running_var.numpy()
    res["batches"] = int(bn.num_batches_tracked)
    bn.eval()
    res["eval"] = bn(ember.tensor(x[part])).detach().numpy()
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
