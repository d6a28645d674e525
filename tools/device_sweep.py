"""Run the OpInfo table on a device and compare every result with the same call on the CPU.

The device-generic counterpart of tests/_ops/test_opinfo.py for quick triage: each op's
samples are made on the CPU, copied to ``--device``, run there, and the results (and, for
floating dtypes, the gradients of ``sum(out * w)``) copied back and compared with the CPU
run. Every (op, dtype) gets one line in the JSON report: ``ok``, ``mismatch`` or the
exception's type and message, with the frame of ember's code it came from.

Usage::

    python tools/device_sweep.py --device cuda --dtypes float32,int64 --out sweep.json
    python tools/device_sweep.py --device cuda --ops add,conv2d --grad
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import zlib

import numpy as np


def _map(x, f):
    """``x`` with ``f`` applied to each tensor inside it (lists, tuples, dicts)."""
    import ember
    from ember.utils._pytree import tree_map_only

    return tree_map_only(ember.Tensor, f, x)


def _tensors(x):
    from ember.utils._pytree import tensor_leaves

    return tensor_leaves(x)


def _where(exc):
    """The innermost frame inside ember's code, as 'file:line function'."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/ember/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"{f.filename.split('/ember/', 1)[1]}:{f.lineno} {f.name}"


def _compare(got, want, dtype):
    import ember

    a, b = _tensors(got), _tensors(want)
    if len(a) != len(b):
        return f"{len(a)} results, cpu gave {len(b)}"
    for x, y in zip(a, b):
        xc = x.detach().cpu()
        if xc.dtype != y.dtype:
            return f"dtype {xc.dtype} vs cpu {y.dtype}"
        if tuple(xc.shape) != tuple(y.shape):
            return f"shape {tuple(xc.shape)} vs cpu {tuple(y.shape)}"
        if y.dtype.is_floating_point or y.dtype.is_complex:
            tol = 1e-2 if y.dtype in (ember.float16, ember.bfloat16) else 1e-4
            xa = xc.double() if not y.dtype.is_complex else xc.cdouble()
            ya = y.double() if not y.dtype.is_complex else y.cdouble()
            if not ember.allclose(xa, ya, rtol=tol, atol=tol, equal_nan=True):
                diff = (xa - ya).abs().nan_to_num(0).max().item() if xa.numel() else 0
                return f"values differ (max abs {diff:.3g})"
        elif not ember.equal(xc, y):
            return "values differ"
    return None


def run_op(info, dtype, device, grad, max_samples):
    """Run one (op, dtype); return (status, detail)."""
    import ember

    rng = np.random.default_rng(zlib.crc32(f"{info.id}/{dtype.name}".encode()))
    samples = list(info.sample_inputs(dtype, rng))[:max_samples]
    op = info.get_op()
    for s in samples:
        args, kwargs = s.all_args(), s.kwargs
        try:
            if info.nondeterministic:
                ember.manual_seed(0)
            want = op(*args, **kwargs)
        except Exception:
            continue  # the CPU refuses this sample too: not a device question
        try:
            dargs = _map(args, lambda t: t.to(device))
            dkwargs = _map(kwargs, lambda t: t.to(device))
            if not _tensors((args, kwargs)):  # a factory: ask for the device
                dkwargs = dict(dkwargs, device=device)
            if info.nondeterministic:
                ember.manual_seed(0)
            got = op(*dargs, **dkwargs)
            for t in _tensors(got):
                if t.device.type != ember.device(device).type:
                    return "wrong_device", f"{s!r}: result on {t.device}"
            if not info.nondeterministic:
                bad = _compare(got, want, dtype)
                if bad:
                    return "mismatch", f"{s!r}: {bad}"
            if grad and info.differentiable and (dtype.is_floating_point or dtype.is_complex):
                g = _grad_check(op, args, kwargs, device)
                if g:
                    return "grad", f"{s!r}: {g}"
        except Exception as e:  # noqa: BLE001 - the report names it
            msg = str(e).splitlines()[0][:240] if str(e) else ""
            return "error", f"{s!r}: {type(e).__name__}: {msg} @ {_where(e)}"
    return "ok", ""


def _grad_check(op, args, kwargs, device):
    import ember

    def run(dev):
        leaves = []

        def leaf(t):
            t = t.detach().to(dev)
            if t.dtype.is_floating_point or t.dtype.is_complex:
                t.requires_grad_(True)
                leaves.append(t)
            return t

        a = _map(args, leaf)
        k = _map(kwargs, leaf)
        out = [t for t in _tensors(op(*a, **k)) if t.requires_grad]
        if not out or not leaves:
            return None
        gen = ember.Generator().manual_seed(1)
        total = sum((o * ember.rand(o.shape, generator=gen, dtype=o.dtype).to(dev)).sum().real
                    if o.dtype.is_complex else
                    (o * ember.rand(o.shape, generator=gen, dtype=o.dtype).to(dev)).sum()
                    for o in out)
        grads = ember.autograd.grad(total, leaves, allow_unused=True)
        return [g.cpu() if g is not None else None for g in grads]

    try:
        want = run("cpu")
    except Exception:  # noqa: BLE001 - not differentiable this way on the CPU either
        return None
    if want is None:
        return None
    got = run(device)
    for i, (x, y) in enumerate(zip(got, want)):
        if (x is None) != (y is None):
            return f"grad {i}: None on one side"
        if x is not None:
            bad = _compare(x, y, y.dtype)
            if bad:
                return f"grad {i}: {bad}"
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtypes", default="float32")
    p.add_argument("--ops", default="", help="comma-separated OpInfo ids (default: all)")
    p.add_argument("--grad", action="store_true", help="also compare gradients")
    p.add_argument("--max-samples", type=int, default=4)
    p.add_argument("--budget", type=float, default=1e9, help="seconds; stop after")
    p.add_argument("--out", default="")
    args = p.parse_args(argv)

    import ember
    from ember.testing._opinfo import load_op_db

    if args.device.startswith("npdev"):  # the NumPy-backed test device (NOTE [ Test device ])
        from ember.testing import register_test_device

        register_test_device()
    ember.empty(1, device=args.device)  # initialises the backend, or fails loudly
    wanted = set(filter(None, args.ops.split(",")))
    db = [i for i in load_op_db() if not wanted or i.id in wanted or i.name in wanted]
    dtypes = [getattr(ember, d) for d in args.dtypes.split(",")]
    report, counts = [], {}
    start = time.perf_counter()
    for info in db:
        for dt in dtypes:
            if dt not in info.dtypes:
                continue
            if time.perf_counter() - start > args.budget:
                break
            t0 = time.perf_counter()
            status, detail = run_op(info, dt, args.device, args.grad, args.max_samples)
            counts[status] = counts.get(status, 0) + 1
            report.append({"op": info.id, "dtype": dt.name, "status": status, "detail": detail,
                           "s": round(time.perf_counter() - t0, 3)})
            if status != "ok":
                print(f"{status:12s} {info.id}[{dt.name}] {detail}", flush=True)
        if args.out and len(report) % 50 == 0:
            _write(args.out, report, counts)
    if args.out:
        _write(args.out, report, counts)
    print(json.dumps(counts), f"{time.perf_counter() - start:.0f} s", flush=True)
    return 0


def _write(path, report, counts):
    with open(path, "w") as f:
        json.dump({"counts": counts, "results": report}, f, indent=0)


if __name__ == "__main__":
    sys.exit(main())
