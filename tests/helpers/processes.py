"""Child processes as the kernel sees them (Linux's /proc), to count what a command or a
translator leaves running."""

import os
from pathlib import Path


def children(pid: int) -> set[int]:
    """The live (or not yet reaped) child processes of `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # after the command's name in parentheses: the state, then the parent's pid
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def all_cores() -> None:
    """In a child process (a `preexec_fn`): every core of the machine, not the one a pytest-xdist
    worker keeps to, so that a command may be given more than one (more threads than a process
    may use are refused)."""
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
