"""Device-generic tests: write a test class once, run it on every available device type.

``instantiate_device_type_tests(TestFoo, globals())`` replaces the generic class ``TestFoo``
in the module by one class per device type -- ``TestFooCPU``, ``TestFooCUDA`` (when
``ember.cuda.is_available()``) and ``TestFooNPDEV`` (the NumPy-backed test device, NOTE
[ Test device ] in ember/testing/_test_device.py) -- whose tests receive the device as their
first argument: ``def test_add(self, device)`` becomes ``test_add_cpu``, ``test_add_npdev``...
Decorators say where a test runs and with which dtypes, with PyTorch's names (``onlyCPU``,
``onlyCUDA``, ``dtypes``, ``skipCUDAIf``...), and ``ops(op_db)`` makes one test per OpInfo
entry. ``EMBER_TESTING_DEVICE_ONLY_FOR=cuda`` (comma-separated) in the environment restricts
every instantiation to those device types, and ``EMBER_TESTING_DEVICE_EXCEPT_FOR`` excludes
some.

Function-style (pytest) tests get the same through ``device_types()``: the ``device`` fixture
in tests/conftest.py is parametrized by it.
"""

from __future__ import annotations

import functools
import os
import re
import unittest

from ._test_device import TEST_DEVICE, register_test_device

__all__ = [
    "CPUTestBase", "CUDATestBase", "DeviceTypeTestBase", "TestDeviceTestBase", "device_types",
    "dtypes", "dtypesIfCPU", "dtypesIfCUDA", "expectedFailure", "expectedFailureCPU",
    "expectedFailureCUDA", "instantiate_device_type_tests", "onlyCPU", "onlyCUDA",
    "onlyNativeDeviceTypes", "onlyOn", "ops", "skipCPUIf", "skipCUDAIf", "skipDeviceIf",
    "skipTestDeviceIf",
]

#: the device types ember ships (the test device is not one: it exists for tests only)
NATIVE_DEVICE_TYPES = ("cpu", "cuda")


class DeviceTypeTestBase:
    """The base of the per-device classes ``instantiate_device_type_tests`` makes.

    ``device_type`` names the device type; ``get_primary_device()`` is the device string the
    tests receive.
    """

    device_type = "generic"

    @classmethod
    def get_primary_device(cls) -> str:
        """The device string passed to each test (``'cpu'``, ``'cuda:0'``, ``'npdev'``)."""
        return cls.device_type

    @classmethod
    def get_all_devices(cls) -> list:
        """Every device of this type the tests may use."""
        return [cls.get_primary_device()]


class CPUTestBase(DeviceTypeTestBase):
    """Tests on the CPU."""

    device_type = "cpu"


class CUDATestBase(DeviceTypeTestBase):
    """Tests on CUDA (instantiated only when ``ember.cuda.is_available()``)."""

    device_type = "cuda"

    @classmethod
    def get_primary_device(cls) -> str:
        return "cuda:0"

    @classmethod
    def get_all_devices(cls) -> list:
        import ember

        return [f"cuda:{i}" for i in range(ember.cuda.device_count())]


class TestDeviceTestBase(DeviceTypeTestBase):
    """Tests on the NumPy-backed test device (NOTE [ Test device ])."""

    __test__ = False
    device_type = TEST_DEVICE


def _env_list(name):
    value = os.environ.get(name, "")
    return [v.strip() for v in value.split(",") if v.strip()]


def _cuda_available() -> bool:
    try:
        import ember

        return bool(ember.cuda.is_available())
    except Exception:  # noqa: BLE001 -- a broken CuPy install means no CUDA tests
        return False


def device_types(only_for=None, except_for=None) -> list:
    """The device types tests run on here: ``'cpu'``, ``'cuda'`` when available, and the test
    device (registered on first call), filtered by the arguments and by the environment
    variables ``EMBER_TESTING_DEVICE_ONLY_FOR`` / ``EMBER_TESTING_DEVICE_EXCEPT_FOR``.

    Args:
        only_for (str or sequence of str, optional): keep only these device types.
        except_for (str or sequence of str, optional): leave these out.

    Returns:
        list of str.

    Example::

        >>> ember.testing.device_types(except_for="cuda")
        ['cpu', 'npdev']
    """
    register_test_device()
    types = ["cpu"] + (["cuda"] if _cuda_available() else []) + [TEST_DEVICE]
    only = _as_list(only_for) + _env_list("EMBER_TESTING_DEVICE_ONLY_FOR")
    excluded = _as_list(except_for) + _env_list("EMBER_TESTING_DEVICE_EXCEPT_FOR")
    return [t for t in types if (not only or t in only) and t not in excluded]


