"""A folder the whole test session makes once, whatever the number of pytest-xdist workers.

Under `pytest -n N` every worker has its own session, so a session fixture such as the ci run
would be trained N times. `shared_folder` makes it once, under a lock in the folder all workers'
temporary folders share: the first worker to ask makes it, the others wait for it and read it.
What it holds must then be read only (the tests copy what they change).
"""

from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """`name` under the session's temporary root, made by `make(folder)` if no worker made it."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base  # xdist: popen-gw0, popen-gw1, ...
    folder, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            folder.mkdir(exist_ok=True)
            make(folder)
            done.touch()
    return folder
