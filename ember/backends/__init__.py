"""``ember.backends``: backend settings and the backends beyond the CPU.

- Settings modules, as in ``torch.backends``: ``cudnn``, ``cuda`` (``cuda.matmul``), ``mps``,
  ``mkldnn``, ``mkl``, ``openmp``, ``opt_einsum``, ``cpu``, ``mha``, ``nnpack``, ``miopen``,
  ``kleidiai``, ``cusparselt``, ``quantized``, ``python_native`` (switches for kernels in
  Python GPU languages, which ember does not register). Their settings are module
  attributes that are assigned and read back as in PyTorch (NOTE [ Backend settings ] in
  _flags.py).
- ``meta``: the meta device (shapes and dtypes, no data), registered through
  ``ember.library``. The CPU backend lives in ember/_dispatch.py and CUDA in ember/cuda.

Example::

    >>> ember.backends.cudnn.deterministic = True
    >>> ember.backends.cudnn.deterministic
    True
    >>> ember.backends.cudnn.deterministic = False
"""

from . import (  # noqa: F401
    cpu, cuda, cudnn, cusparselt, kleidiai, mha, miopen, mkl, mkldnn, mps, nnpack, openmp,
    opt_einsum, python_native, quantized,
)
from ._flags import _mutable, mutation_allowed


def disable_global_flags() -> None:
    """Forbid plain assignment to the cuDNN, oneDNN and MIOpen switches from now on, in this
    process: ``ember.backends.cudnn.benchmark = True`` then raises RuntimeError, while the
    ``flags()`` blocks and ``set_flags`` still change them (NOTE [ Frozen backend flags ] in
    _flags.py).

    Args:
        (none)

    Returns:
        None.

    Example::

        >>> ember.backends.disable_global_flags()  # doctest: +SKIP
        >>> ember.backends.flags_frozen()  # doctest: +SKIP
        True
    """
    _mutable[0] = False


def flags_frozen() -> bool:
    """Whether plain assignment to the switches is forbidden (after
    :func:`disable_global_flags`, outside ``__allow_nonbracketed_mutation`` blocks).

    Args:
        (none)

    Returns:
        bool: True while frozen.

    Example::

        >>> ember.backends.flags_frozen()
        False
    """
    return not _mutable[0]


# ``torch.backends.__allow_nonbracketed_mutation()``: private in PyTorch, used by MONAI
__allow_nonbracketed_mutation = mutation_allowed