def _as_list(x):
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


_BASES = {"cpu": CPUTestBase, "cuda": CUDATestBase, TEST_DEVICE: TestDeviceTestBase}


# ------------------------------------------------------------------------------------------------
# decorators


def _skip(reason):
    raise unittest.SkipTest(reason)


def onlyOn(device_types):
    """Run the decorated test only on ``device_types`` (a type or a sequence); elsewhere it is
    skipped.

    Args:
        device_types (str or sequence of str): the device types it runs on.

    Returns:
        A decorator.

    Example::

        >>> @onlyOn(["cpu", "npdev"])
        ... def test_host_like(self, device):
        ...     pass
    """
    types = tuple(_as_list(device_types))

    def deco(fn):
        @functools.wraps(fn)
        def only(self, *args, **kwargs):
            if self.device_type not in types:
                _skip(f"Only runs on {', '.join(types)}")
            return fn(self, *args, **kwargs)

        return only

    return deco


def onlyCPU(fn):
    """Run the decorated test only on the CPU; elsewhere it is skipped.

    Args:
        fn: the test, ``fn(self, device, ...)``.

    Returns:
        The decorated test.

    Example::

        >>> @onlyCPU
        ... def test_cpu_thing(self, device):
        ...     pass
    """
    return onlyOn("cpu")(fn)


def onlyCUDA(fn):
    """Run the decorated test only on CUDA; elsewhere it is skipped.

    Args:
        fn: the test, ``fn(self, device, ...)``.

    Returns:
        The decorated test.

    Example::

        >>> @onlyCUDA
        ... def test_gpu_thing(self, device):
        ...     pass
    """
    return onlyOn("cuda")(fn)


def onlyNativeDeviceTypes(fn):
    """Run the decorated test only on the device types ember ships (cpu, cuda), not on the
    test device.

    Example::

        >>> @onlyNativeDeviceTypes
        ... def test_native(self, device):
        ...     pass
    """
    return onlyOn(NATIVE_DEVICE_TYPES)(fn)


def skipDeviceIf(device_types, condition, reason):
    """Skip the decorated test on ``device_types`` when ``condition`` holds (a bool, or a
    callable taking the test instance).

    Args:
        device_types (str or sequence of str): where the condition applies.
        condition (bool or callable): skip when true.
        reason (str): the skip message.

    Returns:
        A decorator.

    Example::

        >>> @skipDeviceIf("npdev", True, "needs real memory statistics")
        ... def test_memory(self, device):
        ...     pass
    """
    types = tuple(_as_list(device_types))

    def deco(fn):
        @functools.wraps(fn)
        def maybe(self, *args, **kwargs):
            if self.device_type in types and (condition(self) if callable(condition)
                                              else condition):
                _skip(reason)
            return fn(self, *args, **kwargs)

        return maybe

    return deco


def skipCPUIf(condition, reason):
    """Skip the decorated test on the CPU when ``condition`` holds.

    Example::

        >>> @skipCPUIf(True, "not meaningful on the CPU")
        ... def test_transfer(self, device):
        ...     pass
    """
    return skipDeviceIf("cpu", condition, reason)


def skipCUDAIf(condition, reason):
    """Skip the decorated test on CUDA when ``condition`` holds.

    Example::

        >>> @skipCUDAIf(True, "CuPy lacks this kernel")
        ... def test_thing(self, device):
        ...     pass
    """
    return skipDeviceIf("cuda", condition, reason)


def skipTestDeviceIf(condition, reason):
    """Skip the decorated test on the NumPy-backed test device when ``condition`` holds.

    Example::

        >>> @skipTestDeviceIf(True, "measures GPU memory")
        ... def test_memory(self, device):
        ...     pass
    """
    return skipDeviceIf(TEST_DEVICE, condition, reason)


