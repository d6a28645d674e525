"""What the session-32 sweep of public-style programs (``test_research_repos_11.py``) found
different from PyTorch, pinned in process.

Each test states the value PyTorch 2.13 gives (so it runs without PyTorch) and, where
PyTorch is installed, compares with it too.
"""

import importlib

import pytest


def _frameworks():
    """ember, and PyTorch where installed."""
    names = ["ember"]
    if importlib.util.find_spec("torch") is not None:
        names.append("torch")
    return [importlib.import_module(n) for n in names]


def _stream_class(fw):
    data = importlib.import_module(fw.__name__ + ".utils.data")

    class Stream(data.IterableDataset):
        """Six items split between the workers, each with a draw from the worker's seed."""

        def __iter__(self):
            info = data.get_worker_info()
            for i in range(info.id, 6, info.num_workers):
                yield fw.tensor([i, info.id]), int(fw.randint(0, 1000, ()).item())

    return Stream


# ---------------------------------------------------------------------------------------------
# persistent workers over an IterableDataset stream again in every epoch (NOTE [ Persistent
# workers start each epoch afresh ]); the second epoch used to be empty


def _epochs_of_a_stream(fw, epochs=3):
    data = importlib.import_module(fw.__name__ + ".utils.data")
    loader = data.DataLoader(_stream_class(fw)(), batch_size=None, num_workers=2,
                             persistent_workers=True)
    fw.manual_seed(0)
    out = []
    for _ in range(epochs):
        out.append([(t.tolist(), r) for t, r in loader])
        out.append(round(fw.rand(()).item(), 6))
    return out


def test_persistent_workers_stream_an_iterable_dataset_every_epoch():
    got = {fw.__name__: _epochs_of_a_stream(fw) for fw in _frameworks()}
    items = [[0, 0], [1, 1], [2, 0], [3, 1], [4, 0], [5, 1]]
    for epoch in got["ember"][::2]:
        assert [t for t, _ in epoch] == items
    # each epoch continues the workers' own random streams (they are not reseeded)
    assert [r for _, r in got["ember"][2]] == [13, 613, 369, 894, 35, 810]
    assert got["ember"][1::2] == [0.088477, 0.13203, 0.307423]
    if "torch" in got:
        assert got["ember"] == got["torch"]


def test_persistent_workers_restart_after_a_broken_epoch():
    for fw in _frameworks():
        data = importlib.import_module(fw.__name__ + ".utils.data")
        loader = data.DataLoader(_stream_class(fw)(), batch_size=None, num_workers=2,
                                 persistent_workers=True)
        it = iter(loader)
        next(it)
        assert [t.tolist() for t, _ in loader] == [[0, 0], [1, 1], [2, 0], [3, 1], [4, 0],
                                                   [5, 1]], fw.__name__


# ---------------------------------------------------------------------------------------------
# a pipe read by workers: PyTorch draws its shared seed a second time once the workers run,
# and a fresh one for every later epoch of persistent workers


@pytest.mark.parametrize("persistent", [True, False])
def test_worker_pipe_seeds_and_global_stream_follow_torch(persistent):
    want = {True: [[0, 5, 6, 3, 7, 1, 2, 4], 0.490093, [2, 5, 3, 1, 6, 7, 4, 0], 0.632306],
            False: [[0, 5, 6, 3, 7, 1, 2, 4], 0.490093, [2, 5, 3, 1, 6, 7, 4, 0], 0.168859]}
    got = {}
    for fw in _frameworks():
        data = importlib.import_module(fw.__name__ + ".utils.data")
        pipes = importlib.import_module(fw.__name__ + ".utils.data.datapipes.iter")
        pipe = pipes.IterableWrapper(range(8)).shuffle().sharding_filter()
        loader = data.DataLoader(pipe, batch_size=None, num_workers=2,
                                 persistent_workers=persistent)
        fw.manual_seed(0)
        out = []
        for _ in range(2):
            out.append([int(t) for t in loader])
            out.append(round(fw.rand(()).item(), 6))
        got[fw.__name__] = out
    if "torch" in got:
        assert got["ember"] == got["torch"]
    assert got["ember"] == want[persistent]


# ---------------------------------------------------------------------------------------------
# topk names tied values as torch's selection leaves them in rows longer than 17 too (NOTE
# [ Tie order of topk ]): a retrieval program's recall@k over items sharing hashed
# embeddings counted other items than PyTorch's


def _tied_rows():
    import numpy as np

    rng = np.random.RandomState(0)
    a = rng.randn(4, 29).astype(np.float32)
    return np.concatenate([a, a[:, :2], a], 1)  # columns j and j + 31 equal


_TOPK_10_OF_TIED_ROWS = [[24, 55, 34, 3, 35, 4, 0, 29, 31, 59],
                         [14, 45, 29, 31, 0, 7, 38, 8, 39, 49],
                         [58, 27, 26, 57, 59, 28, 45, 14, 23, 54],
                         [49, 18, 21, 52, 26, 57, 13, 44, 23, 54]]


def test_topk_of_long_tied_rows_names_torchs_indices():
    import ember

    rows = _tied_rows()
    got = ember.topk(ember.tensor(rows), 10, dim=1).indices.tolist()
    assert got == _TOPK_10_OF_TIED_ROWS
    if len(_frameworks()) > 1:
        torch = importlib.import_module("torch")
        assert got == torch.topk(torch.tensor(rows), 10, dim=1).indices.tolist()


