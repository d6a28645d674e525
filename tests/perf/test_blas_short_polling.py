"""OpenBLAS's workers poll briefly after a product (NOTE [ Short polling for OpenBLAS's
workers ] in ember/_parallel.py): ember shortens the poll of the OpenBLAS it finds loaded, at
import, unless the user chose a timeout, and nothing else about the BLAS changes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember import _parallel
from tests.perf.conftest import assert_same_bits_or_close, blas_rows_exact

pytest.importorskip("threadpoolctl")

_PROBE = textwrap.dedent("""
    import ctypes, json, os, numpy as np
    import threadpoolctl
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
              if i["internal_api"] == "openblas"]
    import ember
    from ember import _parallel
    libs = [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]
    timeouts = []
    for i in libs:
        lib = ctypes.CDLL(i["filepath"])
        if hasattr(lib, "openblas_thread_timeout"):
            lib.openblas_thread_timeout.restype = ctypes.c_int
            timeouts.append(lib.openblas_thread_timeout())
    a = np.random.default_rng(0).standard_normal((700, 600)).astype(np.float32)
    two = (a @ a.T).tobytes().hex()
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        one = (a @ a.T).tobytes().hex()
    after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
             if i["internal_api"] == "openblas"]
    print(json.dumps({"poll_s": _parallel.BLAS_POLL_S, "timeouts": timeouts,
                      "env": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
                      "same": one == two, "threads": [before, after]}))
""")


def _probe(**env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OPENBLAS_THREAD_TIMEOUT", "EMBER_BLAS_POLL")}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env=e, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def _has_entry_points():
    r = _probe(EMBER_BLAS_POLL="0")
    return bool(r["timeouts"])


def test_import_shortens_the_poll_and_changes_nothing_else():
    r = _probe()
    if not r["timeouts"]:
        pytest.skip("no OpenBLAS with the entry points loaded here")
    assert r["timeouts"] == [_parallel.BLAS_POLL_LOG2] * len(r["timeouts"])
    assert 0 < r["poll_s"] < 0.01     # the window ember declines pieces in, to match
    assert r["env"] is None            # the variable was set only for the one read
    assert r["threads"][0] == r["threads"][1]   # thread counts as they were
    # one and two threads: the same product bits, where the BLAS's row blocks are exact
    assert r["same"] or not blas_rows_exact()


def test_a_timeout_the_user_chose_is_kept():
    if not _has_entry_points():
        pytest.skip("no OpenBLAS with the entry points loaded here")
    r = _probe(OPENBLAS_THREAD_TIMEOUT="25")
    assert r["timeouts"] and set(r["timeouts"]) == {25}
    assert r["poll_s"] == 0.12 and r["env"] == "25"


def test_ember_blas_poll_0_leaves_openblas_alone():
    r = _probe(EMBER_BLAS_POLL="0")
    if not r["timeouts"]:
        pytest.skip("no OpenBLAS with the entry points loaded here")
    assert 20 not in r["timeouts"]   # OpenBLAS's own default (0: unset, 2**28 cycles)
    assert r["poll_s"] == 0.12


def test_short_polling_is_a_no_op_when_the_user_set_the_variable(monkeypatch):
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    assert _parallel._short_blas_polling() == []
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT")
    monkeypatch.setenv("EMBER_BLAS_POLL", "0")
    assert _parallel._short_blas_polling() == []


def test_products_after_the_poll_is_shortened_match_numpy_threads():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((513, 300)).astype(np.float32)
    b = rng.standard_normal((300, 257)).astype(np.float32)
    from ember._kernels import _blas

    assert_same_bits_or_close(_blas.matmul(a, b), np.matmul(a, b), atol=1e-4)
