"""``ember.cuda.jiterator``: element-wise CUDA kernels written as a C++ function string.

NOTE [ Jiterator on CuPy ]
PyTorch's jiterator compiles a user's templated C++ function (``template <typename T> T
f(T x, T y, T alpha) { ... }``) into an element-wise kernel at run time. CuPy does the same
with ``cupy.ElementwiseKernel``: the code string becomes the kernel's preamble and the
kernel's body calls its entry function (the last function defined, as PyTorch takes it)
with ``T`` bound to the inputs' common dtype; NVRTC compiles it with
``--device-as-default-execution-space`` since jiterator's code strings carry no
``__device__``. The leading parameters of the entry function
are the tensor inputs, the trailing ones the keyword scalars given when the function was
made (their values there are the defaults; a call may override them). Inputs broadcast and
are promoted to their common dtype as PyTorch's jiterator does; non-contiguous inputs are
fine (CuPy indexes by strides). The kernels are compiled on first use of each dtype and
cached by CuPy. Outputs carry no autograd history (PyTorch's jiterator has none either).

Example::

    >>> code = "template <typename T> T axpy(T x, T y, T alpha) { return alpha * x + y; }"
    >>> fn = ember.cuda.jiterator._create_jit_fn(code, alpha=1.0)
    >>> fn.num_inputs
    2
"""

from __future__ import annotations

import re

__all__: list = []

_ENTRY = re.compile(r"template\s*<[^>]*>\s*(?:__device__\s+)?[\w:]+(?:\s*<[^>]*>)?[\s\*&]+"
                    r"(\w+)\s*\(([^)]*)\)")
_NO_GPU = "Jiterator is only supported on CUDA and ROCm GPUs, none are available."


def _entry(code_string):
    """(name, parameter names) of the code string's last templated function."""
    found = _ENTRY.findall(code_string)
    if not found:
        raise ValueError("jiterator: the code string must define a templated function, e.g. "
                         "'template <typename T> T f(T x) { return x; }'")
    name, params = found[-1]
    names = []
    for p in params.split(","):
        p = p.strip()
        if p:
            names.append(re.findall(r"\w+", p)[-1])
    return name, names


class _JittedFunction:
    """An element-wise CUDA kernel made from a code string (see NOTE [ Jiterator on CuPy ])."""

    def __init__(self, code_string, num_outputs, kwargs, by_reference=False):
        if not isinstance(code_string, str):
            raise TypeError(f"code_string must be a str, got {type(code_string).__name__}")
        self.code_string = code_string
        self.num_outputs = int(num_outputs)
        self._by_reference = by_reference
        self.kwargs = dict(kwargs)
        self.name, params = _entry(code_string)
        n_scalar = len(self.kwargs)
        self.num_inputs = len(params) - n_scalar - (self.num_outputs if self._by_reference
                                                    else 0)
        if self.num_inputs < 1:
            raise ValueError(f"jiterator: {self.name} takes {len(params)} parameters, too few "
                             f"for {n_scalar} keyword scalars and {self.num_outputs} outputs")
        if self.num_inputs > 8 or self.num_outputs > 8:
            raise ValueError("jiterator supports up to 8 inputs and 8 outputs")
        names = params[self.num_inputs:self.num_inputs + n_scalar]
        if list(self.kwargs) != names:
            raise ValueError(f"jiterator: the keyword scalars {list(self.kwargs)} must be the "
                             f"entry function's parameters after the inputs, in order "
                             f"({names})")
        self._kernels = {}

    def kernel_source(self):
        """The (in_params, out_params, operation) of the CuPy ElementwiseKernel.

        Returns:
            tuple[str, str, str]
        """
        ins = [f"T in{i}" for i in range(self.num_inputs)] + [f"T {k}" for k in self.kwargs]
        outs = [f"T out{i}" for i in range(self.num_outputs)]
        args = [f"in{i}" for i in range(self.num_inputs)] + list(self.kwargs)
        if self._by_reference:
            outs_ = [f"out{i}" for i in range(self.num_outputs)]
            body = f"{self.name}<T>({', '.join(args + outs_)})"
        else:
            body = f"out0 = {self.name}<T>({', '.join(args)})"
        return ", ".join(ins), ", ".join(outs), body

    def __call__(self, *inputs, **kwargs):
        import ember

        from . import _runtime

        if not _runtime.is_compiled() or _runtime.gpu_count() == 0:
            raise AssertionError(_NO_GPU)
        if len(inputs) != self.num_inputs:
            raise ValueError(f"{self.name} expects {self.num_inputs} inputs, got {len(inputs)}")
        unknown = set(kwargs) - set(self.kwargs)
        if unknown:
            raise TypeError(f"{self.name} got unexpected keyword arguments {sorted(unknown)}")
        tensors = [x for x in inputs if isinstance(x, ember.Tensor)]
        if not tensors or any(t.device.type != "cuda" for t in tensors):
            raise RuntimeError("jiterator: all input tensors must live on a CUDA device")
        dtype = ember.result_type(*inputs) if len(inputs) > 1 else tensors[0].dtype
        device = tensors[0].device
        arrays = [ember.as_tensor(x, dtype=dtype, device=device)._data for x in inputs]
        cp = _runtime.cupy()
        key = arrays[0].dtype
        kernel = self._kernels.get(key)
        if kernel is None:
            ins, outs, body = self.kernel_source()
            # (unannotated functions are device functions, as jiterator's code strings
            # are written without __device__)
            kernel = cp.ElementwiseKernel(ins, outs, body, f"ember_jiterator_{self.name}",
                                          preamble=self.code_string,
                                          options=("--device-as-default-execution-space",))
            self._kernels[key] = kernel
        scalars = [arrays[0].dtype.type({**self.kwargs, **kwargs}[k]) for k in self.kwargs]
        result = kernel(*arrays, *scalars)
        from .._core.tensor import wrap

        if not self._by_reference:
            return wrap(result)
        return [wrap(r) for r in (result if isinstance(result, tuple) else (result,))]


def _create_jit_fn(code_string: str, **kwargs):
    """Make an element-wise CUDA kernel from a templated C++ function that returns its result.

    Args:
        code_string (str): C++ source; its last templated function is the entry, taking the
            inputs then the keyword scalars, and returning the output by value.
        **kwargs: the keyword scalars' default values.

    Returns:
        callable: ``fn(*tensors, **scalars)`` -> Tensor (inputs on CUDA; they broadcast and
        promote to their common dtype).

    Example::

        >>> fn = ember.cuda.jiterator._create_jit_fn(
        ...     "template <typename T> T twice(T x) { return x + x; }")
        >>> fn.num_inputs, fn.num_outputs
        (1, 1)
    """
    return _JittedFunction(code_string, 1, kwargs)


def _create_multi_output_jit_fn(code_string: str, num_outputs: int, **kwargs):
    """Make an element-wise CUDA kernel with ``num_outputs`` outputs, written by reference.

    Args:
        code_string (str): C++ source; its last templated function is the entry, taking the
            inputs, the keyword scalars, then one ``T&`` parameter per output.
        num_outputs (int): how many outputs (1 to 8).
        **kwargs: the keyword scalars' default values.

    Returns:
        callable: ``fn(*tensors, **scalars)`` -> list of Tensors.

    Example::

        >>> fn = ember.cuda.jiterator._create_multi_output_jit_fn(
        ...     "template <typename T> void sc(T x, T& s, T& c) { s = sin(x); c = cos(x); }", 2)
        >>> fn.num_inputs
        1
    """
    return _JittedFunction(code_string, num_outputs, kwargs, by_reference=True)
