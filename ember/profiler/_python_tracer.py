"""The Python function events of ``with_stack=True``: the user's Python calls as events.

NOTE [ Python function events ]
With ``with_stack=True`` PyTorch's profiler also records the Python calls made while it
runs, as events in the same tree as the ops (category ``python_function`` in the trace):
``script.py(12): train_step`` > ``aten::mm``, named ``file(first line): function`` with the
file relative to its ``sys.path`` entry, and C functions as their ``repr``
(``<built-in function len>``); the frames already running when recording starts are open
events from its start, named by their current line. ember's ops are Python, so recording
every call would bury the ops under ember's own machinery; what is recorded is what
PyTorch, whose ops are C++, would show: a call is traced when it is not in ember's own files
and either its caller is traced or (called back from ember: a module's ``forward``, an
``autograd.Function``'s ``backward``) it is the user's code rather than a library's
(standard library or site-packages). A library function ember calls, and everything under
it, is not recorded. C functions are recorded when a traced frame calls them. The hook is
``sys.setprofile`` on the recording thread, installed only for ``with_stack`` sessions.
It is called for every call and return on the thread, so it sleeps (``sys.setprofile(None)``
and back) where only ember's code can run and nothing would be recorded: inside an op and
the recorder's bookkeeping of it, the engine's hook for each backward node, the formula of
a node of ember's own ops (not a user's ``autograd.Function``), and the ``step`` of an
ember optimizer called without a closure or hooks of its own. On the GPT bench step that
took the hook's calls from ~80k to ~25k per step (session 17).

NOTE [ Calls into the API as PyTorch's C calls ]
PyTorch's tensor methods and ``torch.*`` functions are C functions, so a traced frame that
calls one gets an event named by their ``repr``: ``<built-in method relu of Tensor object
at 0x...>`` (the tensor's address), ``<built-in method ones_like of type object at
0x...>``, ``<built-in function linear>`` (``torch.nn.functional``'s functions bound from
``torch._C._nn``), with the op's events inside. ember's are Python functions in ember's
files, which the tracer does not record, so such a call is recorded under PyTorch's name
for it when a traced frame calls an entry of ember's API (``_entries``): a public Tensor
method (not an operator's dunder: PyTorch's operators reach C through slots, which make no
event), a public ``ember.*`` op or one of the ``nn.functional`` functions PyTorch binds
from C. What PyTorch writes in Python (``Tensor.backward``, ``torch.einsum``:
``_TORCH_PYTHON``) gets no event: PyTorch shows its own Python frames there, which ember
does not make up. Whether ``relu`` was called as a method or as ``torch.relu`` (one ember
function for both) is read off the caller's code: the name loaded from a module is the
function, else the method (``_called_as_method``).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

__all__ = []

#: Tensor methods PyTorch writes in Python (no C call event; NOTE [ Calls into the API as
#: PyTorch's C calls ])
_TENSOR_PYTHON = frozenset((
    "backward dim_order eig index is_shared istft lstsq lu module_load norm register_hook "
    "register_post_accumulate_grad_hook reinforce resize resize_as share_memory_ solve "
    "split stft storage storage_type symeig to_sparse_coo unflatten unique "
    "unique_consecutive").split())
#: ``torch.*`` functions PyTorch writes in Python
_TORCH_PYTHON = frozenset((
    "atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors "
    "cartesian_prod cdist chain_matmul einsum lobpcg lstsq lu matrix_rank meshgrid norm "
    "pca_lowrank solve split stft svd_lowrank tensordot unique unique_consecutive "
    "unravel_index").split())
#: ``torch.nn.functional`` functions bound from ``torch._C._nn`` (``<built-in function>``)
_NN_C = frozenset((
    "avg_pool2d avg_pool3d elu_ gelu hardtanh_ leaky_relu_ linear one_hot "
    "scaled_dot_product_attention softplus softshrink").split())
_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE"))
_ATTRS = frozenset(("LOAD_METHOD", "LOAD_ATTR"))


#: the entry of a code object several functions share: found by their closures' values
_SHARED = ("shared",)


@functools.lru_cache(maxsize=1)
def _entries():
    """{code object: entry} of ember's API entries that PyTorch runs as C calls, or
    ``_SHARED`` for code that several functions share (generated wrappers of one signature,
    a factory's methods), whose entries are ``{(code, id of the globals, ids of the
    closure's values): entry}`` under the key None; an entry is ``(name, method,
    function, nn)``: whether ``name`` is a Tensor method, a ``torch.*`` function, a
    ``<built-in function>`` of ``nn.functional``."""
    import types

    from .._core.tensor import Tensor
    from .._ops._registry import functions
    from ..nn import functional as F

    found: dict = {}

    def add(fn, name, method=False, function=False, nn=False):
        if not isinstance(fn, types.FunctionType):
            return
        got = found.get(fn)
        if got is not None:
            name = got[0]
            method, function, nn = got[1] or method, got[2] or function, got[3] or nn
        found[fn] = (name, method, function, nn)

    for name in dir(Tensor):
        if not name.startswith("_") and name not in _TENSOR_PYTHON:
            add(getattr(Tensor, name, None), name, method=True)
    for name, fn in functions.items():
        if not name.startswith("_") and name not in _TORCH_PYTHON:
            add(fn, name, function=True)
    for name in _NN_C:
        add(getattr(F, name, None), name, nn=True)
    by_code: dict = {}
    shared: dict = {}
    for fn, entry in found.items():
        code = fn.__code__
        by_code[code] = _SHARED if code in by_code else entry
        key = (code, id(fn.__globals__),
               tuple(id(c.cell_contents) for c in fn.__closure__ or ()))
        shared[key] = None if key in shared else entry
    by_code[None] = shared
    return by_code


@functools.lru_cache(maxsize=4096)
def _instructions(code):
    import dis

    ins = list(dis.get_instructions(code))
    return [i.offset for i in ins], ins


def _called_as_method(caller, name):
    """Whether the call the frame ``caller`` makes now loads ``name`` off an object that is
    no module (``x.relu()``) rather than off a module or by itself (``torch.relu(x)``,
    ``relu(x)``); None when its code does not say."""
    import bisect

    try:
        offsets, ins = _instructions(caller.f_code)
    except Exception:   # (code ``dis`` cannot read)
        return None
    # (the frame's last instruction may be read inside the call's inline cache)
    at = bisect.bisect_right(offsets, caller.f_lasti) - 1
    if at < 0:
        return None
    for i in range(at, max(at - 64, -1), -1):
        op = ins[i]
        if op.argval != name:
            continue
        if op.opname in _LOADS:
            return False
        if op.opname in _ATTRS and i:
            prev = ins[i - 1]
            if prev.opname in _LOADS:
                scope = caller.f_locals if prev.opname != "LOAD_GLOBAL" else caller.f_globals
                obj = scope.get(prev.argval, caller.f_globals.get(prev.argval))
                return not isinstance(obj, type(sys))
            return True
        return None
    return None


@functools.lru_cache(maxsize=1)
def _library_prefixes():
    """The folders of the standard library and of installed packages."""
    paths = sysconfig.get_paths()
    prefixes = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    prefixes.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
    return tuple(sorted(p + os.sep for p in prefixes if p))


_short_names: dict = {}


def short_path(fname):
    """``fname`` relative to the longest ``sys.path`` entry holding it, as PyTorch names
    Python events' files."""
    name = _short_names.get(fname)
    if name is None:
        name = fname
        best = 0
        for p in sys.path:
            p = p or os.getcwd()
            if len(p) > best and fname.startswith(p + os.sep):
                best = len(p)
                name = fname[best + 1:]
        if len(_short_names) > 8192:
            _short_names.clear()
        _short_names[fname] = name
    return name


