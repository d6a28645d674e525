"""``torch.hub``: models published as a ``hubconf.py`` in a GitHub repository or a local
folder, and checkpoints downloaded once into a cache.

NOTE [ The hub cache ]
ember keeps its hub files where PyTorch does, laid out as PyTorch lays them out, so that a
repository or checkpoint either one downloaded serves both:

- the hub directory is ``$TORCH_HOME/hub``, with ``TORCH_HOME`` defaulting to
  ``$XDG_CACHE_HOME/torch`` and that to ``~/.cache/torch`` (``set_dir`` overrides it);
- a GitHub repository ``owner/name`` at ref ``ref`` is unpacked in
  ``<hub>/owner_name_ref`` (a ``/`` in the ref becomes ``_``);
- the repositories the user said to trust are listed one ``owner_name`` a line in
  ``<hub>/trusted_list``; a repository already in the cache counts as trusted, as do the
  owners PyTorch trusts by default;
- checkpoints go to ``<hub>/checkpoints/<file name of the URL>``.

Downloads go through ``urllib`` (so ``file://`` URLs work too), into a temporary
``<dst>.<hex>.partial`` file renamed only when complete, so a broken download never replaces
a good file. Without a network, a repository that is not in the cache fails as PyTorch's
does: a RuntimeError saying there is no internet connection when the ref had to be looked
up, or the ``URLError`` itself otherwise.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

import ember

try:
    from tqdm import tqdm
except ImportError:  # a plain percentage on stderr instead
    tqdm = None

__all__ = [
    "download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
    "set_dir",
]

#: the hash prefix in a checkpoint's file name: ``bfd8deac`` in ``resnet18-bfd8deac.pth``
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
#: the name of the list of required packages in a hubconf.py
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024

# owners whose repositories load without asking (PyTorch's list)
_TRUSTED_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")

_hub_dir: str | None = None


# -- where things go --------------------------------------------------------------------------


def get_dir() -> str:
    """The hub directory: where repositories and checkpoints are cached.

    ``set_dir``'s folder if it was called, else ``$TORCH_HOME/hub`` (see
    NOTE [ The hub cache ]). Warns if the obsolete ``TORCH_HUB`` variable is set.

    Returns:
        str: the path (it need not exist yet).

    Example::

        >>> ember.hub.get_dir().endswith("hub")
        True
    """
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def _get_torch_home() -> str:
    """``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch``, else ``~/.cache/torch`` (the folder
    the hub's and other caches live under; libraries such as timm ask for it).

    Returns:
        str: the path (it need not exist).

    Example::

        >>> ember.hub._get_torch_home().endswith("torch") or "TORCH_HOME" in os.environ
        True
    """
    cache = os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR)
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(cache, "torch")))


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` as the hub directory from now on (``~`` is expanded).

    Args:
        d (str or os.PathLike): the folder.

    Example::

        >>> import os
        >>> old = ember.hub.get_dir()
        >>> ember.hub.set_dir("~/my_hub")
        >>> ember.hub.get_dir() == os.path.expanduser("~/my_hub")
        True
        >>> ember.hub.set_dir(old)
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# -- GitHub repositories ----------------------------------------------------------------------


def _parse_repo_info(github: str):
    """``"owner/name[:ref]"`` -> (owner, name, ref); without a ref, the default branch."""
    repo, _, ref = github.partition(":")
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f"hub: expected a GitHub repository as 'repo_owner/repo_name[:ref]', got {github!r}")
    owner, name = parts
    if ref:
        return owner, name, ref
    # No ref: "main" if the repository has that branch, else "master".
    try:
        with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
            return owner, name, "main"
    except HTTPError as err:
        if err.code == 404:
            return owner, name, "master"
        raise
    except URLError as err:
        for guess in ("main", "master"):
            if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{guess}")):
                return owner, name, guess
        raise RuntimeError(
            "It looks like there is no internet connection and the repo could not be found "
            f"in the cache ({get_dir()})") from err


def _read_json(url: str, headers: dict):
    with urlopen(Request(url, headers=headers)) as response:
        return json.loads(response.read().decode(response.headers.get_content_charset("utf-8")))


def _validate_not_a_forked_repo(owner: str, name: str, ref: str) -> None:
    """Raise ValueError unless ``ref`` is a branch, tag or commit of ``owner/name`` itself
    (a commit of a fork is reachable through the parent's URL too)."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for kind in ("branches", "tags"):
        page = 1
        while True:
            url = f"https://api.github.com/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            try:
                entries = _read_json(url, headers)
            except HTTPError:
                headers.pop("Authorization", None)  # the token may lack the permission
                entries = _read_json(url, headers)
            if not entries:
                break
            if any(e["name"] == ref or e["commit"]["sha"].startswith(ref) for e in entries):
                return
            page += 1
    raise ValueError(
        f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a commit from a "
        "forked repo, please call hub.load() with forked repo directly.")


def _check_repo_is_trusted(owner: str, name: str, folder: str, trust_repo) -> None:
    """Ask the user (``trust_repo="check"`` with an unknown repository, or False) and add the
    repository to the trusted list (NOTE [ The hub cache ])."""
    hub_dir = get_dir()
    listing = os.path.join(hub_dir, "trusted_list")
    Path(listing).touch()
    with open(listing) as f:
        trusted = {line.strip() for line in f}
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or os.path.isdir(os.path.join(hub_dir, folder))
                  or owner in _TRUSTED_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add "
            "it to the trusted list of repositories (y/N)?").lower()
        if answer in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif answer in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {answer}.")
    if not is_trusted:
        with open(listing, "a") as f:
            f.write(owner_name + "\n")


def _safe_extract_zip(archive: zipfile.ZipFile, folder) -> None:
    """Extract every member of ``archive`` into ``folder``, refusing absolute paths and
    members that would land outside it."""
    root = Path(folder).resolve()
    for member in archive.infolist():
        name = os.path.normpath(member.filename)
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(r"[/\\]", name):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / name).resolve().is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, root)


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def _download_repo(owner: str, name: str, ref: str, repo_dir: str) -> None:
    """Download the zip archive of ``owner/name`` at ``ref`` and unpack it as ``repo_dir``."""
    hub_dir = get_dir()
    archive = os.path.join(hub_dir, ref.replace("/", "_") + ".zip")
    _remove(archive)
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {archive}\n')
    try:
        download_url_to_file(url, archive, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        # 300 Multiple Choices: the ref names both a branch and a tag; take the branch, as git
        warnings.warn(
            f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? "
            "Torchhub will now assume that it's a branch. You can disambiguate tags and "
            "branches by explicitly passing refs/heads/branch_name or refs/tags/tag_name as "
            "the ref. That might require using skip_validation=True.", stacklevel=3)
        url = f"https://github.com/{owner}/{name}/zipball/refs/heads/{ref}"
        download_url_to_file(url, archive, progress=False)
    with zipfile.ZipFile(archive) as zf:
        unpacked = os.path.join(hub_dir, zf.infolist()[0].filename)
        _remove(unpacked)
        _safe_extract_zip(zf, hub_dir)
    _remove(archive)
    _remove(repo_dir)
    shutil.move(unpacked, repo_dir)


def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                         skip_validation=False) -> str:
    """The folder holding ``github``'s code: the cached one, or a fresh download."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    folder = "_".join([owner, name, ref.replace("/", "_")])
    repo_dir = os.path.join(hub_dir, folder)
    _check_repo_is_trusted(owner, name, folder, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(owner, name, ref)
    _download_repo(owner, name, ref, repo_dir)
    return repo_dir


# -- hubconf.py ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _on_sys_path(path: str):
    """``path`` first on ``sys.path`` for the block, so hubconf.py imports its own modules."""
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(folder: str):
    spec = importlib.util.spec_from_file_location(
        MODULE_HUBCONF, os.path.join(folder, MODULE_HUBCONF))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_dependencies(hubconf) -> None:
    """Raise RuntimeError naming the packages of ``hubconf.dependencies`` not installed."""
    needed = getattr(hubconf, VAR_DEPENDENCY, None) if VAR_DEPENDENCY in dir(hubconf) else None
    if needed is None:
        return
    missing = [pkg for pkg in needed if importlib.util.find_spec(pkg) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _entrypoint(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(hubconf)
    entry = getattr(hubconf, model, None) if model in dir(hubconf) else None
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def list(github, force_reload=False, skip_validation=False, trust_repo="check",
         verbose=True) -> builtins.list[str]:
    """The entrypoints (public callables of ``hubconf.py``) of a GitHub repository.

    Args:
        github (str): ``"repo_owner/repo_name[:ref]"``; without a ref, the default branch.
        force_reload (bool): download the repository again even if it is cached.
        skip_validation (bool): do not check with the GitHub API that ``ref`` belongs to the
            repository (rather than to a fork).
        trust_repo (bool, str or None): ``"check"`` asks unless the repository is trusted
            (see NOTE [ The hub cache ]), ``True`` trusts it, ``False`` always asks, ``None``
            trusts without asking.
        verbose (bool): say when the cached copy is used.

    Returns:
        list of str: the entrypoint names, sorted.

    Raises:
        RuntimeError: no network and the repository is not in the cache.

    Example::

        >>> ember.hub.list("pytorch/vision", trust_repo=True)  # doctest: +SKIP
        ['alexnet', 'convnext_base', ...]
    """
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose,
                                    skip_validation=skip_validation)
    with _on_sys_path(repo_dir):
        hubconf = _import_hubconf(repo_dir)
    return [n for n in dir(hubconf) if callable(getattr(hubconf, n)) and not n.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """The docstring of entrypoint ``model`` of a GitHub repository.

    Args:
        github (str): ``"repo_owner/repo_name[:ref]"``.
        model (str): the entrypoint's name.
        force_reload, skip_validation, trust_repo: as for :func:`list`.

    Returns:
        str or None: the docstring.

    Raises:
        RuntimeError: the entrypoint does not exist, or hubconf's dependencies are missing.

    Example::

        >>> print(ember.hub.help("pytorch/vision", "resnet18", trust_repo=True))  # doctest: +SKIP
    """
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True,
                                    skip_validation=skip_validation)
    with _on_sys_path(repo_dir):
        hubconf = _import_hubconf(repo_dir)
    return _entrypoint(hubconf, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entrypoint ``model`` of a repository's ``hubconf.py`` and return what it returns.

    Args:
        repo_or_dir (str): ``"repo_owner/repo_name[:ref]"`` with ``source="github"``, or a
            folder holding a ``hubconf.py`` with ``source="local"``.
        model (str): the entrypoint's name.
        *args: passed to the entrypoint.
        source (str): ``"github"`` (default) or ``"local"``.
        trust_repo, force_reload, verbose, skip_validation: as for :func:`list` (GitHub only).
        **kwargs: passed to the entrypoint.

    Returns:
        whatever the entrypoint returns (usually a model).

    Raises:
        ValueError: an unknown ``source``, or ``model`` not a string.
        RuntimeError: the entrypoint does not exist, the packages listed in hubconf's
            ``dependencies`` are missing, or no network and the repository is not cached.

    Example::

        >>> model = ember.hub.load("path/to/repo", "tiny_net", source="local")  # doctest: +SKIP
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo,
                                           verbose=verbose, skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    """Call entrypoint ``model`` of the ``hubconf.py`` in folder ``hubconf_dir``, with the
    folder on ``sys.path`` for the call (the helper :func:`load` ends in; programs call it
    directly too).

    Args:
        hubconf_dir (str): a folder holding a ``hubconf.py``.
        model (str): the entrypoint's name.
        *args, **kwargs: passed to the entrypoint.

    Returns:
        whatever the entrypoint returns.

    Example::

        >>> net = ember.hub._load_local("path/to/repo", "tiny_net")  # doctest: +SKIP
    """
    with _on_sys_path(hubconf_dir):
        hubconf = _import_hubconf(hubconf_dir)
        return _entrypoint(hubconf, model)(*args, **kwargs)


# -- files and checkpoints ---------------------------------------------------------------------


class _Progress:
    """A percentage (or byte count) on stderr when tqdm is not installed."""

    def __init__(self, total, disable):
        self.total, self.disable, self.n = total, disable, 0

    def update(self, n):
        if self.disable:
            return
        self.n += n
        shown = f"{self.n:.1f} bytes" if self.total is None else f"{100 * self.n / self.total:.1f}%"
        sys.stderr.write("\r" + shown)
        sys.stderr.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.disable:
            sys.stderr.write("\n")


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the file ``dst``, checking its SHA-256 if asked.

    The bytes go to a temporary file beside ``dst`` that replaces ``dst`` only once complete
    (and, with ``hash_prefix``, verified).

    Args:
        url (str): the URL (``http(s)://``, ``file://``, anything urllib opens).
        dst (str): the destination path (``~`` is expanded).
        hash_prefix (str, optional): the start of the expected SHA-256 hex digest.
        progress (bool): show a progress bar on stderr. Default: True.

    Raises:
        RuntimeError: the digest does not start with ``hash_prefix`` (``dst`` is untouched).
        urllib.error.URLError: the URL cannot be opened.

    Example::

        >>> import pathlib, tempfile
        >>> d = tempfile.mkdtemp()
        >>> src = pathlib.Path(d, "a.txt"); _ = src.write_text("hello")
        >>> ember.hub.download_url_to_file(src.as_uri(), f"{d}/b.txt", progress=False)
        >>> pathlib.Path(d, "b.txt").read_text()
        'hello'
    """
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        partial = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(partial, "xb")  # noqa: SIM115  (closed in the finally below)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as response:
            length = response.info().get_all("Content-Length")
            size = int(length[0]) if length else None
            digest = hashlib.sha256() if hash_prefix is not None else None
            bar = (tqdm(total=size, disable=not progress, unit="B", unit_scale=True,
                        unit_divisor=1024) if tqdm is not None
                   else _Progress(size, disable=not progress))
            with bar:
                while chunk := response.read(READ_DATA_CHUNK):
                    f.write(chunk)
                    if digest is not None:
                        digest.update(chunk)
                    bar.update(len(chunk))
            f.close()
            if digest is not None:
                hexdigest = digest.hexdigest()
                if not hexdigest.startswith(hash_prefix):
                    raise RuntimeError(
                        f'invalid hash value (expected "{hash_prefix}", got "{hexdigest}")')
        shutil.move(partial, dst)
    finally:
        f.close()
        if os.path.exists(partial):
            os.remove(partial)