def expectedFailure(device_types, reason="expected to fail on this device"):
    """Mark the decorated test as failing on ``device_types``: there it must raise (the
    failure is reported as expected), and passing is an error, so that a fix is noticed.

    Args:
        device_types (str or sequence of str): where it fails.
        reason (str): why.

    Returns:
        A decorator.

    Example::

        >>> @expectedFailure("cuda", "CuPy has no float16 scatter")
        ... def test_scatter_half(self, device):
        ...     pass
    """
    types = tuple(_as_list(device_types))

    def deco(fn):
        @functools.wraps(fn)
        def expecting(self, *args, **kwargs):
            if self.device_type not in types:
                return fn(self, *args, **kwargs)
            try:
                fn(self, *args, **kwargs)
            except unittest.SkipTest:
                raise
            except Exception as e:  # noqa: BLE001 -- any failure is the expected one
                try:
                    import pytest
                except ImportError:  # pragma: no cover -- plain unittest runs
                    raise unittest.SkipTest(f"expected failure: {reason}") from e
                pytest.xfail(f"{reason} ({type(e).__name__}: {e})")
            raise AssertionError(f"unexpected success on {self.device_type}: {reason}")

        return expecting

    return deco


def expectedFailureCPU(fn):
    """``expectedFailure('cpu')``.

    Example::

        >>> @expectedFailureCPU
        ... def test_gpu_only_semantics(self, device):
        ...     raise RuntimeError
    """
    return expectedFailure("cpu")(fn)


def expectedFailureCUDA(fn):
    """``expectedFailure('cuda')``.

    Example::

        >>> @expectedFailureCUDA
        ... def test_not_on_gpu_yet(self, device):
        ...     raise RuntimeError
    """
    return expectedFailure("cuda")(fn)


class dtypes:
    """Instantiate the decorated test once per dtype (or per tuple of dtypes), passing them
    after the device: ``test_x(self, device, dtype)`` becomes ``test_x_cpu_float32``...

    Args:
        *args (ember.dtype or tuple of ember.dtype): the dtypes.
        device_type (str): the device type these apply to; ``"all"`` (default) for every one
            that has no list of its own.

    Example::

        >>> @dtypes(ember.float32, ember.float64)
        ... def test_sum(self, device, dtype):
        ...     pass
    """

    def __init__(self, *args, device_type="all"):
        if not args:
            raise ValueError("dtypes: give at least one dtype")
        self.args = args
        self.device_type = device_type

    def __call__(self, fn):
        table = dict(getattr(fn, "_ember_dtypes", {}))
        if self.device_type in table:
            raise RuntimeError(f"dtypes: {fn.__name__} has dtypes for "
                               f"{self.device_type!r} already")
        table[self.device_type] = self.args
        fn._ember_dtypes = table
        return fn


class dtypesIfCPU(dtypes):
    """``dtypes(..., device_type='cpu')``.

    Example::

        >>> @dtypesIfCPU(ember.float64)
        ... @dtypes(ember.float32)
        ... def test_x(self, device, dtype):
        ...     pass
    """

    def __init__(self, *args):
        super().__init__(*args, device_type="cpu")


class dtypesIfCUDA(dtypes):
    """``dtypes(..., device_type='cuda')``.

    Example::

        >>> @dtypesIfCUDA(ember.float16, ember.float32)
        ... @dtypes(ember.float32)
        ... def test_x(self, device, dtype):
        ...     pass
    """

    def __init__(self, *args):
        super().__init__(*args, device_type="cuda")


class ops:
    """Instantiate the decorated test once per OpInfo entry (and dtype), passing
    ``(device, dtype, op)``: ``test_x(self, device, dtype, op)`` becomes
    ``test_x_add_cpu_float32``...

    Args:
        op_list: OpInfo entries (ember/testing/_opinfo.py).
        dtypes: which of each entry's dtypes: None for all it supports, a sequence to
            intersect with them, or a callable ``(op) -> dtypes``.

    Example::

        >>> from ember.testing._opinfo import load_op_db
        >>> @ops([i for i in load_op_db() if i.name == "abs"], dtypes=[ember.float32])
        ... def test_abs(self, device, dtype, op):
        ...     pass
    """

    def __init__(self, op_list, *, dtypes=None):
        self.op_list = list(op_list)
        self.dtypes = dtypes

    def dtypes_of(self, op):
        """The dtypes ``op`` is instantiated with (each once, in order)."""
        if self.dtypes is None:
            chosen = op.dtypes
        elif callable(self.dtypes):
            chosen = self.dtypes(op)
        else:
            chosen = [d for d in self.dtypes if d in op.dtypes]
        return list(dict.fromkeys(chosen))

    def __call__(self, fn):
        fn._ember_ops = self
        return fn


