"""``ember.utils.data._utils.worker``: PyTorch's import path for ``get_worker_info`` and the
seed a worker gives NumPy."""

from .._worker_info import WorkerInfo, get_worker_info

__all__ = ["WorkerInfo", "get_worker_info"]


def _generate_state(base_seed: int, worker_id: int) -> list:
    """The four 32-bit words a DataLoader worker seeds NumPy's global generator with (NOTE
    [ Worker seeds ] in ember/utils/data/dataloader.py); libraries that start workers of
    their own seed them the same way.

    Args:
        base_seed (int): the loader's base seed.
        worker_id (int): the worker's index.

    Returns:
        list of int: the seed words.

    Example::

        >>> _generate_state(5, 0)
        [161328693, 2841646664, 2763651139, 2546215728]
    """
    from ..dataloader import _numpy_worker_seed

    return [int(w) for w in _numpy_worker_seed(base_seed, worker_id)]
