"""Higher-level autograd on functions: PyTorch's ``torch.autograd.functional``.

``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp`` take a function of tensors and
the point to differentiate at, and return derivatives of the function there. Everything is
built on reverse mode (``autograd.grad``):

- a vector-Jacobian product is one backward pass;
- a Jacobian-vector product uses the double-backward trick (NOTE [ Double-vjp trick ]);
- a Jacobian is one backward pass per output element, stacked, or with ``vectorize=True``
  one backward pass batched by ``vmap`` over the basis of the outputs' space;
- a Hessian is the Jacobian of the gradient.

NOTE [ Double-vjp trick ]
``g(u) = J^T u`` (the vjp at a dummy cotangent ``u`` that requires grad, computed with
``create_graph=True``) is linear in ``u``; its own vjp at ``v`` is ``J v``, the forward-mode
product, computed by a second reverse pass. It costs two backward passes instead of one
forward pass but is exact, and works for any function whose backward is differentiable,
which holds for every ember op (vjp rules are written in ember ops).

``vectorize=True`` gives the same numbers as ``vectorize=False`` in one batched backward
pass (NOTE [ jacrev by vmap ] in ember/func/_batch_jacobian.py), as PyTorch's does.
``strategy="forward-mode"`` (with ``vectorize=True``, as PyTorch requires) computes Jacobians
by forward-mode AD: one pass of ``func`` whose tangents are the whole basis of the inputs'
space, batched by ``vmap`` (NOTE [ jacfwd by vmap ] in ember/func/_eager_transforms.py); the
Hessian's ``outer_jacobian_strategy="forward-mode"`` is forward-over-reverse. That path
returns lists where PyTorch's does (tuple inputs), and, as PyTorch's, does not detach its
results: they require grad whenever the computation does (a Hessian always does, its inner
gradient being taken with ``create_graph=True``), and backpropagate through the tangents.
The combinations PyTorch rejects raise its errors.
"""

from __future__ import annotations

from .._core.tensor import Tensor
from . import _forward
from ._engine import grad as _autograd_grad_fn
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


# ------------------------------------------------------------------------------------------------
# argument plumbing


