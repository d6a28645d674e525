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
