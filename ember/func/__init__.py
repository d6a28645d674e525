"""Composable function transforms: PyTorch's ``torch.func``.

- ``_eager_transforms.py``: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``,
  ``jacrev``, ``jacfwd``, ``hessian``, all on ember's reverse-mode autograd (NOTE [ Transforms
  on reverse mode ]); ``jvp``, ``linearize`` and ``jacfwd`` give forward-mode results through
  the double-vjp trick until ember has forward-mode AD.
- ``_vmap.py``: ``vmap`` (NOTE [ vmap levels ]), a mode on the dispatcher with batching
  rules per op class (``_batch_rules.py``, NOTE [ vmap batching ], NOTE [ vmap and
  autograd ]) over batched tensors (``_batch_tensor.py``); ``_batch_jacobian.py`` is
  ``jacrev``'s single batched backward pass and ``_batch_function.py`` runs custom
  ``autograd.Function`` classes under vmap.
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
from . import _batch_function as _bf
from ..autograd import function as _function

_function.vmap_apply = _bf.vmap_apply  # NOTE [ autograd.Function under vmap ]
del _bf, _function

__all__ = [
    "debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian",
    "jacfwd", "jacrev", "jvp", "linearize", "rearrange", "replace_all_batch_norm_modules_",
    "stack_module_state", "vjp", "vmap",
]