# ------------------------------------------------------------------------------------------------
# instantiation


def _name_part(x) -> str:
    return re.sub(r"\W", "_", str(getattr(x, "name", x)))


def _instances(fn, device_type):
    """(name suffix, extra args) for each instance of ``fn`` on ``device_type``."""
    op_spec = getattr(fn, "_ember_ops", None)
    table = getattr(fn, "_ember_dtypes", None)
    if op_spec is not None:
        for op in op_spec.op_list:
            for d in op_spec.dtypes_of(op):
                yield f"{_name_part(op.id)}_{device_type}_{_name_part(d)}", (d, op)
        return
    if table:
        chosen = table.get(device_type, table.get("all"))
        if chosen is None:
            yield device_type, ()
            return
        for d in chosen:
            if isinstance(d, (tuple, list)):
                yield device_type + "_" + "_".join(_name_part(x) for x in d), tuple(d)
            else:
                yield f"{device_type}_{_name_part(d)}", (d,)
        return
    yield device_type, ()


def _instantiate(fn, args):
    @functools.wraps(fn)
    def instance(self):
        return fn(self, self.get_primary_device(), *args)

    # the generated name replaces the generic one; the decorations' tables stay behind
    instance.__dict__.pop("_ember_dtypes", None)
    instance.__dict__.pop("_ember_ops", None)
    instance.__dict__.pop("__wrapped__", None)
    return instance


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None):
    """Replace ``generic_test_class`` in ``scope`` by one class per device type.

    The class ``TestFoo`` becomes ``TestFooCPU``, ``TestFooCUDA`` (when CUDA is available) and
    ``TestFooNPDEV`` (the test device); each test method ``test_x(self, device, ...)``
    becomes ``test_x_<device type>[_<dtype>]`` taking only ``self``. Non-test attributes
    are inherited. ``self.device_type`` tells a test where it runs.

    Args:
        generic_test_class (type): the class written once (a ``unittest.TestCase`` or a plain
            pytest class).
        scope (dict): the module's ``globals()``, which receives the new classes; the generic
            class is removed from it so that it is not collected itself.
        except_for (str or sequence, optional): device types to leave out.
        only_for (str or sequence, optional): the only device types to instantiate.

    Returns:
        None.

    Example::

        >>> class TestDoc:
        ...     def test_ones(self, device):
        ...         assert ember.ones(2, device=device).device.type == self.device_type
        >>> scope = {"TestDoc": TestDoc}
        >>> instantiate_device_type_tests(TestDoc, scope, except_for="cuda")
        >>> sorted(scope)
        ['TestDocCPU', 'TestDocNPDEV']
        >>> scope["TestDocNPDEV"]().test_ones_npdev()
    """
    if scope.get(generic_test_class.__name__) is generic_test_class:
        del scope[generic_test_class.__name__]
    names = [n for n in dir(generic_test_class) if n.startswith("test")
             and callable(getattr(generic_test_class, n))]
    for device_type in device_types(only_for, except_for):
        base = _BASES[device_type]
        attrs = {k: v for k, v in generic_test_class.__dict__.items()
                 if k not in ("__dict__", "__weakref__") and k not in names}
        for name in names:
            fn = getattr(generic_test_class, name)
            for suffix, args in _instances(fn, device_type):
                new_name = f"{name}_{suffix}"
                if new_name in attrs:
                    raise RuntimeError(f"instantiate_device_type_tests: two tests are named "
                                       f"{new_name}")
                attrs[new_name] = _instantiate(fn, args)
            if name not in generic_test_class.__dict__:
                attrs[name] = None  # an inherited generic test must not be collected as is
        class_name = generic_test_class.__name__ + device_type.upper()
        attrs["__qualname__"] = class_name
        attrs["__test__"] = True
        cls = type(class_name, (base,) + generic_test_class.__bases__, attrs)
        cls.__module__ = generic_test_class.__module__
        scope[class_name] = cls
