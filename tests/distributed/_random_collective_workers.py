"""Random collectives run the same way under PyTorch's gloo and under ember.

``random_collectives(rank, fw, init_method, out_dir, seed, count)`` draws ``count`` cases
(a collective, sync or async, a dtype, a shape that may be 0-d, empty or non-contiguous,
a reduce op, a root) from ``seed``, runs each on 2 processes and dumps, per case, what
every tensor holds afterwards (and the dtypes), or the exception type where the call
raised. Both ranks draw the same cases; only the values depend on the rank. Cases whose
failure a rank could not see locally (a peer's different shape) are not drawn: those are
``test_faults.py``'s.

NOTE [ PyTorch's gloo as the oracle ]
PyTorch 2.13's gloo has defects that say nothing about ember; the torch side steps around
them without changing what is drawn, so both frameworks run the same cases:

1. ``reduce_scatter`` and ``reduce_scatter_tensor`` return a bare ``Work`` whose
   ``is_completed()`` stays False after ``wait()`` returned (50 of 50 tries, also 10 ms
   later), and whose ``get_future()`` raises RuntimeError "Work::getFuture not
   implemented.". PyTorch waits on the work where a future is drawn; ember uses its
   future, and ember's work must say it is done (``test_collectives_random.py``).
2. After ``get_future().wait()`` returned, ``is_completed()`` is still False in about one
   try in six (every collective; gloo completes the future before the work): PyTorch's
   answer is read once it settled (True 5 ms later in every try); ember's at once.
3. A strided tensor is moved as if it were contiguous; ``gather`` of complex tensors is
   refused with an error that may surface on one rank only (see ``_run``).
4. A refused reduce-scatter (``reduce_scatter`` or ``reduce_scatter_tensor``: AVG of bools,
   MAX of complex numbers, BXOR of floats) raises on both ranks at the call, and then now
   and then again from the next collective on one rank (seeds 10 and 13 of 60 cases), which
   leaves the two ranks out of step (a hang, or the fixture's worker dying). So between
   cases the PyTorch ranks agree through the store, not through gloo, and after a case
   that failed on a rank they start a fresh process group. ember's ranks meet at a
   ``barrier``: a refusal must leave nothing behind.
"""

import datetime
import os
import random
import time

import numpy as np

from tests.distributed._workers import _dump, _init

DTYPES = ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64")
# (PREMUL_SUM is not drawn: PyTorch's gloo refuses it and then fails its next barrier too)
OPS = ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG")
KINDS = ("all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
         "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all_single",
         "all_to_all", "send_recv", "isend_irecv", "batch_isend_irecv", "all_gather_object",
         "broadcast_object_list", "gather_object", "scatter_object_list",
         "all_gather_wrong_dtype", "all_gather_into_tensor_wrong_size",
         "reduce_scatter_tensor_wrong_size", "broadcast_bad_src", "all_gather_wrong_count")
SHAPES = ((), (0,), (3,), (2, 3), "transposed", "strided")


def case(r):
    """One random case (plain values) from ``random.Random`` ``r``."""
    return {"kind": r.choice(KINDS), "dtype": r.choice(DTYPES), "shape": r.choice(SHAPES),
            "op": r.choice(OPS), "root": r.randint(0, 1), "async": r.random() < 0.4,
            "future": r.random() < 0.5}


def _values(torch, c, rank, salt=0):
    """A tensor of ``c``'s dtype and shape whose values depend on the rank."""
    rng = np.random.default_rng(1000 * salt + 7 * rank + 1)
    shape = c["shape"]
    base = (2, 3) if shape == "transposed" else (6,) if shape == "strided" else shape
    dt = c["dtype"]
    if dt == "bool":
        a = rng.integers(0, 2, size=base).astype(bool)
    elif dt.startswith(("int", "uint")):
        a = rng.integers(1, 6, size=base).astype(dt)
    elif dt == "complex64":
        a = (rng.integers(-3, 4, size=base) + 1j * rng.integers(-3, 4, size=base)).astype(dt)
    else:
        a = (rng.integers(-8, 9, size=base) / 4).astype("float32" if dt == "bfloat16" else dt)
    t = torch.from_numpy(np.ascontiguousarray(a))
    if dt == "bfloat16":
        t = t.to(torch.bfloat16)
    if shape == "transposed":
        t = t.t()
    elif shape == "strided":
        t = t[::2]
    return t


def _np(torch, t):
    if t is None:
        return None
    if t.dtype == torch.bfloat16:
        return ("bfloat16", t.float().numpy().copy())
    return (str(t.dtype).split(".")[-1], t.numpy().copy())


def _op(dist, c):
    return getattr(dist.ReduceOp, c["op"])


def _is_torch(dist):
    return dist.__name__.startswith("torch.")


