import contextlib
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


@contextlib.contextmanager
def fails_if_hung(seconds=300):
    """Turn a hang inside the block into a failure: past ``seconds`` (far above any wait the
    code under test should need, on a loaded machine too), the test process prints every
    thread's stack and exits, which pytest-xdist reports as this test's failure. For checks
    that something ends at all, in place of an assertion on how fast it ended."""
    import faulthandler

    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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


# NOTE [ Each test starts from the same global state ]
# Under ``pytest -n 2`` which tests share a worker, and in what order, changes from run to run
# (xdist hands out tests as workers free up), and ember and torch both seed their default
# generators from the OS at import. So a test that draws unseeded random numbers, or that
# meets a default dtype, grad mode, thread count or environment variable an earlier test left
# changed, can pass on one CI run and fail on the next. Each test therefore starts with the
# global generators (Python's, NumPy's, ember's, torch's) seeded from its own id (the same
# numbers every run and in any order, different ones for different tests), and the settings
# and environment it found are put back after it. Exploring many random inputs is the job
# of tests/differential, whose cases carry their own seeds. With EMBER_TEST_LEAKS=<file>, each
# test that left a setting changed is written there (one line each) to find the culprits.


def _global_settings(lib, settings=None):
    return {
        "default_dtype": lib.get_default_dtype(),
        "grad_enabled": lib.is_grad_enabled(),
        "deterministic": (lib.are_deterministic_algorithms_enabled(),
                          lib.is_deterministic_algorithms_warn_only_enabled()),
        "anomaly": (lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()),
        "matmul_precision": lib.get_float32_matmul_precision(),
        "warn_always": lib.is_warn_always_enabled(),
        "default_device": str(lib.get_default_device()),
        # ember's get_num_threads() asks the BLAS when never set (slow): its setting will do
        "num_threads": lib.get_num_threads() if settings is None else settings.num_threads,
    }


def _restore_settings(lib, before, after, settings=None):
    for key, old in before.items():
        if after[key] == old:
            continue
        if key == "default_dtype":
            lib.set_default_dtype(old)
        elif key == "grad_enabled":
            lib.set_grad_enabled(old)
        elif key == "deterministic":
            lib.use_deterministic_algorithms(old[0], warn_only=old[1])
        elif key == "anomaly":
            lib.set_anomaly_enabled(old[0], old[1])
        elif key == "matmul_precision":
            lib.set_float32_matmul_precision(old)
        elif key == "warn_always":
            lib.set_warn_always(old)
        elif key == "default_device":
            lib.set_default_device(None if old == "cpu" else old)
        elif key == "num_threads":
            if settings is not None and old is None:
                # never set: back to the count ember found at the start, and unset again
                from ember import _parallel

                lib.set_num_threads(_UNSET_THREADS[0])
                settings.num_threads = None
                _parallel.reset()
            else:
                lib.set_num_threads(old)


_UNSET_THREADS = []


@pytest.fixture(autouse=True)
def _same_global_state(request):
    import os
    import random
    import zlib

    import ember
    from ember._settings import settings

    if not _UNSET_THREADS:
        _UNSET_THREADS.append(ember.get_num_threads())
    torch = None
    if HAS_TORCH:
        import torch
    seed = zlib.crc32(request.node.nodeid.encode())
    random.seed(seed)
    np.random.seed(seed)
    ember.manual_seed(seed)
    if torch is not None:
        torch.manual_seed(seed)
    from ember import _kernels

    env = dict(os.environ)
    kernels = _kernels._choice  # (backend() would load the kernels)
    mine = _global_settings(ember, settings)
    theirs = _global_settings(torch) if torch is not None else None
    # print options and the distributions' validation default: a test that changed them left
    # later reprs and out-of-support log_probs different (seen in session 32's CI)
    libs = [ember] + ([torch] if torch is not None else [])
    shown = [dict(vars(lib._tensor_str.PRINT_OPTS)) for lib in libs]
    validated = [lib.distributions.Distribution._validate_args for lib in libs]
    yield
    leaks = []
    for lib, opts, valid in zip(libs, shown, validated):
        if dict(vars(lib._tensor_str.PRINT_OPTS)) != opts:
            leaks.append(f"{lib.__name__} print options")
            vars(lib._tensor_str.PRINT_OPTS).update(opts)
        if lib.distributions.Distribution._validate_args != valid:
            leaks.append(f"{lib.__name__} distributions' validate_args")
            lib.distributions.Distribution._validate_args = valid
    if dict(os.environ) != env:
        changed = set(env) ^ set(os.environ) | {k for k in env if os.environ.get(k) != env[k]}
        changed.discard("PYTEST_CURRENT_TEST")  # pytest's own, set for each phase
        leaks += [f"env {k}" for k in sorted(changed)]
        for k in changed:
            if k in env:
                os.environ[k] = env[k]
            else:
                del os.environ[k]
    if _kernels._choice != kernels:
        # (a fixture's set_backend(old) puts "numba" back where the default chose numba: not
        # a leak worth naming, though the choice is put back all the same)
        if (_kernels._choice == "numpy") != (kernels == "numpy"):
            leaks.append(f"ember kernels {_kernels._choice}")
        _kernels._choice, _kernels._impl = kernels, None  # chosen again at the next use
    now = _global_settings(ember, settings)
    leaks += [f"ember {k}" for k in mine if now[k] != mine[k]]
    _restore_settings(ember, mine, now, settings)
    if theirs is not None:
        now = _global_settings(torch)
        leaks += [f"torch {k}" for k in theirs if now[k] != theirs[k]]
        _restore_settings(torch, theirs, now)
    path = os.environ.get("EMBER_TEST_LEAKS")
    if leaks and path:
        with open(path, "a") as f:
            f.write(f"{request.node.nodeid}: {', '.join(leaks)}\n")
