"""``ember.utils.cpp_extension``: building C++/CUDA extensions, which ember cannot do.

A PyTorch extension compiles against libtorch's headers and links against its libraries;
ember has neither (its kernels are NumPy and CuPy). The module exists so that programs which
try an extension and fall back when the build fails take their fallback: ``load`` and
``load_inline`` raise :class:`RuntimeError`, as a failed build does, and the setuptools helpers
raise when called. The environment probes (``CUDA_HOME``, ``is_ninja_available``) answer
truthfully.

Example:
    >>> from ember.utils import cpp_extension
    >>> try:
    ...     cpp_extension.load("ext", ["ext.cpp"])
    ... except RuntimeError:
    ...     print("falling back to Python")
    falling back to Python
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

__all__ = ["load", "load_inline", "CppExtension", "CUDAExtension", "BuildExtension",
           "include_paths", "library_paths", "is_ninja_available", "verify_ninja_availability",
           "CUDA_HOME", "ROCM_HOME", "SYCL_HOME", "IS_WINDOWS", "IS_MACOS", "IS_LINUX",
           "IS_HIP_EXTENSION"]

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform.startswith("darwin")
IS_LINUX = sys.platform.startswith("linux")
#: ember never builds HIP (ROCm) extensions
IS_HIP_EXTENSION = False


def _find_cuda_home():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is None:
        nvcc = shutil.which("nvcc")
        if nvcc is not None:
            home = os.path.dirname(os.path.dirname(nvcc))
        elif os.path.exists("/usr/local/cuda") and not IS_WINDOWS:
            home = "/usr/local/cuda"
    return home


#: the CUDA toolkit's folder where one is installed, else None
CUDA_HOME = _find_cuda_home()
#: ember has no ROCm or SYCL build
ROCM_HOME = None
SYCL_HOME = None

_NO_BUILD = ("ember cannot build the C++/CUDA extension {!r}: extensions compile against "
             "PyTorch's libtorch, which ember does not have; write the operator in Python "
             "(ember.library.custom_op) or run the program on PyTorch")


def load(name, sources, *args, **kwargs):
    """Build and import a C++/CUDA extension from source files; always raises in ember.

    Args:
        name (str): the extension's module name.
        sources (str or list of str): its source files.
        *args, **kwargs: PyTorch's build options (flags, include paths, ``verbose``...).

    Returns:
        Never returns.

    Raises:
        RuntimeError: always, as a failed build does.

    Example:
        >>> try:
        ...     load("ext", ["ext.cpp"])
        ... except RuntimeError as e:
        ...     print("cannot build" in str(e))
        True
    """
    raise RuntimeError(_NO_BUILD.format(name))


def load_inline(name, cpp_sources, *args, **kwargs):
    """Build and import a C++/CUDA extension from source strings; always raises in ember.

    Args:
        name (str): the extension's module name.
        cpp_sources (str or list of str): its C++ source text.
        *args, **kwargs: PyTorch's other options (``cuda_sources``, ``functions``...).

    Returns:
        Never returns.

    Raises:
        RuntimeError: always, as a failed build does.

    Example:
        >>> try:
        ...     load_inline("ext", "int f() { return 1; }")
        ... except RuntimeError:
        ...     print("no build")
        no build
    """
    raise RuntimeError(_NO_BUILD.format(name))


def CppExtension(name, sources, *args, **kwargs):  # noqa: N802 (PyTorch's name)
    """A setuptools C++ extension against libtorch; always raises in ember.

    Args:
        name (str): the extension's module name.
        sources (list of str): its source files.
        *args, **kwargs: setuptools ``Extension`` options.

    Returns:
        Never returns.

    Raises:
        RuntimeError: always.

    Example:
        >>> try:
        ...     CppExtension("ext", ["ext.cpp"])
        ... except RuntimeError:
        ...     print("no build")
        no build
    """
    raise RuntimeError(_NO_BUILD.format(name))


def CUDAExtension(name, sources, *args, **kwargs):  # noqa: N802 (PyTorch's name)
    """A setuptools CUDA extension against libtorch; always raises in ember.

    Args:
        name (str): the extension's module name.
        sources (list of str): its source files.
        *args, **kwargs: setuptools ``Extension`` options.

    Returns:
        Never returns.

    Raises:
        RuntimeError: always.

    Example:
        >>> try:
        ...     CUDAExtension("ext", ["ext.cu"])
        ... except RuntimeError:
        ...     print("no build")
        no build
    """
    raise RuntimeError(_NO_BUILD.format(name))


class BuildExtension:
    """setuptools' ``build_ext`` command for libtorch extensions; raises when used in ember.

    Args:
        *args, **kwargs: the command's arguments.

    Raises:
        RuntimeError: on construction.

    Example:
        >>> opts = BuildExtension.with_options(use_ninja=False)
        >>> try:
        ...     opts()
        ... except RuntimeError:
        ...     print("no build")
        no build
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_NO_BUILD.format("build_ext"))

    @classmethod
    def with_options(cls, **options):
        """Return the command class with ``options`` bound (it still raises when used).

        Args:
            **options: ``use_ninja``, ``no_python_abi_suffix``...

        Returns:
            a callable that constructs the command.

        Example:
            >>> callable(BuildExtension.with_options(use_ninja=False))
            True
        """
        def build(*args, **kwargs):
            return cls(*args, **kwargs, **options)

        return build


def include_paths(device_type: str = "cpu") -> list:
    """The header folders an extension compiles against: none, as ember ships no C++ headers.

    Args:
        device_type (str): ``"cpu"``, ``"cuda"``...

    Returns:
        an empty list.

    Example:
        >>> include_paths()
        []
    """
    return []


def library_paths(device_type: str = "cpu") -> list:
    """The library folders an extension links against: none, as ember ships no libtorch.

    Args:
        device_type (str): ``"cpu"``, ``"cuda"``...

    Returns:
        an empty list.

    Example:
        >>> library_paths()
        []
    """
    return []


def is_ninja_available() -> bool:
    """Whether the ``ninja`` build tool runs on this machine.

    Returns:
        True when ``ninja --version`` succeeds.

    Example:
        >>> isinstance(is_ninja_available(), bool)
        True
    """
    try:
        subprocess.check_output(["ninja", "--version"], stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def verify_ninja_availability() -> None:
    """Raise unless ``ninja`` is available.

    Returns:
        None.

    Raises:
        RuntimeError: when ninja cannot be run.

    Example:
        >>> try:
        ...     verify_ninja_availability()
        ... except RuntimeError:
        ...     pass
    """
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions")
