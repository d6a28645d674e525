"""Random ``torch.distributions`` programs for tests/differential/programs.py.

NOTE [ Differential distribution programs ]
A program builds one distribution from random parameters (batch shapes that broadcast
against each other, now and then a parameter outside its constraint) with
``validate_args`` None, True or False, and leaves in ``out`` what is deterministic about it:
batch and event shapes, the shapes of ``sample``/``rsample``, ``log_prob``, ``cdf`` and
``icdf`` at values in and out of the support (and at broadcasting shapes), ``entropy``,
``mean``, ``mode``, ``variance``, ``support`` and ``repr``, and the same of an ``expand``-ed
copy. Each item that raises becomes the builtin class of its exception, so one
``NotImplementedError`` (a ``cdf`` the family lacks) does not hide the rest; a constructor
that refuses its parameters makes the whole program's outcome that exception. Sample values
are random in both libraries and are not compared.
"""

from __future__ import annotations

import re

import numpy as np

#: torch 2.13's ``mode`` of these is wrong where the density peaks at 0 (Weibull with
#: concentration < 1 gives ``scale``) or everywhere (Kumaraswamy: NaN for every batch element
#: once any is undefined, and for defined ones too); ember's are the densities' maxima
_PROLOGUE = """\
TORCH_WRONG_MODE = ('Weibull', 'Kumaraswamy')
def t(f):
    try:
        return f()
    except Exception as e:
        for k in type(e).__mro__:
            if k.__module__ == 'builtins':
                return 'raised ' + k.__name__
def shapes(d):
    return (tuple(d.batch_shape), tuple(d.event_shape))
def facts(d, v, q):
    return (t(lambda: shapes(d)), t(lambda: tuple(d.sample((2,)).shape)),
            t(lambda: tuple(d.rsample().shape)), t(lambda: d.log_prob(v)),
            t(lambda: d.cdf(v)), t(lambda: d.icdf(q)), t(lambda: d.entropy()),
            t(lambda: d.mean), t(lambda: d.mode) if type(d).__name__ not in TORCH_WRONG_MODE
            else 'not compared', t(lambda: d.variance),
            t(lambda: str(d.support)), t(lambda: d.has_rsample),
            t(lambda: d.has_enumerate_support),
            t(lambda: repr(d)) if 'REPR' in globals() else 'not compared')
"""


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _values(rng, kind, shape, bad):
    """A nested list of ``shape`` of values of ``kind`` (``bad``: some outside it)."""
    n = int(np.prod(shape)) if shape else 1
    if kind == "real":
        v = rng.normal(size=n) * 2
    elif kind == "pos":
        v = rng.uniform(0.2, 3.0, size=n)
    elif kind == "unit":
        v = rng.uniform(0.05, 0.95, size=n)
    elif kind == "count":
        v = rng.integers(0, 6, size=n).astype(float)
    elif kind == "bit":
        v = rng.integers(0, 2, size=n).astype(float)
    else:
        raise ValueError(kind)
    if bad and n:
        v[int(rng.integers(n))] = _pick(rng, -1.0, -0.5, 1.5, 0.0, float("nan"), 2.5)
    v = np.round(v, 4)
    return v.reshape(shape).tolist() if shape else float(v[0])


def _tensor(vals, dtype="float64"):
    return f"T.tensor({vals!r}, dtype=T.{dtype})".replace("nan", "float('nan')")


#: family name: ([(parameter, kind)], support kind of values, event dims of the parameters)
_SCALAR_FAMILIES = {
    "Normal": ([("loc", "real"), ("scale", "pos")], "real"),
    "Laplace": ([("loc", "real"), ("scale", "pos")], "real"),
    "Cauchy": ([("loc", "real"), ("scale", "pos")], "real"),
    "Gumbel": ([("loc", "real"), ("scale", "pos")], "real"),
    "LogNormal": ([("loc", "real"), ("scale", "pos")], "pos"),
    "HalfNormal": ([("scale", "pos")], "pos"),
    "HalfCauchy": ([("scale", "pos")], "pos"),
    "StudentT": ([("df", "pos"), ("loc", "real"), ("scale", "pos")], "real"),
    "Exponential": ([("rate", "pos")], "pos"),
    "Gamma": ([("concentration", "pos"), ("rate", "pos")], "pos"),
    "InverseGamma": ([("concentration", "pos"), ("rate", "pos")], "pos"),
    "Chi2": ([("df", "pos")], "pos"),
    "Beta": ([("concentration1", "pos"), ("concentration0", "pos")], "unit"),
    "Kumaraswamy": ([("concentration1", "pos"), ("concentration0", "pos")], "unit"),
    "Weibull": ([("scale", "pos"), ("concentration", "pos")], "pos"),
    "Pareto": ([("scale", "pos"), ("alpha", "pos")], "pos"),
    "FisherSnedecor": ([("df1", "pos"), ("df2", "pos")], "pos"),
    "VonMises": ([("loc", "real"), ("concentration", "pos")], "real"),
    "GeneralizedPareto": ([("loc", "real"), ("scale", "pos"), ("concentration", "real")],
                          "pos"),
    "Uniform": ([("low", "real"), ("high", "real")], "real"),
    "ContinuousBernoulli": ([("probs", "unit")], "unit"),
    "Bernoulli": ([("probs", "unit")], "bit"),
    "Geometric": ([("probs", "unit")], "count"),
    "Poisson": ([("rate", "pos")], "count"),
    "Binomial": ([("total_count", "count"), ("probs", "unit")], "count"),
    "NegativeBinomial": ([("total_count", "pos"), ("probs", "unit")], "count"),
}


