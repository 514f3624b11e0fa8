"""Files that appear whole or not at all."""
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


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