_TOPK_OF_HEAP_ROWS = {
    (1, True): [[1], [5], [3]], (1, False): [[2], [0], [0]],
    (2, True): [[5, 1], [70, 5], [7, 0]], (2, False): [[3, 0], [11, 8], [2, 1]],
    (3, True): [[11, 9, 3], [70, 5, 25], [5, 4, 0]], (3, False): [[5, 1, 4], [8, 6, 3], [16, 6, 2]],
}


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_heap_path_ties_follow_torch(k, largest):
    # k * 64 <= n: torch selects by a partial sort (a heap); NaN counts as the largest
    import numpy as np

    import ember

    rng = np.random.RandomState(k)
    rows = rng.randint(0, 4, (3, 200)).astype(np.float32)
    rows[1, [5, 70]] = np.nan
    got = ember.topk(ember.tensor(rows), k, largest=largest).indices.tolist()
    assert got == _TOPK_OF_HEAP_ROWS[k, largest]
    if len(_frameworks()) > 1:
        torch = importlib.import_module("torch")
        assert got == torch.topk(torch.tensor(rows), k, largest=largest).indices.tolist()


# ---------------------------------------------------------------------------------------------
# flex_attention outside torch.compile warns, once a process, that it runs unfused; a
# compiled call neither warns nor uses up the warning


def _flex_warnings(fw, calls, monkeypatch):
    import warnings

    fa = importlib.import_module(fw.__name__ + ".nn.attention.flex_attention")
    shown = getattr(fa, "_WARNINGS_SHOWN", None)
    if shown is not None:
        monkeypatch.setattr(fa, "_WARNINGS_SHOWN", set())
    q = fw.ones(1, 1, 4, 8)
    seen = []
    for compiled in calls:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn = fw.compile(fa.flex_attention) if compiled else fa.flex_attention
            fn(q, q, q)
        seen.append([str(x.message).split(" - ")[0] for x in w
                     if issubclass(x.category, UserWarning) and "flex" in str(x.message)])
    return seen


def test_flex_attention_warns_once_when_run_eagerly(monkeypatch):
    calls = [True, False, False, True]
    want = [[], ["flex_attention called without torch.compile()"], [], []]
    for fw in _frameworks():
        if fw.__name__ == "torch":
            pytest.importorskip("torch._dynamo")
        assert _flex_warnings(fw, calls, monkeypatch) == want, fw.__name__


def test_flex_attention_debug_flag_silences_the_warning(monkeypatch):
    import ember.nn.attention.flex_attention as fa

    monkeypatch.setattr(fa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)
    assert _flex_warnings(importlib.import_module("ember"), [False], monkeypatch) == [[]]


# ---------------------------------------------------------------------------------------------
# sort and argsort without stable=True leave ties as PyTorch's std::sort does in rows longer
# than 16 (NOTE [ Tie order of an unstable sort ]): the permutation of a batch sorted by
# length before packing named other sequences than PyTorch's

_LENGTHS = [5, 3, 5, 2, 7, 3, 3, 5, 1, 2, 7, 5, 4, 4, 3, 6, 2, 5, 3, 1]
_NAN_ROW = [[2.0, float("nan"), 1.0, 2.0, 0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 1.0,
             2.0, 0.0, 1.0, 2.0]]


def _sort_orders(fw):
    lengths = fw.tensor(_LENGTHS)
    x = fw.tensor(_NAN_ROW)
    return [lengths.sort(0, descending=True).indices.tolist(),
            fw.argsort(lengths).tolist(),
            fw.sort(lengths, stable=True, descending=True).indices.tolist(),
            fw.sort(x, descending=True).indices.tolist(),
            fw.sort(x).indices.tolist()]


def test_unstable_sort_orders_ties_as_torch():
    import ember

    want = [[4, 10, 15, 0, 2, 17, 7, 11, 13, 12, 1, 18, 14, 6, 5, 9, 16, 3, 8, 19],
            [19, 8, 3, 16, 9, 1, 18, 14, 6, 5, 12, 13, 7, 11, 17, 2, 0, 15, 10, 4],
            [4, 10, 15, 0, 2, 7, 11, 17, 12, 13, 1, 5, 6, 14, 18, 3, 9, 16, 8, 19],
            [[1, 17, 0, 14, 11, 7, 6, 3, 5, 8, 12, 13, 16, 2, 9, 10, 4, 15]],
            [[4, 15, 9, 10, 2, 16, 5, 8, 13, 12, 17, 0, 14, 11, 7, 6, 3, 1]]]
    assert _sort_orders(ember) == want
    if len(_frameworks()) > 1:
        assert _sort_orders(importlib.import_module("torch")) == want


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bfloat16"])
@pytest.mark.parametrize("descending", [False, True])
def test_unstable_sort_of_tied_rows_matches_torch_along_either_dim(dtype, descending):
    import numpy as np

    import ember

    if len(_frameworks()) == 1:
        pytest.skip("compares with PyTorch")
    torch = importlib.import_module("torch")
    rng = np.random.RandomState(7)
    x = rng.randint(0, 6, (3, 90))
    for dim in (1, 0):
        got = ember.sort(ember.tensor(x).to(getattr(ember, dtype)), dim=dim,
                         descending=descending).indices.tolist()
        assert got == torch.sort(torch.tensor(x).to(getattr(torch, dtype)), dim=dim,
                                 descending=descending).indices.tolist()
