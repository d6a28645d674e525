"""The caching allocator's account: CuPy's memory pool, wrapped so that every block is counted.

NOTE [ Counting CuPy's pool ]
CuPy's ``MemoryPool`` plays the part of PyTorch's caching allocator (it caches freed blocks
per stream and rounds sizes to 512 bytes), but it keeps no statistics beyond a live count
that costs a walk over every block. ember makes its own pool (CuPy's default one stays
unused), whose new segments come through ``CachingAllocator._segment`` (reserved bytes,
cudaMalloc calls and their retries are counted there, off the hot path), and installs
``CachingAllocator.malloc`` as CuPy's allocator (``cupy.cuda.set_allocator``): it takes a
block from the pool and hands CuPy an
``UnownedMemory`` whose owner is a small ``_Block``. When the last array on the block dies,
the ``_Block`` dies, its ``__del__`` queues the block's size, and only then does the pool
block go back to the pool. So the counters are exact at every allocation, which is the only
moment a current value can grow: peaks are taken there, never sampled.

``__del__`` may run in any thread and at any bytecode (a garbage collection inside our own
``malloc``), so it only appends to a deque (atomic); the queue is drained under the lock by
the next ``malloc`` or query. ``record_stream`` adds streams to a block: when it is freed,
an event is recorded on each of them and the pool block is held until every event is done
(PyTorch's rule), so the pool cannot hand memory still in use on another stream to new work.
"allocated" bytes drop at the free; "active" bytes drop when the pool gets the block back.

``ember.cuda.MemPool`` is another CuPy pool made by ``new_pool`` with the same segment
function (its reserved bytes count with the rest); ``use_mem_pool`` routes one thread's
allocations to it through a thread-local (``routed``), and a block goes back to the pool it
came from when its arrays die. Its blocks are counted like any others.

During a graph capture (ember/cuda/graphs.py) every block allocated is also kept by the
graph (PyTorch's private graph pool): a replay writes into them, so the pool must not give
them to anyone else while the graph lives.

CuPy's out-of-memory error (a MemoryError, raised from deep inside any kernel that
allocates) is turned into ember's ``OutOfMemoryError`` here, the one place every allocation
passes: a class made at start-up that is both ember's (a RuntimeError, as PyTorch's) and
CuPy's, so handlers written for either catch it.

Costs: one ``_Block`` and one ``UnownedMemory`` per allocation. On an H200 host, ``a + b``
on 10 floats took 13.3 us with this allocator against 10.2 us with CuPy's pool alone.
"""

from __future__ import annotations

import collections
import gc
import sys
import threading
import time
import traceback

SMALL_BLOCK = 1 << 20  # PyTorch's small pool holds blocks of at most 1 MiB
_POOLS = ("all", "large_pool", "small_pool")


def _format_bytes(n) -> str:
    """``1536`` -> ``'1.50 KiB'`` (as PyTorch's messages write sizes)."""
    n = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} bytes" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


# the fields of one pool row (see DeviceStats)
CUR_N, CUR_B, CUR_R, TOT_N, TOT_B, TOT_R, PEAK_N, PEAK_B, PEAK_R, APEAK_N, APEAK_B, \
    PEND_N, PEND_B, BASE_N, BASE_B, BASE_R, FBASE_N, FBASE_B, FBASE_R, AFBASE_N, AFBASE_B = \
    range(21)


