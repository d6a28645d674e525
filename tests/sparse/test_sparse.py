"""Sparse COO and CSR tensors (ember.sparse), compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VALS = [3.0, 4.0, 5.0, 1.0]


def _pair(idx=IDX, vals=VALS, size=(2, 3), **kw):
    args = () if size is None else (size,)
    e = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), *args, **kw)
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), *args, **kw)
    return e, t


def _close(a, b, **kw):
    if isinstance(b, torch.Tensor) and b.layout != torch.strided:
        assert a.layout.name == str(b.layout).split(".")[1]
        a, b = a.to_dense(), b.to_dense()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                               **kw)


def _torch_repr(e):
    return repr(e).replace("ember.", "torch.")


# -- construction and metadata ----------------------------------------------------------------


def test_sparse_coo_tensor_metadata_matches_torch():
    e, t = _pair()
    assert (e.is_sparse, e.layout is ember.sparse_coo, e.is_coalesced()) == (True, True, False)
    assert (e.shape, e.dtype, e.dim(), e.sparse_dim(), e.dense_dim(), e._nnz(), e.numel()) == (
        tuple(t.shape), ember.float32, t.dim(), t.sparse_dim(), t.dense_dim(), t._nnz(),
        t.numel())
    assert isinstance(e, ember.Tensor)


def test_sparse_coo_tensor_size_inferred():
    e, t = _pair(size=None)
    assert tuple(e.shape) == tuple(t.shape)


def test_sparse_coo_tensor_hybrid_values():
    e, t = _pair(idx=[[0, 2]], vals=[[1.0, 2.0], [3.0, 4.0]], size=(3, 2))
    assert (e.sparse_dim(), e.dense_dim()) == (1, 1)
    _close(e.to_dense(), t.to_dense())


def test_sparse_coo_tensor_nnz_mismatch_raises():
    with pytest.raises(RuntimeError, match="same nnz"):
        ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], (2,))


def test_sparse_coo_tensor_size_rank_mismatch_raises():
    with pytest.raises(RuntimeError, match="len\\(size\\) == sparse_dim \\+ dense_dim"):
        ember.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2, 3))


def test_check_invariants_rejects_out_of_range_index():
    with pytest.raises(RuntimeError, match="size is inconsistent"):
        ember.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (2,), check_invariants=True)


def test_check_sparse_tensor_invariants_context():
    with ember.sparse.check_sparse_tensor_invariants():
        assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
        with pytest.raises(RuntimeError):
            ember.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (2,))
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()


def test_integer_values_keep_int64():
    e = ember.sparse_coo_tensor([[0, 1]], [1, 2])
    assert e.dtype is ember.int64


# -- printing -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda m: m.sparse_coo_tensor(m.tensor(IDX), m.tensor(VALS), (2, 3)),
    lambda m: m.sparse_coo_tensor(m.tensor(IDX), m.tensor(VALS), (2, 3)).coalesce(),
    lambda m: m.sparse_coo_tensor(m.tensor(IDX), m.tensor(VALS, dtype=m.float64), (2, 3),
                                  requires_grad=True),
    lambda m: m.zeros(2, 3).to_sparse(),
    lambda m: m.sparse_coo_tensor(m.tensor([[0, 1]]), m.ones(2, 3), (3, 3)),
    lambda m: m.eye(3).to_sparse_csr(),
    lambda m: m.eye(2, dtype=m.float64).to_sparse_csr(),
    lambda m: m.eye(3).to_sparse_csc(),
])
def test_repr_matches_torch(make):
    assert _torch_repr(make(ember)) == repr(make(torch))


# -- coalesce, accessors, conversions ---------------------------------------------------------


def test_coalesce_sums_duplicates():
    e, t = _pair()
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.is_coalesced()
    assert ec.indices().tolist() == tc.indices().tolist()
    assert ec.values().tolist() == tc.values().tolist()


def test_values_of_uncoalesced_raises():
    e, _ = _pair()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        e.values()


def test_to_dense_matches_torch():
    e, t = _pair()
    _close(e.to_dense(), t.to_dense())


def test_dense_to_sparse_round_trip():
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    e, t = ember.tensor(x).to_sparse(), torch.tensor(x).to_sparse()
    assert e.indices().tolist() == t.indices().tolist()
    _close(e.to_dense(), t.to_dense())


def test_to_sparse_with_sparse_dim_gives_hybrid():
    x = np.array([[0.0, 0.0], [2.0, 0.0]], dtype=np.float32)
    e, t = ember.tensor(x).to_sparse(1), torch.tensor(x).to_sparse(1)
    assert e.indices().tolist() == t.indices().tolist()
    assert e.values().tolist() == t.values().tolist()


def test_csr_accessors_match_torch():
    x = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0], [3.0, 0.0, 4.0]], dtype=np.float32)
    e, t = ember.tensor(x).to_sparse_csr(), torch.tensor(x).to_sparse_csr()
    assert e.layout is ember.sparse_csr and e.is_sparse_csr and not e.is_sparse
    assert e.crow_indices().tolist() == t.crow_indices().tolist()
    assert e.col_indices().tolist() == t.col_indices().tolist()
    assert e.values().tolist() == t.values().tolist()


def test_sparse_csr_tensor_constructor():
    e = ember.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [1.0, 2.0, 3.0], (2, 3))
    t = torch.sparse_csr_tensor([0, 1, 3], [2, 0, 2], [1.0, 2.0, 3.0], (2, 3))
    _close(e.to_dense(), t.to_dense())


def test_coo_to_csr_and_back():
    e, t = _pair()
    _close(e.to_sparse_csr().to_sparse_coo(), t.to_sparse_csr().to_sparse_coo())


def test_csc_accessors_match_torch():
    x = np.array([[0.0, 1.0], [2.0, 3.0]], dtype=np.float32)
    e, t = ember.tensor(x).to_sparse_csc(), torch.tensor(x).to_sparse_csc()
    assert e.ccol_indices().tolist() == t.ccol_indices().tolist()
    assert e.row_indices().tolist() == t.row_indices().tolist()
    assert e.values().tolist() == t.values().tolist()


def test_indices_on_csr_raises_as_torch():
    e = ember.eye(2).to_sparse_csr()
    with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout"):
        e.indices()


# -- products and autograd ------------------------------------------------------------------


def test_sparse_mm_forward_and_gradients_match_torch():
    e, t = _pair()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ev = ember.tensor(VALS, requires_grad=True)
    tv = torch.tensor(VALS, requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    es = ember.sparse_coo_tensor(ember.tensor(IDX), ev, (2, 3))
    ts = torch.sparse_coo_tensor(torch.tensor(IDX), tv, (2, 3))
    ey, ty = ember.sparse.mm(es, ex), torch.sparse.mm(ts, tx)
    _close(ey, ty)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    _close(ev.grad, tv.grad)
    _close(ex.grad, tx.grad)


def test_matmul_operator_with_sparse_left():
    e, t = _pair()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    _close(e @ ember.tensor(x), t @ torch.tensor(x))


def test_matmul_sparse_by_vector():
    e, t = _pair()
    v = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    _close(e @ ember.tensor(v), t @ torch.tensor(v))


def test_dense_at_sparse_gradient_to_dense():
    e, t = _pair()
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = ex @ e, tx @ t
    _close(ey, ty)
    ey.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    _close(ex.grad, tx.grad)


def test_sparse_leaf_grad_is_sparse_with_its_pattern():
    e, t = _pair(requires_grad=True)
    x = np.ones((3, 2), dtype=np.float32)
    ember.sparse.mm(e, ember.tensor(x)).sum().backward()
    torch.sparse.mm(t, torch.tensor(x)).sum().backward()
    assert e.grad.layout is ember.sparse_coo
    _close(e.grad.to_dense(), t.grad.to_dense())


def test_csr_mm_matches_torch():
    x = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]], dtype=np.float32)
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    _close(ember.tensor(x).to_sparse_csr() @ ember.tensor(w),
           torch.tensor(x).to_sparse_csr() @ torch.tensor(w))


def test_addmm_with_sparse_mat1():
    e, t = _pair()
    b = np.ones((2, 2), dtype=np.float32)
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    _close(ember.sparse.addmm(ember.tensor(b), e, ember.tensor(w), beta=0.5, alpha=2.0),
           torch.sparse.addmm(torch.tensor(b), t, torch.tensor(w), beta=0.5, alpha=2.0))
    _close(ember.addmm(ember.tensor(b), e, ember.tensor(w)),
           torch.addmm(torch.tensor(b), t, torch.tensor(w)))


def test_sparse_at_sparse_is_sparse():
    a = np.array([[0.0, 1.0], [2.0, 0.0]], dtype=np.float32)
    e = ember.sparse.mm(ember.tensor(a).to_sparse(), ember.tensor(a).to_sparse())
    t = torch.sparse.mm(torch.tensor(a).to_sparse(), torch.tensor(a).to_sparse())
    _close(e, t)


def test_mm_dtype_mismatch_raises_as_torch():
    e, _ = _pair()
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.sparse.mm(e, ember.ones(3, 2, dtype=ember.float64))


def test_mm_shape_mismatch_raises():
    e, _ = _pair()
    with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 4"):
        ember.sparse.mm(e, ember.ones(4, 2))


def test_spmm_double_backward():
    e, _ = _pair()
    x = ember.ones(3, 2, dtype=ember.float32, requires_grad=True)
    y = ember.sparse.mm(e.coalesce(), x * x).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    t, _ = _pair()
    tx = torch.ones(3, 2, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.sparse.mm(_pair()[1].coalesce(), tx * tx).sum(), tx,
                                create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    _close(gg, tgg)


def test_gradient_through_coalesce_and_to_dense():
    ev = ember.tensor(VALS, requires_grad=True)
    tv = torch.tensor(VALS, requires_grad=True)
    ed = ember.sparse_coo_tensor(ember.tensor(IDX), ev, (2, 3)).coalesce().to_dense()
    td = torch.sparse_coo_tensor(torch.tensor(IDX), tv, (2, 3)).coalesce().to_dense()
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    (ed * ember.tensor(w)).sum().backward()
    (td * torch.tensor(w)).sum().backward()
    _close(ev.grad, tv.grad)


# -- elementwise, reductions, softmax ---------------------------------------------------------


@pytest.mark.parametrize("expr", ["s * 2", "2 * s", "s / 4", "-s", "s + s", "s - s.coalesce()",
                                  "s * s", "s ** 2", "s.abs()", "s.sqrt()", "s.float()",
                                  "s.double()", "s.t()", "s.transpose(0, 1)",
                                  "s.unsqueeze(0)", "s.relu()", "s.clone()", "s.detach()",
                                  "s * d", "d * s", "d + s", "s.to(M.float64)"])
def test_elementwise_matches_torch(expr):
    x = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=np.float32)
    e, t = _pair()
    er = eval(expr, {"s": e, "d": ember.tensor(x), "M": ember})
    tr = eval(expr, {"s": t, "d": torch.tensor(x), "M": torch})
    assert er.dtype.name == str(tr.dtype).split(".")[1]
    _close(er, tr)


def test_sparse_plus_dense_raises_as_torch():
    e, _ = _pair()
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        e + ember.ones(2, 3)


def test_unsupported_op_raises_not_implemented_error():
    e, _ = _pair()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp' with arguments "
                                                  "from the 'SparseCPU' backend"):
        ember.exp(e)
    with pytest.raises(NotImplementedError, match="aten::view"):
        e.view(3, 2)


def test_stride_and_numpy_raise_as_torch():
    e, _ = _pair()
    with pytest.raises(RuntimeError):
        e.stride()
    with pytest.raises(TypeError, match="Use Tensor.to_dense\\(\\) first"):
        e.numpy()


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sparse_sum_matches_torch(dim):
    e, t = _pair()
    er = ember.sparse.sum(e) if dim is None else ember.sparse.sum(e, dim)
    tr = torch.sparse.sum(t) if dim is None else torch.sparse.sum(t, dim)
    assert (er.layout is ember.strided) == (tr.layout == torch.strided)
    _close(er, tr)


def test_tensor_sum_method():
    e, t = _pair()
    _close(e.sum(), t.sum())
    _close(e.sum(0), t.sum(0))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_sparse_softmax_matches_torch(fn, dim):
    e, t = _pair()
    _close(getattr(ember.sparse, fn)(e, dim), getattr(torch.sparse, fn)(t, dim))


def test_sparse_softmax_gradient_matches_torch():
    ev = ember.tensor(VALS, requires_grad=True)
    tv = torch.tensor(VALS, requires_grad=True)
    es = ember.sparse.softmax(ember.sparse_coo_tensor(ember.tensor(IDX), ev, (2, 3)), 1)
    ts = torch.sparse.softmax(torch.sparse_coo_tensor(torch.tensor(IDX), tv, (2, 3)), 1)
    w = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], dtype=np.float32)
    (es.to_dense() * ember.tensor(w)).sum().backward()
    (ts.to_dense() * torch.tensor(w)).sum().backward()
    _close(ev.grad, tv.grad)


def test_spdiags_matches_torch():
    d = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    _close(ember.sparse.spdiags(ember.tensor(d), ember.tensor([0, -1]), (3, 3)),
           torch.sparse.spdiags(torch.tensor(d), torch.tensor([0, -1]), (3, 3)))


def test_sampled_addmm_matches_torch():
    a = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((3, 2)).astype(np.float32)
    e = ember.sparse.sampled_addmm(ember.eye(2).to_sparse_csr(), ember.tensor(a),
                                   ember.tensor(b))
    t = torch.sparse.sampled_addmm(torch.eye(2).to_sparse_csr(), torch.tensor(a),
                                   torch.tensor(b))
    _close(e, t)


def test_legacy_sparse_float_tensor():
    e = ember.sparse.FloatTensor(2, 3)
    assert e.layout is ember.sparse_coo and tuple(e.shape) == (2, 3)
    assert isinstance(ember.eye(2).to_sparse(), ember.sparse.FloatTensor)
    assert not isinstance(ember.eye(2), ember.sparse.FloatTensor)


def test_type_string_matches_torch():
    e, t = _pair()
    assert e.type() == t.type()


# -- serialization --------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    e, _ = _pair()
    c = ember.eye(3).to_sparse_csr()
    ember.save({"coo": e, "csr": c}, tmp_path / "s.pt")
    back = ember.load(tmp_path / "s.pt")
    assert back["coo"].layout is ember.sparse_coo and back["csr"].layout is ember.sparse_csr
    assert back["coo"].to_dense().tolist() == e.to_dense().tolist()
    assert back["csr"].to_dense().tolist() == c.to_dense().tolist()


def test_ember_checkpoint_readable_by_torch(tmp_path):
    e, t = _pair()
    ember.save({"coo": e, "csr": ember.eye(3).to_sparse_csr()}, tmp_path / "s.pt")
    back = torch.load(tmp_path / "s.pt")
    assert back["coo"].layout == torch.sparse_coo and back["csr"].layout == torch.sparse_csr
    assert back["coo"].to_dense().tolist() == t.to_dense().tolist()


def test_torch_checkpoint_readable_by_ember(tmp_path):
    _, t = _pair()
    torch.save({"coo": t, "csr": torch.eye(3).to_sparse_csr()}, tmp_path / "s.pt")
    back = ember.load(tmp_path / "s.pt")
    assert back["coo"].to_dense().tolist() == t.to_dense().tolist()
    assert back["csr"].to_dense().tolist() == torch.eye(3).tolist()


# -- a GCN layer, as the tutorials write it ---------------------------------------------------


def _gcn_step(m, adj_idx, adj_val, n, feats, w0):
    adj = m.sparse_coo_tensor(m.tensor(adj_idx), m.tensor(adj_val), (n, n)).coalesce()
    x = m.tensor(feats)
    w = m.tensor(w0, requires_grad=True)
    h = m.sparse.mm(adj, x @ w).relu()
    out = (adj @ h).log_softmax(1)
    loss = -out[:, 0].mean()
    loss.backward()
    return loss, w.grad


def test_gcn_layer_matches_torch():
    rng = np.random.default_rng(0)
    n = 12
    src, dst = rng.integers(0, n, 30), rng.integers(0, n, 30)
    idx = np.stack([np.r_[src, dst, np.arange(n)], np.r_[dst, src, np.arange(n)]])
    val = np.full(idx.shape[1], 0.2, dtype=np.float32)
    feats = rng.standard_normal((n, 5)).astype(np.float32)
    w0 = rng.standard_normal((5, 4)).astype(np.float32)
    el, eg = _gcn_step(ember, idx, val, n, feats, w0)
    tl, tg = _gcn_step(torch, idx, val, n, feats, w0)
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-5)
    _close(eg, tg)


def test_sparse_coo_tensor_size_only_is_empty():
    e, t = ember.sparse_coo_tensor((2, 3)), torch.sparse_coo_tensor((2, 3))
    assert _torch_repr(e) == repr(t)


def test_pickle_and_deepcopy_keep_sparse():
    import copy
    import pickle

    e, _ = _pair()
    for back in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e)):
        assert back.layout is ember.sparse_coo
        assert back.to_dense().tolist() == e.to_dense().tolist()


def test_ember_sparse_namespace_covers_torch_sparse():
    import torch.sparse as ts

    typing_names = ("torch", "Optional", "Union", "Tensor", "Any", "DType", "TYPE_CHECKING")
    names = [n for n in dir(ts) if not n.startswith("_") and n not in typing_names]
    missing = [n for n in names if callable(getattr(ts, n)) and not hasattr(ember.sparse, n)]
    assert missing == []


def test_sparse_mask_matches_torch_and_is_differentiable():
    m = np.array([[0.0, 1.0], [2.0, 0.0]], dtype=np.float32)
    d = np.arange(4, dtype=np.float32).reshape(2, 2)
    ex, tx = ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    er = ex.sparse_mask(ember.tensor(m).to_sparse())
    tr = tx.sparse_mask(torch.tensor(m).to_sparse())
    _close(er, tr)
    er.to_dense().sum().backward()
    tr.to_dense().sum().backward()
    _close(ex.grad, tx.grad)


def test_sparse_mask_with_strided_mask_raises():
    with pytest.raises(NotImplementedError, match="aten::sparse_mask"):
        ember.ones(2, 2).sparse_mask(ember.eye(2))


@pytest.mark.parametrize("p", [2, 1])
def test_native_norm_and_norm_match_torch(p):
    e, t = _pair()
    _close(ember.native_norm(e, p), torch.native_norm(t, p))
    _close(e.norm(p), t.norm(p))


def test_native_norm_of_strided_raises():
    with pytest.raises(NotImplementedError, match="aten::native_norm"):
        ember.native_norm(ember.ones(2))


def test_linear_with_sparse_input_matches_torch():
    e, t = _pair()
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.ones(4, dtype=np.float32)
    _close(ember.nn.functional.linear(e, ember.tensor(w), ember.tensor(b)),
           torch.nn.functional.linear(t, torch.tensor(w), torch.tensor(b)))


def test_indexing_a_sparse_tensor_raises_not_implemented():
    e, _ = _pair()
    with pytest.raises(NotImplementedError, match="aten::index"):
        e[0]


def test_gradient_through_to_sparse_matches_torch():
    x = np.array([[0.0, 1.5], [2.0, 0.0]], dtype=np.float32)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w = np.array([[1.0], [2.0]], dtype=np.float32)
    ember.sparse.mm(ex.to_sparse(), ember.tensor(w)).sum().backward()
    torch.sparse.mm(tx.to_sparse(), torch.tensor(w)).sum().backward()
    _close(ex.grad, tx.grad)


def test_csr_values_gradient_matches_torch():
    crow, col, vals = [0, 1, 3], [2, 0, 2], [1.0, 2.0, 3.0]
    ev, tv = ember.tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
    es = ember.sparse_csr_tensor(ember.tensor(crow), ember.tensor(col), ev, (2, 3))
    ts = torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), tv, (2, 3))
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    (es @ ember.tensor(w)).pow(2).sum().backward()
    (ts @ torch.tensor(w)).pow(2).sum().backward()
    _close(ev.grad, tv.grad)


def test_to_cpu_device_keeps_the_tensor():
    e, _ = _pair()
    assert e.to("cpu") is e and e.to(ember.device("cpu")) is e and e.cpu() is e
    assert e.to(ember.float64).dtype is ember.float64


def test_layout_comparison_and_pickled_layout():
    import pickle

    e, _ = _pair()
    assert e.layout == ember.sparse_coo and e.layout != ember.strided
    assert pickle.loads(pickle.dumps(ember.sparse_csr)) is ember.sparse_csr


@pytest.mark.parametrize("fn,dim", [("cat", 0), ("cat", 1), ("stack", 0), ("stack", 2)])
def test_cat_and_stack_match_torch(fn, dim):
    e, t = _pair()
    e2 = ember.eye(2, 3).to_sparse()
    t2 = torch.eye(2, 3).to_sparse()
    _close(getattr(ember, fn)([e, e2], dim), getattr(torch, fn)([t, t2], dim))
