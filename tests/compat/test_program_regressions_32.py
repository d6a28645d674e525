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
