"""Files private to their owner: everything clawmemory creates (the database and its WAL and
shared-memory files, the JSON store, Markdown mirrors, exports, caches, the home folder) is
created 0600 (files) / 0700 (folders) whatever the process umask, and an existing file or folder
that others can read gets a warning (it is the user's to change; it may be shared on purpose).

SQLite creates a database's ``-wal`` and ``-shm`` files with the permissions of the database
file itself, so creating the database file 0600 before SQLite opens it covers all three.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

from clawmemory.errors import NotFoundError, StorageError

__all__ = [
    "FILE_MODE",
    "FOLDER_MODE",
    "atomic_write",
    "make_private_dir",
    "open_private",
    "prepare_database_file",
    "scrub_file",
    "warn_if_shared",
]

log = logging.getLogger("clawmemory")
FILE_MODE = 0o600
FOLDER_MODE = 0o700
_WARNED: set[Path] = set()


def warn_if_shared(path: Path) -> None:
    """Warn (once per process and path) when group or others may read or write ``path``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO) and path not in _WARNED:
        _WARNED.add(path)
        want = "0700" if stat.S_ISDIR(mode) else "0600"
        log.warning("%s is readable by other users (mode %s); `chmod %s %s` makes it private",
                    path, oct(stat.S_IMODE(mode))[2:].zfill(4), want[1:], path)


def make_private_dir(path: Path) -> None:
    """Create ``path`` and any missing parents 0700; existing folders are left as they are."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # another process made it meanwhile
        except OSError as exc:
            raise StorageError(f"cannot create folder {folder}: {exc}") from exc
        folder.chmod(FOLDER_MODE)  # mkdir's mode is filtered by the umask


def open_private(path: Path) -> int:
    """Create ``path`` 0600 (exclusive); an existing file is left alone. Returns an fd or -1."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return -1
    os.fchmod(fd, FILE_MODE)  # os.open's mode is filtered by the umask too
    return fd


def prepare_database_file(path: Path, *, create: bool) -> None:
    """Make sure a database file can be opened privately: with ``create``, a missing file is
    created empty and 0600 in a 0700 folder; without it, a missing or empty file is an error
    (read-only commands never create a store). An existing file is left as it is."""
    if path.exists() and path.stat().st_size > 0:
        return  # the caller warns about its mode once it knows the file is a store of ours
    if not create:
        raise NotFoundError(f"no clawmemory database at {path} yet (nothing has been stored"
                            " there; `clawmem add` creates it)")
    make_private_dir(path.parent)
    try:
        fd = open_private(path)
    except OSError as exc:
        raise StorageError(f"cannot create database {path}: {exc}") from exc
    if fd >= 0:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, fsync: bool = True, parents: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same folder, fsync, rename),
    0600, creating missing folders 0700. A reader never sees half a file; with ``fsync`` a
    crash leaves the old file or the new one, never a torn one or a temp file. ``parents=False``:
    a missing folder is an error (an export path with a typo must not create folders)."""
    try:
        if parents:
            make_private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)  # never leave a temp file behind, whatever failed
        if isinstance(exc, OSError):
            raise StorageError(f"cannot write {path}: {exc}") from exc
        raise


def scrub_file(path: Path) -> bool:
    """Overwrite a file's bytes with zeros, then delete it: what ``forget`` does to a file that
    may quote forgotten text (the response cache), so the text is not left in the blocks the
    file occupied. False when there was no file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError(f"cannot scrub {path}: {exc}") from exc
    try:
        with path.open("r+b") as f:
            f.write(b"\0" * size)
            f.flush()
            os.fsync(f.fileno())
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot scrub {path}: {exc}") from exc
    return True