def _restore(previous):
    """Give the thread's profile hook back to ``previous``: a Python function goes back
    through ``sys.setprofile``; a profiler written in C (``cProfile.Profile``, which
    ``sys.getprofile`` returns though it cannot be called) re-installs itself."""
    if previous is None or callable(previous):
        sys.setprofile(previous)
    elif hasattr(previous, "enable"):
        previous.enable()
    else:
        sys.setprofile(None)


class PythonTracer:
    """Records a session's Python function events (NOTE [ Python function events ])."""

    def __init__(self, session, is_ember_file):
        self.session = session
        self._is_ember = is_ember_file
        self._library = _library_prefixes()
        self._kinds: dict = {}     # file name -> "ember", "library" or "user"
        self._traced: dict = {}    # id(frame) -> its event, for the traced frames running
        self._c_calls = []         # (id(frame), C function, event) of open C calls
        self._api_calls: dict = {}  # id(frame) -> its event, for the API entries running
        self._entries = _entries()
        self._previous = None
        #: the function given to ``sys.setprofile`` (ops compare it by identity to pause it)
        self.hook = self._hook

    def _kind(self, fname):
        kind = self._kinds.get(fname)
        if kind is None:
            if self._is_ember(fname):
                kind = "ember"
            elif fname.startswith("<") or fname.startswith(self._library):
                kind = "library"
            else:
                kind = "user"
            self._kinds[fname] = kind
        return kind

    def start(self, frame):
        """Open events for the traced frames running at ``frame`` and outside it, then
        install the hook."""
        running = []
        f = frame
        while f is not None:
            running.append(f)
            f = f.f_back
        for f in reversed(running):
            code = f.f_code
            if self._kind(code.co_filename) == "ember":
                continue
            name = f"{short_path(code.co_filename)}({f.f_lineno}): {code.co_name}"
            self._traced[id(f)] = self.session.begin(name, "python")
        self._previous = sys.getprofile()
        sys.setprofile(self.hook)

    def stop(self):
        if sys.getprofile() is self.hook:
            _restore(self._previous)
        self._traced.clear()
        self._c_calls.clear()
        self._api_calls.clear()

    @functools.cached_property
    def _generic_code(self):
        from .. import _overrides

        return _overrides._generic_wrapper(len).__code__

    def _api_name(self, frame, caller, entry):
        """PyTorch's name of the C call ``frame`` stands for (NOTE [ Calls into the API as
        PyTorch's C calls ]), or None."""
        name, method, function, nn = entry
        if method and function:
            as_method = _called_as_method(caller, name)
            method = as_method if as_method is not None else method
        if nn and not method:
            return f"<built-in function {name}>"
        if method:
            code = frame.f_code
            first = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
            if first is None and code is self._generic_code:
                args = frame.f_locals.get("args")
                first = args[0] if args else None
            if first is None:
                return None
            return f"<built-in method {name} of Tensor object at {id(first):#x}>"
        return f"<built-in method {name} of type object at {id(type(frame)):#x}>"

    def _hook(self, frame, event, arg):
        # called for every Python and C call and return on the thread: the common cases
        # (C calls and calls in frames that are not traced) leave first
        if event == "c_call":
            if id(frame) in self._traced:
                self._c_calls.append((id(frame), arg, self.session.begin(repr(arg), "python")))
        elif event == "return":
            ev = self._traced.pop(id(frame), None)
            if ev is None and self._api_calls:
                ev = self._api_calls.pop(id(frame), None)
            if ev is not None:
                self.session.end(ev)
        elif event == "call":
            if not self.session.active:   # stopped from another thread: leave this one
                _restore(self._previous)
                return
            code = frame.f_code
            kind = self._kinds.get(code.co_filename) or self._kind(code.co_filename)
            if kind == "ember":
                back = frame.f_back
                if back is not None and id(back) in self._traced:
                    entry = self._entries.get(code)
                    if entry is _SHARED:
                        values = frame.f_locals if code.co_freevars else None
                        entry = self._entries[None].get(
                            (code, id(frame.f_globals),
                             tuple(id(values.get(v)) for v in code.co_freevars)))
                    if entry is not None:
                        name = self._api_name(frame, back, entry)
                        if name is not None:
                            self._api_calls[id(frame)] = self.session.begin(name, "python")
                return
            back = frame.f_back
            if back is None or id(back) not in self._traced:
                if back is not None and (kind == "library" or
                                         self._kind(back.f_code.co_filename) != "ember"):
                    return
            name = f"{short_path(code.co_filename)}({code.co_firstlineno}): {code.co_name}"
            self._traced[id(frame)] = self.session.begin(name, "python")
        elif self._c_calls:   # c_return, c_exception
            key, fn, ev = self._c_calls[-1]
            if key == id(frame) and fn is arg:
                self._c_calls.pop()
                self.session.end(ev)
