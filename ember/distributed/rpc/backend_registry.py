"""The registry of RPC backends (``torch.distributed.rpc.backend_registry``).

Each backend is a member of ``BackendType`` whose value is a ``BackendValue``: how to
build its options and how to start its agent. ``TENSORPIPE`` (PyTorch's name) starts
ember's agent (NOTE [ RPC transport ] in ``_agent.py``); ``register_backend`` adds one.
"""

from __future__ import annotations

import collections
import enum

from . import constants

__all__ = ["BackendType", "BackendValue", "backend_registered", "construct_rpc_backend_options",
           "init_backend", "register_backend"]

#: how a backend builds its options and starts its agent
BackendValue = collections.namedtuple(
    "BackendValue", ["construct_rpc_backend_options_handler", "init_backend_handler"])
BackendValue.__doc__ = """What a ``BackendType`` member stands for: the two functions behind
a backend.

Args:
    construct_rpc_backend_options_handler: makes the backend's options from
        ``construct_rpc_backend_options``'s arguments.
    init_backend_handler: starts the backend's agent from ``init_backend``'s arguments.

Example:
    >>> from ember.distributed.rpc import backend_registry as br
    >>> isinstance(br.BackendType.TENSORPIPE.value, br.BackendValue)
    True
"""


def _backend_type_repr(self):
    return "BackendType." + self.name


def _make_enum(members: dict):
    cls = enum.Enum(value="BackendType", names=members)
    cls.__repr__ = _backend_type_repr
    cls.__doc__ = """The RPC backends; ``BackendType.TENSORPIPE`` (the default) runs ember's agent.

    A member is reached by name; ``register_backend`` adds members.

    Example:
        >>> from ember.distributed.rpc import BackendType
        >>> BackendType.TENSORPIPE
        BackendType.TENSORPIPE
        >>> BackendType["TENSORPIPE"] is BackendType.TENSORPIPE
        True
    """
    return cls


def _tensorpipe_construct_options(rpc_timeout, init_method,
                                  num_worker_threads=constants.DEFAULT_NUM_WORKER_THREADS,
                                  _transports=None, _channels=None, **kwargs):
    from .options import TensorPipeRpcBackendOptions

    return TensorPipeRpcBackendOptions(rpc_timeout=rpc_timeout, init_method=init_method,
                                       num_worker_threads=num_worker_threads,
                                       _transports=_transports, _channels=_channels, **kwargs)


def _tensorpipe_init_backend(store, name, rank, world_size, rpc_backend_options):
    from . import _agent

    return _agent.Agent(name, rank, world_size, store, rpc_backend_options,
                        _agent.master_host(rpc_backend_options.init_method))


BackendType = _make_enum({
    "TENSORPIPE": BackendValue(_tensorpipe_construct_options, _tensorpipe_init_backend)})


def backend_registered(backend_name: str) -> bool:
    """Whether a backend of that name is registered.

    Args:
        backend_name (str): e.g. ``"TENSORPIPE"``.

    Returns:
        bool

    Example::

        >>> from ember.distributed.rpc import backend_registry
        >>> backend_registry.backend_registered("TENSORPIPE")
        True
    """
    return backend_name in BackendType.__members__


def register_backend(backend_name: str, construct_rpc_backend_options_handler,
                     init_backend_handler):
    """Add a backend: ``BackendType`` is rebuilt with the new member (as in PyTorch,
    members of the old ``BackendType`` stay valid by name).

    Args:
        backend_name (str): the member's name.
        construct_rpc_backend_options_handler: ``(rpc_timeout, init_method, **kwargs)`` ->
            options.
        init_backend_handler: ``(store, name, rank, world_size, rpc_backend_options)`` ->
            an agent with the interface of ember's (``_agent.Agent``).

    Returns:
        The new ``BackendType`` member.

    Raises:
        RuntimeError: the name is taken.

    Example::

        >>> from ember.distributed.rpc import backend_registry
        >>> backend_registry.register_backend("TENSORPIPE", None, None)
        Traceback (most recent call last):
        ...
        RuntimeError: RPC backend TENSORPIPE: already registered
    """
    global BackendType
    if backend_registered(backend_name):
        raise RuntimeError(f"RPC backend {backend_name}: already registered")
    members = {m.name: m.value for m in BackendType}
    members[backend_name] = BackendValue(construct_rpc_backend_options_handler,
                                         init_backend_handler)
    BackendType = _make_enum(members)
    return BackendType[backend_name]


def _live(backend):
    if not isinstance(backend, enum.Enum) or not backend_registered(backend.name):
        raise TypeError("Argument backend must be a member of BackendType")
    return BackendType[backend.name]


def construct_rpc_backend_options(backend, rpc_timeout: float = constants.DEFAULT_RPC_TIMEOUT_SEC,
                                  init_method: str = constants.DEFAULT_INIT_METHOD, **kwargs):
    """The options of ``backend`` built by its handler.

    Args:
        backend (BackendType): the backend.
        rpc_timeout (float): seconds an RPC may take.
        init_method (str): how the workers meet.
        **kwargs: backend-specific options (``num_worker_threads`` for TENSORPIPE).

    Returns:
        The options object.

    Example::

        >>> from ember.distributed.rpc import backend_registry as br
        >>> br.construct_rpc_backend_options(br.BackendType.TENSORPIPE, rpc_timeout=3).rpc_timeout
        3.0
    """
    handler = _live(backend).value.construct_rpc_backend_options_handler
    return handler(rpc_timeout, init_method, **kwargs)


def init_backend(backend, *args, **kwargs):
    """Start ``backend``'s agent: its ``init_backend_handler(*args, **kwargs)``.

    Args:
        backend (BackendType): the backend.
        *args, **kwargs: ``store, name, rank, world_size, rpc_backend_options``.

    Returns:
        The agent.

    Example::

        >>> init_backend(BackendType.TENSORPIPE, store, "w0", 0, 1, opts)  # doctest: +SKIP
    """
    return _live(backend).value.init_backend_handler(*args, **kwargs)
