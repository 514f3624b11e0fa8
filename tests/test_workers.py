"""Worker processes that decode whole batches (inference/workers.py): they end with their
translator, a dead one ends the call at once, and the library leaves its host's torch threads
as it found them. Their translations equal one process's: test_translator.py."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from helpers import ROOT, toy_sentences
from helpers.commands import command
from helpers.processes import all_cores, children

needs_two_cores = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="two worker processes need two cores")


BUILD_AND_DROP = """
import json, os, sys
sys.path.insert(0, "tests")
from helpers.processes import all_cores, children
from inference import load_translator

lines = sys.stdin.read().splitlines()
counts = []
for _ in range(5):  # each translator replaces the last, which is dropped: no gc.collect()
    translator = load_translator(sys.argv[1])
    translator.translate(lines)
    counts.append(len(children(os.getpid())))
del translator
counts.append(len(children(os.getpid())))
with load_translator(sys.argv[1]) as translator:
    translator.translate(lines)
    counts.append(len(children(os.getpid())))
counts.append(len(children(os.getpid())))
print(json.dumps(counts))
"""


@needs_two_cores
def test_workers_end_with_their_translator(ci_run):
    """Five translators built and dropped in one process, each translating 400 lines on two
    workers: two live children after each, none once the last is dropped; and a `with` block
    ends its translator's workers."""
    lines = "\n".join(toy_sentences() * 4)
    done = subprocess.run(
        [sys.executable, "-c", BUILD_AND_DROP, ci_run],
        input=lines,
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=all_cores,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == [2, 2, 2, 2, 2, 0, 2, 0]


@needs_two_cores
def test_a_killed_worker_ends_translate_py_with_one_line(ci_run, tmp_path):
    """kill -9 of one worker while a file is translated: translate.py ends at once (it does not
    wait for the lost batch) with one line saying what happened and how far it got, exit
    status 1, the earlier -o file as it was and no worker left behind."""
    (tmp_path / "in.de").write_text("\n".join(toy_sentences() * 25) + "\n", encoding="utf-8")  # 2,500 lines
    (tmp_path / "out.en").write_text("earlier\n")
    args = ["-c", ci_run, "--threads", "2", "-i", tmp_path / "in.de", "-o", tmp_path / "out.en"]
    process = subprocess.Popen(
        command("translate.py", *args), cwd=ROOT, stderr=subprocess.PIPE, text=True, preexec_fn=all_cores
    )
    try:
        while len(workers := sorted(children(process.pid))) < 2:
            assert process.poll() is None, "translate.py ended before its workers started"
            time.sleep(0.01)
        os.kill(workers[0], signal.SIGKILL)
        stderr = process.communicate(timeout=120)[1]
    finally:
        process.kill()
    assert_ended_by_the_kill(process, stderr, f"of 2,500 lines; {tmp_path / 'out.en'} is as it was")
    assert (tmp_path / "out.en").read_text() == "earlier\n"


def assert_ended_by_the_kill(process: subprocess.Popen, stderr: str, how_far: str) -> None:
    """translate.py ended with status 1 and one line naming the kill and saying `how_far` it got,
    and no worker left."""
    assert process.returncode == 1 and "Traceback" not in stderr, stderr
    said = stderr.strip().splitlines()
    assert len(said) == 1, stderr
    assert said[0].startswith("error: a decoding worker process was killed by SIGKILL"), said[0]
    assert how_far in said[0], said[0]
    assert not children(process.pid)


def test_a_translator_leaves_torch_threads_as_it_found_them(ci_run, ci_export):
    """load_translator and translating with either engine (ours decodes on its own thread count,
    CTranslate2 sets the OpenMP threads it shares with torch) leave torch's threads as they were."""
    from inference import load_translator

    before = torch.get_num_threads()
    torch.set_num_threads(3)  # neither the cores here nor a count either engine would choose
    try:
        for path in (ci_run, ci_export):
            with load_translator(path, threads=1, threads_per_batch=1) as translator:
                assert torch.get_num_threads() == 3
                translator.translate(toy_sentences()[:10])
                assert torch.get_num_threads() == 3, path
    finally:
        torch.set_num_threads(before)


def test_a_translator_refuses_more_threads_than_its_cores(ci_run):
    from inference import load_translator
    from utils.errors import UserError

    cores = len(os.sched_getaffinity(0))
    with pytest.raises(UserError, match=f"{cores + 1} threads asked for, but this process may use {cores} core"):
        load_translator(ci_run, threads=cores + 1)


def test_workers_stop_on_close_and_start_again(ci_run):
    """close() ends the workers; the next call with several batches starts new ones, alike."""
    from inference.checkpoint import load_for_inference
    from inference.search_config import SearchConfig
    from inference.translator import Translator

    model, tokenizer, _ = load_for_inference(ci_run)
    lines = toy_sentences()[:100]
    others = children(os.getpid())  # what this test's process had started before
    with Translator(model, tokenizer, SearchConfig(beam_size=2, batch_size=10), workers=2) as translator:
        first = translator.translate(lines)
        started = {process.pid for process, _ in translator.workers.processes}
        assert len(started) == 2 and children(os.getpid()) - others == started
        translator.close()
        assert children(os.getpid()) == others
        assert translator.translate(lines) == first
        again = children(os.getpid()) - others
        assert len(again) == 2 and not again & started
    assert children(os.getpid()) == others


def test_batches_hold_64_sentences_and_a_short_call_gives_every_worker_one(ci_run):
    """Our engine's batches hold up to 64 sentences unless the search says (BATCH_SIZE), but with
    workers a call of fewer than 64 sentences for each is cut into batches of its share for each,
    but never of fewer than 32 (FEWEST_TO_SPLIT; the last may hold fewer): 100 sentences on two
    workers go as 50 and 50,
    40 as 32 and 8, and 20 stay one batch in this process, as a typed line does; decoded in this
    process alone, 100 are 64 and 36."""
    from inference.checkpoint import load_for_inference
    from inference.search_config import SearchConfig
    from inference.translator import BATCH_SIZE, FEWEST_TO_SPLIT, Translator

    assert SearchConfig().batch_size is None and (BATCH_SIZE, FEWEST_TO_SPLIT) == (64, 32)
    model, tokenizer, _ = load_for_inference(ci_run)
    lines = toy_sentences()[:100]

    def batches(translator: Translator, sentences: list[str]) -> list[int]:
        told: list[int] = []
        translator.translate_ids(translator.source_ids(sentences), progress=told.append)
        return sorted(told)

    with Translator(model, tokenizer, SearchConfig(beam_size=2), workers=2) as translator:
        assert batches(translator, lines[:20]) == [20]
        assert not translator.workers.processes  # one batch: decoded here, no worker started
        assert batches(translator, lines[:40]) == [8, 32]
        assert len(translator.workers.processes) == 2  # the two batches went to the workers
        assert batches(translator, lines) == [50, 50]
    alone = Translator(model, tokenizer, SearchConfig(beam_size=2))
    assert batches(alone, lines) == [36, 64]
    assert batches(Translator(model, tokenizer, SearchConfig(beam_size=2, batch_size=30)), lines) == [10, 30, 30, 30]


def test_an_error_in_a_worker_is_raised_here():
    """An exception raised while a worker decodes comes back to the caller as itself."""
    from inference.workers import BatchWorkers

    def fails(batch):
        raise ValueError(f"cannot decode {batch}")

    others = children(os.getpid())
    workers = BatchWorkers(2)
    with pytest.raises(ValueError, match="cannot decode 3"):
        workers.map(fails, [1, 2, 3], cost=lambda batch: batch)
    assert children(os.getpid()) == others  # stopped with the error


def _square(batch: int) -> int:
    return batch * batch


def _kill_and_wait(pid: int) -> None:
    """kill -9 `pid`, back once every thread of it has ended (a zombie its parent can reap: the
    leader shows Z while its other threads may still be exiting)."""
    os.kill(pid, signal.SIGKILL)
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z" and len(os.listdir(f"/proc/{pid}/task")) <= 1:
                return
        except OSError:  # reaped
            return
        time.sleep(0.01)


def _kill_our(process) -> None:
    """kill -9 a worker of this process, and reap it."""
    os.kill(process.pid, signal.SIGKILL)
    process.join()


@pytest.mark.parametrize("moment", ["before the first call", "between two calls"])
def test_a_worker_that_died_while_idle_ends_the_next_call(moment):
    """A worker killed before it was sent anything (started, idle) or between two calls: the
    next call raises WorkerDied saying how it ended, never BrokenPipeError or a result short of a
    batch; the call after that starts new workers and gets every result."""
    from inference.workers import BatchWorkers, WorkerDied

    others = children(os.getpid())
    workers = BatchWorkers(2)
    if moment == "before the first call":
        workers.start(_square)
    else:
        assert workers.map(_square, [1, 2, 3], cost=float) == [1, 4, 9]
    first = [process.pid for process, _ in workers.processes]
    _kill_our(workers.processes[0][0])
    with pytest.raises(WorkerDied, match="a decoding worker process was killed by SIGKILL .* while it waited for work"):
        workers.map(_square, [1, 2, 3, 4], cost=float)
    assert children(os.getpid()) == others  # the other one stopped with it
    assert workers.map(_square, [1, 2, 3, 4], cost=float) == [1, 4, 9, 16]
    assert not {process.pid for process, _ in workers.processes} & set(first)
    workers.close()


def test_a_worker_that_dies_just_after_answering_ends_the_call():
    """Killed after it answered and before it is sent its next batch (the pipe's write fails):
    WorkerDied, never BrokenPipeError."""
    from inference.workers import BatchWorkers, WorkerDied

    workers = BatchWorkers(2)

    def kill_them(batch: int) -> None:  # `done`: called as each result comes back
        for process, _ in workers.processes:
            _kill_our(process)

    with pytest.raises(WorkerDied, match="a decoding worker process was killed by SIGKILL"):
        workers.map(_square, [1, 2, 3, 4, 5], cost=float, done=kill_them)


@needs_two_cores
def test_a_worker_killed_between_two_typed_lines_ends_translate_py_with_one_line(ci_run):
    """translate.py --interactive: the first line (of more sentences than a batch holds, so that
    the workers decode it) is translated, a worker is killed while it waits, two more lines are
    typed: exit status 1 with one line naming what happened, the first line's translation alone
    written, no worker left. (With -o the file is left as it was: the test above.)"""
    args = ["-c", ci_run, "--threads", "2", "--batch-size", "4", "--interactive"]
    process = subprocess.Popen(
        command("translate.py", *args),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=all_cores,
    )
    try:
        process.stdin.write(" ".join(toy_sentences()[:12]) + "\n")  # 12 sentences: 3 batches of 4
        process.stdin.flush()
        assert process.stdout.readline().strip(), "the first line was not translated"  # written once done
        workers = sorted(children(process.pid))
        assert len(workers) == 2, workers
        _kill_and_wait(workers[0])
        more = " ".join(toy_sentences()[12:24]) + "\n" + toy_sentences()[24] + "\n"
        stdout, stderr = process.communicate(more, timeout=120)
    finally:
        process.kill()
    assert stdout == ""  # nothing more: the two lines after the kill are not written short
    assert_ended_by_the_kill(process, stderr, "after 1 of the lines")
