"""Files a model's external data must never reach, and who opened them (Linux inotify).

Each runner gets a folder holding ``weights.bin`` (what ``../weights.bin`` and ``sub/../../weights.bin`` from a
case folder resolve to) and ``absolute.bin`` (an absolute location). A case folder holds ``link.bin``, a
symbolic link to ``weights.bin``, and ``hard.bin``, a hard link to it. The watch is on the inode, so an open
through any name — the link, the hard link, a path that climbs out — is seen, by any process (the runner, its
checking process, onnxruntime). ``stat`` / ``lstat`` (what the static checks do) are not opens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

__all__ = ["Canaries"]

_IN_ACCESS, _IN_OPEN = 0x00000001, 0x00000020
_IN_NONBLOCK = 0o4000
_EVENT = struct.Struct("iIII")


class Canaries:
    """The canary files of one runner, watched. :meth:`opened` drains what was opened since the last call."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.weights = folder / "weights.bin"
        self.absolute = folder / "absolute.bin"
        for path in (self.weights, self.absolute):
            path.write_bytes(b"\x00" * 4096)
        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK)
        self._names = {}
        if self._fd >= 0:
            for path in (self.weights, self.absolute):
                wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _IN_OPEN | _IN_ACCESS)
                if wd >= 0:
                    self._names[wd] = path.name

    @property
    def watching(self) -> bool:
        """Whether the kernel watches the canaries (inotify exists here)."""
        return bool(self._names)

    def plant(self, case_folder: Path) -> None:
        """The case folder's links to the canary: ``link.bin`` (symbolic) and ``hard.bin`` (hard)."""
        os.symlink(self.weights, case_folder / "link.bin")
        os.link(self.weights, case_folder / "hard.bin")

    def opened(self) -> list[str]:
        """Names of the canaries opened or read since the last call."""
        found = []
        while self._fd >= 0:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            offset = 0
            while offset + _EVENT.size <= len(chunk):
                wd, _mask, _cookie, length = _EVENT.unpack_from(chunk, offset)
                offset += _EVENT.size + length
                found.append(self._names.get(wd, "?"))
        return sorted(set(found))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
