"""Signatures of the callables in fx graphs, and argument normalisation: rewriting a node's
``args``/``kwargs`` against the target's signature (all as keywords, or positional first).
"""

from __future__ import annotations

import inspect
import numbers
import typing
from typing import Any, NamedTuple
from collections.abc import Callable

__all__ = ["ArgsKwargsPair", "get_signature_for_torch_op", "create_type_hint", "type_matches",
           "normalize_function", "normalize_module"]


class ArgsKwargsPair(NamedTuple):
    """Normalised arguments.

    Args:
        args: positional arguments.
        kwargs: keyword arguments.

    Example:
        >>> from ember.fx.operator_schemas import ArgsKwargsPair
        >>> ArgsKwargsPair((1,), {"a": 2})
        ArgsKwargsPair(args=(1,), kwargs={'a': 2})
    """

    args: tuple
    kwargs: dict


def get_signature_for_torch_op(op: Callable, return_schemas: bool = False):
    """The signatures ``op`` accepts (one ``inspect.Signature`` for an ember function).

    Args:
        op: an ember function.
        return_schemas: also return the schemas (the same signatures in ember).

    Returns:
        A list of signatures (or ``(signatures, schemas)``), None when ``op`` has none.

    Example::

        >>> import ember
        >>> from ember.fx.operator_schemas import get_signature_for_torch_op
        >>> "input" in get_signature_for_torch_op(ember.relu)[0].parameters
        True
    """
    try:
        sigs = [inspect.signature(op)]
    except (TypeError, ValueError):
        return (None, None) if return_schemas else None
    return (sigs, sigs) if return_schemas else sigs


def create_type_hint(x: Any) -> Any:
    """The type hint of a list or tuple of types: ``list[T]``/``tuple[T, ...]`` of their
    common base, or ``x`` itself.

    Args:
        x: a type, or a list/tuple of types.

    Returns:
        The hint.

    Example::

        >>> from ember.fx.operator_schemas import create_type_hint
        >>> create_type_hint([int, int])
        list[int]
    """
    if isinstance(x, (list, tuple)):
        if not x:
            return x
        base = x[0]
        for t in x[1:]:
            if issubclass(base, t):
                base = t
            elif not issubclass(t, base):
                base = Any
                break
        return list[base] if isinstance(x, list) else tuple[base, ...]
    return x


def type_matches(signature_type: Any, argument_type: Any) -> bool:
    """Whether a value of ``argument_type`` fits a parameter annotated ``signature_type``.

    Args:
        signature_type: the annotation.
        argument_type: the value's type.

    Returns:
        bool.

    Example::

        >>> from ember.fx.operator_schemas import type_matches
        >>> type_matches(int, bool)
        True
    """
    sig_origin = getattr(signature_type, "__origin__", signature_type)
    if signature_type is argument_type or signature_type is Any:
        return True
    if sig_origin is typing.Union and signature_type is not argument_type:
        return any(type_matches(c, argument_type) for c in signature_type.__args__)
    if signature_type in (list[int], typing.List[int]) and argument_type is int:  # noqa: UP006
        return True  # an int stands for a list of ints (``size=3``)
    if getattr(signature_type, "__origin__", None) is list:
        inner = signature_type.__args__[0]
        if getattr(argument_type, "__origin__", None) in (list, tuple):
            return all(type_matches(inner, a) for a in argument_type.__args__
                       if a is not Ellipsis)
    if signature_type is numbers.Number and argument_type in (int, float):
        return True
    if inspect.isclass(argument_type) and inspect.isclass(signature_type):
        return issubclass(argument_type, signature_type)
    return False


def _bind(sig: inspect.Signature, args, kwargs, only_kwargs: bool):
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    new_kwargs: dict = {}
    new_args: list = []
    for i, (name, p) in enumerate(sig.parameters.items()):
        if name not in bound.arguments:
            continue
        if not only_kwargs and i < len(args) and p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD):
            new_args.append(bound.arguments[name])
        elif p.kind is p.VAR_POSITIONAL:
            new_args.extend(bound.arguments[name])
        elif p.kind is p.VAR_KEYWORD:
            new_kwargs.update(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


def normalize_function(target: Callable, args: tuple, kwargs: dict | None = None,
                       arg_types: tuple | None = None, kwarg_types: dict | None = None,
                       normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """Match ``args``/``kwargs`` to ``target``'s signature, filling in defaults.

    Args:
        target: the function.
        args: positional arguments.
        kwargs: keyword arguments.
        arg_types: accepted for torch's signature (used to pick an overload there).
        kwarg_types: accepted for torch's signature.
        normalize_to_only_use_kwargs: return every argument as a keyword.

    Returns:
        An ``ArgsKwargsPair``, or None if the arguments do not fit the signature.

    Example::

        >>> import ember
        >>> from ember.fx.operator_schemas import normalize_function
        >>> normalize_function(ember.nn.functional.relu, (1,),
        ...                    normalize_to_only_use_kwargs=True).kwargs
        {'input': 1, 'inplace': False}
    """
    try:
        sig = inspect.signature(inspect.unwrap(target))
    except (TypeError, ValueError):
        return None
    try:
        return _bind(sig, args, kwargs or {}, normalize_to_only_use_kwargs)
    except TypeError:
        return None


def normalize_module(root, target: str, args: tuple, kwargs: dict | None = None,
                     normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
    """``normalize_function`` for the ``forward`` of submodule ``target`` of ``root``.

    Args:
        root: the root module.
        target: the submodule's path.
        args: positional arguments.
        kwargs: keyword arguments.
        normalize_to_only_use_kwargs: return every argument as a keyword.

    Returns:
        An ``ArgsKwargsPair``, or None.

    Example::

        >>> import ember
        >>> from ember.fx.operator_schemas import normalize_module
        >>> root = ember.nn.Sequential(ember.nn.ReLU())
        >>> normalize_module(root, "0", (1,), normalize_to_only_use_kwargs=True).kwargs
        {'input': 1}
    """
    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not "
                           "have that target!") from e
    try:
        sig = inspect.signature(inspect.unwrap(submod.forward))
    except (TypeError, ValueError):
        return None
    try:
        return _bind(sig, args, kwargs or {}, normalize_to_only_use_kwargs)
    except TypeError:
        return None
