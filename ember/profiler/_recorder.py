"""The recording side of the profiler: a layer of the mode stack and the backward hook.

NOTE [ Profiler recording ]
A recording session (``_Session``) sees three kinds of event, all on the thread that
started it:
- op calls: ``_OpRecorder`` is a layer of the mode stack at level 40 (NOTE [ Dispatch ] in
  ember/_dispatch.py), pushed only while a session records, so with no profiler the hot
  path is untouched. Each call becomes an event named as PyTorch names it (the handle
  ``aten.mm.default`` -> ``aten::mm``), with its input shapes, the bytes its outputs
  allocated and its flops when asked. A mode runs its op with itself popped, so ops a
  kernel calls internally are not seen by modes; the recorder makes one exception, as
  PyTorch's profiler sees every call of its dispatcher: an op written in Python (an
  ``entrance`` of the door, whose ``OpOverload.below`` is its body) runs with the recorder
  back on the stack when no mode lies below it, so the ops its body calls are recorded as
  its children (``aten::normal`` > ``aten::randn``...). An op with a NumPy kernel is one
  event, where PyTorch may show a composite (``aten::linear``) with children
  (``aten::addmm``): those children are not calls ember makes.
- user blocks: ``record_function`` opens an event that the events inside it nest under.
- backward nodes: the engine (``run_backward`` in ember/autograd/_engine.py) reads the
  module global ``profiler_hook`` once per backward call and, when set, calls it as each
  node starts, with the gradients the node receives (and once at the end), so that the
  node's work nests under ``autograd::engine::evaluate_function: MmBackward0`` >
  ``MmBackward0``, as in PyTorch, and the node's event lists those gradients' shapes.
Events form a tree through the stack of open events; self time is total minus children.
Times are ``perf_counter_ns``; they become microseconds from the profile's start when the
raw events are turned into ``FunctionEvent``s (``_Session.function_events``).

An op's forward event keeps the sequence number of the graph node it created; the backward
node's event has the same number, which is how the trace draws flow arrows between them.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from time import perf_counter_ns

from .. import _dispatch
from .._core.tensor import Tensor
from . import _flops

__all__ = []

#: the session recording on each thread (the innermost one when profiles nest)
_local = threading.local()
_state = _dispatch.state


def current_session():
    """The session recording on this thread, or None."""
    return getattr(_local, "session", None)


class _Raw:
    """One event while recording (kept small: one is made per op call). While recording,
    an op's ``shapes`` and ``stack`` are kept raw (see ``_record_inputs`` and
    ``_python_stack``); ``_convert`` reads them through ``shape_lists`` and ``stack_lines``."""

    __slots__ = ("name", "kind", "start", "end", "parent", "shapes", "mem", "flops", "seq",
                 "stack", "dtypes", "trace_name", "scope", "gpu")

    def __init__(self, name, kind, parent):
        self.name = name
        self.kind = kind      # "op", "user", "bwd_outer", "bwd", "module"
        self.parent = parent
        self.start = 0
        self.end = None
        self.shapes = None
        self.dtypes = None
        self.mem = 0
        self.flops = 0
        self.seq = -1
        self.stack = None
        self.trace_name = None
        self.scope = 0
        self.gpu = None       # (start, end, stream): NOTE [ CUDA event timing ]


_names: dict = {}
#: ember's pooling ops serve every dimension; PyTorch names the event by it (max_pool2d)
_POOL_NAMES = {"aten::max_pool", "aten::avg_pool", "aten::adaptive_avg_pool",
               "aten::adaptive_max_pool"}


def _event_name(handle):
    """``aten.add.Tensor`` -> ``aten::add`` (PyTorch's event names carry no overload)."""
    name = _names.get(handle)
    if name is None:
        name = _names[handle] = handle.overloadpacket._qualified_op_name
    return name


_dtype_names: dict = {}


def _record_inputs(ev, args, kwargs):
    """Set an op event's ``shapes`` and ``dtypes`` in one pass over its arguments.

    ``shapes`` is kept raw: a tuple with, per argument, a Tensor's shape tuple, a list of
    shape tuples for a list of Tensors, or ``()``; then each Tensor keyword's shape
    (``shape_lists`` turns it into PyTorch's nested lists). ``dtypes`` names each
    positional argument's dtype (``float32``), ``Scalar`` for a number, or ``""``."""
    shapes = []
    dtypes = []
    names = _dtype_names
    for a in args:
        if isinstance(a, Tensor):
            shapes.append(a._data.shape)
            d = a.dtype
            name = names.get(d)
            if name is None:
                name = names[d] = str(d).replace("ember.", "")
            dtypes.append(name)
            continue
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            shapes.append([t._data.shape for t in a if isinstance(t, Tensor)])
        else:
            shapes.append(())
        dtypes.append("Scalar" if isinstance(a, (bool, int, float, complex)) else "")
    if kwargs:
        for v in kwargs.values():
            if isinstance(v, Tensor):
                shapes.append(v._data.shape)
    ev.shapes = tuple(shapes)
    ev.dtypes = dtypes


def shape_lists(shapes):
    """An event's ``shapes`` as lists of lists (raw op shapes from ``_record_inputs`` are a
    tuple; backward events' are lists already)."""
    if type(shapes) is not tuple:
        return shapes
    return [[list(y) for y in x] if type(x) is list else list(x) for x in shapes]


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: file name -> whether its frames are the user's (outside ember) and so listed
_user_files: dict = {}


def _python_stack():
    """The caller's Python frames outside ember, innermost first, raw: a flat list
    ``[code, line, code, line, ...]`` (no tuple per frame: fewer objects for the garbage
    collector to walk); ``stack_lines`` formats them as ``file(line): func``."""
    frames = []
    f = sys._getframe(2)
    user_files = _user_files
    while f is not None:
        code = f.f_code
        fname = code.co_filename
        keep = user_files.get(fname)
        if keep is None:
            if len(user_files) > 8192:  # generated code's names must not pile up here
                user_files.clear()
            keep = user_files[fname] = not fname.startswith(_EMBER_DIR) and \
                not fname.startswith("<ember wrapper")
        if keep:
            frames.append(code)
            frames.append(f.f_lineno)
        f = f.f_back
    return frames


def stack_lines(stack):
    """A raw ``_python_stack`` as PyTorch's stack lines, ``file(line): func``."""
    if not stack:
        return []
    return [f"{stack[i].co_filename}({stack[i + 1]}): {stack[i].co_name}"
            for i in range(0, len(stack), 2)]


class _OpRecorder(_dispatch.Mode):
    """The profiler's layer of the mode stack (NOTE [ Profiler recording ])."""

    level = 40

    def __init__(self, session):
        self.session = session
        # the options, read once: a session's options do not change while it records
        self._detail = session.record_shapes or session.with_stack
        self._after = session.profile_memory or session.with_flops
        self._timer = session.device_timer

    def dispatch(self, handle, args, kwargs):
        s = self.session
        name = _names.get(handle)
        if name is None:
            name = _event_name(handle)
        if name in _POOL_NAMES:
            size = kwargs.get("kernel_size") or kwargs.get("output_size")
            if size is not None:
                name = f"{name}{len(size)}d"  # PyTorch's per-dimension names
        opened = s.open
        ev = _Raw(name, "op", opened[-1] if opened else None)
        if self._detail:
            if s.record_shapes:
                _record_inputs(ev, args, kwargs)
            if s.with_stack:
                ev.stack = _python_stack()
        s.raw.append(ev)
        opened.append(ev)
        timer = self._timer
        if timer is not None:
            first = timer.mark()
        below = handle.below
        if below is not None and not _state.modes:
            # an op written in Python, with no mode under this one: run its body with this
            # recorder on the stack, so that the ops it calls nest under it (see the note)
            ev.start = perf_counter_ns()
            _state.modes = (self,)
            try:
                r = below(*args, **kwargs)
            finally:
                _state.modes = ()
                ev.end = perf_counter_ns()
                opened.pop()
        else:
            ev.start = perf_counter_ns()
            try:
                r = handle(*args, **kwargs)
            finally:
                ev.end = perf_counter_ns()
                opened.pop()
        if timer is not None:
            # NOTE [ CUDA event timing ]: keep the pair only for ops that used the GPU
            if timer.on_device(args, r):
                ev.gpu = (first, timer.mark(), timer.stream_id())
            else:
                timer.release(first)
        out = r[0] if type(r) is tuple and r else r
        if isinstance(out, Tensor):
            gf = out._grad_fn
            if gf is not None:
                for a in args:
                    if isinstance(a, Tensor) and a._grad_fn is gf:
                        break
                else:
                    ev.seq = getattr(gf, "_seq", -1)
        if self._after:
            if s.profile_memory:
                s.count_allocations(ev, r, args)
            if s.with_flops:
                rule = _flops.RULES.get(handle.overloadpacket.__name__)
                if rule is not None:
                    try:
                        ev.flops = int(rule(args, kwargs, r))
                    except Exception:  # an odd call form: count nothing, not fail the op
                        ev.flops = 0
        return r


class _Session:
    """The state of one recording: options, open events and finished events."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, device_timer=None):
        self.record_shapes = record_shapes
        #: times ops' GPU work when CUDA activity is recorded (NOTE [ CUDA event timing ])
        self.device_timer = device_timer
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.raw = []
        self.open = []
        self.mem_events = []        # (time ns, bytes, total allocated)
        self.allocated = 0
        self.thread = threading.get_ident()
        self.pid = os.getpid()
        self.active = False
        self.start_ns = None
        self.end_ns = None
        self._mode = None
        self._prev_session = None
        self._prev_hook = None
        self._hooks = []
        self._live = {}             # id(weak ref to an allocated array) -> (ref, bytes)
        self._on_free = self._free_callback() if profile_memory else None

    # -- start / stop ------------------------------------------------------------------------

    def start(self):
        from ..autograd import _engine
        self.active = True
        self.start_wall_ns = time.time_ns()
        self.start_ns = perf_counter_ns()
        if self.device_timer is not None:
            self.device_timer.start()
        self._prev_session = current_session()
        _local.session = self
        self._mode = _OpRecorder(self)
        _dispatch.push_mode(self._mode)
        self._prev_hook = _engine.profiler_hook
        _engine.profiler_hook = self.backward_node
        if self.with_modules:
            self._hook_modules()
        self._hook_optimizers()

    def stop(self):
        from ..autograd import _engine
        if not self.active:
            return
        self.active = False
        _dispatch.pop_mode(self._mode)
        if self.device_timer is not None:
            self.device_timer.stop()
        _engine.profiler_hook = self._prev_hook
        _local.session = self._prev_session
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.end_ns = perf_counter_ns()
        for ev in self.open:
            if ev.end is None:
                ev.end = self.end_ns
        self.open = []

    # -- user blocks and backward nodes ------------------------------------------------------

    def begin(self, name, kind="user"):
        """Open a user event; returns it, to be passed to ``end``."""
        opened = self.open
        ev = _Raw(name, kind, opened[-1] if opened else None)
        if self.with_stack and kind == "user":
            ev.stack = _python_stack()
        self.raw.append(ev)
        opened.append(ev)
        ev.start = perf_counter_ns()
        return ev

    def end(self, ev):
        """Close ``ev`` (and any event left open inside it)."""
        t = perf_counter_ns()
        opened = self.open
        if ev in opened:
            while opened:
                top = opened.pop()
                if top.end is None:
                    top.end = t
                if top is ev:
                    break
        elif ev.end is None:
            ev.end = t

    def backward_node(self, node, token, grads=None):
        """The engine's hook (NOTE [ Profiler recording ]): close the events of the node
        that ran before (``token``), and open those of ``node`` unless it is None; with
        ``record_shapes``, the node's event lists the shapes of the gradients it receives
        (``grads``), as PyTorch's does."""
        if token is not None:
            self.end(token)
        if node is None or not self.active:
            return None
        name = node.name()
        if name == "AccumulateGrad":
            name = "torch::autograd::AccumulateGrad"
        outer = self.begin("autograd::engine::evaluate_function: " + name, "bwd_outer")
        inner = self.begin(name, "bwd")
        seq = getattr(node, "_seq", -1)
        outer.seq = inner.seq = seq if type(seq) is int else -1  # AccumulateGrad: inf
        if self.record_shapes:
            outer.shapes = []
            inner.shapes = [[] if g is None else list(g.shape) for g in grads or ()]
        return outer

    # -- memory ------------------------------------------------------------------------------

    def count_allocations(self, ev, result, args):
        outs = result if type(result) in (tuple, list) else (result,)
        for t in outs:
            if not isinstance(t, Tensor) or t._base is not None:
                continue
            for a in args:
                if t is a:
                    break
            else:
                arr = t._data
                n = int(getattr(arr, "nbytes", 0))
                if n == 0:
                    continue
                ev.mem += n
                self.allocated += n
                self.mem_events.append((perf_counter_ns(), n, self.allocated))
                try:
                    r = weakref.ref(arr, self._on_free)
                except TypeError:   # an array type without weak references: allocations only
                    continue
                self._live[id(r)] = (r, n)

    def _free_callback(self):
        """The callback of the weak references to the arrays ops allocated: counts the
        free. It holds the session weakly (arrays that outlive the profile must not keep
        its events alive) and ``_live`` holds the references until their arrays go."""
        live = self._live
        session_ref = weakref.ref(self)

        def on_free(r):
            item = live.pop(id(r), None)
            s = session_ref()
            if item is not None and s is not None:
                s.freed(item[1])
        return on_free

    def freed(self, n):
        """Count a free of ``n`` bytes against the innermost open event."""
        if not self.active or threading.get_ident() != self.thread:
            return
        self.allocated -= n
        self.mem_events.append((perf_counter_ns(), -n, self.allocated))
        if self.open:
            self.open[-1].mem -= n

    # -- optimizers and modules -------------------------------------------------------------

    def _hook_optimizers(self):
        """``Optimizer.step#SGD.step`` around each optimizer step, as PyTorch records."""
        try:
            from ..optim import optimizer as _optim
        except ImportError:
            return
        open_steps = []

        def before(opt, args, kwargs):
            if threading.get_ident() == self.thread and self.active:
                cls = type(opt).__name__
                open_steps.append(self.begin(f"Optimizer.step#{cls}.step"))

        def after(opt, args, kwargs):
            if open_steps and threading.get_ident() == self.thread:
                self.end(open_steps.pop())

        self._hooks.append(_optim.register_optimizer_step_pre_hook(before))
        self._hooks.append(_optim.register_optimizer_step_post_hook(after))

    # -- modules -----------------------------------------------------------------------------

    def _hook_modules(self):
        try:
            from ..nn.modules import module as _module
        except ImportError:
            return
        pre = getattr(_module, "register_module_forward_pre_hook", None)
        post = getattr(_module, "register_module_forward_hook", None)
        if pre is None or post is None:
            return
        opened_by_module = {}
        index_of = {}     # id(module) -> its index among the modules of its class
        per_class = {}

        def before(mod, args):
            key = id(mod)
            cls = type(mod).__name__
            if key not in index_of:
                index_of[key] = per_class.get(cls, 0)
                per_class[cls] = index_of[key] + 1
            ev = self.begin(f"nn.Module: {cls}_{index_of[key]}", "module")
            opened_by_module.setdefault(key, []).append(ev)

        def after(mod, args, out):
            evs = opened_by_module.get(id(mod))
            if evs:
                self.end(evs.pop())

        self._hooks += [pre(before), post(after)]
