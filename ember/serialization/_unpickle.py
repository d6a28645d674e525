"""Unpickling a checkpoint: the ``weights_only`` allow-list and its user additions, the
restricted unpickler, and the full unpickler that maps PyTorch's class paths to ember's.

NOTE [ Safe loading ]
``weights_only=True`` (the default) unpickles with an allow-list: tensors, storages,
OrderedDict, dtypes, Size, device and primitive containers (``_rebuild.allowed_globals``),
plus what ``add_safe_globals`` added. Any other global raises ``UnpicklingError`` *before*
it is imported, so a crafted file cannot run code. As in PyTorch, calling (REDUCE),
creating (NEWOBJ) and filling (BUILD) are checked too: only allowed callables are called and
only objects of allowed types get their state set, so allowing ``numpy.ndarray`` does not
let the file build an arbitrary dtype class. ``weights_only=False`` trusts the file.

NOTE [ Loading PyTorch's classes ]
A whole module or optimizer pickled by PyTorch names its classes by PyTorch's paths
(``torch.nn.modules.linear.Linear``). With ``weights_only=False`` ember resolves such a name
to ember's object of the same name: the same module path under ``ember``, else the nearest
enclosing ember package that has the name (``torch.optim.adam.Adam`` -> ``ember.optim.Adam``).
Names ember lacks raise ``UnpicklingError`` naming them. Files that ember writes name ember's
classes, so a whole pickled ember module loads in ember, not in PyTorch.
"""

from __future__ import annotations

import _compat_pickle
import importlib
import io
import pickle

from . import _rebuild

# modules never allowed, even when a user allow-lists something from them
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")

_marked_safe_globals: set = set()
_allowed_cache: dict = {}


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals in ``load(..., weights_only=True)``.

    Args:
        safe_globals: classes or functions, or ``(object, "module.qualname")`` pairs for
            objects pickled under another name.

    Returns:
        None.

    Example:
        >>> class Point:
        ...     pass
        >>> add_safe_globals([Point])
        >>> Point in get_safe_globals()
        True
        >>> clear_safe_globals()
    """
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals | set(safe_globals)


def get_safe_globals() -> list:
    """The globals ``add_safe_globals`` has allowed, as given.

    Returns:
        A list of objects and ``(object, name)`` pairs.

    Example:
        >>> clear_safe_globals(); get_safe_globals()
        []
    """
    return list(_marked_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed.

    Returns:
        None.

    Example:
        >>> add_safe_globals([complex]); clear_safe_globals(); get_safe_globals()
        []
    """
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:
    """Context manager: allow ``safe_globals`` in ``weights_only`` loads inside the block.

    Args:
        safe_globals: as for ``add_safe_globals``.

    Example:
        >>> class Point:
        ...     pass
        >>> with safe_globals([Point]):
        ...     Point in get_safe_globals()
        True
        >>> Point in get_safe_globals()
        False
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _marked_safe_globals
        _marked_safe_globals = _marked_safe_globals - set(self.safe_globals)
        return False


def _user_allowed() -> dict:
    table = {}
    for g in _marked_safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(g)}")
            if type(g[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(g[1])}")
            table[g[1]] = g[0]
        else:
            table[f"{g.__module__}.{g.__qualname__}"] = g
    return table


def _allowed() -> dict:
    if not _allowed_cache:
        _allowed_cache.update(_rebuild.allowed_globals())
    return _allowed_cache


def _fix_name(module, name, proto):
    """Python 2 spellings (``__builtin__``) as Python 3's, as pickle itself maps them."""
    if proto < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            return _compat_pickle.NAME_MAPPING[(module, name)]
        if module in _compat_pickle.IMPORT_MAPPING:
            return _compat_pickle.IMPORT_MAPPING[module], name
    return module, name


def _display(full):
    # builtins are shown bare, as Python writes them: ``print``, not ``builtins.print``
    return full[len("builtins."):] if full.startswith("builtins.") else full


def refused_global_message(full: str) -> str:
    """The ``UnpicklingError`` text for a global outside the allow-list."""
    from .._core.dtype import printed_module  # NOTE [ Printed module name ]: torch under the alias

    shown, top = _display(full), printed_module[0]
    return (
        "Weights only load failed. The file can still be loaded, but only do so if you trust "
        "its source:\n"
        "\t(1) load it with `weights_only=False` (this runs any code the file names), or\n"
        "\t(2) keep `weights_only=True` and allow the global named below.\n"
        f"\tWeightsUnpickler error: Unsupported global: GLOBAL {shown} was not an allowed "
        f"global by default. Please use `{top}.serialization.add_safe_globals([{shown}])` or "
        f"the `{top}.serialization.safe_globals([{shown}])` context manager to allowlist "
        "this global if you trust this class/function.")


def _weights_only_error(detail: str) -> pickle.UnpicklingError:
    from .._core.dtype import printed_module

    return pickle.UnpicklingError(
        f"Weights only load failed. Re-running `{printed_module[0]}.load` with "
        "`weights_only=False` will likely succeed, but it can run arbitrary code: do it only "
        f"if you trust the file's source.\n\nWeightsUnpickler error: {detail}")


