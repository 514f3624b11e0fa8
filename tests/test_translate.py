"""Search correctness, and translate.py as a user runs it."""
import subprocess

import pytest
import torch

from data.batching import pad
from inference.checkpoint import load_checkpoint, load_for_inference
from inference.translator import Translator
from model.search import beam_search, greedy_search

from helpers import run_script, start_script
from helpers.commands import command

SENTENCES = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.",
             "Eine Frau mit einem roten Hut sitzt auf einer Bank vor einem großen Gebäude.", "Kinder."]


@pytest.fixture(scope="module")
def trained(ci_run):
    model, tokenizer, _ = load_for_inference(ci_run)
    return model, tokenizer


@pytest.fixture(scope="module")
def test_sources(trained, multi30k):
    _, tokenizer = trained
    return tokenizer.encode_src(list(multi30k.text["test_2016_flickr"]["src"][:120]))


def batches(src_ids, size=40):
    for start in range(0, len(src_ids), size):
        yield pad(src_ids[start: start + size])


def test_greedy_equals_beam_size_one(trained, test_sources):
    model, _ = trained
    for src in batches(test_sources):
        greedy = greedy_search(model, src, max_len=40)
        beam = beam_search(model, src, beam_size=1, max_len=40)
        assert [g.tokens for g in greedy] == [b[0].tokens for b in beam]


def test_beam_scores_are_the_models_log_probabilities(trained, test_sources):
    """Re-score the beam's best hypotheses with one teacher-forced pass: the same log-prob."""
    model, _ = trained
    src = pad(test_sources[:8])
    best = [hyps[0] for hyps in beam_search(model, src, beam_size=3, max_len=40)]
    for row, hyp in enumerate(best):
        tgt = torch.tensor([[2, *hyp.tokens]])
        logits = model(src[row: row + 1, : int((src[row] != 0).sum())], tgt).logits
        log_probs = logits.log_softmax(-1)[0]
        gold = torch.tensor([*hyp.tokens, 3])
        assert log_probs.gather(1, gold[:, None]).sum().item() == pytest.approx(hyp.log_prob, abs=1e-3)


def test_cached_decoding_gives_the_same_output_as_uncached(trained, test_sources):
    model, _ = trained
    src = pad(test_sources[:30])
    assert ([h.tokens for h in greedy_search(model, src, 40)]
            == [h.tokens for h in greedy_search(model, src, 40, use_cache=False)])
    cached = beam_search(model, src, beam_size=3, max_len=40, n_best=3)
    uncached = beam_search(model, src, beam_size=3, max_len=40, n_best=3, use_cache=False)
    assert [[h.tokens for h in hyps] for hyps in cached] == [[h.tokens for h in hyps] for hyps in uncached]


def test_order_is_restored_after_length_sorting(trained):
    model, tokenizer = trained
    translator = Translator(model, tokenizer, beam_size=3, batch_size=2)
    together = translator.translate(SENTENCES)
    one_by_one = [translator.translate([s])[0] for s in SENTENCES]
    assert together == one_by_one
    assert translator.translate(["", "   ", SENTENCES[0]]) == ["", "", one_by_one[0]]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_translation_does_not_depend_on_its_batch_mates(trained, beam_size):
    """Tight limits (0.3 x source pieces) bind; a long batch-mate must not loosen them."""
    model, tokenizer = trained
    translator = Translator(model, tokenizer, beam_size=beam_size, max_len_ratio=0.3, max_len_extra=0)
    short, long = SENTENCES[1], " ".join([SENTENCES[2]] * 3)
    alone = translator.translate_ids(translator.source_ids([short]))[0]
    assert len(alone) == int(0.3 * len(translator.source_ids([short])[0]))  # the limit was reached
    batched = translator.translate_ids(translator.source_ids([short, long]))[0]
    assert batched == alone


def test_length_options_change_outputs_as_documented(trained, multi30k):
    model, tokenizer = trained
    sources = list(multi30k.text["val"]["src"][:30])

    def lengths(**options) -> list[int]:
        translator = Translator(model, tokenizer, beam_size=4, **options)
        return [len(ids) for ids in translator.translate_ids(translator.source_ids(sources))]

    capped = lengths(max_len_ratio=0.0, max_len_extra=3)
    assert max(capped) <= 3 and max(lengths()) > 3
    assert sum(lengths(length_penalty=0.0)) < sum(lengths(length_penalty=2.0))  # alpha 0 favours short outputs


def test_n_best_hypotheses_are_distinct(trained):
    model, tokenizer = trained
    translator = Translator(model, tokenizer, beam_size=4)
    for hyps in translator.search(translator.source_ids(SENTENCES), n_best=4):
        assert len(hyps) == 4 and len({tuple(h.tokens) for h in hyps}) == 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


# --- the command line -------------------------------------------------------------------

