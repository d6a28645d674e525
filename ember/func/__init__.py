"""Composable function transforms: PyTorch's ``torch.func``.

- ``_eager_transforms.py``: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``,
  ``jacrev``, ``jacfwd``, ``hessian``, all on ember's reverse-mode autograd (NOTE [ Transforms
  on reverse mode ]); ``jvp``, ``linearize`` and ``jacfwd`` give forward-mode results through
  the double-vjp trick until ember has forward-mode AD.
- ``_vmap.py``: ``vmap``. It currently runs ``func`` once per batch element and stacks the
  results (NOTE [ vmap as a per-example loop ]; batching rules on the dispatcher come later):
  correct, and composable with the other transforms (``vmap(grad(f))`` for per-sample
  gradients), but not faster than a Python loop.
- ``_module_utils.py``: ``functional_call``, ``stack_module_state``,
  ``replace_all_batch_norm_modules_``, ``functionalize``, ``debug_unwrap``.
- ``_einops.py``: ``rearrange``.

Example:
    >>> import ember
    >>> from ember.func import grad, vmap
    >>> vmap(grad(lambda x: (x ** 2).sum()))(ember.tensor([[1., 2.], [3., 4.]]))
    tensor([[2., 4.],
            [6., 8.]])
"""

from ._eager_transforms import (
    grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp,
)
from ._module_utils import (
    debug_unwrap, functional_call, functionalize, replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._einops import rearrange
from ._vmap import vmap

__all__ = [
    "debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian",
    "jacfwd", "jacrev", "jvp", "linearize", "rearrange", "replace_all_batch_norm_modules_",
    "stack_module_state", "vjp", "vmap",
]
