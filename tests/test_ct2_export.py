"""export.py and the ctranslate2 engine: the exported model computes what ours does, translates
as ours does, through translate.py and the Python API; bad inputs are one line."""

import json
import os
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from data.batching import pad
from helpers import SENTENCES, run_script, tiny_model, toy_sentences, unseen_sentences
from inference import load_translator
from inference.checkpoint import load_for_inference
from inference.contract import Translating
from inference.ct2_export import export_ctranslate2
from inference.ct2_translator import CTranslate2Translator
from inference.search_config import SearchConfig
from inference.translator import Translator
from utils.errors import UserError

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_ct2_export")

ctranslate2 = pytest.importorskip("ctranslate2", reason="ctranslate2 is not installed (requirements.txt has it)")


def our_log_probs(model, src: list[int], tgt: list[int]) -> torch.Tensor:
    """(T + 1,) log P(tgt_t | tgt_<t, src) of each target piece and the closing </s>, teacher-forced."""
    cfg = model.cfg
    with torch.no_grad():
        logits = model(pad([src]), pad([[cfg.bos_id, *tgt]])).logits[0]  # (T + 1, V)
    return F.log_softmax(logits.float(), dim=-1).gather(1, torch.tensor([*tgt, cfg.eos_id])[:, None])[:, 0]


