"""GPU benchmarks: ember against PyTorch on the same NVIDIA GPU, side by side.

``python -m bench.cuda`` times each workload in both frameworks in one process (warm-up, then
the median of 5 samples of a calibrated number of calls, each sample ending with a device
synchronize) and prints the ratio ember/PyTorch, plus the peak of ``max_memory_allocated``
for the training steps. ``--smoke`` first exercises ``ember.cuda``'s API and reports what
failed. Workloads (issue 20's list): ``a + b`` on 10 elements (per-op overhead), a 3x3
64->64 convolution, a 4096² matmul, scaled-dot-product attention, a ResNet-50 training step
(batch 64, 224², float32 and AMP) and a GPT-2-small training step (batch 8, T 1024, AMP).

Usage::

    python -m bench.cuda                  # everything
    python -m bench.cuda -k conv,add      # workloads whose name contains one of these
    python -m bench.cuda --json out.json  # also write the rows
    python -m bench.cuda --profile resnet50_amp   # host vs GPU time, top kernels, cProfile
    python -m bench.cuda --find-sync gpt2_small_amp  # the first device sync in a step
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import traceback

import numpy as np


def _sync(fw):
    fw.cuda.synchronize()


def _time(fw, fn, samples=5, min_s=0.05, max_calls=1000):
    """Median seconds per call of ``fn`` on ``fw``'s current CUDA device."""
    fn()
    _sync(fw)
    n, elapsed = 1, 0.0
    while True:  # calibrate
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        _sync(fw)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_s or n >= max_calls:
            break
        n = min(max_calls, max(n * 2, int(n * min_s * 1.2 / max(elapsed, 1e-9))))
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        _sync(fw)
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


# -- workloads: each builds a callable for framework ``fw`` --------------------------------------


def add10(fw):
    a = fw.randn(10, device="cuda")
    b = fw.randn(10, device="cuda")
    return lambda: a + b


def conv3x3(fw):
    x = fw.randn(32, 64, 56, 56, device="cuda")
    conv = fw.nn.Conv2d(64, 64, 3, padding=1, bias=False).cuda()
    return lambda: conv(x)


def conv3x3_train(fw):
    x = fw.randn(32, 64, 56, 56, device="cuda", requires_grad=True)
    conv = fw.nn.Conv2d(64, 64, 3, padding=1, bias=False).cuda()

    def step():
        conv(x).sum().backward()

    return step


def matmul4096(fw):
    a = fw.randn(4096, 4096, device="cuda")
    b = fw.randn(4096, 4096, device="cuda")
    return lambda: a @ b


def sdpa(fw):
    q, k, v = (fw.randn(8, 12, 1024, 64, device="cuda", dtype=fw.float16) for _ in range(3))
    F = fw.nn.functional
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def softmax_ln(fw):
    x = fw.randn(8192, 1024, device="cuda")
    ln = fw.nn.LayerNorm(1024).cuda()
    return lambda: fw.softmax(ln(x), -1)


