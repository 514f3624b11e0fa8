"""translate.py as a user runs it: arguments, stdin, files, a terminal, attention, errors."""

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import SENTENCES, half_sentences, run_script, start_script, toy_sentences, unseen_sentences
from helpers.commands import command
from helpers.processes import all_cores, children
from helpers.terminal import open_terminal
from inference.search_config import SearchConfig
from inference.translator import Translator


def translate(*args, stdin: bytes | None = None, check=True, fresh=False) -> subprocess.CompletedProcess:
    """translate.py as a user runs it; bytes in and out (tests feed it bad UTF-8); `fresh`: in a
    new interpreter, with a hash seed of its own (tests/helpers/warm.py)."""
    return run_script("translate.py", *args, input=stdin, check=check, text=False, fresh=fresh)


def test_arguments_stdin_and_file_agree_and_keep_empty_lines(ci_run, tmp_path):
    lines = [SENTENCES[0], "", SENTENCES[1], SENTENCES[2]]
    by_args = translate("-c", ci_run, *lines).stdout.decode().split("\n")
    by_stdin = translate("-c", ci_run, stdin="\n".join(lines).encode(), fresh=True).stdout.decode().split("\n")
    (tmp_path / "in.de").write_text("\n".join(lines) + "\n", encoding="utf-8")
    translate("-c", ci_run / "checkpoints" / "best.pt", "-i", tmp_path / "in.de", "-o", tmp_path / "out.en")
    by_file = (tmp_path / "out.en").read_text(encoding="utf-8").split("\n")
    assert by_args == by_stdin == by_file
    assert len(by_args) == 5 and by_args[1] == "" and by_args[-1] == ""  # 4 lines, the second empty
    assert all(by_args[i] for i in (0, 2, 3))


def test_a_line_of_several_sentences_is_translated_sentence_by_sentence(ci_run):
    """A paragraph on one line: its sentences' translations, joined with its own spacing, on one
    output line; --whole-lines gives the model the line as one input (the Python API alike)."""
    from inference import load_translator

    paragraph = "  ".join(toy_sentences()[:3])
    out = translate("-c", ci_run, paragraph, "", SENTENCES[0]).stdout.decode().split("\n")
    each = translate("-c", ci_run, *toy_sentences()[:3], fresh=True).stdout.decode().splitlines()
    assert out == ["  ".join(each), "", translate("-c", ci_run, SENTENCES[0]).stdout.decode().strip(), ""]
    whole = translate("-c", ci_run, "--whole-lines", paragraph).stdout.decode()
    with load_translator(ci_run, whole_lines=True) as translator:
        assert whole == translator.translate([paragraph])[0] + "\n"


def test_greedy_option_and_n_best_format(ci_run, trained):
    """--greedy wins over a beam size given with it: the model's greedy translations, which beam
    search changes for some sentences."""
    model, tokenizer = trained
    candidates = unseen_sentences(100) + half_sentences(100)
    by_greedy = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate(candidates)
    by_beam = Translator(model, tokenizer, SearchConfig(beam_size=5)).translate(candidates)
    # only sentences whose translation the beam changes tell the two options apart (which ones
    # depends on the trained weights)
    changed = [(s, g, b) for s, g, b in zip(candidates, by_greedy, by_beam) if g != b]
    assert changed, "beam search changed none of the unseen sentences: nothing to tell apart"
    sources, greedy_of, beam_of = (list(column) for column in zip(*changed))
    greedy = translate("-c", ci_run, "--greedy", "-b", "5", *sources).stdout.decode().splitlines()
    assert greedy == greedy_of
    assert translate("-c", ci_run, "-b", "5", *sources).stdout.decode().splitlines() == beam_of
    rows = [
        line.split("\t") for line in translate("-c", ci_run, "-n", "3", *SENTENCES[:2]).stdout.decode().splitlines()
    ]
    assert [r[0] for r in rows] == ["1", "1", "1", "2", "2", "2"]
    scores = [float(r[1]) for r in rows[:3]]
    assert scores == sorted(scores, reverse=True)


def test_attention_files_and_terminal_heatmap(ci_run, tmp_path):
    result = translate(
        "-c", ci_run, "--attention", tmp_path / "maps", "--show-attention", SENTENCES[1], "", SENTENCES[3]
    )
    names = sorted(p.name for p in (tmp_path / "maps").iterdir())
    expected = sorted(
        f"sentence{n}_{kind}_layer{layer}.png"
        for n in (1, 3)
        for kind in ("encoder_self", "decoder_self", "cross")
        for layer in (1, 2)
    )
    assert names == expected  # no figures for the empty line 2
    assert all((tmp_path / "maps" / n).read_bytes().startswith(b"\x89PNG") for n in names)
    heatmap = result.stderr.decode()
    assert "cross-attention, layer 2, mean of 4 heads" in heatmap and "</s>" in heatmap and "█" in heatmap


