"""``ember.cuda.sparse``: the legacy sparse CUDA tensor types (``torch.cuda.sparse.FloatTensor``).

``isinstance(t, ember.cuda.sparse.FloatTensor)`` tests for a sparse COO float32 tensor on a
CUDA device. ember keeps sparse tensors on the CPU (NOTE [ Sparse tensors ] in
ember/sparse/_tensor.py), so calling one of these types raises: TypeError on a machine without
CUDA, with PyTorch's words, and RuntimeError with a GPU.

Example::

    >>> isinstance(ember.zeros(2), ember.cuda.sparse.FloatTensor)
    False
"""

from __future__ import annotations

__all__ = ["BFloat16Tensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
           "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]


class _SparseCudaMeta(type):
    def __instancecheck__(cls, obj):
        layout = getattr(obj, "layout", None)
        return getattr(layout, "name", None) == "sparse_coo" and \
            obj.device.type == "cuda" and obj.dtype.name == cls._dtype


def _sparse_cuda_type(name, dtype_name):
    def __new__(cls, *args, **kwargs):
        from . import is_available

        if not is_available():
            raise TypeError(f"type torch.cuda.sparse.{name} not available. Torch not compiled "
                            "with CUDA enabled.")
        raise RuntimeError(f"torch.cuda.sparse.{name}: ember keeps sparse tensors on the CPU; "
                           "build one with torch.sparse_coo_tensor(...) there")

    doc = (f"The legacy type of sparse COO {dtype_name} tensors on CUDA: ``isinstance`` tests "
           "a tensor's layout, device and dtype.\n\nArgs:\n    *args: the legacy "
           "constructor's arguments (calling it raises: ember keeps sparse tensors on the "
           "CPU).\n\nReturns:\n    Tensor: never; see above.\n\nExample::\n\n"
           f"    >>> isinstance(ember.zeros(1), ember.cuda.sparse.{name})\n    False\n")
    return _SparseCudaMeta(name, (), {"__new__": __new__, "_dtype": dtype_name, "__doc__": doc,
                                      "__module__": "ember.cuda.sparse"})


FloatTensor = _sparse_cuda_type("FloatTensor", "float32")
DoubleTensor = _sparse_cuda_type("DoubleTensor", "float64")
HalfTensor = _sparse_cuda_type("HalfTensor", "float16")
BFloat16Tensor = _sparse_cuda_type("BFloat16Tensor", "bfloat16")
LongTensor = _sparse_cuda_type("LongTensor", "int64")
IntTensor = _sparse_cuda_type("IntTensor", "int32")
ShortTensor = _sparse_cuda_type("ShortTensor", "int16")
CharTensor = _sparse_cuda_type("CharTensor", "int8")
ByteTensor = _sparse_cuda_type("ByteTensor", "uint8")