@pytest.mark.parametrize(
    "variant",
    [
        {},  # the recipe's layout: pre-norm, ReLU, sinusoids, one shared embedding, tied output
        {
            "norm_first": False,
            "activation": "gelu",
            "positional": "learned",
            "share_embeddings": False,
            "tie_output": False,
        },
    ],
)
def test_the_export_computes_what_our_model_computes(toy, tmp_path, variant):
    """CTranslate2's scoring of target sentences (teacher-forced log-probabilities of every piece
    and </s>) equals ours for a model of random weights: every weight went where it belongs."""
    tokenizer = toy.tokenizer
    model = tiny_model(src_vocab_size=tokenizer.src_vocab_size, tgt_vocab_size=tokenizer.tgt_vocab_size, **variant)
    folder = export_ctranslate2(model, tokenizer, {"src_lang": "de", "tgt_lang": "en"}, tmp_path / "export", "float32")
    # one thread: CTranslate2 sets the OpenMP threads it shares with torch to its intra_threads
    # in the thread that builds it (by default every core), and a test leaves torch as it found
    # it (our translator sets them back itself: test_workers.py)
    engine = ctranslate2.Translator(str(folder), device="cpu", intra_threads=1)
    g = torch.Generator().manual_seed(1)
    pairs = [
        (torch.randint(4, 340, (s,), generator=g).tolist(), torch.randint(4, 340, (t,), generator=g).tolist())
        for s, t in ((3, 5), (9, 2), (12, 12), (1, 7))
    ]
    scored = engine.score_batch(
        [tokenizer.src_pieces(s) for s, _ in pairs], [tokenizer.tgt_pieces(t) for _, t in pairs]
    )
    for (src, tgt), result in zip(pairs, scored):
        theirs = torch.tensor(result.log_probs)
        assert theirs.shape == (len(tgt) + 1,)
        torch.testing.assert_close(theirs, our_log_probs(model, src, tgt), atol=2e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def exported(ci_run, tmp_path_factory):
    """The ci run's model exported twice, as a user does it: float32 and int8."""
    folder = tmp_path_factory.mktemp("exports")
    run_script("export.py", "-c", ci_run, folder / "float32")
    run_script("export.py", "-c", ci_run, folder / "int8", "--quantize", "int8")
    return folder


def test_greedy_and_beam_translations_match_ours(exported, trained):
    model, tokenizer = trained
    sources = toy_sentences()
    ours = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate(sources)
    theirs = CTranslate2Translator(exported / "float32", SearchConfig(beam_size=1)).translate(sources)
    assert sum(a == b for a, b in zip(ours, theirs)) >= 98  # float rounding may flip a near tie
    beam_ours = Translator(model, tokenizer, SearchConfig(beam_size=5)).translate_nbest(sources[:30], 2)
    beam_theirs = CTranslate2Translator(exported / "float32", SearchConfig(beam_size=5)).translate_nbest(
        sources[:30], 2
    )
    assert sum(a[0][0] == b[0][0] for a, b in zip(beam_ours, beam_theirs)) >= 28
    # int8 weights: close, not equal. Compared as the log-probabilities each engine gives the same
    # translations (ours), not as outputs: this tiny model's greedy outputs hang on near ties,
    # which int8's rounding tips one way or the other (on AVX2 without VNNI, CTranslate2's int8
    # products are coarser still: 0.06 nats a piece measured on an AMD EPYC Zen 3).
    ids = [tokenizer.encode_src([s])[0] for s in sources]
    outputs = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate_ids(ids)
    pieces = ([tokenizer.src_pieces(s) for s in ids], [tokenizer.tgt_pieces(t) for t in outputs])
    float32, int8 = (
        torch.tensor(
            [
                sum(r.log_probs) / len(r.log_probs)
                for r in ctranslate2.Translator(str(exported / name), intra_threads=1).score_batch(*pieces)
            ]
        )
        for name in ("float32", "int8")
    )  # (100,) mean log-probability of a piece
    assert 0 < (float32 - int8).abs().mean() < 0.15 and (float32 - int8).abs().max() < 0.6
    assert (exported / "int8" / "model.bin").stat().st_size < 0.5 * (exported / "float32" / "model.bin").stat().st_size


@pytest.mark.parametrize("beam_size", [1, 5])
def test_both_engines_suppress_a_sequence_alike(exported, trained, beam_size):
    """What the loop guard asks of an engine (inference/loop_guard.py): the same piece sequence
    suppressed in ours and in CTranslate2 (its suppress_sequences) gives the same translations,
    none holding it, and changes those that held it."""
    model, tokenizer = trained
    sources, search = toy_sentences()[:40], SearchConfig(beam_size=beam_size)
    ours, theirs = Translator(model, tokenizer, search), CTranslate2Translator(exported / "float32", search)
    before = [hyps[0][0] for hyps in ours._search(sources, 1, None)]
    pairs = Counter(tuple(pieces[i : i + 2]) for pieces in before for i in range(len(pieces) - 1))
    common = pairs.most_common(1)[0][0]  # the two pieces most translations hold
    held = [i for i, pieces in enumerate(before) if _holds(pieces, common)]
    assert len(held) >= 5
    mine = [hyps[0][0] for hyps in ours._search(sources, 1, None, [common])]
    yours = [hyps[0][0] for hyps in theirs._search(sources, 1, None, [common])]
    assert not any(_holds(pieces, common) for pieces in mine + yours)
    assert all(mine[i] != before[i] for i in held) and sum(a == b for a, b in zip(mine, yours)) >= 38


def _holds(pieces: list[str], sequence: tuple[str, ...]) -> bool:
    return any(tuple(pieces[i : i + len(sequence)]) == sequence for i in range(len(pieces)))


def test_the_export_has_a_model_card_and_the_tokenizer(exported, ci_run):
    manifest = json.loads((exported / "float32" / "minitrans.json").read_text())
    assert (manifest["src_lang"], manifest["tgt_lang"], manifest["quantization"]) == ("de", "en", "float32")
    assert all((exported / "float32" / name).is_file() for name in ("spm_src.model", "spm_tgt.model"))  # folded source
    card = (exported / "float32" / "README.md").read_text()
    assert "de→en" in card and manifest["commit"] in card and "export.py -c" in card
    assert f"| Multi30k task 1, split test_2016_flickr | {manifest['test']['test_2016_flickr']['bleu']:.2f} |" in card
    # the source's word forms (recasing, inference/casing.py), as the checkpoint has them
    forms = load_for_inference(ci_run)[1].src_forms
    assert "Hund" in forms and (exported / "float32" / "src_forms.txt").read_text().splitlines() == forms
    assert CTranslate2Translator(exported / "float32").tokenizer.src_forms == forms


def test_a_step_checkpoints_card_claims_no_scores_of_the_run(ci_run, tmp_path):
    """results.json scores the run's best.pt: an export of another checkpoint once carried them."""
    from utils.checkpoint_files import step_checkpoints

    step = step_checkpoints(ci_run / "checkpoints")[0]
    run_script("export.py", "-c", step, tmp_path / "step")
    assert json.loads((tmp_path / "step" / "minitrans.json").read_text())["test"] == {}
    card = (tmp_path / "step" / "README.md").read_text()
    assert "no test scores for this checkpoint" in card and "test_2016_flickr" not in card


@pytest.mark.parametrize(
    "data, says",
    [
        ({"source": "hf", "name": "wmt16", "subset": "de-en", "train": "train"}, "Hugging Face dataset wmt16 (de-en)"),
        ({"source": "files", "train": "/corpus/train"}, "files corpus /corpus/train"),
        ({}, "Multi30k task 1"),  # a checkpoint from before sources had a name
    ],
)
def test_the_card_names_the_dataset_not_a_split(data, says):
    from inference.ct2_export import _data_description

    meta = {"config": json.dumps({"data": {"src_lang": "de", "tgt_lang": "en", **data}})}  # YAML reads JSON
    assert _data_description(meta) == (says, "de→en")


def test_translate_py_through_the_export_keeps_its_contract(exported, tmp_path):
    lines = [SENTENCES[0], "", SENTENCES[1]]
    out = run_script("translate.py", "-c", exported / "float32", "--greedy", input="\n".join(lines) + "\n").stdout
    rows = out.split("\n")
    assert len(rows) == 4 and rows[1] == "" and rows[0] and rows[2]
    assert rows[:3] == CTranslate2Translator(exported / "float32", SearchConfig(beam_size=1)).translate(lines)
    nbest = run_script("translate.py", "-c", exported / "float32", "-n", "2", SENTENCES[0]).stdout.splitlines()
    assert [row.split("\t")[0] for row in nbest] == ["1", "1"]
    assert float(nbest[0].split("\t")[1]) >= float(nbest[1].split("\t")[1])
    int8 = run_script("translate.py", "-c", exported / "float32", "--compute-type", "int8", SENTENCES[0]).stdout
    assert int8.strip()


def test_the_python_api(ci_run, exported, trained):
    model, tokenizer = trained
    translator = load_translator(ci_run, beam_size=2)
    ours = Translator(model, tokenizer, SearchConfig(beam_size=2))
    assert translator.translate(SENTENCES[:2]) == ours.translate(SENTENCES[:2])
    ((first, second),) = translator.translate_nbest(SENTENCES[:1], 2)
    assert first[1] >= second[1] and first[0] != second[0]
    attention = translator.attention([SENTENCES[0], ""])
    assert attention[1] is None and set(attention[0].maps) == {"encoder_self", "decoder_self", "cross"}
    rows = attention[0].maps["cross"][-1].sum(-1)  # (H, T): each query's weights over the source
    torch.testing.assert_close(rows, torch.ones_like(rows))
    via_export = load_translator(exported / "float32", beam_size=1)
    assert isinstance(via_export, CTranslate2Translator) and isinstance(via_export, Translating)  # one interface
    assert via_export.translate(SENTENCES[:2]) == CTranslate2Translator(
        exported / "float32", SearchConfig(beam_size=1)
    ).translate(SENTENCES[:2])
    with pytest.raises(UserError, match="is a CTranslate2 export"):
        load_translator(exported / "float32", engine="minitrans")
    with pytest.raises(UserError, match="is not a minitrans CTranslate2 export"):
        load_translator(ci_run, engine="ctranslate2")


def test_an_earlier_export_is_replaced_only_by_a_whole_new_one(ci_run, exported, tmp_path, monkeypatch):
    """--force replaces an earlier export; if the new one cannot be moved in, the earlier one is put
    back as it was (bad inputs of export.py: test_bad_input.py)."""
    import inference.ct2_export
    import utils.files

    before = {p.name: p.read_bytes() for p in (exported / "float32").iterdir()}
    model, tokenizer = load_translator(ci_run).model, load_translator(ci_run).tokenizer
    rename = os.rename

    def failing_rename(source, target):  # the new export's move into place fails, after the old one's out
        if Path(target) == exported / "float32" and str(source).endswith(".tmp"):
            raise OSError(28, "No space left on device")
        rename(source, target)

    monkeypatch.setattr(utils.files.os, "rename", failing_rename)
    with pytest.raises(UserError, match="cannot write .*float32: No space left on device"):
        inference.ct2_export.export_ctranslate2(model, tokenizer, {}, exported / "float32", "float32", force=True)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in (exported / "float32").iterdir()} == before
    assert sorted(p.name for p in exported.iterdir()) == ["float32", "int8"]  # nothing left beside it
    again = run_script("export.py", "-c", ci_run, exported / "float32", "--force").stdout  # an export is replaced
    assert "wrote" in again and (exported / "float32" / "model.bin").is_file()
    assert not [p for p in exported.iterdir() if p.name.startswith(".")]  # no staging folder left