def translate(*args, stdin: bytes | None = None, check=True) -> subprocess.CompletedProcess:
    """translate.py as a user runs it; bytes in and out (tests feed it bad UTF-8)."""
    return run_script("translate.py", *args, input=stdin, check=check, text=False)


def test_arguments_stdin_and_file_agree_and_keep_empty_lines(ci_run, tmp_path):
    lines = [SENTENCES[0], "", SENTENCES[1], SENTENCES[2]]
    by_args = translate("-c", ci_run, *lines).stdout.decode().split("\n")
    by_stdin = translate("-c", ci_run, stdin="\n".join(lines).encode()).stdout.decode().split("\n")
    (tmp_path / "in.de").write_text("\n".join(lines) + "\n", encoding="utf-8")
    translate("-c", ci_run / "checkpoints" / "best.pt", "-i", tmp_path / "in.de", "-o", tmp_path / "out.en")
    by_file = (tmp_path / "out.en").read_text(encoding="utf-8").split("\n")
    assert by_args == by_stdin == by_file
    assert len(by_args) == 5 and by_args[1] == "" and by_args[-1] == ""  # 4 lines, the second empty
    assert all(by_args[i] for i in (0, 2, 3))


def test_greedy_option_and_n_best_format(ci_run, trained, multi30k):
    """--greedy wins over a beam size given with it: the model's greedy translations, which beam
    search changes for some sentences."""
    model, tokenizer = trained
    sources = list(multi30k.text["val"]["src"][:40])
    greedy = translate("-c", ci_run, "--greedy", "-b", "5", *sources).stdout.decode().splitlines()
    assert greedy == Translator(model, tokenizer, beam_size=1).translate(sources)
    assert greedy != translate("-c", ci_run, "-b", "5", *sources).stdout.decode().splitlines()
    rows = [line.split("\t") for line in translate("-c", ci_run, "-n", "3", *SENTENCES[:2]).stdout.decode().splitlines()]
    assert [r[0] for r in rows] == ["1", "1", "1", "2", "2", "2"]
    scores = [float(r[1]) for r in rows[:3]]
    assert scores == sorted(scores, reverse=True)


def test_attention_files_and_terminal_heatmap(ci_run, tmp_path):
    result = translate("-c", ci_run, "--attention", tmp_path / "maps", "--show-attention", SENTENCES[1], "", SENTENCES[3])
    names = sorted(p.name for p in (tmp_path / "maps").iterdir())
    expected = sorted(f"sentence{n}_{kind}_layer{layer}.png" for n in (1, 3)
                      for kind in ("encoder_self", "decoder_self", "cross") for layer in (1, 2))
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


def test_a_translation_is_one_line_whatever_its_pieces_decode_to(trained):
    """Byte-fallback pieces can spell a line break (<0x0A>), and text can hold U+2028: either
    would split one translation over two output lines."""
    model, tokenizer = trained
    piece = tokenizer.tgt.piece_to_id
    ids = [piece("▁A"), piece("<0x0A>"), piece("▁dog"), *tokenizer.encode_tgt(["\u2028cat\u0085"])[0]]
    assert "\n" in tokenizer.decode_tgt([ids])[0]  # what the pieces spell
    (text,) = Translator(model, tokenizer).decode([ids])
    assert len(text.splitlines()) == 1 and "dog" in text and "cat" in text


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


def corrupt_copies(ci_run, tmp_path):
    good = ci_run / "checkpoints" / "best.pt"
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:5000])
    not_checkpoint = tmp_path / "notes.txt"
    not_checkpoint.write_text("hello")
    other_torch = tmp_path / "tensor.pt"
    torch.save({"weights": torch.zeros(3)}, other_torch)
    future = tmp_path / "future.pt"
    checkpoint = load_checkpoint(good)
    checkpoint["version"] = 99
    torch.save(checkpoint, future)
    mismatched = tmp_path / "mismatched.pt"  # e.g. written by a version with another weight layout
    checkpoint = load_checkpoint(good)
    del checkpoint["model"]["decoder.final_norm.bias"]
    torch.save(checkpoint, mismatched)
    return truncated, not_checkpoint, other_torch, future, mismatched