class DeviceStats:
    """The counters of one device: one flat list per pool row (0 'all', 1 'large_pool',
    2 'small_pool'), indexed by the names above: current, cumulative (TOT) and peak
    [allocations, bytes, requested bytes]; blocks freed but held for streams (PEND, still
    "active"); the "active" peaks (APEAK); and what ``reset_accumulated`` subtracts (BASE,
    FBASE, AFBASE). Freed totals are cumulative minus current. Flat lists keep ``add``, run
    at every allocation, to a few list operations.
    """

    __slots__ = ("rows", "pairs", "reserved_peak", "num_ooms", "num_alloc_retries",
                 "num_device_alloc", "num_device_free", "num_sync_all_streams")

    def __init__(self):
        self.rows = [[0] * 21 for _ in _POOLS]
        self.pairs = (None, (self.rows[0], self.rows[1]), (self.rows[0], self.rows[2]))
        self.reserved_peak = 0
        self.num_ooms = self.num_alloc_retries = 0
        self.num_device_alloc = self.num_device_free = self.num_sync_all_streams = 0

    @property
    def allocated_bytes(self) -> int:
        return self.rows[0][CUR_B]

    @property
    def peak_allocated_bytes(self) -> int:
        return self.rows[0][PEAK_B]

    def add(self, r: int, n: int, requested: int) -> None:
        """A block of ``n`` bytes (``requested`` asked for) handed out from pool row ``r``."""
        for v in self.pairs[r]:
            c0 = v[0] + 1
            c1 = v[1] + n
            c2 = v[2] + requested
            v[0] = c0
            v[1] = c1
            v[2] = c2
            v[3] += 1
            v[4] += n
            v[5] += requested
            if c1 > v[7]:
                v[7] = c1
            if c0 > v[6]:
                v[6] = c0
            if c2 > v[8]:
                v[8] = c2
            if v[12]:
                c0 += v[11]
                c1 += v[12]
            if c1 > v[10]:
                v[10] = c1
            if c0 > v[9]:
                v[9] = c0

    def remove(self, r: int, n: int, requested: int, held: bool) -> None:
        """A block freed; ``held``: kept for streams, so still active."""
        for v in self.pairs[r]:
            v[CUR_N] -= 1
            v[CUR_B] -= n
            v[CUR_R] -= requested
            if held:
                v[PEND_N] += 1
                v[PEND_B] += n

    def release(self, r: int, n: int) -> None:
        """A held block given back to the pool (no longer active)."""
        for v in self.pairs[r]:
            v[PEND_N] -= 1
            v[PEND_B] -= n

    def reset_peaks(self, reserved: int) -> None:
        for v in self.rows:
            v[PEAK_N], v[PEAK_B], v[PEAK_R] = v[CUR_N], v[CUR_B], v[CUR_R]
            v[APEAK_N], v[APEAK_B] = v[CUR_N] + v[PEND_N], v[CUR_B] + v[PEND_B]
        self.reserved_peak = reserved

    def reset_accumulated(self) -> None:
        for v in self.rows:
            for j in range(3):
                v[BASE_N + j] = v[TOT_N + j]
                v[FBASE_N + j] = v[TOT_N + j] - v[CUR_N + j]
            for j in range(2):
                v[AFBASE_N + j] = v[TOT_N + j] - v[CUR_N + j] - v[PEND_N + j]
        self.num_ooms = self.num_alloc_retries = 0
        self.num_device_alloc = self.num_device_free = self.num_sync_all_streams = 0

    def as_dict(self, reserved: int) -> dict:
        """PyTorch's flat ``memory_stats`` keys, given the pool's reserved bytes."""
        out = {}
        for i, (pool, v) in enumerate(zip(_POOLS, self.rows)):
            for j, metric in enumerate(("allocation", "allocated_bytes", "requested_bytes")):
                out[f"{metric}.{pool}.current"] = v[CUR_N + j]
                out[f"{metric}.{pool}.peak"] = v[PEAK_N + j]
                out[f"{metric}.{pool}.allocated"] = v[TOT_N + j] - v[BASE_N + j]
                out[f"{metric}.{pool}.freed"] = v[TOT_N + j] - v[CUR_N + j] - v[FBASE_N + j]
            for j, metric in enumerate(("active", "active_bytes")):
                out[f"{metric}.{pool}.current"] = v[CUR_N + j] + v[PEND_N + j]
                out[f"{metric}.{pool}.peak"] = v[APEAK_N + j]
                out[f"{metric}.{pool}.allocated"] = v[TOT_N + j] - v[BASE_N + j]
                out[f"{metric}.{pool}.freed"] = (v[TOT_N + j] - v[CUR_N + j] - v[PEND_N + j]
                                                 - v[AFBASE_N + j])
            # CuPy keeps one pool of segments: its reserved bytes are reported under 'all'
            out[f"reserved_bytes.{pool}.current"] = reserved if i == 0 else 0
            out[f"reserved_bytes.{pool}.peak"] = (max(self.reserved_peak, reserved) if i == 0
                                                  else 0)
        out["num_alloc_retries"] = self.num_alloc_retries
        out["num_ooms"] = self.num_ooms
        out["num_device_alloc"] = self.num_device_alloc
        out["num_device_free"] = self.num_device_free
        out["num_sync_all_streams"] = self.num_sync_all_streams
        out["max_split_size"] = -1
        return out


