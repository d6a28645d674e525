"""The device-generic test framework (ember/testing/_device_type.py): the instantiation
itself, its decorators, and a device-generic class of real tensor tests run through it."""

from __future__ import annotations

import unittest

import pytest

import ember
from ember.testing import TEST_DEVICE, device_types, dtypes, instantiate_device_type_tests
from ember.testing._device_type import (
    expectedFailure, onlyCPU, onlyNativeDeviceTypes, ops, skipCPUIf, skipTestDeviceIf,
)


@pytest.fixture(autouse=True)
def _no_device_filter(monkeypatch):
    # the framework's own tests must not see a filter set for the whole run
    monkeypatch.delenv("EMBER_TESTING_DEVICE_ONLY_FOR", raising=False)
    monkeypatch.delenv("EMBER_TESTING_DEVICE_EXCEPT_FOR", raising=False)


def _make(cls, **kw):
    scope = {cls.__name__: cls}
    instantiate_device_type_tests(cls, scope, **kw)
    return scope


# ------------------------------------------------------------------------------------------------
# the framework


def test_device_types_lists_cpu_and_the_test_device():
    types = device_types()
    assert types[0] == "cpu" and TEST_DEVICE in types
    assert ("cuda" in types) == ember.cuda.is_available()


def test_device_types_honours_the_environment(monkeypatch):
    monkeypatch.setenv("EMBER_TESTING_DEVICE_ONLY_FOR", "cpu")
    assert device_types() == ["cpu"]
    monkeypatch.setenv("EMBER_TESTING_DEVICE_ONLY_FOR", "")
    monkeypatch.setenv("EMBER_TESTING_DEVICE_EXCEPT_FOR", f"cpu,{TEST_DEVICE}")
    assert "cpu" not in device_types() and TEST_DEVICE not in device_types()


def test_instantiate_makes_one_class_per_device_type_and_drops_the_generic_one():
    class TestThing:
        def test_a(self, device):
            pass

    scope = _make(TestThing, except_for="cuda")
    assert sorted(scope) == ["TestThingCPU", "TestThingNPDEV"]
    cls = scope["TestThingNPDEV"]
    assert cls.device_type == TEST_DEVICE and hasattr(cls, "test_a_npdev")
    assert not hasattr(cls, "test_a")


def test_instantiated_tests_receive_the_device():
    seen = []

    class TestSeen:
        def test_a(self, device):
            seen.append(device)

    scope = _make(TestSeen, except_for="cuda")
    scope["TestSeenCPU"]().test_a_cpu()
    scope["TestSeenNPDEV"]().test_a_npdev()
    assert seen == ["cpu", TEST_DEVICE]


def test_dtypes_make_one_test_per_dtype():
    seen = []

    class TestTyped:
        @dtypes(ember.float32, ember.int64)
        def test_a(self, device, dtype):
            seen.append(dtype)

        @dtypes((ember.float32, ember.float64))
        def test_pair(self, device, a, b):
            seen.append((a, b))

    cls = _make(TestTyped, only_for="cpu")["TestTypedCPU"]
    cls().test_a_cpu_float32()
    cls().test_a_cpu_int64()
    cls().test_pair_cpu_float32_float64()
    assert seen == [ember.float32, ember.int64, (ember.float32, ember.float64)]


def test_dtypes_per_device_type_override_all():
    class TestPer:
        @dtypes(ember.float64, device_type="cpu")
        @dtypes(ember.float32)
        def test_a(self, device, dtype):
            pass

    scope = _make(TestPer, except_for="cuda")
    assert hasattr(scope["TestPerCPU"], "test_a_cpu_float64")
    assert hasattr(scope["TestPerNPDEV"], "test_a_npdev_float32")


def test_only_cpu_skips_elsewhere():
    class TestOnly:
        @onlyCPU
        def test_a(self, device):
            pass

    scope = _make(TestOnly, except_for="cuda")
    scope["TestOnlyCPU"]().test_a_cpu()
    with pytest.raises(unittest.SkipTest, match="Only runs on cpu"):
        scope["TestOnlyNPDEV"]().test_a_npdev()


def test_only_native_device_types_skips_the_test_device():
    class TestNative:
        @onlyNativeDeviceTypes
        def test_a(self, device):
            pass

    scope = _make(TestNative, except_for="cuda")
    scope["TestNativeCPU"]().test_a_cpu()
    with pytest.raises(unittest.SkipTest):
        scope["TestNativeNPDEV"]().test_a_npdev()


