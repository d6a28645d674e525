"""``FileCheck`` (``torch.testing.FileCheck``): the same checks pass and fail as in torch."""

import pytest

import ember

torch = pytest.importorskip("torch")

GRAPH = ("graph(%x):\n  %a = aten::add(%x, %x)\n  %b = aten::mul(%a, %a)\n"
         "  %c = aten::add(%b, %b)\n  return (%c)")
HIGHLIGHT = "foo(x)\n  y = add(x)\n      ~~~ <--- HERE\n"

CASES = {
    "in_order": lambda F: F().check("aten::add").check("aten::mul").run(GRAPH),
    "out_of_order": lambda F: F().check("aten::mul").check("aten::mul").run(GRAPH),
    "not_absent": lambda F: F().check("aten::add").check_not("sub").check("mul").run(GRAPH),
    "not_between": lambda F: F().check("aten::add").check_not("aten::mul").check(
        "aten::add").run(GRAPH),
    "not_at_end": lambda F: F().check("aten::mul").check_not("aten::add").run(GRAPH),
    "not_at_start": lambda F: F().check_not("aten::add").check("aten::mul").run(GRAPH),
    "count_exact": lambda F: F().check_count("aten::add", 2, exactly=True).run(GRAPH),
    "count_short": lambda F: F().check_count("aten::add", 3).run(GRAPH),
    "count_exact_more": lambda F: F().check_count("aten::add", 1, exactly=True).run(GRAPH),
    "count_zero_absent": lambda F: F().check_count("sub", 0, exactly=True).run(GRAPH),
    "count_zero_present": lambda F: F().check_count("aten::add", 0, exactly=True).run(GRAPH),
    "next": lambda F: F().check("aten::add").check_next("aten::mul").run(GRAPH),
    "next_too_far": lambda F: F().check("aten::add").check_next("aten::add").run(GRAPH),
    "same": lambda F: F().check("%a").check_same("aten::add").run(GRAPH),
    "same_other_line": lambda F: F().check("%a").check_same("aten::mul").run(GRAPH),
    "dag": lambda F: F().check_dag("aten::mul").check_dag("aten::add").run(GRAPH),
    "dag_missing": lambda F: F().check_dag("aten::mul").check_dag("aten::sub").run(GRAPH),
    "regex": lambda F: F().check_regex(r"aten::m.l").run(GRAPH),
    "regex_missing": lambda F: F().check_regex(r"aten::d.v").run(GRAPH),
    "directives": lambda F: F().run("# CHECK: aten::add\n# CHECK-NEXT: aten::mul\n"
                                    "# CHECK-NOT: sub\n# CHECK-COUNT-2: %", GRAPH),
    "directives_fail": lambda F: F().run("# CHECK: aten::mul\n# CHECK-NEXT: return", GRAPH),
    "no_checks": lambda F: F().run(GRAPH),
    "highlighted": lambda F: F().check_source_highlighted("add").run(HIGHLIGHT),
    "not_highlighted": lambda F: F().check_source_highlighted("foo").run(HIGHLIGHT),
}


def _outcome(fn, cls):
    try:
        fn(cls)
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e)
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_file_check_outcome_like_torch(case):
    assert _outcome(CASES[case], ember.FileCheck) is _outcome(CASES[case], torch.FileCheck)


def test_file_check_is_testing_name():
    assert ember.FileCheck is ember.testing.FileCheck
    assert torch.FileCheck is torch.testing.FileCheck


def test_file_check_count_zero_without_exactly_raises():
    with pytest.raises(RuntimeError):
        ember.FileCheck().check_count("x", 0)


def test_file_check_failure_names_the_text():
    with pytest.raises(RuntimeError, match='Expected to find "aten::div"'):
        ember.FileCheck().check("aten::div").run(GRAPH)
