"""Workers for the session-17 distributed tests, run the same way under PyTorch's gloo and
under ember (2 processes; each rank dumps its own file, see ``conftest.spawn2``).

- ``comm_hook_threads``: where DDP communication hooks and their ``then`` callbacks run,
  and how a callback's error and a hook's error reach ``backward()`` and the next
  iteration.
- ``logging_no_sync``: the DDP logging record after every step of ``no_sync`` / synced
  sequences.
- ``all_gather_checks``: ``all_gather`` and ``all_gather_into_tensor`` with mismatched
  dtypes and sizes (complex into float and the reverse).
"""

import threading
import time
import warnings

import numpy as np

from tests.distributed._workers import _dump, _init


def _first_line(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _hook_run(torch, dist, rank):
    main = threading.get_ident()
    log = []  # (event, iteration, bucket, on the main thread, done when then() returned)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=1e-5)
    state = {"it": 0}

    def hook(state, bucket):
        it, i = state["it"], bucket.index()
        log.append(("hook", it, i, threading.get_ident() == main, None))
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

        def cb(f):
            log.append(("cb", it, i, threading.get_ident() == main, None))
            if state.get("raise_cb") and i == 0:
                raise ValueError("boom in cb")
            return f.value()[0] / 2

        child = fut.then(cb)
        log.append(("then", it, i, None, child.done()))
        if state.get("raise_hook") and i == 0:
            raise KeyError("boom in hook")
        return child

    ddp.register_comm_hook(state, hook)
    x = torch.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) * (rank + 1))
    outcomes, grads = [], []
    for it in range(5):
        state.clear()
        state["it"] = it
        state["raise_cb"] = it == 2
        state["raise_hook"] = it == 3
        try:
            ddp(x).sum().backward()
            outcomes.append("ok")
            grads.append({n: p.grad.detach().numpy().copy() for n, p in net.named_parameters()})
        except Exception as e:  # noqa: BLE001 - compared with the other framework
            outcomes.append(_first_line(e))
        for p in net.parameters():
            p.grad = None
    # every callback runs, iteration 3's first included although nobody waits on it
    # (waited for here, up to 20 s; the test then checks that all ran)
    def pending():
        ran = {e[1:3] for e in log if e[0] == "cb"}
        return [e[1:3] for e in log if e[0] == "then" and e[1:3] not in ran]

    deadline = time.monotonic() + 20
    while pending() and time.monotonic() < deadline:
        time.sleep(0.01)
    return {"log": list(log), "outcomes": outcomes, "grads": grads}


def _chain(torch, dist, rank):
    main = threading.get_ident()
    seen = []
    t = torch.arange(4.0) * (rank + 1)
    fut = dist.all_reduce(t, async_op=True).get_future()

    def first(f):
        seen.append(("first", threading.get_ident() == main))
        return f.value()[0] * 2

    def second(f):
        seen.append(("second", threading.get_ident() == main))
        return f.value() + 1

    child = fut.then(first)
    done_at_then = child.done()  # True only if ``first`` ran inline, in then()
    value = child.then(second).wait().numpy().copy()
    bad = dist.all_reduce(torch.ones(2), async_op=True).get_future()
    failed = bad.then(lambda f: 1 / 0).then(lambda f: f.value())
    try:
        failed.wait()
        error = None
    except Exception as e:  # noqa: BLE001
        error = str(e).splitlines()[0]
    return {"value": value, "seen": seen, "done_at_then": done_at_then, "error": error}


def _unused_without_finding(torch):
    """The error of the forward after a backward that left parameters without gradients
    (no find_unused_parameters): it names their indices."""
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3, 3)
            self.skip = torch.nn.Linear(3, 3)  # never runs
            self.b = torch.nn.Linear(3, 1)

        def forward(self, x):
            return self.b(self.a(x))

    ddp = torch.nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=1e-5)
    out = []
    for _ in range(2):
        try:
            ddp(torch.ones(2, 3)).sum().backward()
            out.append("ok")
        except Exception as e:  # noqa: BLE001 - compared with the other framework
            out.append(f"{type(e).__name__}: {e}")
    data = ddp._get_ddp_logging_data()
    out.append((data.get("error"), data.get("has_error")))
    return out


