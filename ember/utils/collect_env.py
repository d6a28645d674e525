"""``python -m ember.utils.collect_env``: the facts a bug report needs, in one printout.

The analogue of ``torch.utils.collect_env``: versions (ember, Python, NumPy, SciPy, ...), the
operating system, the BLAS libraries NumPy loaded and their thread counts (read with
``threadpoolctl``), the environment variables that change BLAS behaviour, ember's thread
settings, the CPU, and any GPU (CuPy and ``nvidia-smi``). Anything that cannot be found is
reported as ``Could not collect`` rather than raising, so the script always runs to the end.

Example::

    $ python -m ember.utils.collect_env
    Collecting environment information...
    ember version: 0.1.0 (PyTorch API 2.13.0)
    ...
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections import namedtuple

__all__ = ["get_env_info", "get_pretty_env_info", "main"]

NA = "Could not collect"

# environment variables that change what the BLAS/OpenMP libraries under NumPy do
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "OPENBLAS_CORETYPE", "OPENBLAS_VERBOSE", "MKL_ENABLE_INSTRUCTIONS",
              "NUMEXPR_NUM_THREADS", "EMBER_NUM_THREADS", "CUDA_VISIBLE_DEVICES")

# distributions listed under "Versions of relevant libraries"
RELEVANT = ("ember", "numpy", "scipy", "ml_dtypes", "threadpoolctl", "torch", "cupy",
            "cupy-cuda12x", "cupy-cuda13x", "numba", "mpi4py", "mpich", "safetensors",
            "tqdm", "gymnasium", "matplotlib")

SystemEnv = namedtuple("SystemEnv", [
    "ember_version", "torch_api_version", "os", "libc_version", "python_version",
    "python_platform", "numpy_version", "scipy_version", "blas_info", "blas_env",
    "num_threads", "num_interop_threads", "cpu_count", "affinity_count",
    "cuda_available", "cupy_version", "cuda_runtime_version", "gpu_models",
    "nvidia_driver_version", "cpu_info", "pip_packages",
])
SystemEnv.__doc__ = """What :func:`get_env_info` found, one field per fact (a named tuple).

Args:
    ember_version, torch_api_version: ember's version and the PyTorch API it follows.
    os, libc_version, python_version, python_platform: the platform.
    numpy_version, scipy_version: the array libraries.
    blas_info, blas_env: the BLAS libraries loaded (lines) and the BLAS variables set.
    num_threads, num_interop_threads, cpu_count, affinity_count: threads and CPUs.
    cuda_available, cupy_version, cuda_runtime_version, gpu_models, nvidia_driver_version:
        the GPU side (None where there is none).
    cpu_info: the processor (``lscpu``'s summary on Linux).
    pip_packages: the installed versions of the packages ember works with.

Example:
    >>> from ember.utils.collect_env import get_env_info
    >>> get_env_info()._fields[:2]
    ('ember_version', 'torch_api_version')
"""


def _run(cmd):
    """stdout of ``cmd`` (a list), stripped, or None when it fails or is missing."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def get_os():
    """A one-line description of the operating system.

    Returns:
        str: its name and the machine, such as ``"Debian GNU/Linux 12 (bookworm) (x86_64)"``.

    Example:
        >>> from ember.utils.collect_env import get_os
        >>> isinstance(get_os(), str)
        True
    """
    system = platform.system()
    if system == "Linux":
        try:
            info = platform.freedesktop_os_release()
            name = info.get("PRETTY_NAME") or info.get("NAME", "Linux")
        except OSError:
            name = "Linux"
        return f"{name} ({platform.machine()})"
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]} ({platform.machine()})"
    if system == "Windows":
        return f"Windows {platform.release()} ({platform.machine()})"
    return f"{system} {platform.release()} ({platform.machine()})"


