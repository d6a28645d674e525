"""Every ember operator, one family per module. Importing this package registers them all.

Families are discovered, not listed, so adding a module here is the whole registration.
"""

import importlib
import pkgutil

from . import _node_names, _overloads, _registry
from ._registry import Op, functions, list_ops, ops, public  # noqa: F401

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")


def _wrap_operators():
    """Every public Tensor method and operator consults __torch_function__ (NOTE [
    __torch_function__ ] in ember/_overrides.py): those declared with ``public`` already do;
    the operators, indexing and methods set directly on the class are wrapped here, once all
    families are loaded."""
    import inspect

    from .._core.tensor import Tensor
    from .._overrides import wrap_public

    for name, f in list(vars(Tensor).items()):
        if isinstance(f, property) and name in _PROPERTIES:
            setattr(Tensor, name, property(wrap_public(f.fget, name), f.fset, f.fdel,
                                           f.__doc__))
        if not inspect.isfunction(f) or name in _NOT_OVERRIDABLE:
            continue
        if name in _OPERATORS or not name.startswith("_"):
            setattr(Tensor, name, wrap_public(f, name))


# properties computing a tensor from the tensor, which subclasses keep as torch's do (the
# others -- grad, data, shape -- hand back what is stored, as torch's no-wrap list says)
_PROPERTIES = frozenset(["T", "mT", "H", "mH", "real", "imag"])


# the protocol's own machinery, and what pickling and construction call on the class itself
_NOT_OVERRIDABLE = frozenset(["as_subclass", "__torch_function__", "__init_subclass__",
                              "__new__", "__reduce_ex__", "__deepcopy__"])
_OPERATORS = frozenset(
    f"__{p}{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and",
                            "or", "xor", "lshift", "rshift", "matmul") for p in ("", "r", "i")
) | frozenset(f"__{n}__" for n in ("neg", "pos", "abs", "invert", "eq", "ne", "lt", "le",
                                   "gt", "ge", "getitem", "setitem"))
_wrap_operators()


# NOTE [ In-place functions ]
# PyTorch exposes some in-place methods as functions too (``torch.exp_(x)`` is
# ``x.exp_()``), most unary math ops among them, but not all (there is no ``torch.add_``):
# which ones is a fact of PyTorch's surface, not of the op, so it is listed once here. Each
# function is the method itself, so it consults __torch_function__ and takes the one in-place
# protocol. Ops whose in-place function is not their method's (``index_put_``) are declared
# in their family with ``@public``.
_INPLACE_FUNCTIONS = """
    abs acos acosh addmv arccos arccosh arcsin arcsinh arctan arctanh as_strided asin asinh
    atan atanh ceil clamp clamp_max clamp_min clip conj_physical cos cosh deg2rad erf erfc exp
    exp2 expm1 fix floor frac gcd i0 lcm log log10 log1p log2 logit nan_to_num neg negative
    rad2deg reciprocal relu round rsqrt sigmoid sin sinc sinh sqrt square tan tanh trunc xlogy
""".split()


def _expose_inplace_functions():
    from .._core.tensor import Tensor

    for name in _INPLACE_FUNCTIONS:
        method = getattr(Tensor, name + "_", None)
        if method is not None and name + "_" not in functions:
            functions[name + "_"] = method


_expose_inplace_functions()
_node_names.install()
_overloads.install()
_registry.document_all()
_registry._sealed[0] = True
