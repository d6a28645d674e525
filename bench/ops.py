"""Group ``ops``: per-op overhead on tiny tensors, and one large matmul.

On 10-element tensors the arithmetic is nothing; what is timed is the framework's path from
the Python call to the kernel and back (argument handling, dispatch, result wrapping). See
NOTE [ Hot path ] in ember/_dispatch.py.
"""

from __future__ import annotations

from bench.common import rand, tensors, workload

N = 10


@workload("ops", "a + b (10 float32)")
def add(fw):
    a, b = tensors(fw, rand(N), rand(N, seed=1))
    return lambda: a + b


@workload("ops", "a * b (10 float32)")
def mul(fw):
    a, b = tensors(fw, rand(N), rand(N, seed=1))
    return lambda: a * b


@workload("ops", "a.sum() (10 float32)")
def sum_(fw):
    (a,) = tensors(fw, rand(N))
    return lambda: a.sum()


@workload("ops", "a[3] (10 float32)")
def index_int(fw):
    (a,) = tensors(fw, rand(N))
    return lambda: a[3]


@workload("ops", "a[2:8] (10 float32)")
def index_slice(fw):
    (a,) = tensors(fw, rand(N))
    return lambda: a[2:8]


@workload("ops", "a @ b (1024x1024 float32)", rtol=1e-4, atol=1e-3)
def matmul(fw):
    a, b = tensors(fw, rand(1024, 1024), rand(1024, 1024, seed=1))
    return lambda: a @ b


def _check_grad(e, t):
    assert e.requires_grad == t.requires_grad, "requires_grad of the results differ"
    assert (e.grad_fn is None) == (t.grad_fn is None), "only one result has a grad_fn"
    from bench.common import assert_same

    assert_same(e, t)


@workload("ops", "a + b, a requires grad (10 float32)", check=_check_grad)
def add_requires_grad(fw):
    a, b = tensors(fw, rand(N), rand(N, seed=1))
    a.requires_grad_(True)
    if (a + b).grad_fn is None:
        raise NotImplementedError("no graph recorded (autograd not available yet)")
    return lambda: a + b
