"""TorchScript's type objects and operator schemas (``torch.IntType``, ``torch.parse_schema``),
compared with torch."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(ember), fn(torch)


def _same(fn):
    e, t = _both(fn)
    assert e == t


def _raises_both(fn, exc):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(ember)


SINGLETONS = ["AnyType", "BoolType", "ComplexType", "DeviceObjType", "FloatType", "IntType",
              "NoneType", "NumberType", "PyObjectType", "StreamObjType", "StringType",
              "SymIntType", "SymBoolType", "TensorType"]


@pytest.mark.parametrize("name", SINGLETONS)
def test_singleton_str_kind_like_torch(name):
    _same(lambda m: (str(getattr(m, name).get()), getattr(m, name).get().kind(),
                     getattr(m, name).get().annotation_str))


def test_singleton_get_is_same_object():
    assert ember.IntType.get() is ember.IntType.get()


def test_types_have_no_constructor():
    _raises_both(lambda m: m.IntType(), TypeError)
    _raises_both(lambda m: m.Type(), TypeError)


def test_container_strings_like_torch():
    def strings(m):
        i, t, s = m.IntType.get(), m.TensorType.get(), m.StringType.get()
        made = [m.ListType(i), m.DictType(s, t), m.OptionalType(t), m.TupleType([i, t]),
                m.TupleType([]), m.FutureType(i), m.AwaitType(i), m.RRefType(i),
                m.OptionalType(m.ListType(i))]
        return [(str(x), repr(x), x.kind(), [str(c) for c in x.containedTypes()]) for x in made]
    _same(strings)


def test_list_constructors_like_torch():
    _same(lambda m: [str(f()) for f in (m.ListType.ofInts, m.ListType.ofFloats,
                                        m.ListType.ofBools, m.ListType.ofStrings,
                                        m.ListType.ofTensors, m.ListType.ofComplexDoubles,
                                        m.OptionalType.ofTensor)])


def test_list_of_non_type_raises_type_error():
    _raises_both(lambda m: m.ListType(3), TypeError)


def test_union_order_and_flattening_like_torch():
    def unions(m):
        i, f, s, t, b = (m.IntType.get(), m.FloatType.get(), m.StringType.get(),
                         m.TensorType.get(), m.BoolType.get())
        return [str(m.UnionType([s, t, i, b, f])),
                str(m.UnionType([i, m.UnionType([f, s])])),
                str(m.UnionType([m.NoneType.get(), i, f])),
                str(m.UnionType([m.ListType(i), m.ListType(f)]))]
    _same(unions)


def test_union_of_one_type_and_none_is_optional_like_torch():
    def opt(m):
        u = m.UnionType([m.IntType.get(), m.NoneType.get()])
        return (str(u), type(u).__name__, u.kind(), u == m.OptionalType(m.IntType.get()),
                isinstance(m.OptionalType(m.IntType.get()), m.UnionType))
    _same(opt)


def test_subtyping_like_torch():
    def subs(m):
        i, n, f = m.IntType.get(), m.NumberType.get(), m.FloatType.get()
        none, s = m.NoneType.get(), m.StringType.get()
        return [i.isSubtypeOf(n), i.isSubtypeOf(m.AnyType.get()), i.isSubtypeOf(f),
                m.BoolType.get().isSubtypeOf(i), none.isSubtypeOf(m.OptionalType(i)),
                m.ListType(i).isSubtypeOf(m.ListType(n)),
                m.TupleType([i]).isSubtypeOf(m.TupleType([n])),
                m.FutureType(i).isSubtypeOf(m.FutureType(n)),
                m.DictType(i, i).isSubtypeOf(m.DictType(i, n)),
                m.OptionalType(i).isSubtypeOf(m.OptionalType(n)),
                m.UnionType([i, s]).isSubtypeOf(m.UnionType([i, s, f])),
                i.isSubtypeOf(m.UnionType([i, s])), m.AnyType.get().isSubtypeOf(i)]
    _same(subs)


def test_equality_and_unhashable_like_torch():
    _same(lambda m: [m.ListType(m.IntType.get()) == m.ListType(m.IntType.get()),
                     m.ListType(m.IntType.get()) == m.ListType(m.FloatType.get()),
                     m.IntType.get() == m.SymIntType.get(),
                     m.IntType.get().__hash__ is None])


def test_tensor_type_from_tensor_like_torch():
    def info(m):
        ct = m.TensorType.create_from_tensor(m.zeros(2, 3, dtype=m.float64))
        return (str(ct), str(ct.dtype()).split(".")[1], ct.sizes(), ct.dim(), ct.scalarType(),
                str(ct.device()), ct.requires_grad(), ct.strides(), ct.varyingSizes(),
                ct.undefined(), ct.isSubtypeOf(m.TensorType.get()),
                m.TensorType.get().isSubtypeOf(ct), ct == m.TensorType.get(),
                ct.with_sizes([4, None]).sizes(), ct.with_sizes([4, None]).varyingSizes(),
                ct.contiguous().strides(), str(ct.with_dtype(m.float32).dtype()).split(".")[1])
    _same(info)


def test_generic_tensor_type_queries_like_torch():
    def info(m):
        t = m.TensorType.get()
        return (t.dtype(), t.sizes(), t.dim(), t.scalarType(), t.device(), t.requires_grad(),
                t.strides(), t.varyingSizes(), t.undefined(), m.TensorType.getInferred() == t)
    _same(info)


def test_tensor_query_on_int_type_raises_runtime_error():
    _raises_both(lambda m: m.IntType.get().dtype(), RuntimeError)


def test_inferred_type_like_torch():
    _same(lambda m: (m.InferredType(m.IntType.get()).success(),
                     str(m.InferredType(m.IntType.get()).type()),
                     m.InferredType("no").success(), m.InferredType("no").reason()))
    _raises_both(lambda m: m.InferredType("no").type(), RuntimeError)


def test_unify_type_list_like_torch():
    def unified(m):
        i, n, none = m.IntType.get(), m.NumberType.get(), m.NoneType.get()
        lists = [[i, i], [i, none], [m.OptionalType(i), i], [none, m.OptionalType(i)],
                 [m.TupleType([i]), m.TupleType([none])], [i, n], [n, i], [none, none]]
        return [str(m.unify_type_list(x)) for x in lists]
    _same(unified)


@pytest.mark.parametrize("which", ["empty", "int_float", "lists"])
def test_unify_type_list_failure_raises_runtime_error(which):
    def bad(m):
        i, f = m.IntType.get(), m.FloatType.get()
        return m.unify_type_list({"empty": [], "int_float": [i, f],
                                  "lists": [m.ListType(i), m.ListType(f)]}[which])
    _raises_both(bad, RuntimeError)


ARGS = ["int[] a", "Tensor? b", "Tensor[] c", "Scalar d", "str e", "Device f", "float[2] h",
        "SymInt i", "bool? j", "Any k", "Layout l", "ScalarType m", "MemoryFormat n",
        "Generator? o", "Stream p", "complex q", "int?[] r", "Tensor(a!) s", "Storage t",
        "SymInt[] u", "Scalar[] v", "int[1] y=[0]", "float z=1e-5", 'str w="mean"',
        "int? q=None", "ScalarType? d=None", "bool b=True", "Tensor(a) x", "SymInt[1] si",
        "int[2] k=1", "Scalar s=-1", "float[] f=[1.5, 2]", "Scalar? s", "ScalarType dt=float",
        "ScalarType dt=bfloat16", "Layout l=strided", "MemoryFormat m=contiguous_format"]


def _describe(a):
    return (a.name, str(a.type), a.type.kind(), str(a.real_type), a.N, a.default_value,
            a.has_default_value(), a.is_write, a.is_out, a.kwarg_only,
            None if a.alias_info is None else (a.alias_info.is_write, a.alias_info.before_set))


@pytest.mark.parametrize("arg", ARGS)
def test_parse_schema_argument_like_torch(arg):
    _same(lambda m: _describe(m.parse_schema(f"f({arg}) -> ()").arguments[0]))


@pytest.mark.parametrize("text", [
    "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "f(Tensor x) -> (Tensor a, Tensor b)",
    "f(Tensor x) -> ()",
    "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
    "ScalarType? dtype=None) -> Tensor",
])
def test_parse_schema_whole_like_torch(text):
    def whole(m):
        s = m.parse_schema(text)
        return (str(s), s.name, s.overload_name, s.is_mutable,
                [_describe(a) for a in s.arguments], [_describe(r) for r in s.returns])
    _same(whole)


@pytest.mark.parametrize("text", ["f(Tensor x -> Tensor", "f(Foo x) -> Tensor", "",
                                  "(Tensor x) -> Tensor"])
def test_parse_schema_malformed_raises_runtime_error(text):
    _raises_both(lambda m: m.parse_schema(text), RuntimeError)


def test_parse_schema_non_string_raises_type_error():
    with pytest.raises(TypeError):
        ember.parse_schema(3)


@pytest.mark.parametrize("new,old", [
    ("f(Tensor x) -> Tensor", "f(Tensor x, int y=1) -> Tensor"),
    ("f(Tensor x, int y=1) -> Tensor", "f(Tensor x) -> Tensor"),
    ("f(Tensor x, *, int y=1) -> Tensor", "f(Tensor x) -> Tensor"),
    ("f(Tensor x, int y) -> Tensor", "f(Tensor x) -> Tensor"),
    ("f(Tensor x) -> Tensor", "g(Tensor x) -> Tensor"),
    ("f(Tensor? x) -> Tensor", "f(Tensor x) -> Tensor"),
    ("f(Tensor x) -> Tensor", "f(Tensor? x) -> Tensor"),
    ("f(Scalar x) -> Tensor", "f(int x) -> Tensor"),
])
def test_is_backward_compatible_with_like_torch(new, old):
    _same(lambda m: m.parse_schema(new).is_backward_compatible_with(m.parse_schema(old)))


def test_schema_equality_like_torch():
    _same(lambda m: (m.parse_schema("f(Tensor x) -> Tensor") == m.parse_schema(
        "f(Tensor x) -> Tensor"), m.parse_schema("f(Tensor x) -> Tensor") == m.parse_schema(
        "f(Tensor y) -> Tensor")))


def test_argument_and_schema_constructors_like_torch():
    def made(m):
        a = m.Argument("x", m.TensorType.get(), None, None, False, None)
        s = m.FunctionSchema("ns::f", "", [a], [m.Argument("", m.TensorType.get(), None, None,
                                                           False, None)], False, False)
        return (a.name, str(a.type), a.has_default_value(), s.name, len(s.arguments),
                s.is_mutable)
    _same(made)


def test_enum_type_like_torch():
    import enum

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

    def info(m):
        i = m.IntType.get()
        t = m.EnumType("__torch__.Color", i, list(Color))
        return (str(t), t.kind(), t.annotation_str, [str(c) for c in t.containedTypes()],
                t == m.EnumType("__torch__.Color", i, list(Color)),
                t == m.EnumType("__torch__.Colour", i, list(Color)),
                t.isSubtypeOf(m.AnyType.get()), t.isSubtypeOf(i),
                str(m.UnionType([t, i])))
    _same(info)


def test_enum_type_value_of_wrong_type_raises_runtime_error():
    import enum

    class Color(enum.Enum):
        RED = 1

    _raises_both(lambda m: m.EnumType("C", m.TensorType.get(), list(Color)), RuntimeError)
