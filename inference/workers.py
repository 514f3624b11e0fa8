"""Whole batches decoded side by side: worker processes, one core each, for translating a file.

A model this small keeps a core's matmuls short, so two threads sharing one batch mostly wait
on each other and on Python's beam-search bookkeeping; two processes each decoding whole batches
keep both cores busy (bench/decode.py measures both layouts). Processes, not threads: the search
is a Python loop around many small tensor operations, and threads would queue on the GIL.

The workers are forked from the translating process, so the model is inherited as it is at the
first call (copy-on-write: its weights are not copied until written, and are never written); a
change to the model after that is not seen by them. The batches go out longest first, so that no
worker is left with a long batch at the end while the others idle, and the results come back
in the order asked.

Each worker has a pipe of its own, and the parent waits on the pipes and on the processes
together: a worker that dies (kill -9, the out-of-memory killer) ends the call at once with
`WorkerDied`, never a wait for a result that cannot come; so does one that died while idle,
between two calls, found before the call sends it anything. After a `WorkerDied` the next call
starts new workers. The workers stop with `close()`, when their owner is garbage-collected, or
when the interpreter exits; nothing that stops them refers to their owner, so that the owner can
be collected.

A `BatchWorkers` serves one call at a time: every call reads the same pipes, so its owner
(inference/translator.py) holds a lock around its calls when threads share it.
"""

import multiprocessing
import signal
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import torch

from inference.malloc import keep_freed_memory
from utils.errors import UserError

_decode: Callable[[Any], Any] | None = None  # set while the workers are forked: what they apply to a batch


class WorkerDied(UserError):
    """A worker process ended, while decoding or while it waited for work (killed, or out of memory)."""


def _serve(connection: Connection, threads: int) -> None:
    """A worker's life: a batch in, its result (or the exception it raised) out, until the pipe closes."""
    decode = _decode
    assert decode is not None, "workers are forked by BatchWorkers.start"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    torch.set_num_threads(threads)
    keep_freed_memory()
    while True:
        try:
            batch = connection.recv()
        except EOFError:  # the parent closed the pipe, or ended
            return
        try:
            connection.send((True, decode(batch)))
        except Exception as e:  # noqa: BLE001 - raised again in the parent, where it can be reported
            connection.send((False, e))


def _stop(processes: list[tuple[BaseProcess, Connection]]) -> None:
    """End the workers now (a batch one is decoding is dropped) and reap them."""
    for process, connection in processes:
        connection.close()
        process.terminate()
    for process, _ in processes:
        process.join()


def _how_it_ended(process: BaseProcess) -> str:
    process.join(timeout=10)  # its sentinel is ready a moment before it can be reaped
    code = process.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        why = " (as the out-of-memory killer does)" if name == "SIGKILL" else ""
        return f"was killed by {name}{why}"
    return f"exited with status {code}"


def can_fork() -> bool:
    """Whether this system forks processes (Linux, macOS); without fork (Windows) the batches
    stay in the calling process."""
    return "fork" in multiprocessing.get_all_start_methods()


class BatchWorkers:
    """`workers` processes that each decode whole batches on `threads` threads; started at the
    first `map`. Only where `can_fork()`. It holds no reference to what it decodes with (the
    workers have their own copy), so that a translator holding it is freed as soon as it is dropped."""

    def __init__(self, workers: int, threads: int = 1) -> None:
        self.workers, self.threads = workers, threads
        self.processes: list[tuple[BaseProcess, Connection]] = []
        self._stopper: weakref.finalize | None = None

    def start(self, decode: Callable[[Any], Any]) -> None:
        """Fork the workers: each inherits `decode` (and the model it uses); nothing is pickled."""
        global _decode
        context = multiprocessing.get_context("fork")
        _decode = decode
        try:
            for _ in range(self.workers):
                here, there = context.Pipe()
                process = context.Process(target=_serve, args=(there, self.threads), daemon=True)
                process.start()
                there.close()  # the worker's end: only the worker holds it, so its death closes the pipe
                self.processes.append((process, here))
        finally:
            _decode = None
        # stopped when this object goes; daemon processes also end with the interpreter
        self._stopper = weakref.finalize(self, _stop, self.processes)

    def map(
        self,
        decode: Callable[[Any], Any],
        batches: Sequence[Any],
        cost: Callable[[Any], float],
        done: Callable[[Any], object] | None = None,
    ) -> list[Any]:
        """decode(batch) for each batch, in the order given (`decode` is taken when the workers
        start: the same at every call); the costliest are sent first, each to the next idle
        worker, and `done(batch)` is called as each one's result comes back. A worker that dies
        raises WorkerDied; an interrupt (Ctrl-C) stops the workers."""
        if not self.processes:
            self.start(decode)
        waiting = iter(sorted(range(len(batches)), key=lambda i: -cost(batches[i])))
        results: list[Any] = [None] * len(batches)
        busy: dict[Connection, int] = {}  # a worker's pipe -> the batch it decodes
        sentinels = {process.sentinel: process for process, _ in self.processes}

        def send_next(connection: Connection) -> None:
            if (i := next(waiting, None)) is not None:
                try:
                    connection.send(batches[i])
                except OSError:  # BrokenPipeError: it died since it last answered
                    raise WorkerDied(f"a decoding worker process {_how_it_ended(processes[connection])}") from None
                busy[connection] = i

        processes = {connection: process for process, connection in self.processes}
        try:
            for process, _ in self.processes:  # one that died while idle, since the last call
                if not process.is_alive():
                    raise WorkerDied(f"a decoding worker process {_how_it_ended(process)} while it waited for work")
            for _, connection in self.processes:
                send_next(connection)
            while busy:
                for ready in wait([*busy, *sentinels]):
                    if isinstance(ready, int):  # a process's sentinel: it ended
                        raise WorkerDied(f"a decoding worker process {_how_it_ended(sentinels[ready])}")
                    if ready not in busy:  # already read in this round
                        continue
                    try:
                        ok, result = ready.recv()
                    except (EOFError, OSError):  # it died while answering
                        continue  # its sentinel says how, in the next round
                    if not ok:
                        raise result
                    i = busy.pop(ready)
                    results[i] = result
                    if done is not None:
                        done(batches[i])
                    send_next(ready)
        except BaseException:
            self.close()  # a worker dead or busy with a batch no one will read: all start anew
            raise
        return results

    def close(self) -> None:
        """Stop the workers (a batch they are decoding is dropped); a later `map` starts new ones."""
        if self._stopper is not None:
            self._stopper()  # runs _stop once, and no more at collection
            self._stopper = None
        self.processes = []