@pytest.mark.parametrize("case, message", [
    ("missing", "error: checkpoint {tmp}/nope.pt does not exist"),
    ("truncated", "is not a readable minitrans checkpoint"),
    ("not_checkpoint", "is not a readable minitrans checkpoint"),
    ("other_torch", "tensor.pt is not a minitrans checkpoint"),
    ("future", "future.pt has checkpoint format version 99; this minitrans reads versions 2-3"),
    ("mismatched", "mismatched.pt: its weights do not fit the model (missing decoder.final_norm.bias)"),
    ("non_utf8_stdin", "error: standard input is not valid UTF-8 (line 2, byte 8 of the line)"),
    ("non_utf8_file", "bad.de is not valid UTF-8 (line 2, byte 8 of the line)"),
    ("missing_input", "error: cannot read {tmp}/absent.de: No such file or directory"),
    ("beam_zero", "error: argument -b/--beam-size: must be at least 1, not 0 (see --help)"),
    ("nbest_over_beam", "error: --n-best 4 is larger than the beam size 2"),
    ("bad_device", "error: --device 'gpu0' is not a device"),
    ("no_checkpoint_arg", "error: the following arguments are required: -c/--checkpoint"),
    ("args_and_file", "error: give sentences as arguments or with -i FILE, not both"),
    ("output_in_missing_folder", "error: cannot write {tmp}/no/such/out.en: No such file or directory"),
    ("output_is_a_folder", "error: cannot write {tmp}: Is a directory"),
    ("mask_heads_format", "error: argument --mask-heads: 'cross:1' is not KIND:LAYER:HEAD, e.g. cross:2:1 (see --help)"),
    ("mask_heads_range", "error: --mask-heads: cross has layers 1-2, not 9"),
])
def test_errors_are_one_line_without_traceback(ci_run, tmp_path, case, message):
    truncated, not_checkpoint, other_torch, future, mismatched = corrupt_copies(ci_run, tmp_path)
    (tmp_path / "bad.de").write_bytes(b"gut\nkaputt \xff\n")
    stdin = None
    args = {
        "missing": ["-c", tmp_path / "nope.pt", "x"],
        "truncated": ["-c", truncated, "x"],
        "not_checkpoint": ["-c", not_checkpoint, "x"],
        "other_torch": ["-c", other_torch, "x"],
        "future": ["-c", future, "x"],
        "mismatched": ["-c", mismatched, "x"],
        "non_utf8_stdin": ["-c", ci_run],
        "non_utf8_file": ["-c", ci_run, "-i", tmp_path / "bad.de"],
        "missing_input": ["-c", ci_run, "-i", tmp_path / "absent.de"],
        "beam_zero": ["-c", ci_run, "-b", "0", "x"],
        "nbest_over_beam": ["-c", ci_run, "-b", "2", "-n", "4", "x"],
        "bad_device": ["-c", ci_run, "--device", "gpu0", "x"],
        "no_checkpoint_arg": ["x"],
        "args_and_file": ["-c", ci_run, "-i", tmp_path / "bad.de", "x"],
        "output_in_missing_folder": ["-c", ci_run, "-o", tmp_path / "no" / "such" / "out.en", "x"],
        "output_is_a_folder": ["-c", ci_run, "-o", tmp_path, "x"],
        "mask_heads_format": ["-c", ci_run, "--mask-heads", "cross:1", "x"],
        "mask_heads_range": ["-c", ci_run, "--mask-heads", "cross:2:1,cross:9:1", "x"],
    }[case]
    if case == "non_utf8_stdin":
        stdin = b"gut\nkaputt \xff\n"
    result = translate(*args, stdin=stdin, check=False)
    stderr = result.stderr.decode()
    assert result.returncode != 0
    assert "Traceback" not in stderr
    assert message.format(tmp=tmp_path) in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


def test_overlong_sentence_is_truncated_with_a_warning(ci_run):
    long_sentence = " ".join(["Hund"] * 400)  # far over max_len 256 pieces
    result = translate("-c", ci_run, "--greedy", long_sentence, SENTENCES[0])
    assert result.returncode == 0
    assert "warning: 1 sentence(s) longer than the model's 256 pieces were truncated" in result.stderr.decode()
    assert len(result.stdout.decode().splitlines()) == 2


def test_evaluation_helpers_give_back_training_mode(trained, multi30k):
    """The training loop relies on this: evaluating mid-run must not switch dropout off."""
    from torch.utils.data import DataLoader

    from data import TokenBucketSampler, collate
    from training.validation import validation_loss
    from inference.attention import collect_attention

    model, tokenizer = trained
    model.train()
    translator = Translator(model, tokenizer, beam_size=2)
    translator.translate(SENTENCES[:2])
    assert model.training
    collect_attention(model, tokenizer, SENTENCES[:2], translator.translate_ids(translator.source_ids(SENTENCES[:2])))
    assert model.training
    text = multi30k.text["val"][:20]
    val = [{"src_ids": s, "tgt_ids": t}
           for s, t in zip(tokenizer.encode_src(text["src"]), tokenizer.encode_tgt(text["tgt"]))]
    loader = DataLoader(val, collate_fn=collate, batch_sampler=TokenBucketSampler(
        [len(x["src_ids"]) for x in val], [len(x["tgt_ids"]) for x in val], 4096, shuffle=False))
    validation_loss(model, loader, torch.device("cpu"), lambda: torch.autocast("cpu", enabled=False))
    assert model.training
    model.eval()


def test_a_terminal_gets_each_translation_as_its_line_is_entered(ci_run):
    """Through a pty, as a person types: the first translation arrives before input ends."""
    import os
    import pty
    import select

    controller, terminal = pty.openpty()
    process = start_script(command("translate.py", "-c", ci_run, "--greedy"), stdin=terminal,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