def get_blas_info():
    """One line per BLAS/OpenMP library loaded in this process (``threadpoolctl``).

    Returns:
        list[str]: each library's API, implementation, version, architecture, threads and
        file; ``["Could not collect ..."]`` without threadpoolctl.

    Example:
        >>> from ember.utils.collect_env import get_blas_info
        >>> any("blas" in line for line in get_blas_info())
        True
    """
    try:
        import numpy  # noqa: F401  (loads NumPy's BLAS so threadpoolctl can see it)
        from threadpoolctl import threadpool_info
    except ImportError:
        return [NA + " (threadpoolctl is not installed)"]
    lines = []
    for pool in threadpool_info():
        arch = pool.get("architecture")
        lines.append(
            f"{pool.get('user_api', '?')}: {pool.get('internal_api', '?')} "
            f"{pool.get('version') or ''}".rstrip()
            + (f", architecture {arch}" if arch else "")
            + f", {pool.get('num_threads', '?')} threads"
            + f", {pool.get('filepath', '')}")
    from ember._kernels import _mlas

    engine = _mlas.engine()
    lines.append("large float32 products: "
                 + ("onnxruntime's MLAS (NOTE [ Products past a pinned OpenBLAS ])"
                    if engine == "mlas" else "NumPy's BLAS"))
    return lines or [NA]


def get_gpu_info():
    """What ember can use of NVIDIA GPUs here (through CuPy and ``nvidia-smi``).

    Returns:
        tuple: (CUDA available, CuPy version, CUDA runtime version, the GPU models one per
        line, NVIDIA driver version); each fact None when it cannot be found.

    Example:
        >>> from ember.utils.collect_env import get_gpu_info
        >>> len(get_gpu_info())
        5
    """
    cupy_version = None
    available, runtime, models, driver = False, None, None, None
    try:
        import cupy
        cupy_version = cupy.__version__
        try:
            n = cupy.cuda.runtime.getDeviceCount()
            available = n > 0
            v = int(cupy.cuda.runtime.runtimeGetVersion())
            runtime = f"{v // 1000}.{(v % 1000) // 10}"
            names = []
            for i in range(n):
                props = cupy.cuda.runtime.getDeviceProperties(i)
                name = props["name"]
                names.append(f"GPU {i}: {name.decode() if isinstance(name, bytes) else name}")
            models = "\n".join(names) or None
        except Exception:  # CuPy without a usable device or driver
            pass
    except Exception:  # not installed, or broken on a machine without CUDA
        pass
    smi = _run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                "--format=csv,noheader"])
    if smi:
        rows = [r.split(", ") for r in smi.splitlines()]
        if models is None:
            models = "\n".join(f"GPU {r[0]}: {r[1]} ({r[3]})" for r in rows if len(r) >= 4)
        driver = rows[0][2] if rows and len(rows[0]) >= 3 else None
    return available, cupy_version, runtime, models, driver


def get_cpu_info():
    """``lscpu``'s summary on Linux, the processor name elsewhere.

    Returns:
        str: the architecture, CPU counts, model name, caches and flags, one per line.

    Example:
        >>> from ember.utils.collect_env import get_cpu_info
        >>> isinstance(get_cpu_info(), str)
        True
    """
    if platform.system() == "Linux":
        out = _run(["lscpu"])
        if out:
            keep = ("Architecture", "CPU(s)", "Model name", "Thread(s) per core",
                    "Core(s) per socket", "Socket(s)", "L2 cache", "L3 cache", "Flags")
            lines = [ln for ln in out.splitlines() if ln.split(":")[0].strip() in keep]
            return "\n".join(lines)
        try:
            with open("/proc/cpuinfo") as f:
                for ln in f:
                    if ln.startswith("model name"):
                        return "Model name: " + ln.split(":", 1)[1].strip()
        except OSError:
            pass
    return platform.processor() or NA


