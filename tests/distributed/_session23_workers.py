"""Workers for ``test_session23_collectives.py``, run the same way under PyTorch's gloo and
under ember (2 processes; each rank dumps its own file, see ``conftest.spawn2``).

- ``complex_reductions``: reductions of complex tensors, the defined ones (SUM, AVG) and
  the refused ones (MAX, MIN, PRODUCT, bitwise), and that a refusal leaves the group
  usable.
- ``completion``: what ``is_completed()`` says once an asynchronous collective's future
  or the work itself was waited on, and reduce-scatter's values through a future.
"""

import time

from tests.distributed._workers import _dump, _init


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the other framework must raise alike
        return (type(e).__name__,)


def _cplx(torch, rank, n=4):
    re = torch.arange(n, dtype=torch.float32) + rank
    return torch.complex(re, 2.0 - re)


def complex_reductions(rank, fw, init_method, out_dir):
    """Each reduction on complex64 with SUM, AVG, MAX, PRODUCT, BAND; then a SUM after."""
    torch, dist = _init(fw, rank, 2, init_method)
    R = dist.ReduceOp
    res = {}
    for op in ("SUM", "AVG", "MAX", "PRODUCT", "BAND"):
        o = getattr(R, op)

        def all_reduce():
            t = _cplx(torch, rank)
            dist.all_reduce(t, op=o)
            return t.numpy().copy()

        def reduce():
            t = _cplx(torch, rank)
            dist.reduce(t, dst=1, op=o)
            return t.numpy().copy() if rank == 1 else None

        def reduce_scatter_tensor():
            out = torch.zeros(2, dtype=torch.complex64)
            w = dist.reduce_scatter_tensor(out, _cplx(torch, rank), op=o, async_op=True)
            w.wait()
            return out.numpy().copy()

        for name, fn in (("all_reduce", all_reduce), ("reduce", reduce),
                         ("reduce_scatter_tensor", reduce_scatter_tensor)):
            res[name, op] = _outcome(fn)
    t = _cplx(torch, rank)
    dist.all_reduce(t)  # nothing of the refusals is left over
    res["after"] = t.numpy().copy()
    # PyTorch's refused reduce_scatter may raise again from the next collective (NOTE [
    # PyTorch's gloo as the oracle ]): it comes last, with no collective after it
    ins = [_cplx(torch, rank, 2), _cplx(torch, 1 - rank, 2)]
    res["reduce_scatter", "MIN"] = _outcome(
        lambda: dist.reduce_scatter(torch.zeros(2, dtype=torch.complex64), ins, op=R.MIN))
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


def _settled(torch_side, work):
    if torch_side:  # gloo completes the future just before the work (a race)
        deadline = time.monotonic() + 5.0
        while not work.is_completed() and time.monotonic() < deadline:
            time.sleep(1e-3)
    return work.is_completed()


def completion(rank, fw, init_method, out_dir):
    """``is_completed()`` right after waiting on the future of each asynchronous collective
    (20 times each), and reduce-scatter's outputs waited on through a future (ember) or the
    work (PyTorch's gloo has no future for it)."""
    torch, dist = _init(fw, rank, 2, init_method)
    is_torch = fw == "torch"
    res = {}
    launches = {
        "all_reduce": lambda t: dist.all_reduce(t, async_op=True),
        "broadcast": lambda t: dist.broadcast(t, src=1, async_op=True),
        "all_gather": lambda t: dist.all_gather([torch.zeros(3), torch.zeros(3)], t,
                                                async_op=True),
        "all_to_all": lambda t: dist.all_to_all([torch.zeros(3), torch.zeros(3)],
                                                [t, t + 1], async_op=True),
        "scatter": lambda t: dist.scatter(t, [t + 1, t + 2] if rank == 0 else None, src=0,
                                          async_op=True),
    }
    for name, launch in launches.items():
        seen = []
        for _ in range(20):
            w = launch(torch.arange(3, dtype=torch.float32) + rank)
            w.get_future().wait()
            seen.append(_settled(is_torch, w))
        res[name] = seen
    for kind in ("reduce_scatter", "reduce_scatter_tensor"):
        ins = [torch.arange(3, dtype=torch.float32) * (rank + 1) + k for k in range(2)]
        out = torch.zeros(3)
        if kind == "reduce_scatter":
            w = dist.reduce_scatter(out, ins, op=dist.ReduceOp.MAX, async_op=True)
        else:
            w = dist.reduce_scatter_tensor(out, torch.cat(ins), op=dist.ReduceOp.MAX,
                                           async_op=True)
        if is_torch:
            w.wait()
            done = holds_out = None  # (never True on PyTorch's gloo; no future)
        else:
            holds_out = w.get_future().wait()[0] is out
            done = w.is_completed()
        res[kind] = (out.numpy().copy(), done, holds_out)
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
