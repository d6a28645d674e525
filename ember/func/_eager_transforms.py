"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd`` and
``hessian``: function transforms built on ember's reverse-mode autograd.

NOTE [ Transforms on reverse mode ]
A transform differentiates ``func`` with respect to *stand-ins* for its differentiated
arguments:

- when nothing outside can differentiate the result (grad mode off at the call, or the
  argument does not require grad) the stand-in is a private leaf, ``x.detach()`` requiring
  grad;
- otherwise it is ``x.view_as(x)``, attached to ``x``'s graph, so that an enclosing transform
  (or plain ``backward``) can differentiate the result again: ``grad(grad(f))``,
  ``jacfwd(jacrev(f))``.

After the forward pass the graph of the outputs is walked once: if it reaches no leaf other
than the private stand-ins, nothing outside can use a graph of the derivatives, so the
backward runs with ``create_graph=False`` and the results are detached (as PyTorch's
transforms return plain tensors there); otherwise it runs with ``create_graph=True``. Each
transform call owns its stand-ins, so nested transforms never confuse their perturbations.

A transform's result does not depend on grad mode outside it (grad mode is enabled inside),
but ``torch.no_grad()`` *inside* ``func`` is honoured, as in PyTorch.

``jvp``, ``linearize`` and ``jacfwd`` run on forward-mode AD (NOTE [ Forward-mode AD as a
mode ] in ember/autograd/_forward.py): each opens its own dual level, so they nest with each
other, with ``vmap`` and with the reverse transforms (``jacfwd(jacrev(f))``, ``jvp(grad(f))``,
``vmap(jvp(f))``: stand-ins and detached results keep enclosing levels' tangents; NOTE [ Dual
levels inside vmap ] there). ``linearize``'s ``jvp_fn`` runs ``func`` again, forward, at the
saved primals.

NOTE [ jacfwd by vmap ]
A forward-mode Jacobian is the ``jvp`` of every basis vector of the input space. ``jacfwd``
runs that ``jvp`` once under ``vmap`` over the stacked basis (one block of identity columns
per differentiated input): the tangents are batched tensors, so ``func`` runs once on the
primals and every tangent formula runs once on the whole batch of tangents (PyTorch's
``jacfwd`` does the same). The batch of output tangents, basis index first, is the Jacobian
transposed; it is moved last and split into one block per input. ``hessian`` is
``jacfwd(jacrev(f))``: the batched backward pass of ``jacrev`` (NOTE [ jacrev by vmap ])
runs inside the dual level, its formulas carrying batched tangents.
"""

from __future__ import annotations

import functools

from .._core.tensor import Tensor
from .. import _C_functorch
from ..autograd import _forward
from ..autograd._base import AccumulateGrad
from ..autograd._engine import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..utils._pytree import tree_flatten, tree_unflatten
from ._batch_rules import mark_private

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]


# ------------------------------------------------------------------------------------------------
# plumbing shared by the transforms


def _spec_str(spec):
    """A tree spec written as PyTorch writes it in error messages: ``(*, [*, *])``."""
    if spec.is_leaf():
        return "*"
    children = [_spec_str(c) for c in spec.children_specs]
    if spec.type is tuple:
        return "(" + ", ".join(children) + ("," if len(children) == 1 else "") + ")"
    if spec.type is list:
        return "[" + ", ".join(children) + "]"
    if spec.context is not None and isinstance(spec.context, list):
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(spec.context, children)) + "}"
    return f"{spec.type.__name__}(" + ", ".join(children) + ")"


def _check_argnums(argnums, num_args):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        for a in argnums:
            if not isinstance(a, int) or isinstance(a, bool):
                raise RuntimeError(
                    f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = []
    for a in nums:
        if not -num_args <= a < num_args:
            raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")
        wrapped.append(a % num_args)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(wrapped)


def _diff_args(args, argnums):
    """The differentiated part of ``args``: ``args[argnums]`` or a tuple of them."""
    nums = _check_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return nums, args[nums[0]]
    return nums, tuple(args[i] for i in nums)


def _replace_args(args, nums, argnums, new):
    args = list(args)
    if isinstance(argnums, int):
        args[nums[0]] = new
    else:
        for i, v in zip(nums, new):
            args[i] = v
    return tuple(args)


def _keep_tangents(x):
    """``x.detach()`` keeping the forward-mode tangents of enclosing dual levels, so that
    a reverse transform inside ``jvp`` is differentiated forward (forward-over-reverse)."""
    return _forward.detach_keep_tangents(x)


def _check_tensors(leaves):
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _stand_ins(leaves, outer_grad):
    """Stand-ins for ``leaves`` (NOTE [ Transforms on reverse mode ]) and the set of ids of
    the private ones."""
    res, private = [], set()
    for x in leaves:
        if outer_grad and x.requires_grad:
            res.append(x.view_as(x))
        else:
            s = _keep_tangents(x).requires_grad_(True)
            private.add(id(s))
            mark_private(s)
            res.append(s)
    return res, private


def _is_private(t, private):
    """Whether leaf ``t`` is a private stand-in: of this call (``private``) or of a
    transform call that has finished (the inner ``jacrev`` of ``jacrev(jacrev(f))``): no one
    can ask for the gradients of those any more, so a graph reaching them leads nowhere
    outside, and the results carry no graph, as PyTorch's."""
    return id(t) in private or t.__dict__.get("_transform_done", False)