def _hook_checks(torch, dist):
    """What ``register_comm_hook`` says to hooks of odd signatures (type: message)."""
    hooks_mod = __import__(torch.__name__ + ".distributed.algorithms.ddp_comm_hooks."
                           "default_hooks", fromlist=["allreduce_hook"])

    def good(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        return hooks_mod.allreduce_hook(state, bucket)

    def other_name(state, b):
        return hooks_mod.allreduce_hook(state, b)

    def bad_bucket(state, bucket: int):
        return hooks_mod.allreduce_hook(state, bucket)

    def bad_return(state, bucket) -> int:
        return hooks_mod.allreduce_hook(state, bucket)

    out = {}
    for name, hook in [("good", good), ("other_name", other_name), ("bad_bucket", bad_bucket),
                       ("bad_return", bad_return), ("not_callable", 3),
                       ("fp16_wrapper", hooks_mod.fp16_compress_wrapper(good))]:
        ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
        try:
            ddp.register_comm_hook(None, hook)
            if name == "good":
                ddp.register_comm_hook(None, hook)  # only once
            out[name] = "ok"
        except Exception as e:  # noqa: BLE001 - compared with the other framework
            out[name] = f"{type(e).__name__}: {e}"
        data = ddp._get_ddp_logging_data()  # the record keeps what DDP refused
        out[name + ":record"] = (data.get("error"), data.get("has_error"))
    out["wrapper_names"] = (hooks_mod.fp16_compress_wrapper(good).__name__,
                            hooks_mod.bf16_compress_wrapper(good).__name__)
    return out


def comm_hook_threads(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    res = {"ddp": _hook_run(torch, dist, rank), "chain": _chain(torch, dist, rank),
           "unused": _unused_without_finding(torch), "checks": _hook_checks(torch, dist)}
    dist.barrier()
    dist.destroy_process_group()
    _dump(out_dir, rank, res)


# -- the logging record under no_sync ---------------------------------------------------------

LOG_CONFIGS = ({}, {"bucket_cap_mb": 1e-5},
               {"bucket_cap_mb": 2e-5, "gradient_as_bucket_view": True},
               {"bucket_cap_mb": 1e-5, "find_unused_parameters": True},
               {"bucket_cap_mb_list": [1e-5, 1e-4]})
LOG_SEQUENCE = "NSNSSNNSNS"  # N: a no_sync step, S: a synchronized one


def logging_no_sync(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    out = []
    for kw in LOG_CONFIGS:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 4, bias=False), torch.nn.Tanh(),
                                  torch.nn.Linear(4, 3, bias=False), torch.nn.Tanh(),
                                  torch.nn.Linear(3, 2, bias=False))
        ddp = torch.nn.parallel.DistributedDataParallel(net, **kw)
        x = torch.ones(3, 4) * (rank + 1)
        steps = []
        for c in LOG_SEQUENCE:
            if c == "N":
                with ddp.no_sync():
                    ddp(x).sum().backward()
            else:
                ddp(x).sum().backward()
            data = ddp._get_ddp_logging_data()
            steps.append({"keys": sorted(data),
                          "fields": {k: v for k, v in data.items()
                                     if "time" not in k and k != "master_port"},
                          "rebuilt": bool(ddp._has_rebuilt_buckets)})
        with torch.no_grad():
            ddp(x)
        data = ddp._get_ddp_logging_data()
        steps.append({"keys": sorted(data),
                      "fields": {k: v for k, v in data.items()
                                 if "time" not in k and k != "master_port"},
                      "rebuilt": bool(ddp._has_rebuilt_buckets)})
        out.append(steps)
    dist.destroy_process_group()
    _dump(out_dir, rank, out)


# -- all_gather with mismatched dtypes and sizes ------------------------------------------------

def _gather_cases(torch, rank):
    C, C2 = torch.complex64, torch.complex128
    f64, i32, i64 = torch.float64, torch.int32, torch.int64
    z = torch.zeros
    ramp = (torch.arange(3.0) * (1 + 2j) * (rank + 1)).to(C)
    return {
        # all_gather into a list
        "c64_into_f32_short": (z(3, dtype=C), [z(3), z(3)]),
        "c64_into_f32_flat": (z(3, dtype=C), [z(6), z(6)]),
        "c64_into_f32_real_view": (ramp, [z(3, 2), z(3, 2)]),
        "c64_into_mixed": (ramp, [z(3, 2), z(3, dtype=C)]),
        "f32_into_c64": (z(4), [z(2, dtype=C), z(2, dtype=C)]),
        "f32_pairs_into_c64": (torch.arange(4.0).reshape(2, 2) * (rank + 1),
                               [z(2, dtype=C), z(2, dtype=C)]),
        "f32_into_f64": (z(4), [z(4, dtype=f64), z(4, dtype=f64)]),
        "f32_into_mixed": (z(4), [z(4), z(4, dtype=f64)]),
        "c128_into_f64": (z(2, dtype=C2), [z(2, 2, dtype=f64), z(2, 2, dtype=f64)]),
        "c64_into_c128": (z(2, dtype=C), [z(2, dtype=C2), z(2, dtype=C2)]),
        "c128_into_c128": (z(2, dtype=C2) + rank, [z(2, dtype=C2), z(2, dtype=C2)]),
        "i32_into_f32": (z(2, dtype=i32), [z(2), z(2)]),
        "size_small": (z(4), [z(3), z(3)]),
        "size_mixed": (z(4), [z(4), z(5)]),
        "size_shape": (z(4), [z(2, 2), z(2, 2)]),
        "zero_dim": (z(()), [z(1), z(1)]),
        # all_gather_into_tensor
        "t_c64_into_f32": (z(2, dtype=C), z(4)),
        "t_c64_into_f32_8": (z(2, dtype=C), z(8)),
        "t_c64_into_f32_pairs": (ramp[:2], z(4, 2)),
        "t_c64_into_f64": (z(2, dtype=C), z(4, 2, dtype=f64)),
        "t_f32_into_c64": (z(4), z(4, dtype=C)),
        "t_f32_into_f64": (z(2), z(4, dtype=f64)),
        "t_i64_into_f32": (z(2, dtype=i64), z(4)),
        "t_size5": (z(2), z(5)),
        "t_size3": (z(2), z(3)),
        "t_size1": (z(1), z(1)),
        "t_empty": (z(0), z(0)),
        "t_2d_flat": (z(2, 3), z(12)),
        "t_2d_stacked": (z(2, 3), z(2, 2, 3)),
        "t_zero_dim": (z(()), z(2)),
    }


def all_gather_checks(rank, fw, init_method, out_dir):
    torch, dist = _init(fw, rank, 2, init_method)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (inp, outs) in _gather_cases(torch, rank).items():
            for async_op in (False, True):
                try:
                    if isinstance(outs, list):
                        got = [o.clone() for o in outs]
                        w = dist.all_gather(got, inp, async_op=async_op)
                    else:
                        got = outs.clone()
                        w = dist.all_gather_into_tensor(got, inp, async_op=async_op)
                    if async_op:
                        w.wait()
                    got = got if isinstance(got, list) else [got]
                    res = ("ok", [(str(g.dtype).split(".")[-1], g.numpy().copy()) for g in got])
                except Exception as e:  # noqa: BLE001 - compared with the other framework
                    res = (type(e).__name__, str(e).splitlines()[0].replace("torch.", "")
                           .replace("ember.", ""))
                out[(name, async_op)] = res
                dist.barrier()
    dist.destroy_process_group()
    _dump(out_dir, rank, out)


# -- random DDP configurations ------------------------------------------------------------------

def random_ddp(rank, fw, init_method, out_dir, seeds):
    """``_random_ddp_workers``' random configurations, each seed's result made picklable
    without a process group (a PowerSGD state is recorded by its type name)."""
    from tests.distributed import _random_ddp_workers as rnd

    torch, dist = _init(fw, rank, 2, init_method)
    res = {}
    for seed in seeds:
        cfg = rnd.config(seed)
        try:
            out = rnd._run(torch, dist, fw, rank, cfg)
            if not isinstance(out.get("hook"), (str, type(None))):
                out["hook"] = type(out["hook"]).__name__
            res[seed] = out
        except Exception as e:  # noqa: BLE001 - the other framework must fail alike
            res[seed] = {"error": f"{type(e).__name__}: {str(e)[:80]}"}
            dist.barrier()
    dist.destroy_process_group()
    _dump(out_dir, rank, res)
