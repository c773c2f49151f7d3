"""The check every model file or byte string goes through before native code touches it in this process.

:func:`ensure_safe` runs the stages of :func:`onegraph.check.check` the caller needs for what it is about to do
(:data:`~onegraph.check.purposes.PURPOSES`: ``load`` or ``run``) in the checking process; a finding that keeps
the model from that use (:func:`~onegraph.check.findings.blocks`) stops the caller with
:class:`UnsafeModelError` naming it.

Passed checks (the purposes a model may serve) are remembered, keyed on the model's bytes (SHA-256) and folder, together with the identity
of every external data file the check read (device, inode, size, modification and change times, link
count): a file swapped, edited or hard-linked after the check is checked again before it is opened. They are
remembered in this process and, so that a command run again on the same file does not check it again, in
the user's cache folder (``$ONEGRAPH_CACHE_DIR``, else ``$XDG_CACHE_HOME/onegraph``, else
``~/.cache/onegraph``; ``ONEGRAPH_CACHE_DIR=off`` keeps nothing on disk). An entry on disk also names the
onegraph, onnx and onnxruntime versions that checked: another version checks again. Models
:func:`onegraph.build` made in this process are trusted (:func:`trust`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onegraph.check.purposes import PURPOSES
from onegraph.check.source import Source
from onegraph.errors import ModelFileError

if TYPE_CHECKING:  # the check's own types load only when a check runs: a remembered one needs none of them
    from onegraph.check.findings import CheckReport, Finding
    from onegraph.check.limits import Limits

__all__ = ["UnsafeModelError", "ensure_safe", "trust", "clear", "cache_folder", "default_limits"]

_ALL = frozenset(PURPOSES)
_MEMORY: OrderedDict[str, tuple[frozenset[str], dict]] = OrderedDict()
_MEMORY_SIZE = 512
_LOCK = threading.Lock()
_ANY_FOLDER = "\x00any"


class UnsafeModelError(ModelFileError):
    """The check found an error in a model: onegraph did not open it in-process.

    Attributes
    ----------
    findings:
        The error findings (stable codes, node / tensor / field at fault).
    report:
        The whole :class:`~onegraph.check.findings.CheckReport`.
    """

    def __init__(self, label: str, findings: list[Finding], report: CheckReport) -> None:
        first = findings[0]
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        if first.code == "C001":
            message = f"{label} is not a valid ONNX model ({first.message})"
        elif first.code == "C002":
            message = f"{label} holds no graph; it is not an ONNX model"
        else:
            message = f"{label} was not opened: {first}{more}"
        target = label.removeprefix("model file ") if label != "the model bytes" else "MODEL"
        if first.code in ("C001", "C002"):  # not a model at all: trusting it would not help
            hint = "check that the file is a complete .onnx file (a truncated copy or another format)"
        else:
            hint = (f"`onegraph check {target}` prints every finding; open it anyway only if you trust the file: "
                    "--trusted on the command line, trusted=True or `with onegraph.check.trusting():` in Python")
        super().__init__(message, hint=hint)
        self.findings = findings
        self.report = report


def default_limits(size: int) -> Limits:
    """The limits of the check of a model of ``size`` bytes: the default CPU and wall time; memory of 8 x the
    model (parsing, the checker's copy, an onnxruntime session), at least the default 4 GiB."""
    from onegraph.check.limits import Limits

    return Limits(memory=max(Limits().memory, 8 * size))


def _key(data: bytes, folder: str | None) -> str:
    """The name of the record of ``data``'s check in ``folder``: SHA-256 of the data's SHA-256 and the folder."""
    return _folder_key(hashlib.sha256(data).digest(), folder)


def _folder_key(data_digest: bytes, folder: str | None) -> str:
    # the data is hashed once for both of a check's keys (a 100 MB model: ~0.2 s a pass)
    return hashlib.sha256(data_digest + b"\x00" + os.fsencode(folder or "")).hexdigest()


def _identity(folder: str, location: str) -> list[int] | None:
    """What makes ``folder/location`` the same file later (None if it is gone)."""
    try:
        st = os.lstat(os.path.join(folder, location))
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink, st.st_mode]


def _identities(folder: str | None, files: Sequence[str]) -> dict[str, list[int] | None]:
    return {f: _identity(folder, f) for f in files} if folder is not None else {}


def _still(folder: str | None, recorded: dict) -> bool:
    """Whether every external data file recorded at the check is still the same file."""
    return all(_identity(folder, f) == ident for f, ident in recorded.items()) if folder is not None else True


def trust(data: bytes) -> None:
    """Record ``data`` as safe to open from any folder (a model this process built and checked itself,
    which keeps every tensor in the file)."""
    _remember(_key(data, _ANY_FOLDER), _ALL, {})


