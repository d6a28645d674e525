"""Regressions found by trying programs as a new user would (session 19)."""

import ember


def test_subclass_defined_by_exec_keeps_its_type():
    # a class defined by ``exec`` without ``__name__`` in its globals lives in ``builtins``;
    # it takes part in ``__torch_function__`` as a class from any other module does
    env = {"torch": ember}
    exec(
        "class MyT(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n"
        "class Plain(torch.Tensor):\n"
        "    pass\n", env)
    my_t, plain = env["MyT"], env["Plain"]
    assert my_t.__module__ == "builtins"
    t = ember.ones(2).as_subclass(my_t)
    assert type(t + 1) is my_t
    assert type(t.sum()) is my_t
    assert type(ember.add(t, 1)) is my_t
    assert type(t[0]) is my_t
    p = ember.ones(2).as_subclass(plain)
    assert type(p * 2) is plain
