"""``ember._inductor.utils``: the cache helpers of PyTorch's Inductor that benchmarks call.

ember compiles nothing (``ember.compile`` runs eagerly), so there is no kernel cache: the
helpers keep their contracts (a context manager, a call) with nothing to clear.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

__all__ = ["fresh_inductor_cache", "clear_inductor_caches"]


@contextlib.contextmanager
def fresh_inductor_cache(cache_entries=None, dir=None, delete=True):
    """Run the block with an empty compiler cache directory (``TORCHINDUCTOR_CACHE_DIR``).

    Args:
        cache_entries (dict, optional): filled with the cache's files after the block (none
            here: ember writes no compiled kernels).
        dir (str, optional): where to make the temporary directory. Default: the system's.
        delete (bool): remove the directory afterwards. Default: True.

    Returns:
        A context manager.

    Example::

        >>> from ember._inductor.utils import fresh_inductor_cache
        >>> with fresh_inductor_cache():
        ...     pass
    """
    path = tempfile.mkdtemp(dir=dir)
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = path
    try:
        yield
        if cache_entries is not None:
            for root, _dirs, files in os.walk(path):
                for name in files:
                    full = os.path.join(root, name)
                    cache_entries[os.path.relpath(full, path)] = os.path.getsize(full)
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old
        if delete:
            shutil.rmtree(path, ignore_errors=True)


def clear_inductor_caches() -> None:
    """Forget compiled kernels held in memory (ember holds none).

    Returns:
        None.

    Example::

        >>> from ember._inductor.utils import clear_inductor_caches
        >>> clear_inductor_caches()
    """
