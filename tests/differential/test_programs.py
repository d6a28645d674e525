"""The random programs of tests/differential/programs.py (NOTE [ Differential programs ]):
a fixed sample of each family runs with ember and with torch and must agree (a different
error message is reported by ``tools/difftest.py --programs`` but does not fail here)."""

import pytest

from tests.differential import programs as P
from tests.differential.known_mismatches import KNOWN_PROGRAMS

#: programs per family in the CI sample
_SAMPLE = {"promotion": 300, "indexing": 300, "fill": 150, "printing": 100, "modules": 150,
           "distributions": 300, "sorting": 300, "optim": 200,
           "ties": 200, "func": 200, "reductions": 300,
           "functional": 200, "creation": 300}


@pytest.mark.parametrize("family", sorted(_SAMPLE))
def test_program_sample_agrees_with_torch(family):
    torch = pytest.importorskip("torch")
    seeds = [s for s in range(_SAMPLE[family]) if (family, s) not in KNOWN_PROGRAMS]
    found = P.run([family], seeds, torch)
    counted = [(p.source, got) for p, got in found.get(family, [])
               if any(kind in P.KINDS for kind, _ in got)]
    assert not counted, "\n\n".join(f"{src}\n-> {got}" for src, got in counted[:5])


@pytest.mark.parametrize("key", sorted(KNOWN_PROGRAMS), ids=[f"{f}:{s}" for f, s in
                                                            sorted(KNOWN_PROGRAMS)])
def test_known_program_mismatch_still_reproduces(key):
    torch = pytest.importorskip("torch")
    family, seed = key
    assert seed < _SAMPLE[family]
    got = P.compare(P.make(family, seed), torch)
    assert any(kind in P.KINDS for kind, _ in got), (
        f"{family} program {seed} now agrees with torch; delete it from KNOWN_PROGRAMS in "
        "tests/differential/known_mismatches.py")


def test_programs_are_deterministic_and_self_contained():
    for family in sorted(_SAMPLE):
        a, b = P.make(family, 12345), P.make(family, 12345)
        assert a.source == b.source
        assert "out" in a.source and "torch" not in a.source


@pytest.mark.parametrize("family", sorted(_SAMPLE))
def test_programs_compile(family):
    # a generator that writes broken source would raise SyntaxError in both libraries,
    # which compare equal
    for seed in range(200):
        compile(P.make(family, seed).source, f"<{family} {seed}>", "exec")


def test_family_tolerance_follows_the_named_dtype():
    src = "x = T.zeros(2, dtype=T.float32)"
    assert P._loosest(src, "modules") == (1e-4, 1e-4)
    assert P._loosest(src.replace("32", "64"), "modules") == (1e-9, 1e-9)
    assert P._loosest(src.replace("32", "64"), "promotion") == P._TOL["float64"]


def test_compare_reports_a_difference():
    torch = pytest.importorskip("torch")
    # a program whose results differ by library: its kind is "values"
    prog = P.Program("promotion", 0, "out = T.tensor([1.0]) + (T.__name__ == 'ember')")
    got = P.compare(prog, torch)
    assert got == [("values", "results differ")]
