"""``ember.jit.script`` of lists and dicts: typed ``ScriptList``/``ScriptDict``, compared with
torch."""

import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _outcome(fn, m):
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e).__name__
    return repr(r).replace("torch", "M").replace("ember", "M")


CASES = {
    "list": lambda m: m.jit.script([1, 2, 3]),
    "list_type": lambda m: type(m.jit.script([1, 2, 3])).__name__,
    "dict": lambda m: m.jit.script({"a": 1}),
    "empty_list": lambda m: m.jit.script([]),
    "nested": lambda m: m.jit.script([[1], [2]]),
    "nested_inner_is_list": lambda m: type(m.jit.script([[1]])[0]).__name__,
    "list_methods": lambda m: (lambda xs: (xs.append(4), xs.extend([5]), xs.insert(0, 0),
                                           xs.pop(), xs.count(1), len(xs), list(xs),
                                           xs[1:], type(xs[1:]).__name__, 2 in xs))(
        m.jit.script([1, 2, 3])),
    "list_not_equal_to_list": lambda m: m.jit.script([1, 2]) == [1, 2],
    "list_iterator": lambda m: type(iter(m.jit.script([1]))).__name__,
    "dict_methods": lambda m: (lambda d: (d.__setitem__("b", 2), list(d.keys()),
                                          list(d.items()), list(d), len(d), "a" in d,
                                          type(d.items()).__name__,
                                          type(d.keys()).__name__))(m.jit.script({"a": 1})),
    "float_list_takes_int": lambda m: (lambda xs: (xs.append(1), type(xs[1]).__name__))(
        m.jit.script([1.0])),
    "int_list_takes_bool": lambda m: (lambda xs: (xs.append(True), type(xs[1]).__name__))(
        m.jit.script([1])),
    "nested_append": lambda m: m.jit.script([[1], [2]]).append([3]),
    "empty_list_takes_tensor": lambda m: m.jit.script([]).append(m.ones(1)),
    # errors
    "append_wrong_type": lambda m: m.jit.script([1, 2]).append("x"),
    "int_list_rejects_float": lambda m: m.jit.script([1]).append(1.5),
    "empty_list_rejects_int": lambda m: m.jit.script([]).append(1),
    "nested_wrong_inner": lambda m: m.jit.script([[1], [2]]).append(["x"]),
    "dict_wrong_value": lambda m: m.jit.script({"a": 1}).__setitem__("b", "x"),
    "dict_wrong_key": lambda m: m.jit.script({"a": 1}).__setitem__(3, 1),
    "mixed_list": lambda m: m.jit.script([1, 2.0]),
    "mixed_dict": lambda m: m.jit.script({"a": 1, "b": "x"}),
    "index_error": lambda m: m.jit.script([1, 2])[5],
    "key_error": lambda m: m.jit.script({"a": 1})["z"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_script_container_like_torch(case):
    assert _outcome(CASES[case], ember) == _outcome(CASES[case], torch)


def test_mixed_list_raises_jit_error():
    with pytest.raises(ember.jit.Error, match="consistent element type"):
        ember.jit.script([1, "a"])


def test_script_list_constructor_and_names():
    assert list(ember.ScriptList([1, 2])) == [1, 2]
    assert isinstance(iter(ember.ScriptDict({"a": 1})), ember.ScriptDictKeyIterator)
    assert isinstance(ember.ScriptDict({"a": 1}).items(), ember.ScriptDictIterator)
    assert isinstance(iter(ember.ScriptList([1])), ember.ScriptListIterator)
