"""NOTE [ Numba caches across kernel modules ] (ember/_lazy_import.py): ember's numba disk
caches are dropped together when any module compiled with numba changes."""

import os

from ember._lazy_import import drop_stale_numba_caches


def _tree(tmp_path):
    for d in ("_kernels", "_ops", "_core", "func"):
        (tmp_path / d / "__pycache__").mkdir(parents=True)
    (tmp_path / "_kernels" / "_numba.py").write_text("x = 1\n")
    (tmp_path / "_ops" / "_nn_attention_numba.py").write_text("y = 1\n")
    (tmp_path / "_ops" / "plain.py").write_text("z = 1\n")
    return tmp_path


def _caches(tmp_path, *names):
    for d, name in names:
        (tmp_path / d / "__pycache__" / name).write_bytes(b"cache")


def test_caches_dropped_once_then_kept_until_a_numba_module_changes(tmp_path):
    root = _tree(tmp_path)
    _caches(root, ("_kernels", "_numba_par.f-10.py311.nbi"), ("_ops", "a.g-3.py311.1.nbc"))
    keep = root / "_ops" / "__pycache__" / "plain.cpython-311.pyc"
    keep.write_bytes(b"pyc")
    assert drop_stale_numba_caches(str(root))             # no stamp yet: dropped
    assert not list((root / "_kernels" / "__pycache__").glob("*.nb?"))
    assert not list((root / "_ops" / "__pycache__").glob("*.nb?"))
    assert keep.exists()                                   # only numba's files go
    _caches(root, ("_kernels", "_numba_par.f-10.py311.nbi"))
    assert not drop_stale_numba_caches(str(root))          # nothing changed: kept
    assert (root / "_kernels" / "__pycache__" / "_numba_par.f-10.py311.nbi").exists()
    (root / "_ops" / "plain.py").write_text("z = 22\n")    # not a numba module
    assert not drop_stale_numba_caches(str(root))
    src = root / "_kernels" / "_numba.py"
    src.write_text("x = 2  # edited\n")
    os.utime(src, ns=(1, 1))
    assert drop_stale_numba_caches(str(root))              # a helper's module changed
    assert not (root / "_kernels" / "__pycache__" / "_numba_par.f-10.py311.nbi").exists()