def _wait(dist, work, c):
    """Wait as drawn (on the work, or on its future); whether the work then says it is done.
    See NOTE [ PyTorch's gloo as the oracle ] for what the torch side does differently."""
    if work is None:
        return None
    if not c["future"] or (_is_torch(dist) and c["kind"].startswith("reduce_scatter")):
        work.wait()
        return bool(work.is_completed())
    work.get_future().wait()
    if _is_torch(dist):
        # gloo completes the future a moment before the work (a race): its settled answer
        deadline = time.monotonic() + 5.0
        while not work.is_completed() and time.monotonic() < deadline:
            time.sleep(1e-3)
    return bool(work.is_completed())


def _run(torch, dist, c, rank):
    if torch.__name__ == "torch" and c["kind"] == "gather" and c["dtype"] == "complex64":
        # PyTorch's gloo cannot gather complex tensors; its refusal may surface on either
        # rank, at the call or at the next barrier, so the oracle is not asked
        raise RuntimeError("Invalid scalar type")
    if torch.__name__ != "torch" or c["shape"] not in ("transposed", "strided"):
        return _collective(torch, dist, c, rank, _values)
    # PyTorch's gloo moves a strided tensor's storage as if it were contiguous (a
    # broadcast into ``x[::2]`` writes the wrong elements), so the oracle runs on
    # contiguous copies and writes the results back, as a user means the call
    copies = []

    def values(torch, c, rank, salt=0):
        view = _values(torch, c, rank, salt)
        copies.append((view, view.contiguous()))
        return copies[-1][1]

    out = _collective(torch, dist, c, rank, values)
    if copies and "t" in out and out["t"] is not None and c["kind"] != "send_recv":
        view, flat = copies[0]
        view.copy_(flat)
        out["t"] = _np(torch, view)
    return out


