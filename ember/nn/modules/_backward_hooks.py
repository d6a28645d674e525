"""Module backward hooks: ``register_full_backward_hook`` / ``_pre_hook``.

The module's tensor inputs and outputs are passed through identity autograd Functions.
The output wrapper's backward sees the gradients wrt the outputs (and runs the pre-hooks,
which may replace them); the input wrapper's backward sees the gradients wrt the inputs and
calls the hooks with both, which may replace the input gradients.
"""

from __future__ import annotations

import itertools

from ..._core.tensor import Tensor
from ...autograd.function import Function


def _tensors(obj):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [x for x in obj if isinstance(x, Tensor)]
    return []


def _replace(obj, new):
    it = iter(new)
    if isinstance(obj, Tensor):
        return next(it)
    if isinstance(obj, (tuple, list)):
        return type(obj)(next(it) if isinstance(x, Tensor) else x for x in obj)
    return obj


def _warn_outputs_only():
    """PyTorch's warning when a module's backward hooks fire with no input needing a
    gradient, pointing at the user's line (the first frame outside ember: backward runs in
    Python here, in C++ in PyTorch)."""
    import sys
    import warnings

    level, frame = 2, sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__", "").startswith("ember.")
                                 or frame.f_code.co_filename.startswith("<ember")):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        "Full backward hook is firing when gradients are computed with respect to module "
        "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
        "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more "
        "details.", UserWarning, stacklevel=level)


class BackwardHookFunction(Function):
    """Passes tensors through unchanged; its backward hands their gradients to a module's
    full backward hooks (named as PyTorch's, so outputs print ``BackwardHookFunctionBackward``).
    """

    @staticmethod
    def forward(ctx, hook, kind, *tensors):
        ctx.hook, ctx.kind = hook, kind
        outs = tuple(t.view_as(t) for t in tensors)
        return outs if len(outs) != 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        if ctx.kind == "output":
            grads = ctx.hook._on_grad_output(grads)
        else:
            grads = ctx.hook._on_grad_input(grads)
        return (None, None) + tuple(grads)


class ModuleBackwardHook:
    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_inputs = 0
        self.inputs_need_grad = False

    def setup_input_hook(self, args):
        from ...autograd.grad_mode import is_grad_enabled

        ts = _tensors(args)
        self.n_inputs = len(ts)
        self.inputs_need_grad = is_grad_enabled() and any(t.requires_grad for t in ts)
        if not self.inputs_need_grad:
            return args
        wrapped = BackwardHookFunction.apply(self, "input", *ts)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        return _replace(args, wrapped)

    def setup_output_hook(self, result):
        from ...autograd.grad_mode import is_grad_enabled

        ts = _tensors(result)
        if not is_grad_enabled() or not any(t.requires_grad for t in ts):
            return result
        wrapped = BackwardHookFunction.apply(self, "output", *ts)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        return _replace(result, wrapped)

    def _on_grad_output(self, grads):
        from . import module as _module

        if not self.inputs_need_grad:
            _warn_outputs_only()
        m = self.module
        for hook in itertools.chain(_module._global_backward_pre_hooks.values(),
                                    m._backward_pre_hooks.values()):
            out = hook(m, tuple(grads))
            if out is not None:
                grads = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        self.grad_output = tuple(grads)
        if not self.inputs_need_grad:
            self._call_hooks((None,) * max(self.n_inputs, 1))
        return grads

    def _on_grad_input(self, grads):
        return self._call_hooks(tuple(grads))

    def _call_hooks(self, grad_input):
        from . import module as _module

        m = self.module
        for hook in _module._full_backward_hooks(m):
            out = hook(m, grad_input, self.grad_output)
            if out is not None:
                out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                if len(out) != len(grad_input):
                    raise RuntimeError(
                        f"Backward hook returned an invalid number of grad_input, got "
                        f"{len(out)}, but expected {len(grad_input)}")
                grad_input = out
        return grad_input
