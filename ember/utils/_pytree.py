"""``ember.utils._pytree``: flatten nested lists, tuples and dicts to their leaves and back.

Dispatch modes and functional transforms use it to reach every tensor in an op's arguments.

Example::

    >>> leaves, spec = tree_flatten({"a": [1, 2], "b": (3,)})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([x * 10 for x in leaves], spec)
    {'a': [10, 20], 'b': (30,)}
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any, NamedTuple

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves",
           "tree_map_only", "tree_all", "tree_any", "tree_structure", "register_pytree_node",
           "tensor_leaves", "MappingKey", "SequenceKey", "GetAttrKey", "keystr",
           "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
           "is_structseq", "is_structseq_class", "is_structseq_instance", "tree_is_leaf"]

# type -> (flatten(node) -> (children, context), unflatten(children, context) -> node)
_nodes: dict = {}

#: any nested structure of containers and leaves (a name for type hints)
PyTree = Any


def is_structseq_class(cls) -> bool:
    """Whether ``cls`` is a C "struct sequence" type (``os.stat_result``, PyTorch's
    ``torch.return_types.*``): a direct subclass of tuple that counts its fields in
    ``n_fields``, ``n_sequence_fields`` and ``n_unnamed_fields``. Namedtuples are not (ember's
    ``return_types`` are namedtuples).

    Args:
        cls: any object.

    Returns:
        bool: True for a struct sequence type.

    Example::

        >>> import os
        >>> is_structseq_class(os.stat_result), is_structseq_class(tuple)
        (True, False)
    """
    return (isinstance(cls, type) and cls.__bases__ == (tuple,)
            and all(isinstance(getattr(cls, f, None), int)
                    for f in ("n_fields", "n_sequence_fields", "n_unnamed_fields")))


def is_structseq_instance(obj) -> bool:
    """Whether ``obj`` is an instance of a struct sequence type (see
    :func:`is_structseq_class`).

    Args:
        obj: any object.

    Returns:
        bool: True for a struct sequence.

    Example::

        >>> import os
        >>> is_structseq_instance(os.stat(".")), is_structseq_instance((1, 2))
        (True, False)
    """
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    """Whether ``obj`` is a struct sequence type or an instance of one.

    Args:
        obj: a class or an object.

    Returns:
        bool: True for either.

    Example::

        >>> import os
        >>> is_structseq(os.stat_result), is_structseq(os.stat("."))
        (True, True)
    """
    return is_structseq_class(obj) or is_structseq_instance(obj)


class NodeDef(NamedTuple):
    """A registered container type and its functions, as ``SUPPORTED_NODES`` lists them."""

    type: Any
    flatten_fn: Any
    unflatten_fn: Any
    flatten_with_keys_fn: Any = None


#: the registered container types (``namedtuple`` stands for every namedtuple), each with its
#: ``NodeDef``; libraries (Lightning) walk trees with it
SUPPORTED_NODES: dict = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, **_ignored):
    """Teach the tree functions a container type: ``flatten_fn(node) -> (children,
    context)`` and ``unflatten_fn(children, context) -> node``."""
    _nodes[cls] = (flatten_fn, unflatten_fn)
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn,
                                   _ignored.get("flatten_with_keys_fn"))


def _get_node_type(tree):
    """The key of ``tree``'s entry in ``SUPPORTED_NODES``: ``namedtuple`` for a namedtuple,
    else its type (a leaf's type has no entry).

    Args:
        tree: a node or a leaf.

    Returns:
        the type, or ``collections.namedtuple``.

    Example::

        >>> _get_node_type([1]) is list
        True
    """
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return namedtuple
    return type(tree)


register_pytree_node(list, lambda x: (list(x), None), lambda c, _: list(c))
register_pytree_node(tuple, lambda x: (list(x), None), lambda c, _: tuple(c))
register_pytree_node(dict, lambda x: (list(x.values()), list(x.keys())),
                     lambda c, keys: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda x: (list(x.values()), list(x.keys())),
                     lambda c, keys: OrderedDict(zip(keys, c)))
# a namedtuple's context is its class (found by ``_node_fns`` for tree_flatten's own specs,
# which name the class itself)
register_pytree_node(namedtuple, lambda x: (list(x), type(x)), lambda c, t: t(*c))


def _node_fns(x):
    t = type(x)
    if t in _nodes:
        return _nodes[t]
    if isinstance(x, tuple) and hasattr(t, "_fields"):  # a namedtuple
        return _nodes[namedtuple]
    return None


class TreeSpec:
    """The shape of a tree: its node type, context and children's specs.

    Args:
        type (type): the node's container type.
        context: what the type's unflatten function needs besides the children (a dict's
            keys, a namedtuple's class).
        children_specs (list of TreeSpec): the children's shapes.

    Example::

        >>> spec = tree_flatten({"a": 1, "b": [2, 3]})[1]
        >>> spec.num_leaves, spec.type.__name__
        (3, 'dict')
    """

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(s.num_leaves for s in children_specs)

    def is_leaf(self):
        return False

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and not other.is_leaf() and self.type is other.type
                and self.context == other.context
                and self.children_specs == other.children_specs)

    def __repr__(self, indent=0):
        # one child per line after the first, each level indented two more spaces
        kids = [c.__repr__(indent + 2) for c in self.children_specs]
        inner = (",\n" + " " * (indent + 2)).join(kids)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{inner}])"


class LeafSpec(TreeSpec):
    """The spec of a single leaf.

    Args:
        (none).

    Example::

        >>> LeafSpec().is_leaf()
        True
    """

    def __init__(self):
        self.type = None
        self.context = None
        self.children_specs = []
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self, indent=0):
        return "*"


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf: no registered container (an empty list or dict is still a
    container), or a node ``is_leaf`` stops at.

    Args:
        tree: any object.
        is_leaf: optional ``fn(node) -> bool``, as in ``tree_flatten``.

    Returns:
        bool: True for a leaf.

    Example::

        >>> tree_is_leaf(1), tree_is_leaf([]), tree_is_leaf(None)
        (True, False, True)
    """
    return (is_leaf is not None and bool(is_leaf(tree))) or _node_fns(tree) is None


def tree_flatten(tree, is_leaf=None):
    """Flatten a tree of lists, tuples, dicts and namedtuples.

    Args:
        tree: the nested structure.
        is_leaf: optional ``fn(node) -> bool`` stopping the descent at a node.

    Returns:
        ``(leaves, spec)``: the leaves in order and the spec that rebuilds the tree.

    Example::

        >>> tree_flatten([1, (2, 3)])[0]
        [1, 2, 3]
    """
    leaves = []
    spec = _flatten_into(tree, leaves, is_leaf)
    return leaves, spec


def _flatten_into(x, leaves, is_leaf):
    # a module-level function, not a closure: a recursive closure is a reference cycle,
    # which kept every flattened leaf alive until the garbage collector ran
    fns = None if is_leaf is not None and is_leaf(x) else _node_fns(x)
    if fns is None:
        leaves.append(x)
        return LeafSpec()
    children, context = fns[0](x)
    t = type(x)
    if t not in _nodes:  # a namedtuple: torch's spec names the kind, its context the class
        t = namedtuple
    return TreeSpec(t, context, [_flatten_into(c, leaves, is_leaf) for c in children])


def tree_unflatten(leaves, spec):
    """Rebuild a tree of ``spec``'s shape from ``leaves``.

    Args:
        leaves: the leaves, in ``tree_flatten``'s order.
        spec: the ``TreeSpec`` from ``tree_flatten``.

    Returns:
        The tree.

    Example::

        >>> tree_unflatten([4, 5], tree_flatten((1, [2]))[1])
        (4, [5])
    """
    return _unflatten_from(spec, iter(leaves))


def _unflatten_from(s, it):
    # module-level for the reason given in _flatten_into
    if s.is_leaf():
        return next(it)
    children = [_unflatten_from(c, it) for c in s.children_specs]
    fns = _nodes.get(s.type)
    if fns is None:
        return s.type(*children)
    return fns[1](children, s.context)


def tree_leaves(tree, is_leaf=None):
    """The tree's leaves in order."""
    return tree_flatten(tree, is_leaf)[0]


def tensor_leaves(tree) -> list:
    """The tensors in a tree of lists, tuples and dicts (dict values in order), depth first:
    what graph tracers (ONNX and ``ember.export``, TensorBoard's graph, the flop counter)
    read off an op's arguments and results.

    Args:
        tree: the nested structure.

    Returns:
        list[Tensor]: the tensors, in order.

    Example::

        >>> len(tensor_leaves({"a": [ember.ones(1), 2], "b": (ember.zeros(2),)}))
        2
    """
    out = []
    _collect_tensors(tree, out)
    return out


def _collect_tensors(x, out):
    from .._core.tensor import Tensor

    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _collect_tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _collect_tensors(y, out)


def tree_structure(tree, is_leaf=None):
    """The tree's spec."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(fn, tree, *rests, is_leaf=None):
    """The tree with ``fn`` applied to each leaf.

    Args:
        fn: ``fn(leaf, *matching_leaves_of_rests)``.
        tree: the tree.
        *rests: trees of the same shape whose leaves are passed alongside.
        is_leaf: as in ``tree_flatten``.

    Returns:
        A tree of the same shape.

    Example::

        >>> tree_map(lambda x: x + 1, {"a": [1, 2]})
        {'a': [2, 3]}
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([fn(x, *(o[i] for o in others)) for i, x in enumerate(leaves)],
                          spec)


def tree_map_only(type_or_types, fn, tree, is_leaf=None):
    """``tree_map`` applying ``fn`` only to leaves of the given type(s).

    Args:
        type_or_types (type or tuple of types): the leaves ``fn`` applies to.
        fn (callable): ``leaf -> new leaf``.
        tree: the tree.
        is_leaf: as in ``tree_flatten``.

    Returns:
        A tree of the same shape.

    Example::

        >>> tree_map_only(int, lambda x: x * 2, [1, "a", (3,)])
        [2, 'a', (6,)]
    """
    return tree_map(lambda x: fn(x) if isinstance(x, type_or_types) else x, tree,
                    is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_leaves(tree, is_leaf))




class MappingKey:
    """The path entry of a mapping's child: its key (``flatten_with_keys`` functions give
    one per child).

    Args:
        key: the child's key.

    Example::

        >>> MappingKey("a")
        MappingKey(key='a')
    """

    def __init__(self, key):
        self.key = key

    def __eq__(self, other):
        return isinstance(other, MappingKey) and other.key == self.key

    def __hash__(self):
        return hash(("MappingKey", self.key))

    def __repr__(self):
        return f"MappingKey(key={self.key!r})"

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        """The child this entry names in ``mapping``."""
        return mapping[self.key]


def _dict_flatten_with_keys(d):
    """A dict's children paired with their ``MappingKey`` path entries, and its context
    (the keys): the ``flatten_with_keys_fn`` that libraries pass to ``register_pytree_node``
    for dict-like nodes.

    Args:
        d (dict): the node.

    Returns:
        tuple: ``([(MappingKey(k), v), ...], [k, ...])``.

    Example::

        >>> _dict_flatten_with_keys({"a": 1})
        ([(MappingKey(key='a'), 1)], ['a'])
    """
    keys = list(d.keys())
    return [(MappingKey(k), d[k]) for k in keys], keys


class SequenceKey:
    """The path entry of a sequence's child: its index.

    Args:
        idx (int): the child's position.

    Example::

        >>> str(SequenceKey(2))
        '[2]'
    """

    def __init__(self, idx):
        self.idx = idx

    def __eq__(self, other):
        return isinstance(other, SequenceKey) and other.idx == self.idx

    def __hash__(self):
        return hash(("SequenceKey", self.idx))

    def __repr__(self):
        return f"SequenceKey(idx={self.idx!r})"

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        """The child this entry names in ``sequence``."""
        return sequence[self.idx]


def _list_flatten_with_keys(d):
    """A list's children paired with their ``SequenceKey`` path entries, and its context
    (None): the ``flatten_with_keys_fn`` that libraries pass to ``register_pytree_node``
    for list-like nodes (tensordict's ``LinkedList``).

    Args:
        d (list): the node.

    Returns:
        tuple: ``([(SequenceKey(0), d[0]), ...], None)``.

    Example::

        >>> _list_flatten_with_keys([7, 8])
        ([(SequenceKey(idx=0), 7), (SequenceKey(idx=1), 8)], None)
    """
    return [(SequenceKey(i), v) for i, v in enumerate(d)], None


def _tuple_flatten_with_keys(d):
    """A tuple's children paired with their ``SequenceKey`` path entries, and its context
    (None), as for lists.

    Args:
        d (tuple): the node.

    Returns:
        tuple: ``([(SequenceKey(0), d[0]), ...], None)``.

    Example::

        >>> _tuple_flatten_with_keys((7,))
        ([(SequenceKey(idx=0), 7)], None)
    """
    return _list_flatten_with_keys(d)


class GetAttrKey:
    """The path entry of an object's child reached by attribute (a namedtuple's field).

    Args:
        name (str): the attribute.

    Example::

        >>> str(GetAttrKey("x"))
        '.x'
    """

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, GetAttrKey) and other.name == self.name

    def __hash__(self):
        return hash(("GetAttrKey", self.name))

    def __repr__(self):
        return f"GetAttrKey(name={self.name!r})"

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        """The child this entry names in ``obj``."""
        return getattr(obj, self.name)