def _bottleneck_resnet50(fw, num_classes=1000):
    nn = fw.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + idt)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
                for i in range(blocks):
                    layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                    cin = width * 4
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(2048, num_classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(fw.flatten(fw.nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet50()


def _gpt2_small(fw, n_layer=12, d=768, n_head=12, ctx=1024, vocab=50257):
    """GPT-2 small: bench/train.py's GPT at 12 layers, d 768, its vocabulary, tanh GELU."""
    from bench.train import _gpt

    return _gpt(fw, n_layer=n_layer, d=d, n_head=n_head, ctx=ctx, vocab=vocab,
                approximate="tanh")


def _train_step(fw, model, opt, x, y, loss_fn, amp_dtype=None):
    scaler = fw.amp.GradScaler("cuda") if amp_dtype == fw.float16 else None

    def step():
        opt.zero_grad(set_to_none=True)
        if amp_dtype is not None:
            with fw.autocast("cuda", dtype=amp_dtype):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return step


def _resnet50(fw, amp_dtype):
    rng = np.random.default_rng(0)
    model = _bottleneck_resnet50(fw).cuda()
    opt = fw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = fw.from_numpy(rng.standard_normal((64, 3, 224, 224)).astype(np.float32)).cuda()
    y = fw.from_numpy(rng.integers(0, 1000, 64)).cuda()
    return _train_step(fw, model, opt, x, y, fw.nn.functional.cross_entropy, amp_dtype)


def resnet50_fp32(fw):
    return _resnet50(fw, None)


def resnet50_amp(fw):
    return _resnet50(fw, fw.bfloat16)


def gpt2_small_amp(fw):
    rng = np.random.default_rng(0)
    model = _gpt2_small(fw).cuda()
    opt = fw.optim.AdamW(model.parameters(), lr=3e-4)
    x = fw.from_numpy(rng.integers(0, 50257, (8, 1024))).cuda()
    y = fw.from_numpy(rng.integers(0, 50257, (8, 1024))).cuda()

    def loss_fn(logits, y):
        return fw.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                              y.reshape(-1))

    return _train_step(fw, model, opt, x, y, loss_fn, fw.bfloat16)


WORKLOADS = [
    ("a + b (10 floats)", add10, False),
    ("conv 3x3 64->64, 32x56x56, forward", conv3x3, False),
    ("conv 3x3 64->64, 32x56x56, forward+backward", conv3x3_train, False),
    ("matmul 4096x4096 float32", matmul4096, False),
    ("SDPA causal 8x12x1024x64 float16", sdpa, False),
    ("LayerNorm + softmax 8192x1024", softmax_ln, False),
    ("ResNet-50 train step, batch 64, 224, float32", resnet50_fp32, True),
    ("ResNet-50 train step, batch 64, 224, AMP bf16", resnet50_amp, True),
    ("GPT-2 small train step, batch 8, T 1024, AMP bf16", gpt2_small_amp, True),
]


def run(keys=(), max_calls=1000):
    import ember

    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for name, build, is_train in WORKLOADS:
        if keys and not any(k in name or k == build.__name__ for k in keys):
            continue
        row = {"workload": name}
        for label, fw in (("ember", ember), ("torch", torch)):
            if fw is None:
                continue
            try:
                fw.manual_seed(0)
                fw.cuda.reset_peak_memory_stats()
                fn = build(fw)
                row[label] = _time(fw, fn, samples=3 if is_train else 5,
                                   max_calls=20 if is_train else max_calls)
                row[label + "_peak_mb"] = fw.cuda.max_memory_allocated() / 2**20
            except Exception as e:  # noqa: BLE001 - the row says what failed
                row[label + "_error"] = f"{type(e).__name__}: {str(e)[:300]}"
                frames = [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}: {f.line}"
                          for f in traceback.extract_tb(e.__traceback__)
                          if "/ember/" in f.filename]
                row[label + "_where"] = frames[-5:]
            finally:
                fn = None
                if fw is not None:
                    import gc

                    gc.collect()
                    fw.cuda.empty_cache()
        if "ember" in row and "torch" in row:
            row["ratio"] = row["ember"] / row["torch"]
        rows.append(row)
        _print_row(row)
    return rows


def _print_row(row):
    def ms(v):
        return f"{v * 1e3:9.3f} ms" if isinstance(v, float) else "        -   "

    ratio = f"{row['ratio']:6.2f}x" if "ratio" in row else "   -   "
    mem = ""
    if "ember_peak_mb" in row and "torch_peak_mb" in row and row["torch_peak_mb"] > 1:
        mem = f"  peak {row['ember_peak_mb']:.0f} / {row['torch_peak_mb']:.0f} MiB"
    print(f"{row['workload'][:52]:52s} {ms(row.get('ember'))} {ms(row.get('torch'))} {ratio}{mem}",
          flush=True)
    for k in ("ember_error", "torch_error"):
        if k in row:
            print(f"    {k}: {row[k]}", *row.get(k.replace('error', 'where'), []), sep="\n      ",
                  flush=True)


SMOKE = [
    "ember.cuda.is_available()", "ember.cuda.device_count()", "ember.cuda.get_device_name()",
    "ember.cuda.get_device_capability()", "ember.cuda.get_device_properties(0)",
    "ember.cuda.current_device()", "ember.cuda.mem_get_info()",
    "ember.randn(3, device='cuda')", "ember.randn(3).cuda().cpu()",
    "ember.randn(3).to('cuda:0', non_blocking=True)", "ember.randn(3).pin_memory().is_pinned()",
    "ember.ones(2, 3, device='cuda').sum(0)", "(ember.ones(2, device='cuda') + ember.ones(2))",
    "ember.cuda.memory_allocated()", "ember.cuda.memory_reserved()", "ember.cuda.memory_stats()",
    "ember.cuda.memory_summary()[:80]", "ember.cuda.Stream()",
    "ember.cuda.Event(enable_timing=True)",
    "ember.cuda.current_stream()", "ember.cuda.manual_seed(0)", "ember.cuda.get_rng_state()",
    "ember.Generator(device='cuda').manual_seed(1)", "ember.randn(2, device='cuda').tolist()",
    "repr(ember.randn(2, device='cuda'))", "ember.tensor([1, 2], device='cuda')",
    "ember.arange(5, device='cuda')[ember.tensor([1, 3], device='cuda')]",
    "ember.randn(4, 4, device='cuda').bfloat16() @ ember.randn(4, 4, device='cuda').bfloat16()",
    "ember.randn(4, 4, device='cuda').half().softmax(-1)",
    "ember.nn.Linear(3, 4).cuda()(ember.randn(2, 3, device='cuda')).sum().backward()",
    "ember.save(ember.randn(2, device='cuda'), '/tmp/x.pt') or ember.load('/tmp/x.pt')",
    "ember.load('/tmp/x.pt', map_location='cpu')",
]


def smoke():
    import ember  # noqa: F401 - the snippets use it

    failed = []
    for s in SMOKE:
        try:
            r = eval(s)
            print(f"ok    {s} -> {str(r)[:100]!s}", flush=True)
        except Exception as e:  # noqa: BLE001
            where = [ln for ln in traceback.format_exc().splitlines() if "/ember/" in ln][-1:]
            print(f"FAIL  {s}: {type(e).__name__}: {str(e)[:200]} {where}", flush=True)
            failed.append(s)
    return failed


def profile(key, steps=3, out=""):
    """Time ``key``'s ember workload per step (synchronized), then list where the host time
    goes under cProfile: the top functions by own time. ``out`` names a file for the raw
    cProfile statistics (``pstats.Stats(out)`` reads them back, callers included)."""
    import cProfile
    import pstats

    import ember

    build = next(b for name, b, _ in WORKLOADS if key == b.__name__ or key in name)
    fn = build(ember)
    fn()
    ember.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    ember.cuda.synchronize()
    print(f"{build.__name__}: {(time.perf_counter() - t0) / steps * 1e3:.1f} ms per step",
          flush=True)
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    t1 = time.perf_counter()
    ember.cuda.synchronize()
    print(f"host enqueue {(t1 - t0) / steps * 1e3:.1f} ms per step, "
          f"then waited {(time.perf_counter() - t1) * 1e3:.1f} ms for the GPU", flush=True)
    try:  # the GPU's own time per kernel: CUPTI sees every kernel of the process
        import torch

        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as tp:
            for _ in range(steps):
                fn()
            ember.cuda.synchronize()
        events = tp.key_averages()
        total = sum(e.device_time_total for e in events)
        print(f"GPU kernel time {total / steps / 1e3:.1f} ms per step", flush=True)
        print(events.table(sort_by="device_time_total", row_limit=25, max_name_column_width=70))
    except Exception as e:  # noqa: BLE001
        print("no CUDA kernel profile:", type(e).__name__, e)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    ember.cuda.synchronize()
    prof.disable()
    if out:
        prof.dump_stats(out)
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


def find_sync(key):
    """Run one warmed-up step of ``key``'s ember workload with device synchronisation
    forbidden (``cupyx.allow_synchronize(False)``) and print where the first one happens:
    each sync stalls the host until the GPU drains, the reason a step can be host-bound
    while the GPU idles. Fix it, run again, until a step runs through."""
    import cupyx

    import ember

    build = next(b for name, b, _ in WORKLOADS if key == b.__name__ or key in name)
    fn = build(ember)
    fn()
    ember.cuda.synchronize()
    try:
        with cupyx.allow_synchronize(False):
            fn()
    except Exception as e:  # noqa: BLE001 - cupyx.DeviceSynchronized, or what it caused
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "/ember/" in f.filename]
        print(f"{type(e).__name__}: {e}")
        for f in frames[-8:]:
            print(f"  {f.filename.split('/ember/', 1)[1]}:{f.lineno} {f.name}: {f.line}")
        return False
    print(f"{build.__name__}: a whole step ran without a device synchronisation")
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default="", help="comma-separated substrings of workload names")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--json", default="")
    p.add_argument("--profile", default="", help="a workload to profile (cProfile)")
    p.add_argument("--profile-out", default="", help="where --profile writes its pstats")
    p.add_argument("--find-sync", default="", help="a workload: where does it synchronise?")
    args = p.parse_args(argv)
    out = {}
    if args.find_sync:
        find_sync(args.find_sync)
        return
    if args.profile:
        profile(args.profile, out=args.profile_out)
        return
    if args.smoke:
        out["smoke_failed"] = smoke()
    if not args.no_bench:
        try:
            import torch

            print(f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
        except Exception:  # noqa: BLE001
            pass
        print(f"{'workload':52s} {'ember':>12s} {'torch':>12s} ratio", flush=True)
        out["rows"] = run([k for k in args.k.split(",") if k])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
