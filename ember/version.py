"""``ember.version``: the version ember reports, and the accelerator toolkits it was built for.

``__version__`` is PyTorch's version whose API ember implements, with ember's own version as
a local label (NOTE [ Version string ] in ember/torch_version.py); ``ember_version`` is
ember's own. ``cuda`` is the CUDA runtime version CuPy was built for (``"12.4"``), or None
when CuPy is not installed; ``hip`` and ``xpu`` are None (ember has no ROCm or XPU backend).

Example::

    >>> import ember.version
    >>> ember.version.__version__
    '2.13.0+ember-0-1-0'
"""

from __future__ import annotations

ember_version = "0.1.0"  # ember's own version (as in pyproject.toml)
torch_api_version = "2.13.0"  # the PyTorch release whose public API ember follows
__version__ = f"{torch_api_version}+ember-{ember_version.replace('.', '-')}"
git_version = "Unknown"  # ember is not stamped with its commit at build time
debug = False
hip = None
rocm = None
xpu = None

_cuda_cache: list = []


def _cuda_version() -> str | None:
    """CuPy's CUDA runtime version as "major.minor", or None without CuPy."""
    try:
        import cupy
    except Exception:  # not installed, or a broken install on a machine without CUDA
        return None
    try:
        v = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def __getattr__(name: str):
    # ``cuda`` is looked up on first use: finding CuPy costs an import
    if name == "cuda":
        if not _cuda_cache:
            _cuda_cache.append(_cuda_version())
        return _cuda_cache[0]
    raise AttributeError(f"module 'ember.version' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + ["cuda"])