#: a path entry (``SequenceKey``, ``MappingKey`` or ``GetAttrKey``) and a path of them
KeyEntry = Any
KeyPath = tuple
#: a node's context (whatever its unflatten function needs)
Context = Any


def keystr(kp) -> str:
    """A key path as the Python accessor it stands for.

    Args:
        kp (tuple of path entries): the path.

    Returns:
        str.

    Example::

        >>> keystr((MappingKey("a"), SequenceKey(0)))
        "['a'][0]"
    """
    return "".join(str(k) for k in kp)


def _keys_of(x):
    """``x``'s children paired with their path entries, or None for a leaf."""
    node = SUPPORTED_NODES.get(_get_node_type(x))
    if node is not None and node.flatten_with_keys_fn is not None:
        return node.flatten_with_keys_fn(x)[0]
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return [(GetAttrKey(f), v) for f, v in zip(type(x)._fields, x)]
    if isinstance(x, dict):
        return [(MappingKey(k), v) for k, v in x.items()]
    fns = _node_fns(x)
    if fns is None:
        return None
    return [(SequenceKey(i), c) for i, c in enumerate(fns[0](x)[0])]


def _paths_into(x, path, out, is_leaf):
    keyed = None if is_leaf is not None and is_leaf(x) else _keys_of(x)
    if keyed is None:
        out.append((path, x))
        return
    for k, c in keyed:
        _paths_into(c, path + (k,), out, is_leaf)


