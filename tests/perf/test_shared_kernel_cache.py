"""NOTE [ Kernel caches shared by content ] (ember/_lazy_import.py): ember's numba kernels are
cached in a folder named by the digest of the kernel modules' text, so a fresh copy of the
same sources finds them compiled."""

import os
import subprocess
import sys
import time

import pytest

from ember import _lazy_import as li


def _tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


FILES = {"_kernels/_numba.py": "def f():\n    return 1\n",
         "_kernels/_numba_par.py": "X = 2\n",
         "_core/rng_sequential.py": "Y = 3\n",
         "_kernels/_other.py": "Z = 4\n"}


def test_digest_follows_the_kernel_modules_text_not_their_place(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _tree(a, FILES)
    _tree(b, FILES)
    assert li.kernel_digest(a) == li.kernel_digest(b)      # another copy: the same folder
    _tree(b, {"_kernels/_other.py": "Z = 5\n"})              # not a kernel module
    assert li.kernel_digest(a) == li.kernel_digest(b)
    _tree(b, {"_kernels/_numba_par.py": "X = 3\n"})          # a kernel module changed
    assert li.kernel_digest(a) != li.kernel_digest(b)
    _tree(b, {"_kernels/_numba_par.py": "X = 2\n"})
    assert li.kernel_digest(a) == li.kernel_digest(b)
    _tree(b, {"_core/rng_sequential.py": "Y = 4\n"})
    assert li.kernel_digest(a) != li.kernel_digest(b)


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_NUMBA_CACHE_DIR", str(tmp_path / "k"))
    assert li.shared_cache_root() == str(tmp_path / "k")
    monkeypatch.delenv("EMBER_NUMBA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert li.shared_cache_root() == os.path.join(str(tmp_path / "x"), "ember", "numba")


def test_pruning_keeps_the_most_recently_used(tmp_path):
    now = time.time()
    for i in range(5):
        d = tmp_path / f"d{i}"
        d.mkdir()
        os.utime(d, (now - 100 * i, now - 100 * i))
    (tmp_path / "stray.txt").write_text("x")
    li._prune_shared(str(tmp_path), 2)
    assert sorted(os.listdir(tmp_path)) == ["d0", "d1", "stray.txt"]


def test_locator_takes_ember_kernels_only(monkeypatch, tmp_path):
    pytest.importorskip("numba")
    from numba.core import caching, config

    monkeypatch.setenv("EMBER_NUMBA_CACHE_DIR", str(tmp_path))
    li.share_numba_caches()
    li.share_numba_caches()                                     # idempotent
    shared = [c for c in caching.CacheImpl._locator_classes if getattr(c, "_ember_shared", 0)]
    assert len(shared) == 1
    locator = shared[0]
    from ember._kernels import _numba_pool

    fn = _numba_pool.scatter_add_planes.py_func
    found = locator.from_function(fn, _numba_pool.__file__)
    assert found is not None
    assert found.get_cache_path() == os.path.join(str(tmp_path), li.kernel_digest(),
                                                  "_kernels")
    assert found.get_source_stamp() == li.kernel_digest()

    def mine():
        return 1

    assert locator.from_function(mine, __file__) is None         # not ember's: numba's own
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "user"))
    assert locator.from_function(fn, _numba_pool.__file__) is None  # the user's choice wins


def test_a_fresh_process_writes_and_a_second_one_reads_the_shared_cache(tmp_path):
    pytest.importorskip("numba")
    env = dict(os.environ, EMBER_NUMBA_CACHE_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    env.pop("NUMBA_CACHE_DIR", None)
    script = (
        "import numpy as np, ember\n"
        "from ember._kernels import _numba_pool\n"
        "g = np.ones((2, 4), np.float32); i = np.zeros((2, 4), np.int64)\n"
        "gx = np.zeros((2, 4), np.float32)\n"
        "assert _numba_pool.scatter_add_planes(g, i, gx)\n"
        "print(_numba_pool.scatter_add_planes.stats.cache_hits.get("
        "_numba_pool.scatter_add_planes.signatures[0], 0))\n")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    digest = li.kernel_digest()
    names = os.listdir(tmp_path / digest / "_kernels")
    assert any(n.startswith("_numba_pool.scatter_add_planes") and n.endswith(".nbi")
               for n in names), names
    assert runs[1].stdout.split()[-1] == "1"                     # loaded, not compiled
