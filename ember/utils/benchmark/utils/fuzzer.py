"""``Fuzzer``: random benchmark inputs -- parameters drawn from distributions, tensors built
from them (sizes, strides, memory layout), filtered by constraints.

NOTE [ Fuzzer draws ]
Parameters and layouts are drawn from one ``numpy.random.RandomState(seed)`` in the order
PyTorch's fuzzer draws them (each parameter in order, then for each tensor one draw deciding
contiguity and possibly a permutation), so a seed gives the same sizes, steps, orders and
parameters as under PyTorch. Tensor *values* come from ember's generator, seeded from the
same state, and so differ from PyTorch's.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named random parameter for :class:`Fuzzer`.

    Args:
        name (str): the parameter's name (a key of the generated ``params``).
        minval, maxval (int or float, optional): the range; integer bounds give integers.
        distribution (str or dict): ``"loguniform"``, ``"uniform"``, or ``{value:
            probability}`` (then ``minval``/``maxval`` must be None).
        strict (bool): draw once and keep the value for all rejections of one sample.

    Example:
        >>> import numpy as np
        >>> from ember.utils.benchmark import FuzzedParameter
        >>> p = FuzzedParameter("n", minval=1, maxval=8, distribution="uniform")
        >>> 1 <= p.sample(np.random.RandomState(0)) <= 8
        True
    """

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self):
        """The parameter's name."""
        return self._name

    def sample(self, state):
        """Draw a value from ``state`` (a ``numpy.random.RandomState``)."""
        if self._distribution == "loguniform":
            return self._loguniform(state)
        if self._distribution == "uniform":
            return self._uniform(state)
        return self._custom_distribution(state)

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        # (PyTorch 2.13's check is inverted and refuses every normalized distribution;
        # ember checks what the message says)
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def _loguniform(self, state):
        low = np.log2(self._minval) if self._minval is not None else None
        high = np.log2(self._maxval) if self._maxval is not None else None
        out = int(2 ** state.uniform(low=low, high=high))
        if self._minval is not None and out < self._minval:
            return self._minval
        if self._maxval is not None and out > self._maxval:
            return self._maxval
        return out

    def _uniform(self, state):
        if isinstance(self._minval, int) and isinstance(self._maxval, int):
            return int(state.randint(low=self._minval, high=self._maxval + 1))
        return state.uniform(low=self._minval, high=self._maxval)

    def _custom_distribution(self, state):
        index = state.choice(np.arange(len(self._distribution)),
                             p=tuple(self._distribution.values()))
        return list(self._distribution)[index]


class ParameterAlias:
    """A parameter value that is another parameter's value (``ParameterAlias("k0")``).

    Args:
        alias_to (str): the name of the parameter to copy.

    Example:
        >>> from ember.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor, ParameterAlias
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("n", minval=2, maxval=8, distribution="uniform"),
        ...                 FuzzedParameter("m", distribution={ParameterAlias("n"): 1.0})],
        ...     tensors=[FuzzedTensor("x", size=("n", "m"), probability_contiguous=1.0)],
        ...     seed=0)
        >>> tensors, _, params = next(iter(fuzzer.take(1)))
        >>> params["m"] == params["n"] and tensors["x"].shape[0] == tensors["x"].shape[1]
        True
    """

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype) -> int:
    """Bytes per element of ``dtype``."""
    import ember

    if dtype == ember.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return int(ember.finfo(dtype).bits / 8)
    return int(ember.iinfo(dtype).bits / 8)


def prod(values, base=1) -> int:
    """The product of ``values`` (as ints) times ``base``."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor :class:`Fuzzer` builds from drawn parameters.

    Args:
        name (str): the tensor's name (a key of the generated ``tensors``).
        size (tuple of str or int): the sizes; a string names a parameter.
        steps (tuple of str or int, optional): strides of the view taken (1 = dense).
        probability_contiguous (float): chance of a contiguous layout. Default: 0.5.
        min_elements, max_elements (int, optional): reject samples outside this size.
        max_allocation_bytes (int, optional): reject samples needing more memory.
        dim_parameter (str, optional): a parameter giving the number of dimensions.
        roll_parameter (str, optional): accepted for PyTorch compatibility; unused (as there).
        dtype (ember.dtype): the element type. Default: float32.
        cuda (bool): move the tensor to CUDA. Default: False.
        tensor_constructor (callable, optional): ``f(size=, dtype=, **params)`` making the
            underlying tensor; default: uniform floats, or integers in [1, 127).

    Example:
        >>> from ember.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("n", minval=3, maxval=5, distribution="uniform")],
        ...     tensors=[FuzzedTensor("x", size=("n", 4), dtype=ember.float64,
        ...                           probability_contiguous=1.0)],
        ...     seed=0)
        >>> tensors, properties, params = next(iter(fuzzer.take(1)))
        >>> x = tensors["x"]
        >>> x.dtype, x.shape == (params["n"], 4), x.is_contiguous()
        (ember.float64, True, True)
    """

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None,
                 roll_parameter=None, dtype=None, cuda=False, tensor_constructor=None):
        import ember

        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = ember.float32 if dtype is None else dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self):
        """The tensor's name."""
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        """Uniform [0, 1) floats, or integers in [1, 127), of ``size`` and ``dtype``."""
        import ember

        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size=size, dtype=dtype, device="cpu")
        return ember.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation_size = self._get_size_and_steps(params)
        constructor = self._tensor_constructor or self.default_tensor_constructor
        raw = constructor(size=allocation_size, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous()
            raw = raw.permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * s, s) for n, s in zip(size, steps))]
        properties = {"numel": int(tensor.numel()), "order": order, "steps": steps,
                      "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}
        return tensor, properties

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(n * s for n, s in zip(size, steps))

    def satisfies_constraints(self, params) -> bool:
        """Whether the sizes drawn in ``params`` respect this tensor's element and memory
        limits."""
        size, _, allocation_size = self._get_size_and_steps(params)
        n = prod(size)
        if n < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = prod(allocation_size, base=dtype_size(self._dtype))

        def greater(a, b):
            return a is not None and b is not None and a > b

        return not (greater(n, self._max_elements) or greater(self._min_elements, n)
                    or greater(nbytes, self._max_allocation_bytes))


class Fuzzer:
    """Generate random benchmark inputs: parameters, then tensors shaped by them.

    See NOTE [ Fuzzer draws ].

    Args:
        parameters (list of FuzzedParameter, or lists of them): what to draw.
        tensors (list of FuzzedTensor, or lists of them): what to build.
        constraints (list of callable, optional): ``f(params) -> bool``; samples failing
            any are drawn again (up to 1000 times).
        seed (int, optional): the seed; default: a random one.

    Example:
        >>> from ember.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedTensor
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("n", minval=4, maxval=16, distribution="uniform")],
        ...     tensors=[FuzzedTensor("x", size=("n", 2), probability_contiguous=1.0)],
        ...     seed=0)
        >>> for tensors, properties, params in fuzzer.take(2):
        ...     assert tensors["x"].shape == (params["n"], 2)
    """

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls):
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v
                                                   for v in values))

    def take(self, n):
        """Yield ``n`` samples ``(tensors, tensor_properties, params)``, each a dict by name.

        Args:
            n (int): how many samples.
        """
        import ember

        state = np.random.RandomState(self._seed)
        ember.manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        """The fraction of drawn parameter sets rejected by constraints so far."""
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state):
        strict = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
                    if p.strict:
                        strict[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or not all(
                    t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            now = sum(isinstance(v, ParameterAlias) for v in params.values())
            if now == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = now
        return params
