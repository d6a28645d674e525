"""Options of the RPC agent (``torch.distributed.rpc.options``)."""

from __future__ import annotations

from . import constants

__all__ = ["RpcBackendOptions", "TensorPipeRpcBackendOptions"]


def _device(d):
    import ember

    if isinstance(d, int) and not isinstance(d, bool):
        d = ember.device("cuda", d)
    d = ember.device(d)
    if d.type == "cuda" and not ember.cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return d


class RpcBackendOptions:
    """What every RPC backend is configured with: the default ``rpc_timeout`` (seconds)
    and the rendezvous ``init_method``.

    Args:
        rpc_timeout (float): seconds an RPC may take (default 60).
        init_method (str): how the workers meet (default ``"env://"``).

    Example::

        >>> ember.distributed.rpc.RpcBackendOptions(rpc_timeout=5).rpc_timeout
        5.0
    """

    def __init__(self, rpc_timeout: float = constants.DEFAULT_RPC_TIMEOUT_SEC,
                 init_method: str = constants.DEFAULT_INIT_METHOD):
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = str(init_method)


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """Options of the default agent, under PyTorch's name. ember's agent uses
    ``num_worker_threads``, ``rpc_timeout`` and ``init_method``; device maps are checked and
    kept (tensors travel through host memory, NOTE [ RPC transport ]).

    Args:
        num_worker_threads (int): threads that run incoming requests (default 16).
        rpc_timeout (float): seconds an RPC may take (default 60).
        init_method (str): how the workers meet (default ``"env://"``).
        device_maps (dict, optional): per callee name, a map of this worker's devices to
            the callee's.
        devices (list, optional): the devices this worker's RPCs use.

    Raises:
        RuntimeError: ``num_worker_threads`` is not positive.

    Example::

        >>> opts = ember.distributed.rpc.TensorPipeRpcBackendOptions(num_worker_threads=4)
        >>> opts.num_worker_threads, opts.rpc_timeout, opts.init_method
        (4, 60.0, 'env://')
    """

    def __init__(self, *, num_worker_threads: int = constants.DEFAULT_NUM_WORKER_THREADS,
                 rpc_timeout: float = constants.DEFAULT_RPC_TIMEOUT_SEC,
                 init_method: str = constants.DEFAULT_INIT_METHOD, device_maps=None,
                 devices=None, _transports=None, _channels=None):
        super().__init__(rpc_timeout, init_method)
        if int(num_worker_threads) <= 0:
            raise RuntimeError(f"num_worker_threads must be positive, got "
                               f"{num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps = {}
        for to, device_map in (device_maps or {}).items():
            self.set_device_map(to, device_map)
        self.devices = [_device(d) for d in (devices or [])]

    def set_device_map(self, to: str, device_map: dict) -> None:
        """Map this worker's devices to those of callee ``to`` (may be called repeatedly).

        Args:
            to (str): the callee's name.
            device_map (dict): local device -> the callee's device.

        Raises:
            ValueError: the map is not invertible.

        Example::

            >>> opts = ember.distributed.rpc.TensorPipeRpcBackendOptions()
            >>> opts.set_device_map("worker1", {"cpu": "cpu"}); opts.device_maps
            {'worker1': {device(type='cpu'): device(type='cpu')}}
        """
        full = {_device(k): _device(v) for k, v in device_map.items()}
        current = dict(self.device_maps.get(to, {}))
        for k, v in full.items():
            if k in current and current[k] != v:
                raise ValueError(f"`set_device_map` only supports 1-to-1 mapping, trying to "
                                 f"map {k} to {v} and {current[k]}")
            current[k] = v
        if len(set(current.values())) != len(current):
            raise ValueError("`set_device_map` only supports 1-to-1 mapping, the map is not "
                             "invertible")
        self.device_maps[to] = current

    def set_devices(self, devices: list) -> None:
        """Set the devices this worker's RPCs use.

        Args:
            devices (list): devices (ints, strings or ``ember.device``).

        Example::

            >>> opts = ember.distributed.rpc.TensorPipeRpcBackendOptions()
            >>> opts.set_devices([]); opts.devices
            []
        """
        self.devices = [_device(d) for d in devices]