@pytest.mark.parametrize("beam_size", [1, 4])
def test_batches_decoded_side_by_side_translate_as_one_worker(exported, beam_size):
    """Two workers each decoding whole batches (the default on two cores): the same translations
    and scores as one worker, in the input's order, across many batches of unequal lengths (each
    batch is decoded on one thread either way). Two threads on each batch split its sums, which
    then round otherwise: where the model is sure (the toy sentences) the same words and scores
    equal to rounding; where it is unsure a near-tie may fall the other way, so those are not
    compared."""
    known = toy_sentences() + SENTENCES
    sources = unseen_sentences(100) + known
    search = SearchConfig(beam_size=beam_size, batch_size=8)
    one = CTranslate2Translator(exported / "float32", search, threads=1).translate_nbest(sources, 1)
    assert CTranslate2Translator(exported / "float32", search, threads=2).translate_nbest(sources, 1) == one
    shared = CTranslate2Translator(exported / "float32", search, threads=2, threads_per_batch=2)
    sure, sure_alone = shared.translate_nbest(known, 1), one[-len(known) :]
    assert [hyps[0][0] for hyps in sure] == [hyps[0][0] for hyps in sure_alone]
    assert [hyps[0][1] for hyps in sure] == pytest.approx([hyps[0][1] for hyps in sure_alone], abs=1e-4)


def test_n_best_near_the_length_limit_scores_the_text_returned(toy_run, tmp_path):
    """An under-trained model's hypotheses run to the length limit, which depends on the source's
    length, while CTranslate2 takes one limit a batch: each sentence's n best (texts and scores),
    decoded in one batch of 40 sentences of unequal lengths, are those it gets alone."""
    run_script("export.py", "-c", toy_run, tmp_path / "export")
    search = SearchConfig(beam_size=3, batch_size=40, max_len_ratio=1.0, max_len_extra=2)
    translator = CTranslate2Translator(tmp_path / "export", search, threads=1)
    sentences = toy_sentences()[:40]
    together = translator.translate_nbest(sentences, 3)
    alone = [translator.translate_nbest([sentence], 3)[0] for sentence in sentences]
    assert [[text for text, _ in hyps] for hyps in together] == [[text for text, _ in hyps] for hyps in alone]
    scores = [score for hyps in together for _, score in hyps]
    assert scores == pytest.approx([score for hyps in alone for _, score in hyps], abs=1e-5)