class WeightsOnlyUnpickler(pickle._Unpickler):
    """The restricted unpickler (NOTE [ Safe loading ]). The pure-Python unpickler lets us
    check REDUCE, NEWOBJ and BUILD as well as globals."""

    def __init__(self, file, persistent_load=None, encoding="utf-8"):
        super().__init__(file, encoding=encoding)
        self._allowed = dict(_allowed())
        self._allowed.update(_user_allowed())
        self._allowed_ids = {id(v) for v in self._allowed.values()}
        self._persistent = persistent_load

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError("unsupported persistent id encountered")
        return self._persistent(pid)

    def find_class(self, module, name):
        module, name = _fix_name(module, name, self.proto)
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise _weights_only_error(f"Trying to load unsupported GLOBAL {full} whose module "
                                      f"{module} is blocked.")
        if full in self._allowed:
            return self._allowed[full]
        if module == "torch" or module.startswith("torch."):
            # a file PyTorch wrote names classes by PyTorch's paths (NOTE [ Loading PyTorch's
            # classes ]): allowing ember's class allows PyTorch's spelling of it too
            obj = ember_object_for(module, name)
            if obj is not None and self._is_allowed(obj):
                return obj
        raise pickle.UnpicklingError(refused_global_message(full))

    def _is_allowed(self, obj):
        return id(obj) in self._allowed_ids

    dispatch = dict(pickle._Unpickler.dispatch)

    def _load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._is_allowed(func):
            raise _weights_only_error(f"Trying to call reduce for unrecognized function {func}")
        self.stack[-1] = func(*args)

    def _load_newobj(self):
        from ..nn.parameter import Parameter

        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is Parameter:
            self.append(Parameter(*args))
        elif self._is_allowed(cls):
            self.append(cls.__new__(cls, *args))
        else:
            raise _weights_only_error("Can only create new object for nn.Parameter or classes "
                                      f"allowlisted via `add_safe_globals` but got {cls}")

    def _load_build(self):
        import collections

        from .._core.tensor import Tensor

        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is collections.OrderedDict:
            inst.__dict__.update(state)
        elif isinstance(inst, Tensor) and type(inst).__module__.startswith(("ember", "torch")):
            # ember's own tensor classes (named torch's under the alias: NOTE [ Class names
            # under the alias ] in ember/compat/_names.py)
            _rebuild._set_state(inst, state)
        elif self._is_allowed(type(inst)):
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                _rebuild._set_state(inst, state)
        else:
            raise _weights_only_error("Can only build Tensor, Parameter, OrderedDict or types "
                                      f"allowlisted via `add_safe_globals`, but got {type(inst)}")

    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.NEWOBJ[0]] = _load_newobj
    dispatch[pickle.BUILD[0]] = _load_build


def ember_object_for(module: str, name: str):
    """The ember object a PyTorch global names (NOTE [ Loading PyTorch's classes ]), or
    None when ember has none."""
    parts = ("ember" + module[len("torch"):]).split(".")
    while parts:
        try:
            obj = importlib.import_module(".".join(parts))
            for attr in name.split("."):
                obj = getattr(obj, attr)
            return obj
        except (ImportError, AttributeError):
            parts.pop()
    return None


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: any global, with PyTorch's names mapped to ember's."""

    def __init__(self, file, persistent_load=None, **kwargs):
        kwargs.setdefault("encoding", "utf-8")
        super().__init__(file, **kwargs)
        self._persistent = persistent_load

    def persistent_load(self, pid):
        if self._persistent is None:
            raise pickle.UnpicklingError("unsupported persistent id encountered")
        return self._persistent(pid)

    def find_class(self, module, name):
        full = f"{module}.{name}"
        allowed = _allowed()
        if full in allowed:
            return allowed[full]
        if full == "torch.ScriptObject":  # NOTE [ Packed RNN weights in checkpoints ]
            from ..ao._qserial import TorchScriptObject

            return TorchScriptObject
        if module == "torch" or module.startswith("torch."):
            obj = ember_object_for(module, name)
            if obj is None:
                raise pickle.UnpicklingError(
                    f"ember.load: the checkpoint needs {full}, which ember does not have")
            return obj
        return super().find_class(module, name)


def globals_in_pickle(data: bytes) -> list:
    """Full names of the globals a pickle refers to, in order of first appearance."""
    found = []
    for op, arg, _ in _genops(data):
        if op.name in ("GLOBAL", "INST"):
            module, name = arg.split(" ", 1)
            module, name = _fix_name(module, name, 2)
            full = f"{module}.{name}"
            if full not in found:
                found.append(full)
        elif op.name == "STACK_GLOBAL":
            raise pickle.UnpicklingError(
                "get_unsafe_globals_in_checkpoint: STACK_GLOBAL is not supported; the "
                "checkpoint was written with a pickle protocol above 2")
    return found


def _genops(data):
    import pickletools

    return pickletools.genops(io.BytesIO(data))
