"""``ember.torch_version``: ``TorchVersion``, the string type of ``ember.__version__``.

NOTE [ Version string ]
Programs test the framework's version to pick a code path: ``torch.__version__ >= "2.0"``,
``version.parse(torch.__version__)``, ``torch.__version__.split(".")``,
``int(torch.__version__[0])``. ember implements PyTorch 2.13's API, so ``ember.__version__``
reads as that version with ember's own version as a PEP 440 local label,
``"2.13.0+ember-0-1-0"``: every such test takes the modern path, ``packaging`` parses it, and
ember's version stays visible (also as ``ember.version.ember_version``). The label's parts
are joined by ``-``, not ``.``, so that ``__version__.split(".")`` has three parts, as
PyTorch's ``"2.13.0+cpu"`` has (``major, minor, patch = v.split(".")`` is common).

``TorchVersion`` is a ``str`` that compares as a version (PEP 440 ordering) against strings,
tuples or lists of numbers (``(2, 1)`` means "2.1"), and ``packaging`` ``Version`` objects.
A string that is not a version compares as a string, as in PyTorch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TorchVersion", "InvalidVersion"]


class InvalidVersion(ValueError):
    """Raised for a string that is not a PEP 440 version.

    Example::

        >>> from ember.torch_version import TorchVersion
        >>> TorchVersion("2.1") > "x"  # not a version: compared as strings
        False
    """


_PEP440 = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""", re.VERBOSE | re.IGNORECASE)

_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "pre": "rc",
        "preview": "rc", "rc": "rc"}
_INF = float("inf")


def _version_key(text: str) -> tuple:
    """The PEP 440 sort key of ``text`` (the ordering ``packaging.version`` uses)."""
    m = _PEP440.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: '{text}'")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0)) if m["pre_l"] else None
    post = None
    if m["post_n1"] is not None:
        post = int(m["post_n1"])
    elif m["post_l"]:
        post = int(m["post_n2"] or 0)
    dev = int(m["dev_n"] or 0) if m["dev_l"] else None
    # a dev release of a final version sorts before its pre-releases
    if pre is None and post is None and dev is not None:
        pre_key = (-_INF, "")
    elif pre is None:
        pre_key = (_INF, "")
    else:
        pre_key = ({"a": 0, "b": 1, "rc": 2}[pre[0]], pre[1])
    post_key = -_INF if post is None else post
    dev_key = _INF if dev is None else dev
    if m["local"] is None:
        local_key: tuple = ((-_INF, ""),)
    else:
        local_key = tuple((int(s), "") if s.isdigit() else (-_INF, s.lower())
                          for s in re.split(r"[-_.]", m["local"]))
    return (int(m["epoch"] or 0), tuple(release), pre_key, post_key, dev_key, local_key)


def _other_key(other):
    """The version key of ``other``, or None when it is not comparable as a version."""
    if isinstance(other, str):
        return _version_key(other)
    if type(other).__name__ == "Version" and hasattr(other, "release"):  # packaging
        return _version_key(str(other))
    if isinstance(other, Iterable):
        return _version_key(".".join(str(p) for p in other))
    return None


def _compare(name: str, as_version, as_str):
    def method(self, other):
        try:
            key = _other_key(other)
        except InvalidVersion:
            if not isinstance(other, str):
                raise
            return as_str(str(self), other)
        if key is None:
            return NotImplemented
        return as_version(_version_key(str(self)), key)

    method.__name__ = name
    method.__doc__ = f"``self {name}`` ``other``, compared as versions (NOTE [ Version string ])."
    return method


class TorchVersion(str):
    """A version string that compares as a version (see NOTE [ Version string ]).

    Args:
        value: the version text, e.g. ``"2.13.0+ember-0-1-0"``.

    Returns:
        TorchVersion: a ``str`` with version comparisons.

    Example::

        >>> from ember.torch_version import TorchVersion
        >>> v = TorchVersion("2.13.0+ember-0-1-0")
        >>> v >= "2.0", v > (2, 1), v < "2.14", v.split(".")[0]
        (True, True, True, '2')
    """

    __slots__ = ()

    __lt__ = _compare("__lt__", lambda a, b: a < b, str.__lt__)
    __le__ = _compare("__le__", lambda a, b: a <= b, str.__le__)
    __gt__ = _compare("__gt__", lambda a, b: a > b, str.__gt__)
    __ge__ = _compare("__ge__", lambda a, b: a >= b, str.__ge__)
    __eq__ = _compare("__eq__", lambda a, b: a == b, str.__eq__)
    __hash__ = str.__hash__

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r
