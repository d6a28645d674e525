"""ember.hub: local and cached GitHub repositories, downloads and checkpoints, without a
network (file:// URLs and a pre-filled cache), compared with torch.hub where it matters."""

from __future__ import annotations

import doctest
import hashlib
import os
import urllib.request
import zipfile
from urllib.error import URLError

import pytest

import ember
import ember.hub

real_urlopen = urllib.request.urlopen

HUBCONF = '''
"""A tiny hub repository."""
import ember

dependencies = ["numpy"]


def tiny_net(width=3, bias=True):
    """Builds a tiny linear net."""
    return ember.nn.Linear(width, 2, bias=bias)


def _helper():
    return 1


CONSTANT = 3
'''


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    """A private hub directory; urlopen fails as it does without a network."""
    d = tmp_path / "hub"
    d.mkdir()
    monkeypatch.setattr(ember.hub, "_hub_dir", str(d))

    def offline(url, *args, **kwargs):
        full = url.full_url if isinstance(url, urllib.request.Request) else url
        if full.startswith(("http:", "https:")):
            raise URLError("[Errno -3] Temporary failure in name resolution")
        return real_urlopen(url, *args, **kwargs)

    monkeypatch.setattr(ember.hub, "urlopen", offline)
    return d


def _repo(folder, source=HUBCONF):
    folder.mkdir(parents=True)
    (folder / "hubconf.py").write_text(source)
    return folder


def test_get_dir_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert ember.hub.get_dir() == str(tmp_path / "th" / "hub")


def test_get_dir_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.delenv("TORCH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ember.hub.get_dir() == str(tmp_path / "torch" / "hub")


def test_get_dir_same_as_torch(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert ember.hub.get_dir() == torch.hub.get_dir()


def test_set_dir_expands_user(monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    ember.hub.set_dir("~/somewhere")
    assert ember.hub.get_dir() == os.path.expanduser("~/somewhere")


def test_load_local_calls_entrypoint_with_arguments(tmp_path):
    repo = _repo(tmp_path / "repo")
    net = ember.hub.load(str(repo), "tiny_net", 5, source="local", bias=False)
    assert isinstance(net, ember.nn.Linear)
    assert tuple(net.weight.shape) == (2, 5) and net.bias is None


def test_load_local_imports_repo_modules(tmp_path):
    repo = _repo(tmp_path / "repo", "from helper_mod import make\n")
    (repo / "helper_mod.py").write_text("def make():\n    return 'made'\n")
    assert ember.hub.load(str(repo), "make", source="LOCAL") == "made"
    assert str(repo) not in os.sys.path


def test_load_missing_dependency_raises_runtime_error(tmp_path):
    repo = _repo(tmp_path / "repo", "dependencies = ['numpy', 'no_such_pkg_xyz']\n"
                                    "def f():\n    return 1\n")
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_xyz"):
        ember.hub.load(str(repo), "f", source="local")


def test_load_missing_entrypoint_raises_runtime_error(tmp_path):
    repo = _repo(tmp_path / "repo")
    with pytest.raises(RuntimeError, match="Cannot find callable CONSTANT in hubconf"):
        ember.hub.load(str(repo), "CONSTANT", source="local")


def test_load_non_string_model_raises_value_error(tmp_path):
    repo = _repo(tmp_path / "repo")
    with pytest.raises(ValueError, match="model should be a string"):
        ember.hub.load(str(repo), 3, source="local")


def test_load_unknown_source_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match='Unknown source: "s3"'):
        ember.hub.load(str(tmp_path), "f", source="s3")


def test_github_repo_loads_from_cache_offline(hub_dir, capsys):
    _repo(hub_dir / "someone_tiny_main")
    net = ember.hub.load("someone/tiny:main", "tiny_net", width=4)
    assert tuple(net.weight.shape) == (2, 4)
    assert "Using cache found in" in capsys.readouterr().err


def test_github_default_branch_found_in_cache_offline(hub_dir):
    _repo(hub_dir / "someone_tiny_master")
    assert ember.hub.list("someone/tiny") == ["tiny_net"]


def test_github_help_returns_docstring(hub_dir):
    _repo(hub_dir / "someone_tiny_main")
    assert ember.hub.help("someone/tiny:main", "tiny_net") == "Builds a tiny linear net."


def test_github_uncached_offline_raises_like_torch(hub_dir, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.hub, "_hub_dir", str(hub_dir))
    monkeypatch.setattr(torch.hub, "urlopen", ember.hub.urlopen)
    with pytest.raises(RuntimeError, match="no internet connection") as theirs:
        torch.hub.load("someone/absent", "f", trust_repo=True)
    with pytest.raises(RuntimeError, match="no internet connection") as ours:
        ember.hub.load("someone/absent", "f", trust_repo=True)
    assert str(ours.value) == str(theirs.value)


def test_github_uncached_with_ref_offline_raises_url_error(hub_dir):
    with pytest.raises(URLError):
        ember.hub.load("someone/absent:v1", "f", trust_repo=True)


def test_github_untrusted_repo_asks_and_refuses(hub_dir, monkeypatch):
    _repo(hub_dir / "elsewhere" / "someone_tiny_main")
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(Exception, match="Untrusted repository."):
        ember.hub.load("someone/tiny:main", "tiny_net")


def test_github_trusted_repo_is_remembered(hub_dir):
    with pytest.raises(URLError):  # trusted first, then the download fails offline
        ember.hub.load("someone/tiny:v1", "tiny_net", trust_repo=True, verbose=False)
    assert (hub_dir / "trusted_list").read_text() == "someone_tiny\n"


def test_github_ref_with_slash_uses_underscore_folder(hub_dir):
    _repo(hub_dir / "someone_tiny_release_v1")
    assert ember.hub.list("someone/tiny:release/v1", trust_repo=True) == ["tiny_net"]


def test_download_url_to_file_copies_file_url(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"abc" * 1000)
    ember.hub.download_url_to_file(src.as_uri(), str(tmp_path / "dst.bin"), progress=False)
    assert (tmp_path / "dst.bin").read_bytes() == b"abc" * 1000


def test_download_url_to_file_checks_hash_prefix(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"payload")
    good = hashlib.sha256(b"payload").hexdigest()[:8]
    ember.hub.download_url_to_file(src.as_uri(), str(tmp_path / "ok"), good, progress=False)
    assert (tmp_path / "ok").read_bytes() == b"payload"


def test_download_url_to_file_bad_hash_leaves_nothing(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"payload")
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "0000"'):
        ember.hub.download_url_to_file(src.as_uri(), str(tmp_path / "dst"), "0000",
                                       progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.bin"]


def test_load_state_dict_from_url_caches_the_file(tmp_path):
    ember.save({"w": ember.arange(3.0)}, str(tmp_path / "net.pth"))
    url = (tmp_path / "net.pth").as_uri()
    cache = tmp_path / "cache"
    first = ember.hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)
    os.remove(tmp_path / "net.pth")  # the second load must not need the source
    second = ember.hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)
    assert first["w"].tolist() == second["w"].tolist() == [0.0, 1.0, 2.0]
    assert (cache / "net.pth").exists()


def test_load_state_dict_from_url_default_dir_is_checkpoints(hub_dir, tmp_path):
    ember.save({"w": ember.ones(1)}, str(tmp_path / "m.pth"))
    ember.hub.load_state_dict_from_url((tmp_path / "m.pth").as_uri(), progress=False)
    assert (hub_dir / "checkpoints" / "m.pth").exists()


def test_load_state_dict_from_url_check_hash_refuses_wrong_file(tmp_path):
    ember.save({"w": ember.ones(1)}, str(tmp_path / "net-deadbeef.pth"))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        ember.hub.load_state_dict_from_url((tmp_path / "net-deadbeef.pth").as_uri(),
                                           model_dir=str(tmp_path / "c"), check_hash=True,
                                           progress=False)
    assert not (tmp_path / "c" / "net-deadbeef.pth").exists()


def test_load_state_dict_from_url_check_hash_accepts_right_file(tmp_path):
    ember.save({"w": ember.ones(1)}, str(tmp_path / "tmp.pth"))
    digest = hashlib.sha256((tmp_path / "tmp.pth").read_bytes()).hexdigest()[:10]
    os.rename(tmp_path / "tmp.pth", tmp_path / f"net-{digest}.pth")
    sd = ember.hub.load_state_dict_from_url((tmp_path / f"net-{digest}.pth").as_uri(),
                                            model_dir=str(tmp_path / "c"), check_hash=True,
                                            file_name=f"renamed-{digest}.pth", progress=False)
    assert sd["w"].tolist() == [1.0]
    assert (tmp_path / "c" / f"renamed-{digest}.pth").exists()


def test_load_state_dict_from_url_reads_torch_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.tensor([1.5, 2.5])}, str(tmp_path / "t.pth"))
    sd = ember.hub.load_state_dict_from_url((tmp_path / "t.pth").as_uri(),
                                            model_dir=str(tmp_path / "c"), progress=False,
                                            weights_only=True)
    assert isinstance(sd["w"], ember.Tensor) and sd["w"].tolist() == [1.5, 2.5]


