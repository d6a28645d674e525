"""What the session-30 sweep of public-style programs (``test_research_repos_9.py`` and the
error-printing idioms around it) found different from PyTorch, pinned in process.

Programs print the errors they catch (``except RuntimeError as e: print(e)``, or
``type(e).__name__``): the float64 NumPy batch fed to a float32 model, an LSTM's wrongly
shaped state, ``torch.where`` of shapes that do not broadcast. Each test checks ember's text
against PyTorch's where PyTorch is installed, and against PyTorch 2.13's words otherwise.
"""

import pickle

import pytest

import ember


def _error(fw, make):
    """``(type name, message)`` of what ``make(fw)`` raises."""
    try:
        make(fw)
    except Exception as e:  # noqa: BLE001  (any exception is the answer)
        return type(e).__name__, str(e)
    raise AssertionError("no exception")


def _check(make, want):
    got = _error(ember, make)
    got = (got[0], got[1].replace("ember.Size", "torch.Size"))  # (as under the alias)
    assert got == want
    try:
        import torch
    except ImportError:
        return
    assert got == _error(torch, make)


def _f64(fw, *shape):
    return fw.ones(*shape, dtype=fw.float64)


_M1M2 = "expected m1 and m2 to have the same dtype, but got: "
_PRODUCTS = {
    "mm": (lambda t: t.mm(t.ones(2, 2), _f64(t, 2, 2)), _M1M2 + "float != double"),
    "matmul": (lambda t: t.ones(2, 2) @ _f64(t, 2, 2), _M1M2 + "float != double"),
    "vec@mat": (lambda t: t.ones(2) @ _f64(t, 2, 2), _M1M2 + "float != double"),
    "long@float": (lambda t: t.ones(2, 2, dtype=t.long) @ t.ones(2, 2),
                   _M1M2 + "long int != float"),
    "half": (lambda t: t.ones(2, 2) @ t.ones(2, 2).half(), _M1M2 + "float != c10::Half"),
    "complex": (lambda t: t.ones(2, 2, dtype=t.cfloat) @ t.ones(2, 2),
                _M1M2 + "c10::complex<float> != float"),
    "linear_no_bias": (lambda t: t.nn.functional.linear(_f64(t, 4, 3), t.ones(2, 3)),
                       _M1M2 + "double != float"),
    "bmm": (lambda t: t.bmm(_f64(t, 1, 2, 2), t.ones(1, 2, 2)),
            "expected scalar type Double but found Float"),
    "batched@": (lambda t: t.ones(2, 2).expand(3, 2, 2) @ _f64(t, 2, 2),
                 "expected scalar type Float but found Double"),
    # a contiguous batch times a matrix folds into one matrix product (and one matrix-vector
    # product for a vector), as does a batch times a matrix that needs a gradient
    "folded@": (lambda t: t.ones(3, 2, 2) @ _f64(t, 2, 2), _M1M2 + "float != double"),
    "folded@vec": (lambda t: t.ones(3, 2, 2) @ _f64(t, 2),
                   "addmv input tensors must have the same dtype, but got Double, Float, and "
                   "Double"),
    "folded_swapped": (lambda t: t.ones(2, 2, requires_grad=True) @ _f64(t, 3, 2, 2),
                       _M1M2 + "double != float"),
    "transposed_batch": (lambda t: t.ones(3, 2, 2).transpose(1, 2) @ _f64(t, 2, 2),
                         "expected scalar type Float but found Double"),
    "matrix@batch": (lambda t: t.ones(2, 2) @ _f64(t, 3, 2, 2),
                     "expected scalar type Float but found Double"),
    "einsum": (lambda t: t.einsum("ij,jk->ik", _f64(t, 2, 2), t.ones(2, 2)),
               "expected scalar type Double but found Float"),
    "mv": (lambda t: t.mv(t.ones(2, 2), _f64(t, 2)),
           "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    "mat@vec": (lambda t: _f64(t, 2, 2) @ t.ones(2),
                "addmv input tensors must have the same dtype, but got Float, Double, and Float"),
    "vec@vec": (lambda t: t.ones(2) @ _f64(t, 2),
                "dot : expected both vectors to have same dtype, but found Float and Double"),
    "addmm_self": (lambda t: t.addmm(_f64(t, 2, 2), t.ones(2, 2), t.ones(2, 2)),
                   "self and mat2 must have the same dtype, but got Double and Float"),
    "addmm_mat1": (lambda t: t.addmm(t.ones(2, 2), _f64(t, 2, 2), t.ones(2, 2)),
                   "mat1 and mat2 must have the same dtype, but got Double and Float"),
    "addmm_before_shapes": (lambda t: t.addmm(_f64(t, 2, 2), t.ones(2, 2), t.ones(3, 2)),
                            "self and mat2 must have the same dtype, but got Double and Float"),
    "addbmm": (lambda t: t.addbmm(t.ones(2, 2), t.ones(1, 2, 2), _f64(t, 1, 2, 2)),
               "self and mat2 must have the same dtype, but got Float and Double"),
    "addmv": (lambda t: t.addmv(t.ones(2), t.ones(2, 2), _f64(t, 2)),
              "addmv input tensors must have the same dtype, but got Float, Float, and Double"),
    "baddbmm_input": (lambda t: t.baddbmm(t.ones(1, 2, 2, dtype=t.long), t.ones(1, 2, 2),
                                          t.ones(1, 2, 2)),
                      "Input dtypes must be the same, got: input long int, batch1: float, "
                      "batch2: float"),
    "baddbmm_batch2": (lambda t: t.baddbmm(t.ones(1, 2, 2), t.ones(1, 2, 2), _f64(t, 1, 2, 2)),
                       "expected scalar type Float but found Double"),
    "tensordot": (lambda t: t.tensordot(_f64(t, 2, 2), t.ones(2, 2), 1),
                  "both inputs should have same dtype"),
    "mm_shapes_first": (lambda t: t.mm(t.ones(2, 2), _f64(t, 3, 2)),
                        "mat1 and mat2 shapes cannot be multiplied (2x2 and 3x2)"),
    "multi_dot": (lambda t: t.linalg.multi_dot([t.ones(2, 2), t.ones(2, 2),
                                                t.ones(2, 2, dtype=t.long)]),
                  "multi_dot(): all tensors must have be the same dtype but tensor 0 is float "
                  "and tensor 2 long int"),
}


