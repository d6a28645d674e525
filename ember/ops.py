"""``ember.ops``: every op as a callable handle, by namespace -- ``ember.ops.aten.<name>`` for
ember's own ops, ``ember.ops.<ns>.<name>`` for custom ops defined with ``ember.library``.

A handle is an ``OpOverloadPacket``; its ``.default`` (and ``.out``, where the op has an
``out=`` form) is the ``OpOverload`` that dispatch modes receive as ``func``. Calling either
runs the op through the mode stack (NOTE [ Dispatch ] in ember/_dispatch.py).

Example::

    >>> ember.ops.aten.add(ember.ones(2), 1)
    tensor([2., 2.])
    >>> str(ember.ops.aten.mul.Tensor)
    'aten.mul.Tensor'
"""

from __future__ import annotations

import inspect

from . import _dispatch

__all__ = ["aten"]


def _builtin_packet(name):
    """Make the handles of ember's op ``name`` (an op or a public function) on first use."""
    from ._ops._registry import functions, ops

    op = ops.get(name)
    if op is not None:
        handle = getattr(op, "handle", None)
        if handle is not None:  # an element-wise op: its entrance prepares promotion
            fn = functions.get(name)
            try:
                n = len([p for p in inspect.signature(fn).parameters.values()
                         if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD])
            except (TypeError, ValueError):
                n = 1
            handle(False, n)
            if fn is not None:
                handle(True)
        else:
            _dispatch._apply_handle(op, False)
            _dispatch._apply_handle(op, True)
        return _dispatch.packets["aten"][name]
    fn = functions.get(name)
    if fn is not None and callable(fn):
        def run(*args, **kwargs):
            return fn(*args, **kwargs)

        _dispatch.overload("aten", name, "default", run)
        return _dispatch.packets["aten"][name]
    run = _ATEN_ONLY.get(name)
    if run is not None:
        _dispatch.overload("aten", name, "default", run)
        return _dispatch.packets["aten"][name]
    return None


# ATen ops with no ``ember.<name>`` function that libraries name as dispatch keys
# (torch_geometric's Index and EdgeIndex tables): each runs the public API it stands for
def _pin_memory(self, device=None):
    return self.pin_memory()


def _sparse_addmm(self, mat1, mat2, *, beta=1, alpha=1):
    from . import sparse

    return sparse.addmm(self, mat1, mat2, beta=beta, alpha=alpha)


def _sparse_mm_reduce_impl(self, other, reduce):
    import ember
    from . import sparse

    # the second output holds argmax/argmin positions for a backward pass; empty, as
    # PyTorch's, when nothing requires grad (ember's sparse.mm reduces by "sum" only)
    return sparse.mm(self, other, reduce), ember.empty(0, dtype=ember.int64)


_ATEN_ONLY = {"_pin_memory": _pin_memory, "_sparse_addmm": _sparse_addmm,
              "_sparse_mm_reduce_impl": _sparse_mm_reduce_impl}


# ``ember.ops.profiler``: a ``record_function`` block as two ops, so a graph can hold one
# (fx tracers emit them for ``with record_function(...)``). The handle ``enter`` returns is
# a 0-d int64 tensor numbering the open block.
_open_blocks: dict = {}
_next_block = [0]


def _record_function_enter(name, args=None):
    """Open a ``record_function`` block named ``name``; returns its handle (a tensor)."""
    import ember
    from .profiler import record_function

    if not isinstance(name, str):
        raise RuntimeError(f"profiler::_record_function_enter() Expected a value of type "
                           f"'str' for argument 'name' but instead found type "
                           f"'{type(name).__name__}'.")
    _next_block[0] += 1
    handle = ember.tensor(_next_block[0])
    rf = record_function(name, args)
    rf.__enter__()
    _open_blocks[_next_block[0]] = rf
    return handle


def _record_function_exit(handle):
    """Close the block ``handle`` (from ``_record_function_enter``) opened."""
    from .overrides import handle_torch_function, has_torch_function

    if has_torch_function((handle,)):
        return handle_torch_function(_profiler_packet("_record_function_exit"), (handle,),
                                     handle)
    rf = _open_blocks.pop(int(handle.item()), None)
    if rf is None:
        raise RuntimeError("profiler::_record_function_exit: the handle is not an open "
                           "record_function block")
    rf.__exit__(None, None, None)


def _profiler_packet(name):
    run = {"_record_function_enter": _record_function_enter,
           "_record_function_exit": _record_function_exit}.get(name)
    if run is None:
        return None
    _dispatch.overload("profiler", name, "default", run)
    return _dispatch.packets["profiler"][name]


class _OpNamespace:
    """``ember.ops.<namespace>``: attribute access finds the op's packet."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        p = _dispatch.packets.get(self.name, {}).get(op_name)
        if p is None and self.name == "aten":
            p = _builtin_packet(op_name)
        elif p is None and self.name == "profiler":
            p = _profiler_packet(op_name)
        if p is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return p

    def __iter__(self):
        return iter(_dispatch.packets.get(self.name, {}))

    def __repr__(self):
        return f"<ember.ops namespace '{self.name}'>"


_namespaces: dict = {}

#: the paths of the shared libraries ``load_library`` loaded
loaded_libraries: set = set()


def load_library(path) -> None:
    """Load a shared library into the process, so that code it runs on loading (registering
    ops or classes) takes effect; its path joins ``ember.ops.loaded_libraries``.

    Args:
        path (str or os.PathLike): the library's file (``.so`` / ``.dylib`` / ``.dll``).

    Returns:
        None. OSError when the library cannot be loaded (a PyTorch C++ extension needs
        libtorch, which ember does not provide). torchvision's operator library is the
        exception: ember defines its operators itself (NOTE [ torchvision's native library ]
        in ember/_vision_ops.py).

    Example::

        >>> try:
        ...     ember.ops.load_library("/no/such/libops.so")
        ... except OSError as e:
        ...     print(e)
        Could not load this library: /no/such/libops.so
    """
    import ctypes
    import os

    path = os.path.realpath(os.fspath(path)) if os.path.exists(os.fspath(path)) \
        else os.fspath(path)
    from . import _vision_ops

    if _vision_ops.is_torchvision_library(path):
        # its operators, written in ember (NOTE [ torchvision's native library ])
        _vision_ops.register()
        loaded_libraries.add(path)
        return
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        raise OSError(f"Could not load this library: {path}") from None
    loaded_libraries.add(path)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    ns = _namespaces.get(name)
    if ns is None:
        ns = _namespaces[name] = _OpNamespace(name)
    return ns


aten = __getattr__("aten")
