"""Nested state dicts as flat ``"a.b.0"`` keys, and back, as PyTorch's checkpoint does.

Dicts are always entered; a list is entered when it holds a tensor, a dict or a list that
is entered (so ``[1, 2]`` stays one value while ``[tensor, 1.5]`` becomes ``x.0``, ``x.1``);
tuples and everything else are leaves.
"""

from __future__ import annotations

from collections.abc import Mapping


def _is_leaf(value) -> bool:
    from ... import Tensor

    if isinstance(value, Mapping):
        return False
    if not isinstance(value, list):
        return True
    return not any(isinstance(v, Tensor) or (isinstance(v, (Mapping, list)) and not _is_leaf(v))
                   for v in value)


def flatten(state_dict: Mapping) -> tuple[dict, dict]:
    """``(flat, paths)``: flattened key -> leaf value, and -> its path of keys/indices."""
    flat, paths = {}, {}

    def visit(value, path):
        if path and _is_leaf(value):
            key = ".".join(str(p) for p in path)
            flat[key], paths[key] = value, path
            return
        items = value.items() if isinstance(value, Mapping) else enumerate(value)
        for k, v in items:
            visit(v, path + (k,))

    visit(state_dict, ())
    return flat, paths


def set_at(state_dict, path, value) -> None:
    """Put ``value`` at ``path`` in the nested ``state_dict``."""
    node = state_dict
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
