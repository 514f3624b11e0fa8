"""Ctrl-C and SIGTERM stop training after the current step, with a checkpoint, instead of losing
the steps since the last one."""

import logging
import signal
import threading
from pathlib import Path

from utils.errors import Stopped

log = logging.getLogger("train")


class Interrupted(Stopped):
    """Training stopped on a signal after saving `checkpoint`."""

    def __init__(self, signum: int, step: int, checkpoint: Path) -> None:
        super().__init__(f"{signal.Signals(signum).name} at step {step}; saved {checkpoint}")
        self.signum, self.step, self.checkpoint = signum, step, checkpoint

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process killed by the signal


class StopOnSignal:
    """While active, SIGINT and SIGTERM set `signum` instead of killing the process; the
    training loop checks it between steps. A second Ctrl-C stops at once (KeyboardInterrupt).
    Signal handlers live in the main thread only; elsewhere this does nothing."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame) -> None:
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum
        log.warning(
            "%s: stopping after this step and saving a checkpoint (Ctrl-C again to stop at once)",
            signal.Signals(signum).name,
        )

    def __enter__(self) -> "StopOnSignal":
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
