"""``jit.script`` of a plain function: a ScriptFunction with torch's schema, printed
signature, argument checks and ``save`` (NOTE [ Script functions ])."""

import io
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _script(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.script(fn)


def scaled(x, k: int = 2, eps: float = 1e-5, name: str = "a", w: list[int] | None = None):
    """scale"""
    return x * k + eps


def untyped_pair(x, y):
    return x + y, x - y


def count(x, n: int):
    return n * 2 + 1


def as_number(x):
    return x.sum().item()


def _both(fn):
    return _script(ember, fn), _script(torch, fn)


def test_script_function_type_and_names():
    e, t = _both(scaled)
    assert type(e).__name__ == type(t).__name__.rsplit(".", 1)[-1] == "ScriptFunction"
    assert isinstance(e, ember.jit.ScriptFunction)
    assert (e.name, e.qualified_name, e.__doc__) == (t.name, t.qualified_name, t.__doc__)


@pytest.mark.parametrize("fn", [scaled, untyped_pair, count, as_number])
def test_script_function_schema_matches_torch(fn):
    e, t = _both(fn)
    assert str(e.schema) == str(t.schema)


def test_script_function_tuple_annotation_schema():
    def g(x: ember.Tensor, n: int) -> tuple[ember.Tensor, int]:
        return x, n

    mine = _script(ember, g)

    def g(x: torch.Tensor, n: int) -> tuple[torch.Tensor, int]:  # noqa: F811
        return x, n

    expected = "g(Tensor x, int n) -> ((Tensor, int))"
    assert str(mine.schema) == str(_script(torch, g).schema) == expected


@pytest.mark.parametrize("fn", [scaled, untyped_pair, count])
def test_script_function_code_signature_matches_torch(fn):
    e, t = _both(fn)
    head = t.code.split(":\n", 1)[0]
    assert e.code.split(":\n", 1)[0] == head


def test_script_function_code_writes_operators_as_torch_calls():
    e, t = _both(untyped_pair)
    assert e.code == t.code


def test_script_function_calls_function():
    e = _script(ember, scaled)
    assert e(ember.ones(2), 3).tolist() == pytest.approx([3.00001, 3.00001])
    assert e(x=ember.ones(1), k=1, eps=0.0).tolist() == [1.0]


def test_script_function_converts_zero_dim_tensor_to_int():
    e, t = _both(count)
    assert e(ember.ones(1), ember.tensor(3)) == t(torch.ones(1), torch.tensor(3)) == 7


@pytest.mark.parametrize("args, kwargs", [
    ((1,), {}),                          # unannotated: a Tensor
    (("t", 2.5), {}),                    # int given a float
    (("t",), {"zz": 1}),                 # unknown keyword
    (("t", 1, 1e-5, "a", None, 9), {}),  # too many
    (("t",), {"x": "t"}),                # positional and keyword
    (("t", 1, 1e-5, "a", [1.0]), {}),    # Optional[List[int]] given floats
])
def test_script_function_bad_arguments_raise_as_torch(args, kwargs):
    e, t = _both(scaled)

    def fill(lib):
        a = tuple(lib.ones(1) if v == "t" else v for v in args)
        k = {n: lib.ones(1) if v == "t" else v for n, v in kwargs.items()}
        return a, k

    with pytest.raises(RuntimeError) as te:
        t(*fill(torch)[0], **fill(torch)[1])
    with pytest.raises(RuntimeError) as ee:
        e(*fill(ember)[0], **fill(ember)[1])
    assert str(ee.value).split("Cast error")[0] == str(te.value).split("Cast error")[0]


def test_script_function_missing_argument_raises():
    e, t = _both(count)
    with pytest.raises(RuntimeError) as te:
        t(torch.ones(1))
    with pytest.raises(RuntimeError) as ee:
        e(ember.ones(1))
    assert str(ee.value) == str(te.value)


def test_script_function_mutable_default_refused():
    def f(x, sizes: list[int] = [1]):  # noqa: B006
        return x

    with pytest.raises(RuntimeError, match="Mutable default parameters"):
        _script(ember, f)


def test_script_function_save_loads_as_module(tmp_path):
    e = _script(ember, count)
    path = tmp_path / "f.pt"
    e.save(str(path))
    loaded = ember.jit.load(str(path))
    assert repr(loaded) == "RecursiveScriptModule(original_name=PlaceholderModule)"
    assert loaded(ember.ones(1), 4) == 9


def test_script_function_save_to_buffer_loads():
    data = _script(ember, untyped_pair).save_to_buffer()
    loaded = ember.jit.load(io.BytesIO(data))
    s, d = loaded(ember.ones(2), ember.ones(2))
    assert s.tolist() == [2.0, 2.0] and d.tolist() == [0.0, 0.0]


def test_script_function_graph_is_lowered_source():
    # (more in tests/jit/test_script_code.py)
    text = str(_script(ember, count).graph)
    assert text.startswith("graph(%x.1 : Tensor,\n      %n.1 : int):")
    assert "int = aten::mul(%n.1, " in text and "int = aten::add(" in text


def test_script_function_direct_construction_refused():
    with pytest.raises(TypeError, match="No constructor defined"):
        ember.jit.ScriptFunction()


def test_script_lambda_returned_as_is():
    f = lambda x: x  # noqa: E731
    assert _script(ember, f) is f


def chain(x):
    unused = x * 3  # noqa: F841  (dropped, as TorchScript drops it)
    y = x @ x.t()
    y = y / 2 - x**2
    return x.relu().sigmoid().tanh().exp().log().sum() + 1.0 * y.mean()


def reversed_number(x):
    a = 2 - x
    return a


def gelu_like(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@pytest.mark.parametrize("fn", [chain, reversed_number, gelu_like])
def test_script_function_straight_line_code_matches_torch(fn):
    # dead statements dropped, reassigned names renamed, long arguments as temporaries
    e, t = _both(fn)
    assert e.code == t.code


def _star_args(x, *rest):
    return x


def _keyword_default(x, *, k: int = 1):
    return x


@pytest.mark.parametrize("fn", [_star_args, _keyword_default])
def test_script_function_variable_arguments_refused_as_torch(fn):
    with pytest.raises(torch.jit.frontend.NotSupportedError) as theirs:
        _script(torch, fn)
    with pytest.raises(ember.jit.frontend.NotSupportedError) as mine:
        _script(ember, fn)
    assert str(mine.value).splitlines()[:2] == str(theirs.value).splitlines()[:2]