def test_sentences_without_pieces_translate_to_empty_lines_with_attention_of_the_others(ci_run, tmp_path):
    """A zero-width space or a control character is normalised away by SentencePiece: no source
    pieces, so an empty translation and no attention, while its neighbours get theirs."""
    result = translate("-c", ci_run, "--attention", tmp_path, "--show-attention", SENTENCES[3], "\u200b", "\x01")
    assert result.stdout.decode().split("\n")[1:] == ["", "", ""]  # one line each, the last two empty
    assert {p.name.split("_")[0] for p in tmp_path.glob("*.png")} == {"sentence1"}
    assert result.stderr.decode().count("cross-attention, layer 2") == 1


def test_a_line_of_no_pieces_alone_has_no_attention_in_any_view(ci_run, tmp_path):
    """Alone (typed at the prompt, a chunk of one), a line without source pieces: an empty
    translation and no figure from translate.py, None from the Python API, and one line from the
    ATTENTION tab's typed sentence, never a traceback."""
    from inference import load_translator
    from viz.attention_tab.typed import TypedError, TypedSentences

    result = translate("-c", ci_run, "--attention", tmp_path, "--show-attention", "\u200b")
    assert (result.stdout, result.stderr) == (b"\n", b"") and not list(tmp_path.glob("*.png"))
    with load_translator(ci_run) as translator:
        assert translator.attention(["\u200b", "\x01"]) == [None, None]
    with pytest.raises(TypedError, match="the sentence has no pieces the model reads"):
        TypedSentences().stored(ci_run / "checkpoints" / "best.pt", "\u200b")


def test_output_file_that_is_the_input_is_refused(ci_run, tmp_path):
    sentences = tmp_path / "in.de"
    sentences.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    (tmp_path / "link.de").symlink_to(sentences)
    for output in (sentences, tmp_path / "link.de", tmp_path / "." / "in.de"):
        result = translate("-c", ci_run, "-i", sentences, "-o", output, check=False)
        assert result.returncode == 1 and "are the same file" in result.stderr.decode()
        assert len(result.stderr.decode().strip().splitlines()) == 1
        assert sentences.read_text(encoding="utf-8") == "\n".join(SENTENCES) + "\n"  # untouched


def test_a_failed_run_leaves_the_output_file_that_was_there(ci_run, tmp_path):
    """The -o file is replaced only once every translation is written: input that turns out
    bad mid-way (line 1,500, after the first chunk of 1,000 was written) leaves the old file."""
    output = tmp_path / "out.en"
    output.write_text("yesterday's translations\n", encoding="utf-8")
    bad = tmp_path / "bad.de"
    bad.write_bytes(b"Ein Hund.\n" * 1499 + b"kaputt \xff\n")
    result = translate("-c", ci_run, "--greedy", "-i", bad, "-o", output, check=False)
    assert result.returncode == 1 and "line 1500" in result.stderr.decode()
    assert output.read_text(encoding="utf-8") == "yesterday's translations\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.de", "out.en"]  # no temporary file left behind
    good = tmp_path / "good.de"
    good.write_text(SENTENCES[0] + "\n", encoding="utf-8")
    translate("-c", ci_run, "--greedy", "-i", good, "-o", output)
    assert output.read_text(encoding="utf-8") == translate("-c", ci_run, "--greedy", SENTENCES[0]).stdout.decode()


def test_output_to_a_special_file_is_written_as_it_goes(ci_run):
    result = translate("-c", ci_run, "--greedy", "-o", "/dev/stdout", SENTENCES[0])
    assert result.stdout.decode() == translate("-c", ci_run, "--greedy", SENTENCES[0]).stdout.decode()


def test_overlong_sentence_is_truncated_with_a_warning(ci_run):
    long_sentence = " ".join(["Hund"] * 400)  # far over max_len 256 pieces
    result = translate("-c", ci_run, "--greedy", long_sentence, SENTENCES[0])
    assert result.returncode == 0
    assert "warning: 1 sentence(s) longer than the model's 256 pieces were truncated" in result.stderr.decode()
    assert len(result.stdout.decode().splitlines()) == 2


