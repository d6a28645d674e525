import importlib.util
import signal

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _torch_release():
    if not HAS_TORCH:
        return ()
    import importlib.metadata

    try:
        text = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(p) for p in text.split("+")[0].split(".")[:2] if p.isdigit())


# The oracle is PyTorch 2.13 (the test extra pins it). GPU machines carry an older torch: a
# test of what 2.13 added or changed is skipped there instead of failing on torch's side.
needs_torch_2_13 = pytest.mark.skipif(_torch_release() < (2, 13),
                                      reason="compares with PyTorch 2.13's behaviour")


def skip_unless_intel_avx512(what="this result"):
    """Skip the calling test unless torch runs MKL's AVX-512 code paths here: an Intel CPU
    with AVX-512. MKL picks its FFT codelets and LAPACK kernels by the CPU's vendor as well
    as its instructions, so an AMD CPU with AVX-512 (torch's own kernels at AVX512) still
    gets other inf/NaN orders from MKL; ember follows the Intel ones."""
    skip_unless_torch_avx512(what)
    vendor = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    vendor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if vendor != "GenuineIntel":
        pytest.skip(f"{what} follows MKL's AVX-512 paths on Intel CPUs; this CPU is "
                    f"{vendor or 'unknown'}")


def skip_unless_torch_avx512(what="this result"):
    """Skip the calling test unless torch runs its AVX-512 CPU kernels here.

    Some of torch's answers depend on which vector kernels its CPU build picks (the order in
    which MKL, FFT or Welford kernels meet inf and NaN, bits of vendor GEMMs, bfloat16 through
    oneDNN): ember follows the AVX-512 ones, which the tests were written against. On an AVX2
    machine (an AMD EPYC, say) torch takes other paths, so the comparison is skipped there."""
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    if not cap.startswith("AVX512"):
        pytest.skip(f"{what} follows torch's AVX-512 kernels; this machine's torch uses {cap}")


def spy_thread_splits(monkeypatch, contended=False):
    """Take the machine as quiet (ember's pool does not decline for load), or as busy with
    ``contended=True``, and record each ``split_on_threads`` answer; returns the list the
    answers are appended to.

    For tests of the kernels that cut their work over threads: they check the pieces give
    the one-call bits and that the split really happened."""
    from ember import _parallel

    monkeypatch.setattr(_parallel, "contended", lambda: contended)
    splits = []
    real = _parallel.split_on_threads

    def spy(fn, size, min_size=_parallel.MIN_ELEMENTS, **kwargs):
        ran = real(fn, size, min_size, **kwargs)
        splits.append(ran)
        return ran

    monkeypatch.setattr(_parallel, "split_on_threads", spy)
    # (the relay's splits only: numba's pool, NOTE [ A hand-over without the GIL ], is off here
    # and has tests of its own in tests/perf/test_session22_kernels.py)
    monkeypatch.setattr(_parallel, "native_split", lambda *a, **k: False)
    return splits


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _device_types():
    from ember.testing import device_types

    return device_types()


@pytest.fixture(params=_device_types())
def device(request):
    """Each device type tests run on here (cpu, cuda when available, the NumPy-backed test
    device): a function-style test that takes ``device`` runs once per device type
    (ember/testing/_device_type.py)."""
    return request.param


# NOTE [ Signal handlers restored after each test ]
# ``start_processes(...).start()`` (ember's, as PyTorch's) makes SIGTERM and SIGINT raise
# SignalException in the calling process, for good. Run in a test worker, that handler
# reached a later test's ``fork`` Pool: its ``terminate()`` SIGTERMs the workers, and a worker
# hit while putting a result caught the exception (an ``Exception``, which the pool's loop
# catches), went back to wait for a task and never ended, so ``Pool.__exit__`` waited for
# ever. Each test gets the handlers it found back.
_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
                 if hasattr(signal, n))


@pytest.fixture(autouse=True)
def _restore_signal_handlers():
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = [signal.getsignal(s) for s in _SIGNALS]
    yield
    for s, h in zip(_SIGNALS, before):
        if h is not None and signal.getsignal(s) is not h:
            signal.signal(s, h)
