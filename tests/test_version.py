"""ember.__version__, ember.version and ember.torch_version (NOTE [ Version string ])."""

from __future__ import annotations

import itertools

import pytest

import ember
from ember.torch_version import InvalidVersion, TorchVersion, _version_key

try:
    from packaging.version import Version

    HAS_PACKAGING = True
except ImportError:
    HAS_PACKAGING = False

needs_packaging = pytest.mark.skipif(not HAS_PACKAGING, reason="packaging is not installed")


def test_version_is_torch_2_13_with_ember_label():
    assert ember.__version__ == ember.version.__version__
    assert ember.__version__.startswith("2.13.0+ember-")
    assert ember.version.ember_version in ember.__version__.replace("-", ".")


def test_version_is_str_subclass():
    assert isinstance(ember.__version__, str) and isinstance(ember.__version__, TorchVersion)


def test_version_compares_with_strings():
    v = ember.__version__
    assert v >= "2.0" and v > "1.13.1" and v < "2.14" and v >= "2.13"


def test_version_compares_with_tuples():
    assert ember.__version__ > (2, 1) and ember.__version__ >= (2, 13, 0)


def test_version_split_has_three_parts_like_torch():
    major, minor, patch = ember.__version__.split(".")
    assert (int(major), int(minor)) == (2, 13) and patch.startswith("0+")


def test_version_first_character_is_major():
    assert int(ember.__version__[0]) == 2


def test_version_ordering_with_int_raises_type_error():
    with pytest.raises(TypeError):
        ember.__version__ > 2  # noqa: B015


def test_version_equality_with_int_is_false():
    assert ember.__version__ != 2


def test_version_non_version_string_compares_as_str():
    v = TorchVersion("2.1")
    assert (v < "abc") is True and (v == "abc") is False


def test_version_hash_is_str_hash():
    assert hash(ember.__version__) == hash(str(ember.__version__))


@needs_packaging
def test_version_parses_with_packaging():
    assert Version(ember.__version__) >= Version("2.0")
    assert Version(ember.__version__).local == "ember.0.1.0"


@needs_packaging
def test_version_compares_with_packaging_version():
    assert ember.__version__ > Version("2.0") and Version("2.0") < ember.__version__


@needs_packaging
def test_version_key_orders_like_packaging():
    versions = ["2.13.0+ember-0-1-0", "2.13.0", "2.13", "2.13.0a0", "2.13.0b2", "2.13.0rc1",
                "2.13.0.dev0", "2.13.0a0.dev1", "2.13.0.post1", "2.13.0.post1.dev2",
                "2.13.0+cpu", "2.13.0+1", "1!1.0", "2.1.0", "10.0", "v2.13", "2.13.0-1"]
    for a, b in itertools.product(versions, versions):
        assert (_version_key(a) < _version_key(b)) == (Version(a) < Version(b)), (a, b)
        assert (_version_key(a) == _version_key(b)) == (Version(a) == Version(b)), (a, b)


def test_version_key_invalid_raises():
    with pytest.raises(InvalidVersion):
        _version_key("not a version")


def test_version_module_accelerator_fields():
    assert ember.version.hip is None and ember.version.debug is False
    assert isinstance(ember.version.git_version, str)


def test_version_module_cuda_none_without_cupy():
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert ember.version.cuda is None
    else:
        assert ember.version.cuda is None or isinstance(ember.version.cuda, str)
