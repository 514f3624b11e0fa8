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
"""

import multiprocessing
import signal
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.pool import Pool
from typing import Any

import torch

from inference.malloc import keep_freed_memory

_decode: Callable[[Any], Any] | None = None  # in a worker: what decodes one batch (inherited by fork)


def _start_worker(decode: Callable[[Any], Any], threads: int) -> None:
    """In a new worker: its threads, and Ctrl-C left to the parent (which stops the workers)."""
    global _decode
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(threads)
    keep_freed_memory()
    _decode = decode


def _decode_in_worker(batch: Any) -> Any:
    assert _decode is not None, "a worker decodes only after _start_worker"
    return _decode(batch)


def can_fork() -> bool:
    """Whether this system forks processes (Linux, macOS); without fork (Windows) the batches
    stay in the calling process."""
    return "fork" in multiprocessing.get_all_start_methods()


class BatchWorkers:
    """`workers` processes that each apply `decode` to whole batches on `threads` threads;
    started at the first `map`. Only where `can_fork()`."""

    def __init__(self, decode: Callable[[Any], Any], workers: int, threads: int = 1) -> None:
        self.decode, self.workers, self.threads = decode, workers, threads
        self.pool: Pool | None = None

    def map(
        self, batches: Sequence[Any], cost: Callable[[Any], float], done: Callable[[Any], object] | None = None
    ) -> list[Any]:
        """decode(batch) for each batch, in the order given; the costliest are sent first, and
        `done(batch)` is called as each one's result is read (in the order sent: about the order
        the workers finish them, since each takes the next batch waiting)."""
        if self.pool is None:  # fork: the workers inherit `decode` and the model, nothing is pickled
            self.pool = multiprocessing.get_context("fork").Pool(
                self.workers, initializer=_start_worker, initargs=(self.decode, self.threads)
            )
            # stopped when this object goes (or the interpreter ends): a pool left to its own
            # __del__ after multiprocessing's exit handler prints "Bad file descriptor" errors
            weakref.finalize(self, self.pool.terminate)
        order = sorted(range(len(batches)), key=lambda i: -cost(batches[i]))
        waiting = {i: self.pool.apply_async(_decode_in_worker, (batches[i],)) for i in order}
        results = [None] * len(batches)
        for i in order:
            results[i] = waiting[i].get()
            if done is not None:
                done(batches[i])
        return results

    def close(self) -> None:
        """Stop the workers (a batch they are decoding is dropped)."""
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