def _reaches_outside(tensors, private):
    """Whether the graph of ``tensors`` reaches a leaf other than the ``private`` stand-ins
    (then the derivatives must carry a graph; NOTE [ Transforms on reverse mode ])."""
    seen = set()
    stack = []
    for t in tensors:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        fn = t.grad_fn
        if fn is None:
            if not _is_private(t, private):
                return True
        else:
            stack.append(fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            if not _is_private(node.variable, private):
                return True
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return False


def _detach_tree(tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([_keep_tangents(x) if isinstance(x, Tensor) else x for x in leaves],
                          spec)


def _zeros_where_none(grads, refs):
    return [r.new_zeros(r.shape) if g is None else g for g, r in zip(grads, refs)]


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for x in tree_flatten(out[1])[0]:
        if not isinstance(x, Tensor):  # PyTorch's transforms return aux tensors only
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return out


class _Pullback:
    """The recorded forward pass of one transform call: its stand-ins, outputs and whether
    the derivatives need a graph. ``vjp(cotangent_leaves)`` runs one backward pass."""

    def __init__(self, func, args, kwargs, argnums, api, has_aux=False):
        self.outer_grad = is_grad_enabled()
        with enable_grad():
            self.nums, diff = _diff_args(args, argnums)
            leaves, self.in_spec = tree_flatten(diff)
            _check_tensors(leaves)
            self.ins, private = _stand_ins(leaves, self.outer_grad)
            new_args = _replace_args(args, self.nums, argnums,
                                     tree_unflatten(self.ins, self.in_spec))
            with _C_functorch.layer("grad"):
                out, self.aux = _split_aux(func(*new_args, **kwargs), has_aux, api)
        self.out = out
        self.out_leaves, self.out_spec = tree_flatten(out)
        self.private_ins = [x for x in self.ins if id(x) in private]
        self.create_graph = self.outer_grad and _reaches_outside(
            self.out_leaves + tree_flatten(self.aux)[0], private)

    def release(self):
        """Mark the private stand-ins finished with (see ``_is_private``)."""
        for x in self.private_ins:
            x.__dict__["_transform_done"] = True

    def finish(self, tree):
        """Detach ``tree`` unless derivatives carry a graph."""
        return tree if self.create_graph else _detach_tree(tree)

    def vjp(self, cotangents, outputs=None, retain_graph=True):
        """Gradients of ``outputs`` (default: all outputs) w.r.t. every stand-in."""
        outputs = self.out_leaves if outputs is None else outputs
        create = self.create_graph or (is_grad_enabled() and any(
            isinstance(c, Tensor) and c.requires_grad for c in cotangents))
        pairs = [(o, c) for o, c in zip(outputs, cotangents)
                 if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            return _zeros_where_none([None] * len(self.ins), self.ins)
        with enable_grad():
            grads = _autograd_grad([o for o, _ in pairs], self.ins, [c for _, c in pairs],
                                   retain_graph=retain_graph or create, create_graph=create,
                                   allow_unused=True)
        grads = _zeros_where_none(grads, self.ins)
        return grads if create else [_keep_tangents(g) for g in grads]


# ------------------------------------------------------------------------------------------------
# grad / grad_and_value


def grad_and_value(func, argnums=0, has_aux=False):
    """Transform ``func`` (returning a scalar tensor) into a function returning
    ``(gradient, value)``: the gradient with respect to the ``argnums`` arguments and
    ``func``'s output.

    Args:
        func (callable): returns a one-element tensor, or ``(tensor, aux)`` with ``has_aux``.
        argnums (int or tuple of ints): which positional arguments to differentiate; each
            may be a tensor or a nested list/tuple/dict of tensors. Default: 0.
        has_aux (bool): ``func`` returns ``(output, aux)``; aux is passed through.
            Default: False.

    Returns:
        A function returning ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``.
        ``grad`` has the structure of ``args[argnums]`` (a tuple of them for tuple argnums).

    Example:
        >>> import ember
        >>> g, v = grad_and_value(lambda x: (x ** 2).sum())(ember.tensor([1., 2.]))
        >>> g, v
        (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        pb = _Pullback(func, args, kwargs, argnums, api, has_aux)
        out = pb.out
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(
                f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        with _C_functorch.layer("grad"):  # the backward pass too: NOTE [ Transform layers ]
            grads = pb.vjp([None], retain_graph=False)
        pb.release()
        grads = tree_unflatten(grads, pb.in_spec)
        value = pb.finish(out)
        if has_aux:
            return grads, (value, pb.finish(pb.aux))
        return grads, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """Transform ``func`` (returning a scalar tensor) into a function computing its gradient
    with respect to the ``argnums`` arguments. Composes with itself and the other
    transforms: ``grad(grad(f))``, ``vmap(grad(f))``.

    Args:
        func (callable): returns a one-element tensor, or ``(tensor, aux)`` with ``has_aux``.
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): ``func`` returns ``(output, aux)``; the transformed function then
            returns ``(grad, aux)``. Default: False.

    Returns:
        A function returning the gradient (structured like ``args[argnums]``).

    Example:
        >>> import ember
        >>> grad(lambda x: x.sin().sum())(ember.tensor([0.]))
        tensor([1.])
        >>> grad(grad(lambda x: x ** 3))(ember.tensor(2.))
        tensor(12.)
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


# ------------------------------------------------------------------------------------------------
# vjp / jvp / linearize


def _check_only_tensors(leaves, api, what):
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(
                f"{api}: expected {what} to return only tensors, got unsupported type {type(x)}")


def vjp(func, *primals, has_aux=False):
    """Run ``func(*primals)`` and return its output with a function computing vector-Jacobian
    products at ``primals``.

    Args:
        func (callable): takes the primals, returns a tensor or a nested structure of them.
        *primals: tensors or nested lists/tuples/dicts of tensors.
        has_aux (bool): ``func`` returns ``(output, aux)``. Default: False.

    Returns:
        ``(output, vjp_fn)`` or ``(output, vjp_fn, aux)``. ``vjp_fn(cotangents)`` takes
        cotangents structured like ``output`` and returns a tuple with one gradient per
        primal; it may be called several times.

    Example:
        >>> import ember
        >>> out, vjp_fn = vjp(lambda x: x ** 2, ember.tensor([1., 2.]))
        >>> vjp_fn(ember.ones(2))
        (tensor([2., 4.]),)
    """
    api = "vjp(f, *primals)"
    if not primals:
        raise RuntimeError(f"{api}: expected at least one primal")
    pb = _Pullback(func, primals, {}, tuple(range(len(primals))), api, has_aux)
    if not pb.out_leaves or pb.out is None:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output "
                           f"(got output = {pb.out_leaves})")
    _check_only_tensors(pb.out_leaves, api, "f(*primals)")

    def vjp_fn(cotangents):
        leaves, spec = tree_flatten(cotangents)
        if spec != pb.out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {_spec_str(spec)}, primal output: "
                f"{_spec_str(pb.out_spec)}")
        for c in leaves:
            if not isinstance(c, Tensor):
                raise RuntimeError(
                    f"Expected cotangents to be tensors, got unsupported type {type(c)}")
        for i, (c, o) in enumerate(zip(leaves, pb.out_leaves)):
            if c.shape != o.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape} and "
                    f"output[{i}] has a shape of {o.shape}.")
        return tree_unflatten(pb.vjp(leaves), pb.in_spec)

    out = pb.finish(pb.out)
    if has_aux:
        return out, vjp_fn, pb.finish(pb.aux)
    return out, vjp_fn


