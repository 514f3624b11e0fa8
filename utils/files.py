"""Files and folders that appear whole or not at all."""

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_file(path: str | Path, mode: str = "w", **open_args) -> Iterator[IO]:
    """Open a temporary file beside `path` for writing; when the block ends without an
    exception, fsync it and rename it over `path`.

    A crash, an exception or Ctrl-C at any point leaves `path` as it was (the old file, or
    none), never a truncated file under its name. The temporary name is unique per call, so
    two processes writing the same path never write into each other's file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x" + mode.lstrip("w"), **open_args) as file:  # "x": never an existing file
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_folder(path: str | Path, replace: bool = True) -> Iterator[Path]:
    """A temporary folder beside `path` to fill; when the block ends without an exception it takes
    `path`'s place.

    An existing folder at `path` is swapped out only then, and put back if the new one cannot be
    moved in: whatever happens, `path` is the old folder or the whole new one, never neither and
    never a half-written one. Deciding whether an existing folder may be replaced is the caller's;
    with `replace=False` one that appeared meanwhile (another process caching the same entry) is
    kept, and ours dropped.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield staging
        if not path.exists():
            try:
                os.rename(staging, path)
                return
            except OSError:
                if not path.exists():  # not a folder that won the race: a real failure
                    raise
        if not replace:
            return
        old = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.old")
        os.rename(path, old)
        try:
            os.rename(staging, path)
        except BaseException:
            os.rename(old, path)
            raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
