"""``jit.save``/``jit.load`` in ember: the module itself, pickled into a checkpoint archive.

NOTE [ Script archives ]
A TorchScript archive holds a module's compiled code, so PyTorch can load it without the
Python class that made it. Ember compiles nothing (NOTE [ Eager TorchScript ] in
ember/jit/__init__.py), so its archive holds what ember has: the whole module pickled in
ember's checkpoint format (PyTorch's zip layout, ember/serialization), classes by reference
-- as ``torch.save(model)`` stores them -- plus the ``_extra_files`` under ``extra/`` and a
marker entry ``ember_script`` saying which kind of archive it is. ``jit.load`` reads such an
archive back into the module (its class must be importable, as for any pickled module) and
fills ``_extra_files``. A real TorchScript archive (it has ``code/`` entries) cannot run
without a TorchScript interpreter: loading one raises RuntimeError saying so.
"""

from __future__ import annotations

import io
import os
import zipfile

_MARKER = "ember_script"


def _prefix(names):
    """The archive's top folder (``archive/`` for files ember and PyTorch write)."""
    for n in names:
        if "/" in n:
            return n.split("/", 1)[0] + "/"
    return ""


def save_archive(m, f, extra_files=None) -> None:
    """Write module ``m`` (and ``extra_files``) to ``f`` (NOTE [ Script archives ]).

    Args:
        m: the module (or function-like object) to store.
        f: a path or a binary file object.
        extra_files: ``{name: str or bytes}`` stored beside the module.

    Returns:
        None

    Example::

        >>> save_archive(ember.nn.Linear(1, 1), io.BytesIO())
    """
    from .. import save

    buf = io.BytesIO()
    save(m, buf)
    with zipfile.ZipFile(buf, "a") as z:
        prefix = _prefix(z.namelist())
        z.writestr(prefix + _MARKER, b"1")
        for name, content in (extra_files or {}).items():
            data = content.encode() if isinstance(content, str) else bytes(content)
            z.writestr(prefix + "extra/" + name, data)
    data = buf.getvalue()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    else:
        f.write(data)


def load_archive(f, map_location=None, extra_files=None):
    """Read a module written by ``save_archive`` (NOTE [ Script archives ]).

    Args:
        f: a path or a binary file object.
        map_location: where to put the tensors (as ``ember.load`` takes it).
        extra_files: a dict whose keys name extra files to read; their contents (bytes) are
            filled in place.

    Returns:
        The module.

    Raises:
        RuntimeError: ``f`` is a TorchScript archive made by PyTorch, or not an archive.

    Example::

        >>> buf = io.BytesIO(); save_archive(ember.nn.Linear(1, 1), buf); _ = buf.seek(0)
        >>> type(load_archive(buf)).__name__
        'Linear'
    """
    from .. import load

    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        raw = f.read()
    try:
        z = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as err:
        raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                           "central directory") from err
    with z:
        names = z.namelist()
        prefix = _prefix(names)
        if prefix + _MARKER not in names:
            if any(n.startswith(prefix + "code/") for n in names):
                raise RuntimeError(
                    "this is a TorchScript archive written by PyTorch: it holds compiled "
                    "TorchScript code, which ember cannot run (it has no TorchScript "
                    "interpreter; NOTE [ Script archives ]). Load the weights instead: save "
                    "them in PyTorch with torch.save(model.state_dict(), path)")
            raise RuntimeError("not an archive written by torch.jit.save")
        for name in list(extra_files or {}):
            entry = prefix + "extra/" + name
            extra_files[name] = z.read(entry) if entry in names else b""
    return load(io.BytesIO(raw), map_location=map_location, weights_only=False)