def _scalar(rng, name, va, bad_param):
    params, support = _SCALAR_FAMILIES[name]
    batch = _pick(rng, (), (2,), (3,), (2, 3))
    args = []
    for i, (p, kind) in enumerate(params):
        shape = batch if rng.random() < 0.7 else batch[-1:]
        vals = _values(rng, kind, shape, bad_param and i == 0)
        if name == "Uniform" and p == "high":
            vals = (np.asarray(vals) + 3).tolist()
        if name in ("Bernoulli", "Geometric", "ContinuousBernoulli") and rng.random() < 0.3:
            p, vals = "logits", _values(rng, "real", shape, False)
        if p == "total_count" and rng.random() < 0.3:
            args.append(f"{p}={int(rng.integers(0, 5))}")
            continue
        number = repr(vals).replace("nan", "float('nan')")
        # torch 2.13's GeneralizedPareto mixes a float32 constant into float64 log_prob,
        # cdf and icdf ("Double did not match Float"): its parameters are float32 here
        dtype = "float32" if name == "GeneralizedPareto" else "float64"
        args.append(f"{p}={_tensor(vals, dtype) if shape or rng.random() < 0.5 else number}")
    args.append(f"validate_args={va!r}")
    vshape = _pick(rng, batch, batch, (), (4,) + tuple(1 for _ in batch), batch[-1:])
    v = _values(rng, support, vshape, rng.random() < 0.2)
    if name == "Uniform":
        v = (np.asarray(v) + 1.5).tolist() if vshape else float(v) + 1.5
    q = _values(rng, "unit", vshape, rng.random() < 0.1)
    return f"T.distributions.{name}({', '.join(args)})", _tensor(v), _tensor(q)


def _simplex(rng, shape):
    a = rng.uniform(0.1, 1.0, size=shape)
    return np.round(a / a.sum(-1, keepdims=True), 6).tolist()