def _is_legacy_zip(path: str) -> bool:
    """A zip holding one file: how checkpoints were shipped before ``torch.save`` wrote zips."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
    return len(members) == 1 and not members[0].is_dir()


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """Load the object saved at ``url``, downloading it into the cache the first time.

    The file is cached as ``<model_dir>/<file name>`` (``model_dir`` defaulting to
    ``<hub dir>/checkpoints``, see NOTE [ The hub cache ]); a cached file is loaded without
    any network access.

    Args:
        url (str): the URL of the file ``torch.save`` wrote.
        model_dir (str, optional): the folder to cache it in.
        map_location: as for :func:`ember.load`.
        progress (bool): show a progress bar while downloading. Default: True.
        check_hash (bool): check that the file's SHA-256 starts with the hex digits after the
            last ``-`` of its name (``resnet18-5c106cde.pth``). Default: False.
        file_name (str, optional): the cached file's name, instead of the URL's.
        weights_only (bool): load with :func:`ember.load`'s ``weights_only``. Default: False.

    Returns:
        the loaded object, usually a state dict.

    Example::

        >>> import pathlib, tempfile
        >>> d = tempfile.mkdtemp()
        >>> ember.save({"w": ember.ones(2)}, f"{d}/net.pth")
        >>> sd = ember.hub.load_state_dict_from_url(
        ...     pathlib.Path(d, "net.pth").as_uri(), model_dir=f"{d}/cache", progress=False)
        Downloading: ...
        >>> sd["w"]
        tensor([1., 1.])
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    if _is_legacy_zip(cached):
        warnings.warn(
            "Falling back to the old format < 1.6. This support will be deprecated in favor "
            "of default zipfile format introduced in 1.6. Please redo torch.save() to save it "
            "in the new zipfile format.", FutureWarning, stacklevel=2)
        with zipfile.ZipFile(cached) as zf:
            _safe_extract_zip(zf, model_dir)
            cached = os.path.join(model_dir, zf.infolist()[0].filename)
    return ember.load(cached, map_location=map_location, weights_only=weights_only)
