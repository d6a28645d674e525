"""Record-level checkpoint archives (``torch.PyTorchFileReader``/``PyTorchFileWriter``),
compared with torch's on the same files."""

import io
import zipfile

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture
def torch_checkpoint(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save({"w": torch.arange(6.0).view(2, 3), "b": torch.ones(2, dtype=torch.int64)}, path)
    return path


def test_reader_records_match_torch(torch_checkpoint):
    e = ember.PyTorchFileReader(str(torch_checkpoint))
    t = torch.PyTorchFileReader(str(torch_checkpoint))
    assert e.get_all_records() == t.get_all_records()
    for name in t.get_all_records():
        assert e.get_record(name) == t.get_record(name)
        assert e.get_record_size(name) == t.get_record_size(name)
        assert e.get_record_offset(name) == t.get_record_offset(name)
        assert e.get_record_header_offset(name) == t.get_record_header_offset(name)
    assert e.serialization_id() == t.serialization_id()


def test_reader_offset_no_read_matches_torch(torch_checkpoint):
    e = ember.PyTorchFileReader(str(torch_checkpoint))
    t = torch.PyTorchFileReader(str(torch_checkpoint))
    zf = zipfile.ZipFile(torch_checkpoint)
    folder = zf.namelist()[0].split("/")[0]
    for name in t.get_all_records():
        info = zf.getinfo(f"{folder}/{name}")
        args = (info.header_offset, name, info.file_size, 64)
        assert e.get_record_offset_no_read(*args) == t.get_record_offset_no_read(*args)


def test_reader_storage_from_record_holds_the_data(torch_checkpoint):
    e = ember.PyTorchFileReader(str(torch_checkpoint))
    t = torch.PyTorchFileReader(str(torch_checkpoint))
    key = next(n for n in t.get_all_records() if n.startswith("data/") and
               t.get_record_size(n) == 24)
    es = e.get_storage_from_record(key, 6, ember.float32)
    ts = t.get_storage_from_record(key, 6, torch.float32)
    assert tuple(es.shape) == tuple(ts.shape) == (0,)
    assert es.untyped_storage().nbytes() == ts.untyped_storage().nbytes()
    np.testing.assert_array_equal(np.frombuffer(bytes(es.untyped_storage()), np.float32),
                                  np.arange(6.0, dtype=np.float32))


def test_reader_reads_buffer():
    buf = io.BytesIO()
    ember.save({"x": ember.ones(2)}, buf)
    r = ember.PyTorchFileReader(io.BytesIO(buf.getvalue()))
    assert r.has_record("data.pkl") and not r.has_record("nope")


def test_reader_missing_record_raises_runtime_error(torch_checkpoint):
    with pytest.raises(RuntimeError, match="file not found"):
        torch.PyTorchFileReader(str(torch_checkpoint)).get_record("nope")
    with pytest.raises(RuntimeError, match="file not found"):
        ember.PyTorchFileReader(str(torch_checkpoint)).get_record("nope")


@pytest.mark.parametrize("content", [None, b"abc"])
def test_reader_bad_file_raises_runtime_error(tmp_path, content):
    path = tmp_path / "f.pt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(RuntimeError):
        torch.PyTorchFileReader(str(path))
    with pytest.raises(RuntimeError):
        ember.PyTorchFileReader(str(path))


def test_writer_archive_reads_in_torch(tmp_path):
    path = tmp_path / "out.zip"
    w = ember.PyTorchFileWriter(str(path))
    assert w.archive_name() == "out"
    w.write_record("a.txt", b"hello world", 5)
    w.write_record("s", "text", 4)
    assert w.get_all_written_records() == {"a.txt", "s"}
    w.write_end_of_file()
    t = torch.PyTorchFileReader(str(path))
    assert t.get_all_records() == ["a.txt", "s", "version", "byteorder",
                                   ".data/serialization_id"]
    assert t.get_record("a.txt") == b"hello" and t.get_record("version") == b"3\n"


def test_writer_layout_matches_torch(tmp_path):
    names = []
    for mod in (ember, torch):
        path = tmp_path / f"{mod.__name__}.zip"
        w = mod.PyTorchFileWriter(str(path))
        w.write_record("x", b"12345", 5)
        w.set_min_version(5)
        w.write_end_of_file()
        zf = zipfile.ZipFile(path)
        names.append(([n.split("/", 1)[1] for n in zf.namelist()],
                      zf.read(zf.namelist()[1])))
    assert names[0] == names[1]


def test_writer_record_twice_raises_runtime_error(tmp_path):
    w = ember.PyTorchFileWriter(str(tmp_path / "t.zip"))
    w.write_record("a", b"x", 1)
    with pytest.raises(RuntimeError, match="twice"):
        w.write_record("a", b"y", 1)


def test_writer_buffer_round_trip():
    buf = io.BytesIO()
    w = ember.PyTorchFileWriter(buf)
    w.write_record("data", b"\x00\x01", 2)
    w.write_end_of_file()
    assert torch.PyTorchFileReader(io.BytesIO(buf.getvalue())).get_record("data") == b"\x00\x01"


QSTORAGES = ["QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage",
             "QUInt2x4Storage"]


@pytest.mark.parametrize("name", QSTORAGES)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quantized_storage_classes_like_torch(name):
    e, t = getattr(ember, name)([1, 2, 3]), getattr(torch, name)([1, 2, 3])
    assert e.tolist() == t.tolist()
    assert e.type() == t.type()
    assert (e.element_size(), e.nbytes(), len(e)) == (t.element_size(), t.nbytes(), len(t))
    assert str(getattr(ember, name).dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert len(getattr(ember, name)(4)) == len(getattr(torch, name)(4))
