"""``backends.python_native``: the DSL switches keep state and read back as torch's."""

import pytest

import ember
import ember.backends.python_native as pn

torch = pytest.importorskip("torch")
import torch.backends.python_native as tpn  # noqa: E402


@pytest.fixture(autouse=True)
def _restore():
    yield
    for m in (pn, tpn):
        m.triton.enable()
        m.cutedsl.enable()
        m.enable_operations("scaled_mm", "a", "b")


def test_python_native_reachable_from_backends():
    assert ember.backends.python_native is pn


def test_python_native_dsl_lists_match_torch():
    assert (pn.all_dsls, pn.available_dsls) == (tpn.all_dsls, tpn.available_dsls)


def test_python_native_controller_repr_matches_torch():
    assert repr(pn.triton) == repr(tpn.triton)
    pn.triton.enabled = tpn.triton.enabled = False
    assert repr(pn.triton) == repr(tpn.triton) == "DSLController(triton, unavailable, disabled)"


def test_python_native_controller_fields_match_torch():
    for name in ("triton", "cutedsl"):
        e, t = getattr(pn, name), getattr(tpn, name)
        assert (e.name, e.available, e.version, e.enabled) == (
            t.name, t.available, t.version, t.enabled)


def test_python_native_disabled_block_restores():
    with pn.triton.disabled():
        assert pn.is_dsl_disabled("triton") and not pn.triton.enabled
    assert pn.triton.enabled and not pn.is_dsl_disabled("triton")


def test_python_native_operations_disabled_keeps_earlier_switches():
    for m in (pn, tpn):
        m.disable_operations("a")
        with m.operations_disabled("a", "b"):
            assert m.is_operation_disabled("b")
    assert [pn.is_operation_disabled(o) for o in "ab"] == [
        tpn.is_operation_disabled(o) for o in "ab"] == [True, False]


def test_python_native_dsl_operations_empty():
    assert pn.get_dsl_operations("triton") == tpn.get_dsl_operations("triton") == []


def test_python_native_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="has no attribute 'foo'"):
        _ = pn.foo
