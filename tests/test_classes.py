"""``ember.classes`` and ``ember.ops.load_library``, compared with torch."""

import glob

import pytest

import ember

torch = pytest.importorskip("torch")


def test_unregistered_class_raises_runtime_error_like_torch():
    with pytest.raises(RuntimeError, match="does not exist") as t:
        _ = torch.classes.nosuchns.Thing
    with pytest.raises(RuntimeError, match="does not exist") as e:
        _ = ember.classes.nosuchns.Thing
    assert str(e.value) == str(t.value)


def test_namespace_is_cached_module():
    assert ember.classes.myns is ember.classes.myns
    assert ember.classes.myns.name == torch.classes.myns.name == "myns"


def test_load_missing_library_raises_os_error_like_torch():
    for mod in (torch, ember):
        with pytest.raises(OSError, match="Could not load this library"):
            mod.ops.load_library("/no/such/lib.so")
        with pytest.raises(OSError):
            mod.classes.load_library("/no/such/lib.so")


LIBM = glob.glob("/usr/lib/*/libm.so.6") + glob.glob("/lib/*/libm.so.6")


@pytest.mark.skipif(not LIBM, reason="needs glibc's libm.so.6")
def test_load_library_records_path():
    ember.classes.load_library(LIBM[0])
    assert any(p.endswith("libm.so.6") for p in ember.classes.loaded_libraries)
    assert ember.classes.loaded_libraries is ember.ops.loaded_libraries
