"""``ember.distributed``: what a single-process program touches of ``torch.distributed``.

ember has no process groups yet (they come with the distributed work), so
``is_available()`` is False and ``is_initialized()`` False: programs that branch on them
take their single-process path. The functions that need a process group raise ValueError
"Default process group has not been initialized, please make sure to call
init_process_group.", as PyTorch does before ``init_process_group``; ``init_process_group``
itself raises NotImplementedError naming the missing feature.

Example::

    >>> import ember.distributed as dist
    >>> dist.is_available() and dist.is_initialized()
    False
"""

from __future__ import annotations

import enum
import os

__all__ = [
    "Backend", "ReduceOp", "all_gather", "all_gather_object", "all_reduce", "barrier",
    "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "get_backend",
    "get_rank", "get_world_size", "group", "init_process_group", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "new_group", "reduce", "scatter",
]

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")


def is_available() -> bool:
    """Whether ember can run distributed programs: False until process groups exist.

    Returns:
        False

    Example::

        >>> ember.distributed.is_available()
        False
    """
    return False


def is_initialized() -> bool:
    """Whether the default process group has been set up: always False in ember.

    Returns:
        False

    Example::

        >>> ember.distributed.is_initialized()
        False
    """
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by ``torchrun`` (``TORCHELASTIC_RUN_ID`` is set).

    Returns:
        bool

    Example::

        >>> isinstance(ember.distributed.is_torchelastic_launched(), bool)
        True
    """
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_nccl_available() -> bool:
    """Whether the NCCL backend is built in: False.

    Returns:
        False

    Example::

        >>> ember.distributed.is_nccl_available()
        False
    """
    return False


def is_gloo_available() -> bool:
    """Whether the Gloo backend is built in: False.

    Returns:
        False

    Example::

        >>> ember.distributed.is_gloo_available()
        False
    """
    return False


def is_mpi_available() -> bool:
    """Whether the MPI backend is built in: False.

    Returns:
        False

    Example::

        >>> ember.distributed.is_mpi_available()
        False
    """
    return False


class Backend(str):
    """A process-group backend name ("gloo", "nccl", "mpi", ...), lower-cased.

    Args:
        name: the backend's name.

    Example::

        >>> ember.distributed.Backend("GLOO"), ember.distributed.Backend.NCCL
        ('gloo', 'nccl')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        return str.__new__(cls, name.lower())


class ReduceOp(enum.Enum):
    """How a collective combines values: SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG...

    Example::

        >>> ember.distributed.ReduceOp.SUM.name
        'SUM'
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


class group:
    """The process groups by name: ``group.WORLD`` is None until one is initialized.

    Example::

        >>> ember.distributed.group.WORLD is None
        True
    """

    WORLD = None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Set up the default process group: not implemented in ember yet.

    Args:
        backend, init_method, timeout, world_size, rank, store, group_name, pg_options,
        device_id: as in PyTorch.

    Returns:
        Never returns in ember.

    Raises:
        NotImplementedError: always.

    Example::

        >>> ember.distributed.init_process_group("gloo")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: ember.distributed.init_process_group: ...
    """
    raise NotImplementedError(
        "ember.distributed.init_process_group: ember has no process groups yet (multi-process "
        "training comes with the distributed work); run the program as a single process")


def _needs_group(name: str, doc_call: str):
    def fn(*args, **kwargs):
        raise ValueError(NOT_INITIALIZED)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""``{name}``: needs the default process group, so raises ValueError before
    ``init_process_group`` (always, in ember).

    Args:
        *args, **kwargs: as in PyTorch.

    Returns:
        Never returns in ember.

    Example::

        >>> {doc_call}
        Traceback (most recent call last):
        ...
        ValueError: {NOT_INITIALIZED[:60]}...
    """
    return fn


get_rank = _needs_group("get_rank", "ember.distributed.get_rank()  # doctest: +ELLIPSIS")
get_world_size = _needs_group("get_world_size",
                              "ember.distributed.get_world_size()  # doctest: +ELLIPSIS")
get_backend = _needs_group("get_backend", "ember.distributed.get_backend()  # doctest: +ELLIPSIS")
barrier = _needs_group("barrier", "ember.distributed.barrier()  # doctest: +ELLIPSIS")
new_group = _needs_group("new_group", "ember.distributed.new_group()  # doctest: +ELLIPSIS")
for _name in ("all_reduce", "all_gather", "all_gather_object", "broadcast",
              "broadcast_object_list", "reduce", "gather", "scatter"):
    globals()[_name] = _needs_group(
        _name, f"ember.distributed.{_name}(ember.ones(1))  # doctest: +ELLIPSIS")
del _name


def destroy_process_group(group=None) -> None:
    """Tear down a process group: raises AssertionError when there is none, as in PyTorch.

    Args:
        group: the group (default: the default group).

    Returns:
        Never returns in ember.

    Example::

        >>> ember.distributed.destroy_process_group()
        Traceback (most recent call last):
        ...
        AssertionError: Process group cannot be None
    """
    raise AssertionError("Process group cannot be None")
