"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker has its own index queue; batches are requested
round-robin, ``prefetch_factor * num_workers`` at a time, and reordered on arrival so the
batch order equals ``num_workers=0``. Workers are watched while waiting: an exception in a
worker is re-raised here with its traceback, a dead worker is reported within seconds, and
``timeout`` bounds every wait. See NOTE [ DataLoader shutdown ].
"""

from __future__ import annotations

import itertools
import multiprocessing as python_mp
import queue
import random
import sys
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

from ... import _dispatch
from ..._ops._registry import profiler_session
from . import _collate, _utils  # noqa: F401 - torch.utils.data.dataloader._utils
from ._collate import default_collate, default_convert
from ._worker_info import WorkerInfo, _set_worker_info, get_worker_info
from .datapipes.datapipe import IterDataPipe
from .dataset import IterableDataset, T_co, TensorDataset
from .graph_settings import apply_sharding, apply_shuffle_settings
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo", "default_collate", "default_convert"]

_POLL = 0.1  # seconds between liveness checks while waiting for a batch

# the callable types PyTorch's module names for ``collate_fn`` and ``worker_init_fn``:
# libraries annotate their own loaders with them (opacus' DPDataLoader)
_T = TypeVar("_T")
_collate_fn_t = Callable[[list[_T]], Any]
_worker_init_fn_t = Callable[[int], None]


class _ExceptionWrapper:
    """Carries an exception and its formatted traceback from a worker to the main process."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.msg}"
        if self.exc_type is KeyError:
            msg = KeyError(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _IterableEnd:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _Resume:
    """Sent to each persistent worker at the start of every epoch after the first: the worker
    makes a fresh fetcher (a new iterator over an IterableDataset) and, for a pipe, reseeds
    its shufflers with ``seed``.

    NOTE [ Persistent workers start each epoch afresh ]
    A persistent worker outlives its epoch, but what it iterates must not: PyTorch sends
    each worker a resume message when the loader is iterated again, and the worker drops
    its exhausted iterator and makes a new one, so an IterableDataset streams again in every
    epoch (without it the second epoch would be empty). The index queues are first in, first
    out, so the message reaches a worker before any index of the new epoch.
    """

    def __init__(self, seed=None):
        self.seed = seed


def _numpy_worker_seed(base_seed, worker_id):
    """NumPy's global seed in worker ``worker_id``: four 32-bit words hashed from the worker
    id and the two halves of the base seed.

    NOTE [ Worker seeds ]
    Each worker seeds Python's ``random`` and ember with ``base_seed + worker_id``, and NumPy
    with four words that PyTorch derives by NumPy's ``SeedSequence`` hashing (pool of four
    words, entropy ``[worker_id, low 32 bits, high 32 bits]``). Entropy given to
    ``SeedSequence`` as one integer is split into those little-endian 32-bit words, so
    ``worker_id | base_seed << 32`` reproduces it; the words then seed NumPy's legacy
    MT19937 as an array, so ``np.random`` in a worker draws what it draws under PyTorch.
    """
    entropy = worker_id | (base_seed << 32)
    return np.random.SeedSequence(entropy).generate_state(4, np.uint32)


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    from ... import manual_seed

    # NOTE [ Worker seeds ]: as PyTorch seeds its workers, so a seeded program's workers
    # draw the same numbers from all three sources
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_worker_seed(base_seed, worker_id))
    _set_worker_info(WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                dataset=dataset))
    init_error = None
    try:
        if isinstance(dataset, IterDataPipe):
            # each worker keeps its share of the stream (the pipe's sharding_filter)
            apply_sharding(dataset, num_workers, worker_id)
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _make_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = _ExceptionWrapper(sys.exc_info(),
                                       f"in DataLoader worker process {worker_id}")
    iteration_done = False
    while True:
        try:
            task = index_queue.get(timeout=_POLL)
        except queue.Empty:
            if done_event.is_set():
                break
            continue
        if task is None:
            break
        if isinstance(task, _Resume):
            # NOTE [ Persistent workers start each epoch afresh ]
            iteration_done = False
            try:
                if isinstance(dataset, IterDataPipe) and task.seed is not None:
                    from ... import Generator
                    from .graph_settings import apply_random_seed

                    apply_random_seed(dataset, Generator().manual_seed(task.seed))
                fetcher = _make_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                        drop_last)
            except Exception:
                init_error = _ExceptionWrapper(sys.exc_info(),
                                               f"in DataLoader worker process {worker_id}")
            continue
        idx, indices = task
        if init_error is not None:
            data_queue.put((idx, init_error))
            init_error = None
            continue
        if iteration_done:
            data_queue.put((idx, _IterableEnd(worker_id)))
            continue
        try:
            data = fetcher.fetch(indices)
        except StopIteration:
            iteration_done = True
            data = _IterableEnd(worker_id)
        except Exception:
            data = _ExceptionWrapper(sys.exc_info(),
                                     f"in DataLoader worker process {worker_id}")
        data_queue.put((idx, data))
        del data
    data_queue.cancel_join_thread()


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.getitems = getattr(dataset, "__getitems__", None) if auto_collation else None
        # A TensorDataset batched by default_collate is the rows of each tensor at the
        # indices: one gather per tensor instead of one index per sample and a stack
        self.fast_tensors = None
        if (auto_collation and collate_fn is _collate.default_collate
                and type(dataset) is TensorDataset and all(t.is_cpu for t in dataset.tensors)):
            self.fast_tensors = dataset.tensors

    def fetch(self, indices):
        if self.fast_tensors is not None and not _dispatch.intercept:
            # (under a mode -- the profiler's, a user's -- the ops PyTorch runs: an index
            # per sample, then ``default_collate``'s stack)
            return _gather_rows(self.fast_tensors, indices)
        if self.auto_collation:
            if self.getitems is not None:
                data = self.getitems(indices)
            else:
                data = [self.dataset[i] for i in indices]
        else:
            data = self.dataset[indices]
        return self.collate_fn(data)


