"""Importing DTensor (a Tensor subclass taking part in ``__torch_function__``) leaves plain
tensors' operators on their fast path; subclass instances are still found by their type
(NOTE [ Subclasses found by their type ] in ember/_overrides.py). No process group needed."""

import subprocess
import sys
import textwrap

import pytest

import ember

torch = pytest.importorskip("torch")


def _run(src: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(src)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


_OWN_OPERATOR = """
seen = []
class S(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        seen.append(1)
        return super().__torch_function__(func, types, args, kwargs or {})
    def __add__(self, other):
        return super().__add__(other)
s = torch.ones(2).as_subclass(S)
seen.clear()
r = s + torch.ones(2)
result = (type(r).__name__, len(seen))
"""


@pytest.fixture(scope="module")
def apart():
    """One fresh process: the switches after importing DTensor, then what a subclass with
    an operator of its own gives (run apart: the global switch stays on for the process)."""
    return _run("""
        import ember, ember._dispatch as d
        import ember.distributed.tensor
        print(d.slow[0], d.torch_function_on)
        torch = ember
    """ + textwrap.indent(_OWN_OPERATOR, "        ") + """
        print(*result)
        print(d.slow[0])
    """).splitlines()


def test_dtensor_import_keeps_operators_fast(apart):
    assert apart[0] == "False False"


def test_subclass_with_own_operator_keeps_global_switch(apart):
    # its __add__ calls Tensor's, which must then consult the protocol itself
    theirs = {"torch": torch}
    exec(_OWN_OPERATOR, theirs)
    assert apart[1:] == [" ".join(map(str, theirs["result"])), "True"]


def _logging_subclass(fw):
    seen = []

    class Sub(fw.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    return Sub, seen


_CASES = {
    "plain + sub": lambda a, s, p, i: a + s,
    "sub + plain": lambda a, s, p, i: s + a,
    "number + sub": lambda a, s, p, i: 1 + s,
    "number - sub": lambda a, s, p, i: 1 - s,
    "number / sub": lambda a, s, p, i: 2 / s,
    "plain * sub": lambda a, s, p, i: a * s,
    "param * sub": lambda a, s, p, i: p * s,
    "param + sub": lambda a, s, p, i: p + s,
    "plain ** sub": lambda a, s, p, i: a ** s,
    "number ** sub": lambda a, s, p, i: 2 ** s,
    "sub[0]": lambda a, s, p, i: s[0],
    "plain[sub index]": lambda a, s, p, i: a[i],
    "plain[tuple with sub index]": lambda a, s, p, i: a[None][:, i],
    "plain + plain": lambda a, s, p, i: a + a,
    "param * plain": lambda a, s, p, i: p * a,
    "plain[0]": lambda a, s, p, i: a[0],
}


@pytest.mark.parametrize("case", list(_CASES))
def test_subclass_operator_routing_matches_torch(case):
    results = []
    for fw in (ember, torch):
        Sub, seen = _logging_subclass(fw)
        a = fw.arange(1.0, 5.0)
        s = a.clone().as_subclass(Sub)
        p = fw.nn.Parameter(fw.ones(4))
        i = fw.tensor([1, 2]).as_subclass(Sub)
        seen.clear()
        r = _CASES[case](a, s, p, i)
        results.append((type(r).__name__, len(seen), r.detach().as_subclass(fw.Tensor).tolist()))
    assert results[0] == results[1]


def test_plain_operators_skip_protocol_once_subclass_exists():
    Sub, seen = _logging_subclass(ember)
    a = ember.ones(3)
    seen.clear()
    _ = (a + a, a * 2, 3 - a, a[1], a ** 2)
    assert seen == []