class _Block:
    """The owner of one pool block while CuPy arrays use it (see NOTE [ Counting CuPy's
    pool ])."""

    __slots__ = ("pooled", "device", "size", "requested", "streams", "queue")

    def __init__(self, pooled, device, size, requested, queue):
        self.pooled = pooled
        self.device = device
        self.size = size
        self.requested = requested
        self.streams = None
        self.queue = queue

    def __del__(self):
        self.queue.append((self.device, self.size, self.requested, self.pooled, self.streams))


class History:
    """The allocation history ``torch.cuda.memory._record_memory_history`` turns on: per
    device, the last ``max_entries`` alloc/free events with their Python stacks, in the
    trace-entry shape of PyTorch's memory snapshots (``device_traces``), which the memory
    visualiser (pytorch.org/memory_viz) reads.

    Args:
        context (str or None): ``"alloc"``, ``"state"`` or ``"all"``: keep stacks for
            allocations (and, with ``"all"``, for frees); None: no stacks.
        stacks (str): ``"python"`` or ``"all"`` (the same here: ember has no C++ frames).
        max_entries (int): events kept per device (the oldest drop first).
    """

    def __init__(self, context="all", stacks="all", max_entries=sys.maxsize):
        self.context = context
        self.stacks = stacks
        self.max_entries = max_entries
        self.traces: dict = collections.defaultdict(self._new_trace)

    def _new_trace(self):
        return collections.deque(maxlen=None if self.max_entries >= sys.maxsize
                                 else max(int(self.max_entries), 0))

    def _frames(self, action):
        if self.context is None or (action != "alloc" and self.context != "all"):
            return []
        frames = traceback.extract_stack()[:-3]  # up to the allocating call
        return [{"filename": f.filename, "line": f.lineno, "name": f.name}
                for f in reversed(frames)]

    def record(self, action, device, addr, size, stream=0):
        self.traces[device].append({
            "action": action, "addr": int(addr), "size": int(size), "stream": stream,
            "time_us": time.time_ns() // 1000, "frames": self._frames(action)})


class _Route(threading.local):
    """Per thread: the CuPy pool that ``use_mem_pool`` sends this thread's allocations to
    (None: the allocator's own)."""

    pool = None


class CachingAllocator:
    """A CuPy memory pool with PyTorch's statistics, installed as CuPy's allocator (see NOTE
    [ Counting CuPy's pool ]).

    Args:
        cp: the ``cupy`` module (or a stand-in with the same few names, for tests).
        oom_error: the exception class to raise when the pool is out of memory; it is
            called with the message.
    """

    cache_enabled = True

    def __init__(self, cp, oom_error):
        self.cp = cp
        memory = cp.cuda.memory
        self._raw_malloc = memory._malloc
        self._cuda_error = cp.cuda.runtime.CUDARuntimeError
        # ember's own pool, whose new segments go through _segment (so reserved bytes and
        # cudaMalloc calls are counted there, off the hot path); CuPy's default pool stays
        # unused by ember
        self.pool = cp.cuda.MemoryPool(self._segment)
        self._unowned = memory.UnownedMemory
        self._pointer = memory.MemoryPointer
        self._cupy_oom = memory.OutOfMemoryError
        self._device_id = cp.cuda.runtime.getDevice
        self.oom_error = oom_error
        self.stats: dict = collections.defaultdict(DeviceStats)
        self.freed: collections.deque = collections.deque()
        self.pending: list = []  # (events, pooled block, device, size, requested)
        self.lock = threading.RLock()
        self.captures: list = []  # lists that keep blocks alive for graphs being captured
        self._failed_segments = 0
        self.route = _Route()
        self.mem_pools: list = []  # (weak references to) the pools of new_pool()
        self.history = None  # a History while _record_memory_history is on
        self.malloc = self._fast_malloc()

    # -- allocation ------------------------------------------------------------------------

    def _segment(self, size: int):
        """A new segment from the driver, for the pool (a cache miss): counted as reserved."""
        try:
            mem = self._raw_malloc(size)
        except self._cuda_error:
            # The pool empties its cache and tries again: first give it the blocks of dead
            # tensors still queued here (and of garbage cycles), or the retry cannot use them.
            self._failed_segments += 1
            gc.collect()
            self.drain()
            raise
        st = self.stats[mem.device_id]
        st.num_device_alloc += 1
        reserved = self._reserved_now()  # already counts this segment
        if reserved > st.reserved_peak:
            st.reserved_peak = reserved
        return mem

    def malloc(self, size: int):
        """A device pointer to ``size`` bytes from the pool, counted (CuPy's allocator API).

        (``__init__`` replaces this method on the instance by ``_fast_malloc``'s closure,
        which does the same with its names bound once: this runs at every allocation.)
        """
        return self._fast_malloc()(size)

    def _fast_malloc(self):
        lock, freed, pending, captures = self.lock, self.freed, self.pending, self.captures
        stats, pool_malloc, cupy_oom = self.stats, self.pool.malloc, self._cupy_oom
        pointer, unowned, block = self._pointer, self._unowned, _Block
        route = self.route

        def malloc(size):
            with lock:
                if freed:
                    self.drain()
                if pending:
                    self.process_events()
                if not self.cache_enabled:  # caching_allocator_enable(False)
                    self.pool.free_all_blocks()
                failed = self._failed_segments
                target = route.pool
                try:
                    pooled = pool_malloc(size) if target is None else target.malloc(size)
                except cupy_oom as e:
                    pooled = self._on_oom(size)
                    if pooled is None:
                        self._raise_oom(size, e, failed)
                if self._failed_segments != failed:
                    stats[pooled.device_id].num_alloc_retries += self._failed_segments - failed
                n = pooled.mem.size
                if n == 0:
                    return pooled
                device = pooled.device_id
                stats[device].add(2 if n <= SMALL_BLOCK else 1, n, size)
                if self.history is not None:
                    self.history.record("alloc", device, pooled.ptr, n)
                if captures:
                    for keep in captures:
                        keep.append(pooled)
                return pointer(unowned(pooled.ptr, n, block(pooled, device, n, size, freed),
                                       device), 0)

        return malloc

    def _on_oom(self, size):
        """A block from a pool made with ``use_on_oom`` when the first choice is out of
        memory, or None."""
        for ref, use_on_oom in self.mem_pools:
            pool = ref()
            if pool is not None and use_on_oom and pool is not self.route.pool:
                try:
                    return pool.malloc(size)
                except self._cupy_oom:
                    continue
        return None

    # -- pools of their own (ember.cuda.MemPool) ---------------------------------------------

    def new_pool(self, use_on_oom: bool = False):
        """A CuPy memory pool of its own whose segments are counted as this allocator's
        (reserved bytes, driver allocations); blocks it hands out are counted as any other.
        ``use_on_oom``: serve other allocations from its cached blocks when theirs run out."""
        import weakref

        pool = self.cp.cuda.MemoryPool(self._segment)
        with self.lock:
            self.mem_pools[:] = [e for e in self.mem_pools if e[0]() is not None]
            self.mem_pools.append((weakref.ref(pool), use_on_oom))
        return pool

    def routed(self, pool):
        """A context manager sending this thread's allocations to ``pool`` (one of
        ``new_pool``'s; None: the allocator's own), restoring the previous route after."""
        import contextlib

        @contextlib.contextmanager
        def ctx():
            previous = self.route.pool
            self.route.pool = pool
            try:
                yield pool
            finally:
                self.route.pool = previous

        return ctx()

    def _reserved_now(self) -> int:
        """Bytes held from the driver on the current device by every pool."""
        total = self.pool.total_bytes()
        for ref, _ in self.mem_pools:
            pool = ref()
            if pool is not None:
                total += pool.total_bytes()
        return total

    def _raise_oom(self, size, cupy_error, failed):
        device = self._device_id()
        st = self.stats[device]
        st.num_ooms += 1
        st.num_alloc_retries += max(self._failed_segments - failed - 1, 0)
        raise self.oom_error(self._oom_message(device, size, cupy_error)) from None

    def drain(self) -> None:
        """Count the blocks freed since the last call (the lock is held)."""
        q = self.freed
        while q:
            try:
                device, n, requested, pooled, streams = q.popleft()
            except IndexError:
                break
            st = self.stats[device]
            pool = 2 if n <= SMALL_BLOCK else 1
            if self.history is not None:
                self.history.record("free_requested", device, pooled.ptr, n)
                if not streams:
                    self.history.record("free_completed", device, pooled.ptr, n)
            if streams:
                st.remove(pool, n, requested, True)
                events = []
                for s in streams:
                    ev = self.cp.cuda.Event(disable_timing=True)
                    ev.record(s)
                    events.append(ev)
                self.pending.append((events, pooled, device, n, requested))
            else:
                st.remove(pool, n, requested, False)

    def process_events(self, wait: bool = False) -> None:
        """Give the pool back the blocks whose recorded streams are done (lock held)."""
        still = []
        for events, pooled, device, n, requested in self.pending:
            if wait:
                for ev in events:
                    ev.synchronize()
            if all(ev.done for ev in events):
                self.stats[device].release(2 if n <= SMALL_BLOCK else 1, n)
                if self.history is not None:
                    self.history.record("free_completed", device, pooled.ptr, n)
            else:
                still.append((events, pooled, device, n, requested))
        self.pending[:] = still

    def _oom_message(self, device, size, cupy_error) -> str:
        st = self.stats[device]
        allocated = st.allocated_bytes
        reserved = self._reserved_now()
        try:
            free, total = self.cp.cuda.runtime.memGetInfo()
            where = (f"GPU {device} has a total capacity of {_format_bytes(total)} of which "
                     f"{_format_bytes(free)} is free. ")
        except Exception:  # the driver may refuse queries after a failure
            where = ""
        limit = self.pool.get_limit()
        cap = (f"The per-process limit is {_format_bytes(limit)} "
               "(set_per_process_memory_fraction). " if limit else "")
        return (f"CUDA out of memory. Tried to allocate {_format_bytes(size)}. {where}{cap}"
                f"Of the allocated memory {_format_bytes(allocated)} is allocated by ember, "
                f"and {_format_bytes(max(reserved - allocated, 0))} is reserved by ember but "
                f"unallocated. Free tensors you no longer need, or call "
                f"ember.cuda.empty_cache() to return cached blocks. (CuPy: {cupy_error})")

    # -- queries ---------------------------------------------------------------------------

    def device_stats(self, device: int) -> DeviceStats:
        """The counters of ``device``, with every freed block counted."""
        with self.lock:
            if self.freed:
                self.drain()
            if self.pending:
                self.process_events()
            return self.stats[device]

    def reserved(self, device: int) -> int:
        """Bytes the pool holds from the driver on ``device``."""
        with self.cp.cuda.Device(device):
            return int(self._reserved_now())

    def record_stream(self, array, stream) -> None:
        """Keep ``array``'s block from reuse until the work queued on ``stream`` (a CuPy
        stream) at the time the block is freed has finished."""
        owner = getattr(getattr(array.data, "mem", None), "_owner", None)
        if not isinstance(owner, _Block):
            return  # memory ember's allocator did not hand out (external, zero-size)
        if owner.streams is None:
            owner.streams = []
        if all(s.ptr != stream.ptr for s in owner.streams):
            owner.streams.append(stream)

    def empty_cache(self) -> None:
        """Return every cached block that no array uses to the driver."""
        with self.lock:
            if self.freed:
                self.drain()
            if self.pending:
                self.process_events()
            device = self._device_id()
            before = self.pool.total_bytes()
            self.pool.free_all_blocks()
            if self.pool.total_bytes() < before:
                self.stats[device].num_device_free += 1

    def synchronize_pending(self) -> None:
        """Wait for every block held by ``record_stream`` and give them back to the pool."""
        with self.lock:
            if self.freed:
                self.drain()
            self.process_events(wait=True)