def _gather_rows(tensors, indices):
    from ... import index_select, tensor

    idx = tensor(indices)
    out = []
    for t in tensors:
        if get_worker_info() is not None:
            from ...multiprocessing._shared import new_shared

            dest = new_shared((len(indices),) + tuple(t.shape[1:]), t._data.dtype)
            out.append(index_select(t, 0, idx, out=dest))
        else:
            out.append(index_select(t, 0, idx))
    return out


class _IterFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, indices):
        if self.auto_collation:
            data = []
            for _ in indices:
                try:
                    data.append(next(self.iterator))
                except StopIteration:
                    break
            if not data or (self.drop_last and len(data) < len(indices)):
                raise StopIteration
        else:
            data = next(self.iterator)
        return self.collate_fn(data)


def _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterFetcher if kind == "iterable" else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteSampler(Sampler):
    """Indices for an IterableDataset: just counts (the dataset ignores them)."""

    def __iter__(self):
        return itertools.count()


class DataLoader(Generic[T_co]):
    """Iterates over ``dataset`` in batches, optionally shuffled and loaded by worker processes.

    Args:
        dataset (Dataset or IterableDataset): where the samples come from.
        batch_size (int, optional): samples per batch; None yields samples one by one.
            Default: 1.
        shuffle (bool, optional): reshuffle the indices every epoch. Default: False.
        sampler (Sampler or iterable, optional): which indices to draw, in which order.
        batch_sampler (Sampler or iterable, optional): yields lists of indices (excludes
            ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``).
        num_workers (int): worker processes loading batches (0: load in this process).
            Default: 0.
        collate_fn (callable, optional): merges a list of samples into a batch. Default:
            stacks tensors, numbers and NumPy arrays, recursing into tuples and dicts.
        pin_memory (bool): accepted for PyTorch compatibility (CPU tensors need no pinning).
        drop_last (bool): drop the last batch when it is incomplete. Default: False.
        timeout (float): seconds to wait for a batch from the workers (0: forever).
        worker_init_fn (callable, optional): called with the worker id in each worker.
        multiprocessing_context (str or context, optional): how workers start
            (``"fork"``, ``"spawn"``, ...).
        generator (ember.Generator, optional): the source of the shuffling and of the
            workers' base seed.
        prefetch_factor (int, optional): batches each worker loads ahead. Default: 2 with
            workers. Keyword-only.
        persistent_workers (bool): keep the workers alive between epochs. Keyword-only.
        pin_memory_device (str): accepted for PyTorch compatibility. Keyword-only.
        in_order (bool): yield batches in sampler order even when workers finish out of
            order. Keyword-only.

    Example:
        >>> ds = ember.utils.data.TensorDataset(ember.arange(5.0), ember.tensor([0, 1, 0, 1, 0]))
        >>> for x, y in ember.utils.data.DataLoader(ds, batch_size=2):
        ...     print(x, y)
        tensor([0., 1.]) tensor([0, 1])
        tensor([2., 3.]) tensor([0, 1])
        tensor([4.]) tensor([0])
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to "
                "None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator

        if isinstance(dataset, IterDataPipe):
            if shuffle is not None:
                dataset = apply_shuffle_settings(dataset, shuffle=shuffle)
            self.dataset = dataset
            shuffle = None  # the pipe shuffles itself
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler "
                    f"option, but got batch_sampler={batch_sampler}")
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive "
                "with drop_last")
        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = (_collate.default_collate if self._auto_collation
                          else _collate.default_convert)
        self.collate_fn = collate_fn
        self._iterator = None
        if multiprocessing_context is not None and num_workers > 0:
            if isinstance(multiprocessing_context, str):
                multiprocessing_context = python_mp.get_context(multiprocessing_context)
            self.multiprocessing_context = multiprocessing_context

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._dataset_kind == "iterable":
            n = len(self.dataset)
            if self.batch_size is not None:
                import math

                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self._index_sampler)

    def __iter__(self):
        if self.pin_memory:
            from ... import cuda

            if not cuda.is_available():
                import warnings

                # (attributed to this line, as PyTorch attributes it to its own: shown once
                # per process, not once per loop in the user's script)
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=1)
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)


class _BaseIter:
    def __init__(self, loader):
        from ... import empty, int64

        self._loader = loader
        if isinstance(loader.dataset, IterDataPipe):
            # a pipe's shufflers take seeds from a generator seeded by one word of the
            # loader's generator, drawn first
            from ... import Generator
            from .graph_settings import apply_random_seed

            shared = int(empty((), dtype=int64).random_(generator=loader.generator).item())
            apply_random_seed(loader.dataset, Generator().manual_seed(shared))
        self._sampler_iter = iter(loader._index_sampler)
        # NOTE [ DataLoader's random words ]
        # Every iterator draws a base seed at creation, with workers or without, from the
        # loader's generator (the global one by default), after creating the sampler's
        # iterator but before its first index (samplers are generators: RandomSampler draws
        # its own seed at the first index). PyTorch draws in this order, so the global stream
        # after ``for batch in loader`` is the one a PyTorch program sees. A persistent
        # iterator draws it once: later epochs reuse the workers and their seeds.
        self._base_seed = int(empty((), dtype=int64).random_(generator=loader.generator).item())
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    #: PyTorch's name of the iterator's class, which its profiler's events carry
    _torch_name = "_BaseDataLoaderIter"

    def __next__(self):
        if _dispatch.intercept and profiler_session() is not None:
            # a profile lists each batch's fetch as PyTorch's does
            from ...autograd.profiler import record_function

            with record_function(f"enumerate(DataLoader)#{self._torch_name}.__next__"):
                return self._next_data()
        return self._next_data()

    def _next_index(self):
        return next(self._sampler_iter)


class _SingleProcessIter(_BaseIter):
    _torch_name = "_SingleProcessDataLoaderIter"

    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _make_fetcher(loader._dataset_kind, loader.dataset,
                                      loader._auto_collation, loader.collate_fn,
                                      loader.drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._fetcher.fetch(index)
        self._num_yielded += 1
        return data


# NOTE [ DataLoader shutdown ]
# Workers are daemonic, poll their index queue with a timeout and exit when the shared
# ``done_event`` is set or they receive None, so deleting an iterator, breaking out of an
# epoch, an exception in the main process and interpreter exit all end them: ``_shutdown``
# sets the event, sends None, joins with a timeout and terminates stragglers.


class _MultiProcessIter(_BaseIter):
    _torch_name = "_MultiProcessingDataLoaderIter"

    def __init__(self, loader):
        super().__init__(loader)
        ctx = loader.multiprocessing_context or python_mp.get_context()
        self._ctx = ctx
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._done_event = ctx.Event()
        self._data_queue = ctx.Queue()
        self._index_queues = []
        self._workers = []
        base_seed = self._base_seed
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True, args=(
                loader._dataset_kind, loader.dataset, iq, self._data_queue, self._done_event,
                loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                loader.worker_init_fn, i, self._num_workers))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown_done = False
        if isinstance(loader.dataset, IterDataPipe):
            # PyTorch draws a pipe's shared seed once more once its workers are running, a
            # word those workers never see (they were started with the first one)
            self._draw_pipe_seed(loader)
        self._start_epoch()

    @staticmethod
    def _draw_pipe_seed(loader):
        from ... import empty, int64

        return int(empty((), dtype=int64).random_(generator=loader.generator).item())

    def _start_epoch(self):
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send idx -> (worker id,) or (worker id, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _reset(self, loader):
        self._sampler_iter = iter(loader._index_sampler)
        self._num_yielded = 0
        # drain what the previous epoch left in flight
        while self._tasks_outstanding > 0:
            self._get_data()
            self._tasks_outstanding -= 1
        # a pipe's shufflers get a fresh seed each epoch
        seed = self._draw_pipe_seed(loader) if isinstance(loader.dataset, IterDataPipe) else None
        # NOTE [ Persistent workers start each epoch afresh ]
        for q in self._index_queues:
            q.put(_Resume(seed))
        self._start_epoch()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """Wait for one (idx, data) from the workers, watching them and the timeout."""
        import time

        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL if deadline is None else min(_POLL, max(deadline - time.monotonic(),
                                                                  0))
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                pass
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown()
                raise RuntimeError(
                    f"DataLoader timed out after {self._timeout} seconds")
            for w in self._workers:
                if not w.is_alive():
                    self._shutdown()
                    code = w.exitcode
                    if code is not None and code < 0:
                        import signal

                        try:
                            name = signal.Signals(-code).name
                        except ValueError:
                            name = str(-code)
                        raise RuntimeError(
                            f"DataLoader worker (pid {w.pid}) is killed by signal: {name}. ")
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {w.pid}) exited unexpectedly")

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is None:
                    self._rcvd_idx += 1  # a slot an exhausted worker gave back
                    continue
                if len(info) == 2 or self._workers_status[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                return self._process(data)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableEnd):
                self._workers_status[data.worker_id] = False
                self._task_info.pop(idx, None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx and self._in_order:
                self._task_info[idx] += (data,)
                continue
            self._task_info.pop(idx, None)
            return self._process(data)

    def _process(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        self._num_yielded += 1
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown(self):
        if self._shutdown_done:
            return
        self._shutdown_done = True
        self._done_event.set()
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
                w.join(timeout=1)
        for q in self._index_queues + [self._data_queue]:
            try:
                q.cancel_join_thread()
                q.close()
            except (OSError, ValueError):
                pass

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass



# PyTorch's names of the iterator classes (libraries import them to recognise a loader's
# iterator, as Lightning's CombinedLoader does)
_BaseDataLoaderIter = _BaseIter
_SingleProcessDataLoaderIter = _SingleProcessIter
_MultiProcessingDataLoaderIter = _MultiProcessIter