def test_load_state_dict_from_url_legacy_zip_warns_and_loads(tmp_path):
    ember.save({"w": ember.ones(2)}, str(tmp_path / "inner.pth"))
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as zf:
        zf.write(tmp_path / "inner.pth", "inner.pth")
    with pytest.warns(FutureWarning, match="old format"):
        sd = ember.hub.load_state_dict_from_url((tmp_path / "old.zip").as_uri(),
                                                model_dir=str(tmp_path / "c"), progress=False)
    assert sd["w"].tolist() == [1.0, 1.0]


def test_safe_extract_refuses_traversal(tmp_path):
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zf:
        zf.writestr("../evil.txt", "x")
    with zipfile.ZipFile(tmp_path / "evil.zip") as zf, pytest.raises(ValueError):
        ember.hub._safe_extract_zip(zf, tmp_path / "out")


def test_hub_docstring_examples_pass(monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", ember.hub._hub_dir)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(ember.hub):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name


def test_github_download_unpacks_zipball_into_cache(hub_dir, tmp_path, monkeypatch):
    archive = tmp_path / "zipball.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("someone-zipped-abc123/", "")
        zf.writestr("someone-zipped-abc123/hubconf.py", HUBCONF)

    def github(url, *args, **kwargs):
        full = url.full_url if isinstance(url, urllib.request.Request) else url
        assert full == "https://github.com/someone/zipped/zipball/v2"
        return real_urlopen(archive.as_uri())

    monkeypatch.setattr(ember.hub, "urlopen", github)
    net = ember.hub.load("someone/zipped:v2", "tiny_net", trust_repo=True,
                         skip_validation=True)
    assert isinstance(net, ember.nn.Linear)
    assert (hub_dir / "someone_zipped_v2" / "hubconf.py").exists()
    assert sorted(p.name for p in hub_dir.iterdir()) == ["someone_zipped_v2", "trusted_list"]