def _collective(torch, dist, c, rank, _values):  # noqa: C901 - one branch per collective
    k, a = c["kind"], c["async"]
    t = _values(torch, c, rank)
    peer = 1 - rank
    if "send" in k or "recv" in k:  # a refused send would leave its receiver waiting
        t = t.contiguous()
    if k == "all_reduce":
        w = dist.all_reduce(t, op=_op(dist, c), async_op=a)
        done = _wait(dist, w, c)
        return {"t": _np(torch, t), "done": done}
    if k == "reduce":
        w = dist.reduce(t, dst=c["root"], op=_op(dist, c), async_op=a)
        done = _wait(dist, w, c)
        return {"t": _np(torch, t) if rank == c["root"] else None, "done": done}
    if k == "broadcast":
        w = dist.broadcast(t, src=c["root"], async_op=a)
        done = _wait(dist, w, c)
        return {"t": _np(torch, t), "done": done}
    if k in ("all_gather", "all_gather_wrong_dtype", "all_gather_wrong_count"):
        n = 3 if k == "all_gather_wrong_count" else 2
        like = t.contiguous()
        if k == "all_gather_wrong_dtype":
            like = like.to(torch.float64 if t.dtype != torch.float64 else torch.float32)
        outs = [torch.zeros_like(like) for _ in range(n)]
        w = dist.all_gather(outs, t, async_op=a)
        done = _wait(dist, w, c)
        return {"outs": [_np(torch, o) for o in outs], "done": done}
    if k in ("all_gather_into_tensor", "all_gather_into_tensor_wrong_size"):
        extra = 1 if k.endswith("wrong_size") else 0
        out = torch.zeros((2 * max(t.numel(), 1) + extra,) if t.dim() == 0 else
                          (2 * t.shape[0] + extra,) + tuple(t.shape[1:]), dtype=t.dtype)
        w = dist.all_gather_into_tensor(out, t if t.dim() else t.reshape(1), async_op=a)
        done = _wait(dist, w, c)
        return {"out": _np(torch, out), "done": done}
    if k == "gather":
        outs = [torch.zeros_like(t.contiguous()) for _ in range(2)] \
            if rank == c["root"] else None
        w = dist.gather(t, outs, dst=c["root"], async_op=a)
        done = _wait(dist, w, c)
        return {"outs": None if outs is None else [_np(torch, o) for o in outs], "done": done}
    if k == "scatter":
        ins = [_values(torch, c, rank, salt=s) for s in (1, 2)] if rank == c["root"] else None
        out = torch.zeros_like(t.contiguous())
        w = dist.scatter(out, ins, src=c["root"], async_op=a)
        done = _wait(dist, w, c)
        return {"out": _np(torch, out), "done": done}
    if k == "reduce_scatter":
        ins = [_values(torch, c, rank, salt=s) for s in (1, 2)]
        out = torch.zeros_like(t.contiguous())
        w = dist.reduce_scatter(out, ins, op=_op(dist, c), async_op=a)
        done = _wait(dist, w, c)
        return {"out": _np(torch, out), "done": done}
    if k in ("reduce_scatter_tensor", "reduce_scatter_tensor_wrong_size"):
        big = torch.cat([t.reshape(-1), _values(torch, c, rank, salt=3).reshape(-1)])
        n = t.numel() + (1 if k.endswith("wrong_size") else 0)
        out = torch.zeros(n, dtype=t.dtype)
        w = dist.reduce_scatter_tensor(out, big, op=_op(dist, c), async_op=a)
        done = _wait(dist, w, c)
        return {"out": _np(torch, out), "done": done}
    if k == "all_to_all_single":
        big = torch.cat([t.reshape(-1), _values(torch, c, rank, salt=3).reshape(-1)])
        out = torch.zeros_like(big)
        w = dist.all_to_all_single(out, big, async_op=a)
        done = _wait(dist, w, c)
        return {"out": _np(torch, out), "done": done}
    if k == "all_to_all":
        ins = [_values(torch, c, rank, salt=s) for s in (1, 2)]
        outs = [torch.zeros_like(x.contiguous()) for x in ins]
        w = dist.all_to_all(outs, ins, async_op=a)
        done = _wait(dist, w, c)
        return {"outs": [_np(torch, o) for o in outs], "done": done}
    if k == "send_recv":
        if rank == c["root"]:
            dist.send(t, dst=peer)
            return {"t": _np(torch, t)}
        got = torch.zeros_like(t.contiguous())
        src = dist.recv(got, src=peer)
        return {"t": _np(torch, got), "src": src}
    if k == "isend_irecv":
        got = torch.zeros_like(t.contiguous())
        w = dist.isend(t, dst=peer) if rank == 0 else dist.irecv(got, src=peer)
        w.wait()
        w2 = dist.irecv(got, src=peer) if rank == 0 else dist.isend(t, dst=peer)
        w2.wait()
        return {"got": _np(torch, got)}
    if k == "batch_isend_irecv":
        got = torch.zeros_like(t.contiguous())
        ops = [dist.P2POp(dist.isend, t, peer), dist.P2POp(dist.irecv, got, peer)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return {"got": _np(torch, got)}
    if k == "all_gather_object":
        objs = [None, None]
        dist.all_gather_object(objs, {"r": rank, "v": [rank] * 2, "s": c["dtype"]})
        return {"objs": objs}
    if k == "broadcast_object_list":
        objs = [rank, {"k": c["dtype"]}, None] if rank == c["root"] else [None] * 3
        dist.broadcast_object_list(objs, src=c["root"])
        return {"objs": objs}
    if k == "gather_object":
        objs = [None, None] if rank == c["root"] else None
        dist.gather_object(("x", rank), objs, dst=c["root"])
        return {"objs": objs}
    if k == "scatter_object_list":
        out = [None]
        dist.scatter_object_list(out, [{"to": 0}, {"to": 1}] if rank == c["root"] else None,
                                 src=c["root"])
        return {"objs": out}
    if k == "broadcast_bad_src":
        dist.broadcast(t, src=2 + c["root"], async_op=a)
        return {"t": _np(torch, t)}
    raise AssertionError(k)


def _next_case_torch(dist, store, rank, i, failed):
    """Between two cases on PyTorch: agree through ``store`` (never through gloo) on whether
    a rank failed, and if one did, start a fresh process group (NOTE [ PyTorch's gloo as
    the oracle ], 4)."""
    store.set(f"case{i}/rank{rank}", "failed" if failed else "ok")
    keys = [f"case{i}/rank{r}" for r in range(2)]
    store.wait(keys)
    if any(store.get(k) == b"failed" for k in keys):
        dist.destroy_process_group()
        dist.init_process_group("gloo", store=dist.PrefixStore(f"after{i}/", store), rank=rank,
                                world_size=2, timeout=datetime.timedelta(seconds=60))


def random_collectives(rank, fw, init_method, out_dir, seed, count):
    """``count`` random cases from ``seed`` on 2 processes; per case, what came out."""
    torch, dist = _init(fw, rank, 2, init_method)
    if fw == "torch":
        from torch.distributed import distributed_c10d

        store = distributed_c10d._get_default_store()
    r = random.Random(seed)
    res = []
    for i in range(count):
        c = case(r)
        try:
            out = _run(torch, dist, c, rank)
        except Exception as e:  # noqa: BLE001 - the other framework must raise alike
            out = {"error": type(e).__name__, "message": str(e)[:200]}
        res.append((c, out))
        with open(os.path.join(out_dir, f"progress{rank}.txt"), "a") as f:
            f.write(f"{c} {out.get('error', 'ok')}\n")  # where a hang happened
        if fw == "torch":
            _next_case_torch(dist, store, rank, i, "error" in out)
        else:
            dist.barrier()  # a case that failed on one rank only must not leak into the next
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