def _as_tuple(value, arg_name, fn_name):
    """``(was_tuple, tuple_of_tensors)``; a non-tensor raises PyTorch's TypeError."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if was_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the {where} has type {type(el)}.")
    return was_tuple, items


def _untuple(res, was_tuple):
    """Undo ``_as_tuple``: ``was_tuple`` is one flag, or ``(outer, inner)`` for nested
    results (Jacobians: one tuple per output, each with one entry per input)."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(el[0] for el in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Stand-ins for ``inputs`` to differentiate with respect to: a view keeps an input that
    requires grad attached to its graph when the result must be differentiable
    (``create_graph``); otherwise a detached copy is enough."""
    # detaching keeps enclosing dual levels' tangents (forward-over-reverse hessian)
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else _forward.detach_keep_tangents(x).requires_grad_(need_graph)
                 for x in inputs)


def _finish(values, create_graph):
    """Detach results unless the caller asked for a differentiable graph (nested tuples)."""
    if create_graph:
        return values
    return tuple(_forward.detach_keep_tangents(v) if isinstance(v, Tensor)
                 else _finish(v, create_graph) for v in values)


def _check_v(v, other, other_was_tuple):
    if len(v) != len(other):
        if other_was_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.size() != b.size():
            where = f"Entry {i} in " if other_was_tuple else ""
            raise RuntimeError(
                f"{where}v has invalid size: should be {b.size()} but got {a.size()}.")


_STRICT_MESSAGES = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
}


def _check_requires_grad(values, kind, strict):
    """In strict mode, every value must be a tensor attached to the inputs' graph."""
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode.")
        if not v.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` that skips outputs not attached to a graph and answers None for
    inputs the outputs do not reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _autograd_grad_fn(tuple(o for o, _ in pairs), inputs, tuple(g for _, g in pairs),
                             retain_graph=retain_graph, create_graph=create_graph,
                             allow_unused=True)


_ZERO_FILL_MESSAGES = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _zeros_for_none(grads, refs, strict, create_graph, stage):
    """Replace missing gradients by zeros shaped like ``refs`` (strict mode raises instead)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_FILL_MESSAGES[stage].format(i=i))
            g = refs[i].new_zeros(refs[i].shape)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, refs, refs_were_tuple, create_graph, fn_name, none_message):
    if v is None:
        if len(refs) != 1 or refs[0].nelement() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, refs, refs_were_tuple)
    return v


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single "
                  "Tensor with a single element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
                 "single Tensor with a single element.")


# ------------------------------------------------------------------------------------------------
# vjp / jvp


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``.

    Args:
        func (callable): takes tensors (one per input) and returns a tensor or a tuple of them.
        inputs (Tensor or tuple of Tensors): the point.
        v (Tensor or tuple of Tensors, optional): one vector per output, of its shape; may be
            None when ``func`` returns a single one-element tensor.
        create_graph (bool): make the results differentiable. Default: False.
        strict (bool): raise if an output does not depend on the inputs. Default: False.

    Returns:
        ``(func_output, vjp)``: ``vjp`` has one tensor per input (a tuple when ``inputs``
        is a tuple).

    Example:
        >>> import ember
        >>> out, g = vjp(lambda x: x ** 2, ember.tensor([1., 2.]), ember.ones(2))
        >>> g
        tensor([2., 4.])
    """
    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_were_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, outputs_were_tuple, create_graph, "vjp", _V_NONE_OUTPUT)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        grads = _zeros_for_none(grads, inputs, strict, create_graph, "back")
    return (_untuple(_finish(outputs, create_graph), outputs_were_tuple),
            _untuple(_finish(grads, create_graph), inputs_were_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``, computed with two
    reverse passes (see NOTE [ Double-vjp trick ]).

    Args:
        func (callable): takes tensors (one per input) and returns a tensor or a tuple of them.
        inputs (Tensor or tuple of Tensors): the point.
        v (Tensor or tuple of Tensors, optional): one vector per input, of its shape; may be
            None when the input is a single one-element tensor.
        create_graph (bool): make the results differentiable. Default: False.
        strict (bool): raise if an output does not depend on the inputs. Default: False.

    Returns:
        ``(func_output, jvp)``: ``jvp`` has one tensor per output.

    Example:
        >>> import ember
        >>> out, t = jvp(lambda x: x ** 2, ember.tensor([1., 2.]), ember.ones(2))
        >>> t
        tensor([2., 4.])
    """
    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_were_tuple, create_graph, "jvp", _V_NONE_INPUT)
        outputs = func(*inputs)
        outputs_were_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        dummies = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        res = _zeros_for_none(res, outputs, strict, create_graph, "back_trick")
    return (_untuple(_finish(outputs, create_graph), outputs_were_tuple),
            _untuple(_finish(res, create_graph), outputs_were_tuple))


# ------------------------------------------------------------------------------------------------
# jacobian / hessian


def _check_strategy(strategy, create_graph, strict, vectorize, fn_name, for_hessian=False):
    if strategy not in ("forward-mode", "reverse-mode"):
        if for_hessian:
            raise AssertionError(
                'Expected strategy to be either "forward-mode" or "reverse-mode".')
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "reverse-mode":
        return
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`create_graph=False` or `strategy="reverse-mode"`.')
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.')
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
            "implemented for `vectorize=True`.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: one backward pass per output element, or one
    batched pass for all of them with ``vectorize=True``.

    Args:
        func (callable): takes tensors (one per input) and returns a tensor or a tuple of them.
        inputs (Tensor or tuple of Tensors): the point.
        create_graph (bool): make the Jacobian differentiable. Default: False.
        strict (bool): raise if an output does not depend on an input. Default: False.
        vectorize (bool): compute all the rows in one backward pass batched by ``vmap``
            (same result, usually much faster). Default: False.
        strategy (str): ``"reverse-mode"`` or ``"forward-mode"`` (needs
            ``vectorize=True``). Default: ``"reverse-mode"``.

    Returns:
        A tensor of shape ``output.shape + input.shape`` for one input and one output; a tuple
        over inputs for tuple inputs, over outputs for tuple outputs, and a tuple (per output)
        of tuples (per input) when both are tuples.

    Example:
        >>> import ember
        >>> jacobian(lambda x: x ** 2, ember.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    _check_strategy(strategy, create_graph, strict, vectorize,
                    "torch.autograd.functional.jacobian")
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs)
    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        outputs_were_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or "
                "`vectorize=False`.")
        if vectorize:
            jac = _jacobian_vectorized(outputs, inputs, create_graph)
        else:
            jac = tuple(_jacobian_rows(i, out, inputs, create_graph, strict)
                        for i, out in enumerate(outputs))
        return _untuple(_finish(jac, create_graph), (outputs_were_tuple, inputs_were_tuple))


def _basis(tensors):
    """The standard basis of the flattened ``tensors`` together: one tensor per entry, of
    shape ``(total,) + t.shape``, row ``j`` one-hot in element ``j`` of the concatenation."""
    from .. import zeros

    numels = [t.nelement() for t in tensors]
    total = sum(numels)
    basis, start = [], 0
    for t, n in zip(tensors, numels):
        b = zeros((total, n), dtype=t.dtype, device=t.device)
        if n:
            b[start:start + n].fill_diagonal_(1)
        basis.append(b.view((total,) + tuple(t.shape)))
        start += n
    return basis, numels, total


def _split_rows(batched, numels, refs, first_shape):
    """``batched``: a tensor ``(total,) + shape``; its rows split into one block per
    ``refs`` entry, each reshaped ``first_shape + ref.shape`` (rows as the trailing dims
    when ``first_shape`` comes first, as a Jacobian's columns)."""
    return tuple(p.reshape(tuple(first_shape) + tuple(r.shape))
                 for p, r in zip(batched.split(numels, dim=-1), refs))


def _jacobian_vectorized(outputs, inputs, create_graph):
    """``vectorize=True``: every row of the Jacobian in one backward pass, batched by ``vmap``
    over the basis of the outputs' space (NOTE [ jacrev by vmap ] in
    ember/func/_batch_jacobian.py)."""
    from ..func._vmap import vmap

    live = [o for o in outputs if o.requires_grad]
    basis, numels, total = _basis(outputs)
    if total == 0 or not live:
        return tuple(tuple(x.new_zeros(tuple(o.shape) + tuple(x.shape)) for x in inputs)
                     for o in outputs)

    def rows(*cotangents):
        g = _grad(outputs, inputs, cotangents, create_graph=create_graph, retain_graph=True)
        return tuple(x.new_zeros(x.shape) if gi is None else gi for gi, x in zip(g, inputs))

    per_input = vmap(rows)(*basis)
    # per_input[k]: (total,) + inputs[k].shape, row j the gradient of output element j
    blocks = [r.reshape(total, -1).split(numels, dim=0) for r in per_input]
    return tuple(tuple(blocks[k][i].reshape(tuple(o.shape) + tuple(x.shape))
                       for k, x in enumerate(inputs))
                 for i, o in enumerate(outputs))


def _jacobian_forward(func, inputs):
    """``strategy="forward-mode"``: one pass of ``func`` inside a dual level whose tangents
    are the whole basis of the input space, batched by ``vmap`` (NOTE [ jacfwd by vmap ] in
    ember/func/_eager_transforms.py); the output tangents are the Jacobian's columns."""
    from ..func._vmap import vmap

    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    basis, numels, total = _basis(inputs)
    structure = []

    def columns(*tangents):
        lvl = _forward.enter(nested_ok=True)
        try:
            duals = []
            for p, t in zip(inputs, tangents):
                d = p.view_as(p)
                _forward.set_tangent(d, lvl, t)
                duals.append(d)
            out = func(*duals)
            was_tuple, outs = _as_tuple(out, "outputs of the user-provided function",
                                        "jacobian")
            structure[:] = [was_tuple, outs]
            tans = [_forward.get_tangent(o, lvl) for o in outs]
            return tuple(o.new_zeros(o.shape) if t is None else t for t, o in zip(tans, outs))
        finally:
            _forward.exit_level(lvl)

    if total == 0:
        outputs_were_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian")
        jac = tuple(tuple(o.new_zeros(tuple(o.shape) + tuple(x.shape)) for x in inputs)
                    for o in outputs)
        return _untuple(jac, (outputs_were_tuple, inputs_were_tuple))
    cols = vmap(columns)(*basis)
    outputs_were_tuple, outputs = structure
    # cols[i]: (total,) + outputs[i].shape; the Jacobian wants the basis index last. PyTorch
    # returns lists (not tuples) on this path, and so does ember
    jac = [list(_split_rows(c.movedim(0, -1), numels, inputs, o.shape))
           for c, o in zip(cols, outputs)]
    return _untuple(jac, (outputs_were_tuple, inputs_were_tuple))


def _jacobian_rows(i, out, inputs, create_graph, strict):
    """The Jacobians of output ``i`` with respect to each input: a backward pass per element
    of ``out`` with a one-hot cotangent, the rows stacked."""
    from .. import stack

    rows = [[] for _ in inputs]
    n = out.nelement()
    flat_shape = (n,)
    for j in range(n):
        onehot = out.new_zeros(flat_shape)
        onehot[j] = 1
        vj = _grad((out,), inputs, (onehot.view(out.shape),), create_graph=create_graph,
                   retain_graph=True)
        for k, (g, x) in enumerate(zip(vj, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input "
                        f"{k}. This is not allowed in strict mode.")
                g = x.new_zeros(x.shape)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode when create_graph=True.")
            rows[k].append(g)
    return tuple(
        (stack(r, 0) if r else x.new_zeros((0,) + tuple(x.shape))).view(
            tuple(out.shape) + tuple(x.shape))
        for r, x in zip(rows, inputs))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its
    gradient.

    Args:
        func (callable): takes tensors and returns a tensor with a single element.
        inputs (Tensor or tuple of Tensors): the point.
        create_graph (bool): make the Hessian differentiable. Default: False.
        strict (bool): raise if the Hessian is independent of an input. Default: False.
        vectorize (bool): batch the outer Jacobian's passes with ``vmap`` (same result).
            Default: False.
        outer_jacobian_strategy (str): ``"reverse-mode"`` or ``"forward-mode"``
            (forward-over-reverse; needs ``vectorize=True``). Default: ``"reverse-mode"``.

    Returns:
        A tensor of shape ``input.shape + input.shape`` for one input; for tuple inputs a
        tuple of tuples, entry ``[i][j]`` of shape ``inputs[i].shape + inputs[j].shape``.

    Example:
        >>> import ember
        >>> hessian(lambda x: (x ** 3).sum(), ember.tensor([1., 2.]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*inp):
        out = func(*inp)
        out_was_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_was_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(scalar_func, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _untuple(res, (inputs_were_tuple, inputs_were_tuple))


# ------------------------------------------------------------------------------------------------
# vhp / hvp


def _scalar_outputs(func, inputs, strict, fn_name):
    outputs = func(*inputs)
    outputs_were_tuple, outputs = _as_tuple(
        outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_were_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element")
    return outputs_were_tuple, outputs


def _gradient_at(func, inputs, v, create_graph, strict, name):
    """What vhp and hvp start from (under enable_grad): the checked inputs and vectors,
    ``func``'s scalar output, and its gradient with a graph."""
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _prepare_v(v, inputs, inputs_were_tuple, create_graph, name, _V_NONE_INPUT)
    outputs_were_tuple, outputs = _scalar_outputs(func, inputs, strict, name)
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_were_tuple, inputs, v, outputs_were_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Hessian product ``v^T H`` of the scalar function ``func`` at ``inputs``.

    Args:
        func (callable): takes tensors and returns a tensor with a single element.
        inputs (Tensor or tuple of Tensors): the point.
        v (Tensor or tuple of Tensors, optional): one vector per input, of its shape; may be
            None for a single one-element input.
        create_graph (bool): make the results differentiable. Default: False.
        strict (bool): raise if the Hessian does not depend on an input. Default: False.

    Returns:
        ``(func_output, vhp)``: ``vhp`` has one tensor per input.

    Example:
        >>> import ember
        >>> out, r = vhp(lambda x: (x ** 3).sum(), ember.tensor([1., 2.]), ember.ones(2))
        >>> r
        tensor([ 6., 12.])
    """
    with enable_grad():
        inputs_were_tuple, inputs, v, outputs_were_tuple, outputs, jac = _gradient_at(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _zeros_for_none(res, inputs, strict, create_graph, "double_back")
    return (_untuple(_finish(outputs, create_graph), outputs_were_tuple),
            _untuple(_finish(res, create_graph), inputs_were_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``, by the
    double-vjp trick (NOTE [ Double-vjp trick ]).

    Args:
        func (callable): takes tensors and returns a tensor with a single element.
        inputs (Tensor or tuple of Tensors): the point.
        v (Tensor or tuple of Tensors, optional): one vector per input, of its shape; may be
            None for a single one-element input.
        create_graph (bool): make the results differentiable. Default: False.
        strict (bool): raise if the Hessian does not depend on an input. Default: False.

    Returns:
        ``(func_output, hvp)``: ``hvp`` has one tensor per input.

    Example:
        >>> import ember
        >>> out, r = hvp(lambda x: (x ** 3).sum(), ember.tensor([1., 2.]), ember.ones(2))
        >>> r
        tensor([ 6., 12.])
    """
    with enable_grad():
        inputs_were_tuple, inputs, v, outputs_were_tuple, outputs, jac = _gradient_at(
            func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(x.new_zeros(x.shape).requires_grad_(True) for x in inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grad(double_back, dummies, v, create_graph=create_graph)
        res = _zeros_for_none(res, inputs, strict, create_graph, "double_back_trick")
    return (_untuple(_finish(outputs, create_graph), outputs_were_tuple),
            _untuple(_finish(res, create_graph), inputs_were_tuple))