def tree_flatten_with_path(tree, is_leaf=None):
    """:func:`tree_flatten` with each leaf's key path.

    Args:
        tree: the nested structure.
        is_leaf: as in ``tree_flatten``.

    Returns:
        ``([(path, leaf), ...], spec)``.

    Example::

        >>> [keystr(p) for p, _ in tree_flatten_with_path({"a": [1, 2]})[0]]
        ["['a'][0]", "['a'][1]"]
    """
    out: list = []
    _paths_into(tree, (), out, is_leaf)
    return out, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree, is_leaf=None):
    """The leaves with their key paths.

    Args:
        tree: the nested structure.
        is_leaf: as in ``tree_flatten``.

    Returns:
        list of ``(path, leaf)``.

    Example::

        >>> tree_leaves_with_path((5,))
        [((SequenceKey(idx=0),), 5)]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(fn, tree, *rests, is_leaf=None):
    """:func:`tree_map` whose function also receives each leaf's key path.

    Args:
        fn (callable): ``fn(path, leaf, *matching_leaves_of_rests)``.
        tree: the tree.
        *rests: trees of the same shape.
        is_leaf: as in ``tree_flatten``.

    Returns:
        A tree of the same shape.

    Example::

        >>> tree_map_with_path(lambda p, x: keystr(p), {"a": 1})
        {'a': "['a']"}
    """
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return tree_unflatten([fn(p, x, *(o[i] for o in others))
                           for i, (p, x) in enumerate(pairs)], spec)


def _is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf (no registered container, or ``is_leaf`` says so).

    Args:
        tree: the value.
        is_leaf (callable, optional): as in ``tree_flatten``.

    Returns:
        bool.

    Example::

        >>> _is_leaf(1), _is_leaf([1])
        (True, False)
    """
    return (is_leaf is not None and is_leaf(tree)) or _node_fns(tree) is None


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None,
                          maybe_from_str_fn=None, **kwargs):
    """The older spelling of :func:`register_pytree_node` (the string functions are
    accepted and unused).

    Args:
        cls (type): the container type.
        flatten_fn (callable): ``node -> (children, context)``.
        unflatten_fn (callable): ``(children, context) -> node``.
        to_str_fn, maybe_from_str_fn: accepted for the old signature.
        **kwargs: as :func:`register_pytree_node`.

    Returns:
        None.

    Example::

        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> _register_pytree_node(Pair, lambda p: ([p.a, p.b], None),
        ...                       lambda c, _: Pair(*c))
        >>> tree_leaves(Pair(1, 2))
        [1, 2]
    """
    register_pytree_node(cls, flatten_fn, unflatten_fn, **kwargs)