def test_a_terminal_gets_each_translation_as_its_line_is_entered(ci_run):
    """Through a pty, as a person types: the first translation arrives before input ends."""
    import os
    import select

    controller, terminal = open_terminal()
    process = start_script(
        command("translate.py", "-c", ci_run, "--greedy"),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    try:
        os.write(controller, (SENTENCES[0] + "\n").encode())
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "no translation before the end of input"
        first = process.stdout.readline().decode().strip()
        assert first
        os.write(controller, b"\x04")  # Ctrl-D: end of input
        assert process.wait(timeout=60) == 0
        assert "Type a sentence" in process.stderr.read().decode()
    finally:
        process.kill()
        os.close(controller)
    expected = translate("-c", ci_run, "--greedy", SENTENCES[0]).stdout.decode().strip()
    assert first == expected


def test_silencing_every_cross_attention_head_cuts_the_decoder_off_the_source(ci_run):
    every = ",".join(f"cross:{layer}:{head}" for layer in (1, 2) for head in (1, 2, 3, 4))
    normal = translate("-c", ci_run, "--greedy", *SENTENCES).stdout.decode().splitlines()
    same_limit = ["--max-len-ratio", "0", "--max-len-extra", "30"]  # limits no longer differ by source either
    blind = translate("-c", ci_run, "--greedy", *same_limit, "--mask-heads", every, *SENTENCES).stdout.decode()
    blind = blind.splitlines()
    assert len(set(normal)) == len(SENTENCES)  # the model tells the sentences apart...
    assert len(set(blind)) == 1  # ...but not without cross-attention: one output for all
    one_head = translate("-c", ci_run, "--greedy", "--mask-heads", "cross:2:1", *SENTENCES).stdout.decode()
    assert len(one_head.splitlines()) == len(SENTENCES)


def stderr_on_a_terminal(
    args: list,
    stdin=None,
    until: Callable[[str], bool] | None = None,
    signum: int | None = None,
    workers: set[int] | None = None,
) -> tuple[int, str]:
    """translate.py with standard error on a pty (standard output where `args` say): its exit
    status and what the terminal showed; `signum` is sent once `until(shown)` holds, and the
    child processes it had then are added to `workers`."""
    import os
    import select

    controller, terminal = open_terminal()
    process = start_script(
        command("translate.py", *args),
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        # Ctrl-C as at a shell's prompt: a pytest-xdist worker ignores SIGINT, and so would its
        # children; and every core, for --threads 2
        preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_DFL), all_cores()),
    )
    os.close(terminal)
    shown = b""
    while True:
        if select.select([controller], [], [], 0.2)[0]:
            try:
                shown += os.read(controller, 4096)
            except OSError:  # the other end closed: the command ended
                break
        if until is not None and until(shown.decode(errors="replace")):
            if workers is not None:
                workers |= children(process.pid)
            process.send_signal(signum)
            until = None
        if process.poll() is not None and not select.select([controller], [], [], 0.2)[0]:
            break
    os.close(controller)
    return process.wait(timeout=60), shown.decode(errors="replace").replace("\r", "\n")


def counts(shown: str, total: str = "") -> list[int]:
    """The lines-done counts a progress bar showed, in order: "1234/3000" with a total, "1234 lines" without."""
    return [int(n) for n in re.findall(rf"(\d+)/{total}" if total else r"(\d+) lines \[", shown)]


def test_a_file_shows_a_progress_bar_on_a_terminal_and_ctrl_c_says_how_far_it_got(ci_run, tmp_path):
    """The bar counts the lines of -i FILE up front and moves batch by batch, two worker processes
    decoding (--threads 2); a pipe gets a count without a total; Ctrl-C, with the workers busy,
    says how many lines were done, leaves -o's earlier file as it was and no worker behind."""
    lines = toy_sentences() * 30  # 3,000 lines: three chunks of a thousand, 47 batches each
    (tmp_path / "in.de").write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["-c", ci_run, "--greedy", "--threads", "2", "-i", tmp_path / "in.de", "-o", tmp_path / "out.en"]
    status, shown = stderr_on_a_terminal(args)
    done = counts(shown, "3000")
    assert status == 0 and "lines/s" in shown and len(set(done)) > 3 and done == sorted(done), shown
    assert (tmp_path / "out.en").read_text(encoding="utf-8").splitlines() == translate(
        "-c", ci_run, "--greedy", "--threads", "1", "-i", tmp_path / "in.de"
    ).stdout.decode().splitlines()  # the workers' translations, in order, are one process's
    assert run_script("translate.py", *args, preexec_fn=all_cores).stderr == ""  # stderr not a terminal: no bar

    with open(tmp_path / "in.de", "rb") as pipe:  # a pipe: lines counted as they go, no total
        status, shown = stderr_on_a_terminal(["-c", ci_run, "--greedy"], stdin=pipe)
    assert status == 0 and "/3000" not in shown and len(set(counts(shown))) > 3, shown

    (tmp_path / "out.en").write_text("earlier\n")
    workers: set[int] = set()
    status, shown = stderr_on_a_terminal(
        # past the first chunk: its thousand lines written (a bar at 1,000 exactly may be before the write)
        args,
        until=lambda shown: any(n > 1000 for n in counts(shown, "3000")),
        signum=signal.SIGINT,
        workers=workers,
    )
    assert status == 130 and "Traceback" not in shown, shown
    assert len(workers) == 2 and not [pid for pid in workers if Path(f"/proc/{pid}").exists()]  # none left
    last = shown.strip().splitlines()[-1]
    said = rf"stopped by Ctrl-C after [12],000 of 3,000 lines; {re.escape(str(tmp_path / 'out.en'))} is as it was"
    assert re.fullmatch(said, last), last
    assert (tmp_path / "out.en").read_text() == "earlier\n"