def ensure_safe(source: Source, *, purpose: str, limits: Limits | None = None) -> None:
    """Return when ``source`` may be used for ``purpose`` in this process; raise otherwise.

    Parameters
    ----------
    source:
        The model's bytes (exactly those the caller will parse or open), its folder and label.
    purpose:
        ``load`` or ``run`` (:data:`~onegraph.check.purposes.PURPOSES`).
    limits:
        Limits of the check; by default :func:`default_limits` for the model's size.

    Raises
    ------
    UnsafeModelError
        naming the first error finding (a model that does not parse raises it with the message
        ``... is not a valid ONNX model``), or C903 when the checking process cannot start.
    """
    data_digest = hashlib.sha256(source.data).digest()
    keys = (_folder_key(data_digest, source.folder), _folder_key(data_digest, _ANY_FOLDER))
    if any(purpose in _passed(key, source.folder) for key in keys):
        return
    from onegraph.check.findings import blocks
    from onegraph.check.run import check

    report = check(source, stages=PURPOSES[purpose], limits=limits or default_limits(len(source.data)))
    errors = [f for f in report.findings if blocks(f, purpose)]
    if errors:
        raise UnsafeModelError(source.label, errors, report)
    # a model fit to run is fit to load (run's stages and blocking findings include load's)
    passed = {purpose, "load"} if purpose == "run" else {purpose}
    _remember(keys[0], frozenset(passed), _identities(source.folder, report.files))


def _passed(key: str, folder: str | None) -> frozenset[str]:
    with _LOCK:
        entry = _MEMORY.get(key)
        if entry is not None:
            _MEMORY.move_to_end(key)
    if entry is None:
        entry = _disk_read(key)
        if entry is None:
            return frozenset()
        with _LOCK:
            _MEMORY[key] = entry
    purposes, files = entry
    if not _still(folder, files):
        with _LOCK:
            _MEMORY.pop(key, None)
        return frozenset()
    return purposes


def _remember(key: str, purposes: frozenset[str], files: dict) -> None:
    with _LOCK:
        known = _MEMORY.get(key)
        if known is not None and known[1] == files:
            purposes = purposes | known[0]
        _MEMORY[key] = (purposes, files)
        _MEMORY.move_to_end(key)
        while len(_MEMORY) > _MEMORY_SIZE:
            _MEMORY.popitem(last=False)
    _disk_write(key, purposes, files)


def clear() -> None:
    """Forget every passed check, in this process and in the cache folder (the tests start from scratch)."""
    with _LOCK:
        _MEMORY.clear()
    folder = cache_folder()
    if folder is not None and folder.is_dir():
        for entry in folder.glob("*.json"):
            try:
                entry.unlink()
            except OSError:
                pass


# -- the cache folder -----------------------------------------------------------------------------
def cache_folder() -> Path | None:
    """Where passed checks are kept across processes (None: nowhere)."""
    root = os.environ.get("ONEGRAPH_CACHE_DIR")
    if root is not None:
        if root.strip().lower() in ("", "off", "none", "0"):
            return None
        return Path(root) / "checked"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "onegraph" / "checked"


def _versions() -> str:
    """The code that checked: an entry written by other versions is not believed."""
    from importlib import metadata

    import onegraph

    found = [f"onegraph {onegraph.__version__}"]
    for name in ("onnx", "onnxruntime"):
        try:
            found.append(f"{name} {_version(metadata.distribution(name))}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} ?")
    return ", ".join(found)


def _version(dist: Any) -> str:
    """The ``Version:`` field of an installed distribution's core metadata, read from its header lines:
    ``importlib.metadata.version`` parses the whole file as an e-mail message (1.5 ms a package, half of a
    checked model's first load in a fresh process); its answer when the field is not found that way."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line:  # the headers end at the first empty line
            break
        if line.startswith("Version:"):
            return line[len("Version:"):].strip()
    return dist.version


_VERSIONS: list[str] = []


def _checked_by() -> str:
    if not _VERSIONS:
        _VERSIONS.append(_versions())
    return _VERSIONS[0]


def _disk_read(key: str) -> tuple[frozenset[str], dict] | None:
    folder = cache_folder()
    if folder is None:
        return None
    try:
        entry = json.loads((folder / f"{key}.json").read_text())
        if entry.get("checked_by") != _checked_by():
            return None
        purposes = frozenset(str(s) for s in entry["purposes"]) & _ALL
        files = {str(f): (None if ident is None else [int(i) for i in ident]) for f, ident in entry["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent, unreadable or not ours: check again
    return purposes, files


def _disk_write(key: str, purposes: frozenset[str], files: dict) -> None:
    folder = cache_folder()
    if folder is None:
        return
    entry = {"checked_by": _checked_by(), "purposes": sorted(purposes), "files": files}
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        pass  # a read-only home: the check is only remembered in this process
