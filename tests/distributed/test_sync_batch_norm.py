"""SyncBatchNorm across two processes (NOTE [ Synchronized batch norm ] in
ember/_sync_batch_norm.py) equals BatchNorm over the whole batch in one process: outputs,
input gradients, the summed weight and bias gradients, the running statistics (the same on
both processes) and eval-mode outputs -- also with parts of different sizes, an empty part,
and the cumulative average (momentum None). The CPU stands in for an accelerator in the
workers; PyTorch runs SyncBatchNorm on accelerators only, so the reference is ember's own
single-process BatchNorm, itself checked against torch elsewhere."""

import numpy as np
import pytest

import ember
from tests.distributed import _sync_bn_workers as workers
from tests.distributed.conftest import needs_mpi, spawn2

CASES = {
    "equal_parts_2d": (4, 4, 3, (), 0.1, 2),
    "uneven_parts_4d": (5, 2, 2, (3, 2), 0.3, 2),
    "empty_part": (6, 0, 3, (2,), 0.1, 1),
    "cumulative_average": (3, 4, 2, (2, 2), None, 3),
}


def _reference(n0, n1, c, spatial, momentum, steps):
    x, w, split = workers.batch(n0, n1, c, spatial)
    bn = ember.nn.BatchNorm1d(c, momentum=momentum) if len(spatial) < 2 else \
        ember.nn.BatchNorm2d(c, momentum=momentum)
    bn = bn.double()
    with ember.no_grad():
        bn.weight.copy_(ember.linspace(0.5, 1.5, c))
        bn.bias.copy_(ember.linspace(-1, 1, c))
    res = {}
    for step in range(steps):
        xi = ember.tensor(x * (step + 1)).requires_grad_()
        out = bn(xi)
        (out * ember.tensor(w)).sum().backward()
        res[f"out{step}"] = out.detach().numpy()
        res[f"grad{step}"] = xi.grad.numpy()
    res["weight_grad"] = bn.weight.grad.numpy()
    res["bias_grad"] = bn.bias.grad.numpy()
    res["running_mean"] = bn.running_mean.numpy()
    res["running_var"] = bn.running_var.numpy()
    bn.eval()
    res["eval"] = bn(ember.tensor(x)).detach().numpy()
    return res, split


@needs_mpi
@pytest.mark.parametrize("case", list(CASES))
def test_two_processes_equal_one_batch_norm_over_the_whole_batch(tmp_path, case):
    args = CASES[case]
    r0, r1 = spawn2(tmp_path, workers.sync_bn, "ember", *args)
    ref, split = _reference(*args)
    close = dict(rtol=1e-10, atol=1e-12)
    for step in range(args[-1]):
        for key in (f"out{step}", f"grad{step}"):
            np.testing.assert_allclose(r0[key], ref[key][:split], **close)
            np.testing.assert_allclose(r1[key], ref[key][split:], **close)
    # the affine parameters' gradients stay local: their sum is the whole batch's
    for key in ("weight_grad", "bias_grad"):
        np.testing.assert_allclose(r0[key] + r1[key], ref[key], **close)
    for r in (r0, r1):
        np.testing.assert_allclose(r["running_mean"], ref["running_mean"], **close)
        np.testing.assert_allclose(r["running_var"], ref["running_var"], **close)
        assert r["batches"] == args[-1]
        assert r["grad_fn"] == "SyncBatchNormBackward"
    np.testing.assert_allclose(r0["eval"], ref["eval"][:split], **close)
    np.testing.assert_allclose(r1["eval"], ref["eval"][split:], **close)