def get_env_info():
    """Collect the environment as a ``SystemEnv`` named tuple.

    Returns:
        SystemEnv: one field per fact; missing facts are None (printed as
        ``Could not collect``).

    Example:
        >>> from ember.utils.collect_env import get_env_info
        >>> info = get_env_info()
        >>> info.ember_version == __import__("ember").version.ember_version
        True
    """
    import ember
    from ember import version

    try:
        import numpy
        numpy_version = numpy.__version__
    except ImportError:
        numpy_version = None
    scipy_version = _version("scipy")
    available, cupy_version, runtime, models, driver = get_gpu_info()
    pip = [f"{d}=={v}" for d in RELEVANT if (v := _version(d)) is not None]
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return SystemEnv(
        ember_version=version.ember_version,
        torch_api_version=version.torch_api_version,
        os=get_os(),
        libc_version="-".join(platform.libc_ver()) if platform.libc_ver()[0] else None,
        python_version=f"{sys.version.replace(chr(10), ' ')} "
                       f"({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=platform.platform(),
        numpy_version=numpy_version,
        scipy_version=scipy_version,
        blas_info=get_blas_info(),
        blas_env=[f"{k}={os.environ[k]}" for k in THREAD_ENV if k in os.environ],
        num_threads=ember.get_num_threads(),
        num_interop_threads=ember.get_num_interop_threads(),
        cpu_count=os.cpu_count(),
        affinity_count=affinity,
        cuda_available=available,
        cupy_version=cupy_version,
        cuda_runtime_version=runtime,
        gpu_models=models,
        nvidia_driver_version=driver,
        cpu_info=get_cpu_info(),
        pip_packages=pip,
    )


def _text(v):
    return NA if v is None else str(v)


def pretty_str(env):
    """Render a ``SystemEnv`` in ``torch.utils.collect_env``'s layout of sections.

    Args:
        env: a :class:`SystemEnv` (from :func:`get_env_info`).

    Returns:
        str: the report, what ``python -m ember.utils.collect_env`` prints.

    Example:
        >>> from ember.utils.collect_env import get_env_info, pretty_str
        >>> pretty_str(get_env_info()).startswith("ember version:")
        True
    """
    lines = [
        f"ember version: {env.ember_version} (PyTorch API {env.torch_api_version})",
        "",
        f"OS: {_text(env.os)}",
        f"Libc version: {_text(env.libc_version)}",
        "",
        f"Python version: {env.python_version}",
        f"Python platform: {env.python_platform}",
        f"NumPy version: {_text(env.numpy_version)}",
        f"SciPy version: {_text(env.scipy_version)}",
        "",
        "BLAS (threadpoolctl):",
        *env.blas_info,
        "BLAS environment variables: " + (", ".join(env.blas_env) or "none set"),
        "",
        f"ember.get_num_threads(): {env.num_threads}",
        f"ember.get_num_interop_threads(): {env.num_interop_threads}",
        f"CPU count: {_text(env.cpu_count)} (usable by this process: "
        f"{_text(env.affinity_count)})",
        "",
        f"Is CUDA available: {env.cuda_available}",
        f"CuPy version: {_text(env.cupy_version)}",
        f"CUDA runtime version: {_text(env.cuda_runtime_version)}",
        "GPU models and configuration: " + (
            "\n" + env.gpu_models if env.gpu_models and "\n" in env.gpu_models
            else _text(env.gpu_models)),
        f"Nvidia driver version: {_text(env.nvidia_driver_version)}",
        "",
        "CPU:",
        env.cpu_info,
        "",
        "Versions of relevant libraries:",
        *(f"[pip3] {p}" for p in env.pip_packages),
    ]
    return "\n".join(lines)


def get_pretty_env_info():
    """The environment report as one string (what ``main`` prints).

    Returns:
        str: the report, one ``name: value`` fact a line, sections separated by blank lines.

    Example:
        >>> from ember.utils.collect_env import get_pretty_env_info
        >>> get_pretty_env_info().splitlines()[0].startswith("ember version: ")
        True
    """
    return pretty_str(get_env_info())


def main():
    """Print the environment report (``python -m ember.utils.collect_env``).

    Example:
        >>> from ember.utils import collect_env
        >>> collect_env.main()  # doctest: +SKIP
        Collecting environment information...
    """
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