def _check_primals_tangents(primals, tangents, api):
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{api}: Expected primals to be a tuple. E.g. it should be valid to call "
            "f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor):
            raise RuntimeError(
                f"{api}: Expected primals to be a tuple of tensors, got {type(p)}")
        if not isinstance(t, Tensor):
            raise RuntimeError(
                f"{api}: Expected tangents to be a tuple of tensors, got {type(t)}")
        _check_differentiable(p)
        if p.shape != t.shape:
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} "
                f"while the given forward gradient is of size {list(t.shape)}.")
    return t_leaves


def _check_differentiable(p):
    if not (p.dtype.is_floating_point or p.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {p.dtype}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """Run ``func(*primals)`` and compute its Jacobian-vector product with ``tangents`` by
    forward-mode AD (one pass of ``func`` inside a dual level).

    Args:
        func (callable): takes the primals, returns a tensor or a nested structure of them.
        primals (tuple): the point: tensors or nested structures of them.
        tangents (tuple): one tangent per primal tensor, same structure and shapes.
        strict (bool): raise if an output does not depend on the inputs. Default: False.
        has_aux (bool): ``func`` returns ``(output, aux)``. Default: False.

    Returns:
        ``(output, jvp_out)`` or ``(output, jvp_out, aux)``; ``jvp_out`` is structured like
        ``output``.

    Example:
        >>> import ember
        >>> jvp(lambda x: x ** 2, (ember.tensor([1., 2.]),), (ember.ones(2),))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    api = "jvp(f, primals, tangents)"
    t_leaves = _check_primals_tangents(primals, tangents, api)
    out, jvp_out, aux = _forward_pass(func, primals, t_leaves, api, has_aux, strict)
    if has_aux:
        return out, jvp_out, aux
    return out, jvp_out


def linearize(func, *primals):
    """Run ``func(*primals)`` once and return its output with a function computing
    Jacobian-vector products at ``primals`` without running ``func`` again.

    Args:
        func (callable): takes the primals, returns a tensor or a nested structure of them.
        *primals: tensors or nested structures of them.

    Returns:
        ``(output, jvp_fn)``: ``jvp_fn(*tangents)`` takes one tangent per primal and
        returns the product, structured like ``output``.

    Example:
        >>> import ember
        >>> out, jvp_fn = linearize(lambda x: x ** 2, ember.tensor([1., 2.]))
        >>> jvp_fn(ember.ones(2))
        tensor([2., 4.])
    """
    api = "linearize(f, *primals)"
    p_leaves, p_spec = tree_flatten(primals)
    zeros = [p.new_zeros(p.shape) if isinstance(p, Tensor) else p for p in p_leaves]
    out, _, _ = _forward_pass(func, primals, zeros, api, only_tensors=False)
    # the point is fixed: later calls see these primals even if the caller's change
    frozen = tree_unflatten([p.detach().clone() if isinstance(p, Tensor) else p
                             for p in p_leaves], p_spec)

    def jvp_fn(*tangents):
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(
                f"Expected the tangents {_spec_str(t_spec)} to have the same structure as the "
                f"primals {_spec_str(p_spec)}.")
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if not isinstance(t, Tensor) or t.shape != p.shape:
                shape = t.shape if isinstance(t, Tensor) else type(t)
                raise RuntimeError(
                    f"tangent:{i} with shape {shape} in flattened pytree doesn't match the "
                    f"shape {p.shape} of the corresponding primal.")
        return _forward_pass(func, frozen, t_leaves, api, only_tensors=False)[1]

    return out, jvp_fn


def _forward_pass(func, primals, t_leaves, api, has_aux=False, strict=False,
                  only_tensors=True):
    """``func(*primals)`` inside a fresh dual level with ``t_leaves`` as the primals'
    tangents: ``(output, tangent of the output, aux)``. Levels nest (``jacfwd(jacfwd(f))``),
    and the output tangents keep enclosing levels' tangents and reverse-mode graphs. Without
    ``only_tensors`` (``linearize``, as PyTorch's) a non-tensor output stands for itself in
    the tangents."""
    from .. import zeros_like

    p_leaves, p_spec = tree_flatten(primals)
    lvl = _forward.enter(nested_ok=True)
    try:
        duals = []
        for p, t in zip(p_leaves, t_leaves):
            if isinstance(p, Tensor) and p.dtype.is_floating_point or \
                    isinstance(p, Tensor) and p.is_complex():
                d = p.view_as(p)
                _forward.set_tangent(d, lvl, t if t.dtype == p.dtype else t.to(p.dtype))
                duals.append(d)
            else:
                duals.append(p)
        with _C_functorch.layer("jvp"):  # NOTE [ Transform layers ]
            res = func(*tree_unflatten(duals, p_spec))
        out, aux = _split_aux(res, has_aux, api)
        o_leaves, o_spec = tree_flatten(out)
        if only_tensors:
            _check_only_tensors(o_leaves, api, "f(*primals)")
        tans = []
        for o in o_leaves:
            if not isinstance(o, Tensor):
                tans.append(o)
                continue
            t = _forward.get_tangent(o, lvl)
            if t is None:
                if strict:
                    raise RuntimeError(
                        "jvp(f, primals, tangents, strict=True): The output of f is "
                        "independent of the inputs. This is not allowed with strict=True.")
                t = zeros_like(o)
            tans.append(t)
    finally:
        _forward.exit_level(lvl)
    return out, tree_unflatten(tans, o_spec), aux


# ------------------------------------------------------------------------------------------------
# jacrev / jacfwd / hessian


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Transform ``func`` into a function computing its Jacobian with respect to the
    ``argnums`` arguments by reverse mode: one backward pass, batched over the output
    elements by ``vmap`` (NOTE [ jacrev by vmap ]).

    Args:
        func (callable): returns a tensor or a nested structure of tensors (``(output, aux)``
            with ``has_aux``).
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): ``func`` returns ``(output, aux)``. Default: False.
        chunk_size (int, optional): how many rows of the Jacobian one batched backward pass
            computes (less memory at once); must be positive. Default: None (all rows).

    Returns:
        A function returning the Jacobian: structured like the output, each leaf holding
        tensors of shape ``output.shape + input.shape`` structured like ``args[argnums]``.

    Example:
        >>> import ember
        >>> jacrev(lambda x: x ** 2)(ember.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        # NOTE [ jacrev by vmap ] in ember/func/_batch_jacobian.py: one batched backward pass
        from ._batch_jacobian import jacobian_by_vmap

        api = "jacrev(f, argnums)(*args)"
        pb = _Pullback(func, args, kwargs, argnums, api, has_aux)
        # (PyTorch's message names the vjp that each row is)
        _check_only_tensors(pb.out_leaves, "vjp(f, *primals)", "f(*primals)")
        with _C_functorch.layer("grad"):  # the backward pass too: NOTE [ Transform layers ]
            jac = jacobian_by_vmap(pb, chunk_size)
        pb.release()
        return (jac, pb.finish(pb.aux)) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Transform ``func`` into a function computing its Jacobian with respect to the
    ``argnums`` arguments by forward mode: one pass of ``func`` whose tangents are the whole
    basis of the input space, batched by ``vmap`` (NOTE [ jacfwd by vmap ]).

    Args:
        func (callable): returns a tensor or a nested structure of tensors.
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): ``func`` returns ``(output, aux)``. Default: False.
        randomness (str): the ``vmap`` over the basis's flag: ``"error"`` (random ops
            raise), ``"different"`` or ``"same"``. Default: ``"error"``.

    Returns:
        A function returning the Jacobian, structured as ``jacrev``'s.

    Example:
        >>> import ember
        >>> jacfwd(lambda x: x.sin())(ember.tensor([0.]))
        tensor([[1.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "jacfwd(f, argnums)(*args)"
        return _jacobian_fwd(func, argnums, has_aux, api, args, kwargs, randomness)

    return wrapper


def _jacobian_fwd(func, argnums, has_aux, api, args, kwargs, randomness="error"):
    """The Jacobian by forward mode in one batched pass (NOTE [ jacfwd by vmap ]), arranged
    as ``jacrev`` arranges it."""
    from .. import zeros
    from ._vmap import vmap

    nums, diff = _diff_args(args, argnums)
    in_leaves, in_spec = tree_flatten(diff)
    _check_tensors(in_leaves)
    for i, x in enumerate(in_leaves):
        if x.is_complex():
            raise RuntimeError(
                "jacfwd: Expected all inputs to be real but received complex tensor at "
                f"flattened input idx: {i}")
        _check_differentiable(x)
    numels = [x.nelement() for x in in_leaves]
    total = sum(numels)
    api = "jvp(f, primals, tangents)"  # the messages name the jvp each column is, as torch's

    def run(*tangents):
        def f(*d):
            return func(*_replace_args(args, nums, argnums, tree_unflatten(list(d), in_spec)),
                        **kwargs)

        out, t, a = _forward_pass(f, tuple(in_leaves), list(tangents), api, has_aux)
        for o in tree_flatten(out)[0]:
            if o.is_complex():
                raise RuntimeError(
                    "jacfwd: Expected all outputs to be real but received complex tensor at "
                    "flattened input idx: 0")
        return (t, a) if has_aux else t

    if total == 0:  # every input is empty: one pass for the output's structure
        res = run(*[x.new_zeros(x.shape) for x in in_leaves])
        tans, aux = res if has_aux else (res, None)
        out_leaves, out_spec = tree_flatten(tans)
        cols = [tree_unflatten([o.new_zeros(tuple(o.shape) + tuple(x.shape))
                                for x in in_leaves], in_spec) for o in out_leaves]
        jac = tree_unflatten(cols, out_spec)
        return (jac, aux) if has_aux else jac
    # the standard basis of the flattened inputs, one block of columns per input
    basis = []
    start = 0
    for x, n in zip(in_leaves, numels):
        b = zeros((total, n), dtype=x.dtype, device=x.device)
        if n:
            b[start:start + n].fill_diagonal_(1)
        basis.append(b.view((total,) + tuple(x.shape)))
        start += n
    res = vmap(run, randomness=randomness)(*basis)
    if has_aux:
        tans, aux = res
        # aux came out batched over the basis like the tangents: every row is the same value
        aux_leaves, aux_spec = tree_flatten(aux)
        aux = tree_unflatten([a[0] if isinstance(a, Tensor) else a for a in aux_leaves],
                             aux_spec)
    else:
        tans = res
    out_leaves, out_spec = tree_flatten(tans)
    cols = []
    for t in out_leaves:
        # t: (total,) + output shape; the Jacobian wants output shape + input shape
        t = t.movedim(0, -1)
        pieces = t.split(numels, dim=-1)
        cols.append(tree_unflatten(
            [p.reshape(tuple(t.shape[:-1]) + tuple(x.shape))
             for p, x in zip(pieces, in_leaves)], in_spec))
    jac = tree_unflatten(cols, out_spec)
    return (jac, aux) if has_aux else jac


def hessian(func, argnums=0):
    """Transform ``func`` into a function computing its Hessian with respect to the
    ``argnums`` arguments: ``jacfwd(jacrev(func, argnums), argnums)``.

    Args:
        func (callable): returns a tensor (usually a scalar).
        argnums (int or tuple of ints): which positional arguments. Default: 0.

    Returns:
        A function returning the Hessian, of shape ``output.shape + input.shape +
        input.shape`` for one tensor argument.

    Example:
        >>> import ember
        >>> hessian(lambda x: (x ** 3).sum())(ember.tensor([1., 2.]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