def _event(rng, va, bad_param):
    name = _pick(rng, "Categorical", "OneHotCategorical", "Multinomial", "Dirichlet",
                 "MultivariateNormal", "LowRankMultivariateNormal", "Independent",
                 "RelaxedBernoulli", "LogisticNormal", "MixtureSameFamily")
    k = int(rng.integers(1, 4))
    batch = _pick(rng, (), (2,))
    q = _tensor(_values(rng, "unit", batch, False))
    if name in ("Categorical", "OneHotCategorical", "Multinomial"):
        if rng.random() < 0.7:
            probs = np.asarray(_simplex(rng, batch + (k,)))
            if bad_param:
                probs.flat[0] = -0.5
            par = f"probs={_tensor(probs.tolist())}"
        else:
            par = f"logits={_tensor(_values(rng, 'real', batch + (k,), False))}"
        if name == "Categorical":
            v = rng.integers(0, k + (1 if rng.random() < 0.15 else 0), size=batch or (3,))
            vs = f"T.tensor({v.tolist()!r})"
            if rng.random() < 0.3:
                vs = "T.tensor(0)"
        elif name == "OneHotCategorical":
            ids = rng.integers(0, k, size=batch).tolist()
            vs = f"T.nn.functional.one_hot(T.tensor({ids!r}), {k}).to(T.float64)"
        else:
            n = int(rng.integers(1, 5))
            par = f"{n}, {par}"
            counts = rng.multinomial(n, [1.0 / k] * k, size=batch or None)
            vs = _tensor(counts.astype(float).tolist())
        return f"T.distributions.{name}({par}, validate_args={va!r})", vs, q
    if name == "Dirichlet":
        conc = _values(rng, "pos", batch + (k,), bad_param)
        v = _simplex(rng, batch + (k,))
        return (f"T.distributions.Dirichlet({_tensor(conc)}, validate_args={va!r})",
                _tensor(v), q)
    if name in ("MultivariateNormal", "LowRankMultivariateNormal"):
        loc = _values(rng, "real", batch + (k,), False)
        if name == "LowRankMultivariateNormal":
            r = int(rng.integers(1, 3))
            diag = _values(rng, "pos", (k,), False)
            if bad_param:
                # (not 0: its capacitance is inf, whose Cholesky factor follows LAPACK's
                # order of operations, NOTE [ Kernel-order differences ])
                diag[0] = _pick(rng, -1.0, float("nan"), -0.01)
            par = (f"{_tensor(loc)}, {_tensor(_values(rng, 'real', (k, r), False))}, "
                   f"{_tensor(diag)}")
        else:
            a = rng.normal(size=(k, k))
            cov = np.round(a @ a.T + np.eye(k), 4)
            if bad_param:
                cov[0, 0] = -1.0
            form = _pick(rng, "covariance_matrix", "precision_matrix", "scale_tril")
            m = np.linalg.cholesky(cov).round(4) if form == "scale_tril" and not bad_param \
                else cov
            par = f"{_tensor(loc)}, {form}={_tensor(m.tolist())}"
        v = _values(rng, "real", _pick(rng, batch + (k,), (k,), (3, 1, k) if batch else (3, k)),
                    False)
        return (f"T.distributions.{name}({par}, validate_args={va!r})", _tensor(v), q)
    if name == "Independent":
        shape = batch + (k,)
        base = (f"T.distributions.Normal({_tensor(_values(rng, 'real', shape, False))}, "
                f"{_tensor(_values(rng, 'pos', shape, bad_param))})")
        nd = int(rng.integers(0, len(shape) + 1 + (1 if rng.random() < 0.1 else 0)))
        v = _values(rng, "real", shape, False)
        return (f"T.distributions.Independent({base}, {nd}, validate_args={va!r})",
                _tensor(v), q)
    if name == "RelaxedBernoulli":
        temp = _pick(rng, 0.5, 1.0, 2.0)
        probs = _values(rng, "unit", batch, bad_param)
        v = _values(rng, "unit", batch, rng.random() < 0.2)
        return (f"T.distributions.RelaxedBernoulli(T.tensor({temp}, dtype=T.float64), "
                f"probs={_tensor(probs)}, validate_args={va!r})", _tensor(v), q)
    if name == "LogisticNormal":
        loc = _values(rng, "real", batch + (k,), False)
        scale = _values(rng, "pos", batch + (k,), bad_param)
        v = _simplex(rng, batch + (k + 1,))
        return (f"T.distributions.LogisticNormal({_tensor(loc)}, {_tensor(scale)}, "
                f"validate_args={va!r})", _tensor(v), q)
    # MixtureSameFamily of Normals
    mix = _simplex(rng, batch + (k,))
    comp = (f"T.distributions.Normal({_tensor(_values(rng, 'real', batch + (k,), False))}, "
            f"{_tensor(_values(rng, 'pos', batch + (k,), bad_param))})")
    v = _values(rng, "real", _pick(rng, batch, (3,) + batch), False)
    return (f"T.distributions.MixtureSameFamily(T.distributions.Categorical(probs="
            f"{_tensor(mix)}), {comp}, validate_args={va!r})", _tensor(v), q)


def distributions(rng):
    """One distribution from random parameters, its deterministic facts and an expand-ed
    copy's."""
    va = _pick(rng, None, True, False)
    bad = rng.random() < 0.12
    if rng.random() < 0.7:
        name = sorted(_SCALAR_FAMILIES)[int(rng.integers(len(_SCALAR_FAMILIES)))]
        if name == "GeneralizedPareto":
            # without validation, torch evaluates its formulas outside the support (a finite
            # log_prob or NaN where ember gives -inf): values there are compared validated
            va = True
        ctor, v, q = _scalar(rng, name, va, bad)
    else:
        ctor, v, q = _event(rng, va, bad)
    lines = [_PROLOGUE, f"d = {ctor}", f"v = {v}", f"q = {q}",
             # a Python number becomes a float32 parameter, printed to all its digits: the
             # last one follows float32 log/exp rounding, which may differ by an ulp
             # (and the results carry float32's rounding: the program names the dtype, so
             # that its values compare with float32's tolerance)
             "NUMBERS_AS = T.float32" if re.search(r"\w=(-?\d|float\()", ctor)
             else "REPR = True",
             # torch's expanded Multinomial lacks an attribute its methods read
             "e = t(lambda: d.expand((2,) + tuple(d.batch_shape))) "
             "if type(d).__name__ != 'Multinomial' else 'not compared'",
             "out = (facts(d, v, q), facts(e, v, q) if not isinstance(e, str) else e)"]
    return "\n".join(lines)