@pytest.mark.parametrize("case", sorted(_PRODUCTS))
def test_product_of_two_dtypes_refused_in_torchs_words(case):
    # NOTE [ Product dtype messages ]: each product in the words of the kernel it reaches,
    # without the Python function's name; multi_dot once failed comparing tensors by ``==``
    make, message = _PRODUCTS[case]
    _check(make, ("RuntimeError", message))


def test_linear_layer_fed_float64_says_what_torch_says():
    # the commonest of them: a float64 NumPy batch into a float32 model, with and without
    # the layer's bias
    layer = (lambda t: t.nn.Linear(3, 2), lambda t: t.nn.Linear(3, 2, bias=False))
    _check(lambda t: layer[0](t)(_f64(t, 4, 3)),
           ("RuntimeError", "mat1 and mat2 must have the same dtype, but got Double and Float"))
    _check(lambda t: layer[1](t)(_f64(t, 4, 3)),
           ("RuntimeError", _M1M2 + "double != float"))


_RNN = {
    "lstm_h": (lambda t: t.nn.LSTM(3, 4)(t.ones(5, 2, 3), (t.zeros(2, 2, 4), t.zeros(1, 2, 4))),
               ("RuntimeError", "Expected hidden[0] size (1, 2, 4), got [2, 2, 4]")),
    "lstm_c": (lambda t: t.nn.LSTM(3, 4)(t.ones(5, 2, 3), (t.zeros(1, 2, 4), t.zeros(1, 3, 4))),
               ("RuntimeError", "Expected hidden[1] size (1, 2, 4), got [1, 3, 4]")),
    "gru_h": (lambda t: t.nn.GRU(3, 4)(t.ones(5, 2, 3), t.zeros(1, 3, 4)),
              ("RuntimeError", "Expected hidden size (1, 2, 4), got [1, 3, 4]")),
    "lstm_1d": (lambda t: t.nn.LSTM(3, 4)(t.ones(3)),
                ("ValueError", "LSTM: Expected input to be 2D or 3D, got 1D instead")),
    "gru_4d": (lambda t: t.nn.GRU(3, 4)(t.ones(1, 1, 1, 3)),
               ("ValueError", "GRU: Expected input to be 2D or 3D, got 4D instead")),
    "rnn_1d": (lambda t: t.nn.RNN(3, 4)(t.ones(3)),
               ("ValueError", "RNN: Expected input to be 2D or 3D, got 1D tensor instead")),
    "subclass_1d": (lambda t: type("Encoder", (t.nn.LSTM,), {})(3, 4)(t.ones(3)),
                    ("ValueError", "LSTM: Expected input to be 2D or 3D, got 1D instead")),
}