def test_skip_if_applies_on_its_device_only():
    class TestSkip:
        @skipCPUIf(True, "no reason")
        @skipTestDeviceIf(False, "never")
        def test_a(self, device):
            pass

    scope = _make(TestSkip, except_for="cuda")
    with pytest.raises(unittest.SkipTest, match="no reason"):
        scope["TestSkipCPU"]().test_a_cpu()
    scope["TestSkipNPDEV"]().test_a_npdev()


def test_expected_failure_reports_an_unexpected_success():
    class TestXfail:
        @expectedFailure("cpu", "known")
        def test_passes(self, device):
            pass

    with pytest.raises(AssertionError, match="unexpected success"):
        _make(TestXfail, only_for="cpu")["TestXfailCPU"]().test_passes_cpu()


def test_expected_failure_turns_a_failure_into_an_xfail():
    class TestXfail:
        @expectedFailure("cpu", "known")
        def test_fails(self, device):
            raise ValueError("boom")

    with pytest.raises(pytest.xfail.Exception, match="known"):
        _make(TestXfail, only_for="cpu")["TestXfailCPU"]().test_fails_cpu()


def test_ops_makes_one_test_per_entry_and_dtype():
    from ember.testing._opinfo import load_op_db

    entries = [i for i in load_op_db() if i.id in ("add", "linalg.inv")]

    class TestOps:
        @ops(entries, dtypes=[ember.float32])
        def test_a(self, device, dtype, op):
            pass

    cls = _make(TestOps, only_for="cpu")["TestOpsCPU"]
    assert hasattr(cls, "test_a_add_cpu_float32")
    assert hasattr(cls, "test_a_linalg_inv_cpu_float32")


def test_unittest_classes_instantiate_as_test_cases():
    class TestCaseThing(unittest.TestCase):
        def setUp(self):
            self.x = 1

        def test_a(self, device):
            self.assertEqual(self.x, 1)

    cls = _make(TestCaseThing, only_for=TEST_DEVICE)["TestCaseThingNPDEV"]
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(cls).run(result)
    assert result.testsRun == 1 and result.wasSuccessful()


# ------------------------------------------------------------------------------------------------
# a device-generic class, as the framework is meant to be used


class TestTensorOnDevice(unittest.TestCase):
    """Tensor basics, written once for every device type."""

    @dtypes(ember.float32, ember.int64)
    def test_factory_builds_on_the_device(self, device, dtype):
        t = ember.ones(2, 3, dtype=dtype, device=device)
        self.assertEqual(t.device.type, self.device_type)
        self.assertEqual(t.dtype, dtype)

    def test_round_trip_through_the_cpu_keeps_values(self, device):
        c = ember.arange(6.0).reshape(2, 3)
        self.assertEqual(c.to(device).cpu().tolist(), c.tolist())

    @skipCPUIf(True, "the CPU cannot be mixed with itself")
    def test_mixing_with_the_cpu_raises(self, device):
        with self.assertRaisesRegex(RuntimeError, "same device"):
            ember.ones(2, device=device) + ember.ones(2)

    def test_backward_leaves_gradients_on_the_device(self, device):
        x = ember.randn(4, device=device, requires_grad=True)
        (x * x).sum().backward()
        self.assertEqual(x.grad.device.type, self.device_type)
        ember.testing.assert_close(x.grad.cpu(), 2 * x.detach().cpu())

    @onlyCPU
    def test_numpy_shares_memory_on_the_cpu(self, device):
        t = ember.zeros(2, device=device)
        t.numpy()[0] = 1
        self.assertEqual(t[0].item(), 1.0)


instantiate_device_type_tests(TestTensorOnDevice, globals())


def test_device_fixture_runs_once_per_device(device):
    # the ``device`` fixture of tests/conftest.py parametrizes function-style tests
    assert ember.ones(1, device=device).device.type == ember.device(device).type


def test_docstring_examples_run():
    import doctest
    import importlib

    for name in ("ember.testing._device_type", "ember.testing._test_device"):
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        for t in doctest.DocTestFinder().find(importlib.import_module(name)):
            t.globs.setdefault("ember", ember)
            runner.run(t)
        assert not runner.failures, name