def _dict_flatten(d):
    """A dict's values and its keys (the context).

    Args:
        d (dict): the node.

    Returns:
        tuple: ``(values, keys)``.

    Example::

        >>> _dict_flatten({"a": 1, "b": 2})
        ([1, 2], ['a', 'b'])
    """
    return list(d.values()), list(d.keys())


def _dict_unflatten(values, context):
    """The dict of ``context``'s keys and ``values``.

    Args:
        values (iterable): the values.
        context (list): the keys.

    Returns:
        dict.

    Example::

        >>> _dict_unflatten([1, 2], ["a", "b"])
        {'a': 1, 'b': 2}
    """
    return dict(zip(context, values))


def _list_flatten(d):
    """A list's items (no context).

    Args:
        d (list): the node.

    Returns:
        tuple: ``(items, None)``.

    Example::

        >>> _list_flatten([1, 2])
        ([1, 2], None)
    """
    return list(d), None


def _list_unflatten(values, context):
    """The list of ``values``.

    Args:
        values (iterable): the items.
        context: unused.

    Returns:
        list.

    Example::

        >>> _list_unflatten((1, 2), None)
        [1, 2]
    """
    return list(values)


def _tuple_flatten(d):
    """A tuple's items (no context).

    Args:
        d (tuple): the node.

    Returns:
        tuple: ``(items, None)``.

    Example::

        >>> _tuple_flatten((1, 2))
        ([1, 2], None)
    """
    return list(d), None


def _tuple_unflatten(values, context):
    """The tuple of ``values``.

    Args:
        values (iterable): the items.
        context: unused.

    Returns:
        tuple.

    Example::

        >>> _tuple_unflatten([1, 2], None)
        (1, 2)
    """
    return tuple(values)