@pytest.mark.parametrize("case", sorted(_RNN))
def test_recurrent_layer_refusals_in_torchs_words(case):
    make, want = _RNN[case]
    _check(make, want)


_WHERE = {
    "scalar_other": (lambda t: t.where(t.tensor([True, False, True]), t.ones(2), 0.0),
                     "The size of tensor a (3) must match the size of tensor b (2) at "
                     "non-singleton dimension 0"),
    "three_shapes": (lambda t: t.where(t.ones(2, 3) > 0, t.ones(4, 1, 1), t.ones(2, 2)),
                     "The size of tensor a (3) must match the size of tensor b (2) at "
                     "non-singleton dimension 2"),
    "method": (lambda t: t.ones(3).where(t.tensor([True, False]), 0.0),
               "The size of tensor a (2) must match the size of tensor b (3) at "
               "non-singleton dimension 0"),
}


@pytest.mark.parametrize("case", sorted(_WHERE))
def test_where_names_the_clashing_sizes(case):
    make, message = _WHERE[case]
    _check(make, ("RuntimeError", message))


def test_permute_of_too_few_dims_in_torchs_words():
    _check(lambda t: t.ones(2, 3, 4).permute(0, 1),
           ("RuntimeError", "permute(sparse_coo): number of dimensions in the tensor input "
            "does not match the length of the desired ordering of dimensions i.e. input.dim() "
            "= 3 is not equal to len(dims) = 2"))


def test_linalg_error_is_named_as_torchs():
    # ``print(type(e).__name__)`` after a failed Cholesky prints _LinAlgError on PyTorch
    name, message = _error(ember, lambda t: t.linalg.cholesky(-t.eye(2)))
    assert name == "_LinAlgError" and message.startswith("linalg.cholesky: ")
    cls = ember.linalg.LinAlgError
    assert ember._C._LinAlgError is cls and issubclass(cls, RuntimeError)
    assert pickle.loads(pickle.dumps(cls)) is cls
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.inv(ember.zeros(2, 2))
    try:
        import torch
    except ImportError:
        return
    assert (torch.linalg.LinAlgError.__name__, torch.linalg.LinAlgError.__module__) == (
        cls.__name__, cls.__module__.replace("ember", "torch"))


_MORE = {
    "gather_rank": (lambda t: t.ones(2, 3).gather(1, t.tensor([0, 1])),
                    ("RuntimeError", "Index tensor must have the same number of dimensions as "
                     "input tensor")),
    "scatter_rank": (lambda t: t.zeros(2, 3).scatter_add_(1, t.tensor([0]), t.ones(2, 3)),
                     ("RuntimeError", "Index tensor must have the same number of dimensions "
                      "as self tensor")),
    "scatter_dtype": (lambda t: t.zeros(3).scatter_(0, t.tensor([0]), _f64(t, 1)),
                      ("RuntimeError", "scatter(): Expected self.dtype to be equal to "
                       "src.dtype")),
    "masked_fill_long": (lambda t: t.zeros(3).masked_fill(t.tensor([1, 0, 1]), 1.0),
                         ("RuntimeError", "masked_fill_ only supports boolean masks, but got "
                          "mask with dtype long int")),
    "masked_fill_float": (lambda t: t.zeros(3).masked_fill_(t.tensor([1.0, 0, 1]), 1.0),
                          ("RuntimeError", "masked_fill_ only supports boolean masks, but got "
                           "mask with dtype float")),
    "masked_scatter_long": (lambda t: t.zeros(3).masked_scatter(t.tensor([1, 0, 1]), t.ones(3)),
                            ("RuntimeError", "masked_scatter_ only supports boolean masks, but "
                             "got mask with dtype Long")),
    "masked_select_long": (lambda t: t.zeros(3).masked_select(t.tensor([1, 0, 1])),
                           ("RuntimeError", "masked_select: expected BoolTensor for mask")),
    "clamp_nothing": (lambda t: t.ones(2).clip_(),
                      ("RuntimeError", "torch.clamp: At least one of 'min' or 'max' must not "
                       "be None")),
    "bce_logits_shape": (lambda t: t.nn.BCEWithLogitsLoss()(t.rand(4, 1), t.rand(4)),
                         ("ValueError", "Target size (torch.Size([4])) must be the same as "
                          "input size (torch.Size([4, 1]))")),
    "setitem_slice": (lambda t: t.ones(3).__setitem__(slice(None), t.ones(2)),
                      ("RuntimeError", "The expanded size of the tensor (3) must match the "
                       "existing size (2) at non-singleton dimension 0.  Target sizes: [3].  "
                       "Tensor sizes: [2]")),
    "setitem_rows": (lambda t: t.ones(2, 3).__setitem__((slice(None), slice(0, 2)), t.ones(3)),
                     ("RuntimeError", "The expanded size of the tensor (2) must match the "
                      "existing size (3) at non-singleton dimension 1.  Target sizes: [2, 2].  "
                      "Tensor sizes: [3]")),
    "setitem_advanced": (lambda t: t.ones(3).__setitem__(t.tensor([0, 1, 2]), t.ones(2)),
                         ("RuntimeError", "shape mismatch: value tensor of shape [2] cannot be "
                          "broadcast to indexing result of shape [3]")),
    "optimizer_of_tensor": (lambda t: t.optim.SGD(t.ones(3), lr=0.1),
                            ("TypeError", "params argument given to the optimizer should be an "
                             "iterable of Tensors or dicts, but got torch.FloatTensor")),
    "assign_tensor_as_parameter": (lambda t: setattr(t.nn.Linear(2, 2), "weight", t.ones(2, 2)),
                                   ("TypeError", "cannot assign 'torch.FloatTensor' as "
                                    "parameter 'weight' (torch.nn.Parameter or None "
                                    "expected)")),
}


@pytest.mark.parametrize("case", sorted(_MORE))
def test_indexing_loss_and_module_refusals_in_torchs_words(case):
    # tensors are named as ``torch.typename`` names them, as PyTorch's refusals do
    make, want = _MORE[case]
    _check(make, want)


def test_projected_lstm_warns_only_when_its_kernel_runs():
    # PyTorch warns from its kernel call, after the state checks: a refused call says nothing
    import warnings

    from ember.nn.modules import rnn

    saved = rnn._projection_warned[0]
    rnn._projection_warned[0] = False
    try:
        lstm = ember.nn.LSTM(3, 4, proj_size=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size"):
                lstm(ember.ones(5, 2, 3), (ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)))
            assert not caught
            lstm(ember.ones(5, 2, 3))
        assert [str(w.message) for w in caught] == [
            "LSTM with projections is not supported with oneDNN. Using default "
            "implementation."]
    finally:
        rnn._projection_warned[0] = saved
