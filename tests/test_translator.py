"""Translating with a trained model (inference/translator.py, model/search.py on the ci run's
weights): search correctness, one line per translation, evaluation leaving the mode it found."""

import pytest
import torch

from data.batching import pad
from helpers import SENTENCES, toy_sentences, unseen_sentences
from inference import load_translator
from inference.checkpoint import load_for_inference
from inference.search_config import SearchConfig
from inference.translator import Translator
from inference.weight_layout import PackedLinear
from model.search import beam_search, greedy_search


@pytest.fixture(scope="module")
def test_sources(trained):
    _, tokenizer = trained
    return tokenizer.encode_src(toy_sentences()[:60] + unseen_sentences(60))


def batches(src_ids, size=40):
    for start in range(0, len(src_ids), size):
        yield pad(src_ids[start : start + size])


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
        logits = model(src[row : row + 1, : int((src[row] != 0).sum())], tgt).logits
        log_probs = logits.log_softmax(-1)[0]
        gold = torch.tensor([*hyp.tokens, 3])
        assert log_probs.gather(1, gold[:, None]).sum().item() == pytest.approx(hyp.log_prob, abs=1e-3)


def test_cached_decoding_gives_the_same_output_as_uncached(trained, test_sources):
    model, _ = trained
    src = pad(test_sources[:30])
    assert [h.tokens for h in greedy_search(model, src, 40)] == [
        h.tokens for h in greedy_search(model, src, 40, use_cache=False)
    ]
    cached = beam_search(model, src, beam_size=3, max_len=40, n_best=3)
    uncached = beam_search(model, src, beam_size=3, max_len=40, n_best=3, use_cache=False)
    assert [[h.tokens for h in hyps] for hyps in cached] == [[h.tokens for h in hyps] for hyps in uncached]


@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD"])
def test_weights_laid_out_for_decoding_translate_alike(ci_run, trained, test_sources, monkeypatch, vendor):
    """load_translator lays the weights out for the CPU's matrix library (inference/weight_layout.py),
    either way on any machine: on an Intel CPU each linear layer's weight transposed in memory,
    on an AMD CPU the output layer through oneDNN on a packed copy of its weight (another maker's
    keep the weights as saved). The same parameters,
    the embedding still tied, and the same hypotheses and scores as the model loaded as it was saved."""
    if vendor != "GenuineIntel" and not torch.backends.mkldnn.is_available():
        pytest.skip("this torch was built without oneDNN, which the packed output layer needs")
    monkeypatch.setattr("inference.weight_layout.cpuinfo", lambda field: vendor)
    model, _ = trained
    laid_out = load_translator(ci_run, beam_size=3).model
    weights = {name: p for name, p in laid_out.named_parameters() if name.endswith("weight") and p.dim() == 2}
    linear = [m.weight for m in laid_out.modules() if isinstance(m, torch.nn.Linear)]
    if vendor == "GenuineIntel":
        assert linear and all(w.stride() == (1, w.size(0)) for w in linear)
        assert not isinstance(laid_out.output_proj, PackedLinear)
    else:
        assert isinstance(laid_out.output_proj, PackedLinear)
        assert linear and all(w.is_contiguous() for w in linear)  # the others as saved
        states = torch.randn(7, 3, model.cfg.d_model)
        torch.testing.assert_close(laid_out.output_proj(states), model.output_proj(states), rtol=1e-5, atol=1e-5)
    assert laid_out.output_proj.weight is laid_out.tgt_embedding.weight
    for name, p in model.named_parameters():
        if name in weights:
            assert torch.equal(weights[name], p), name
    src = pad(test_sources[:30])
    ours = beam_search(laid_out, src, beam_size=3, max_len=40, n_best=3)
    saved = beam_search(model, src, beam_size=3, max_len=40, n_best=3)
    assert [[h.tokens for h in hyps] for hyps in ours] == [[h.tokens for h in hyps] for hyps in saved]
    # float32 sums: another product kernel may round a last bit otherwise
    scores = [[[h.score for h in hyps] for hyps in found] for found in (ours, saved)]
    torch.testing.assert_close(*scores, rtol=1e-5, atol=1e-5)
    if vendor != "GenuineIntel":  # a weight changed after packing: its product, not the stale copy's
        with torch.no_grad():
            laid_out.output_proj.weight.mul_(1.5)
        states = torch.randn(7, 3, model.cfg.d_model)
        expected = torch.nn.functional.linear(states, laid_out.output_proj.weight)
        torch.testing.assert_close(laid_out.output_proj(states), expected, rtol=1e-5, atol=1e-5)


def test_order_is_restored_after_length_sorting(trained):
    model, tokenizer = trained
    translator = Translator(model, tokenizer, SearchConfig(beam_size=3, batch_size=2))
    together = translator.translate(SENTENCES)
    one_by_one = [translator.translate([s])[0] for s in SENTENCES]
    assert together == one_by_one
    assert translator.translate(["", "   ", SENTENCES[0]]) == ["", "", one_by_one[0]]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_translation_does_not_depend_on_its_batch_mates(trained, beam_size):
    """Tight limits (0.3 x source pieces) bind; a long batch-mate must not loosen them."""
    model, tokenizer = trained
    translator = Translator(model, tokenizer, SearchConfig(beam_size=beam_size, max_len_ratio=0.3, max_len_extra=0))
    short, long = SENTENCES[1], " ".join([SENTENCES[2]] * 3)
    alone = translator.translate_ids(translator.source_ids([short]))[0]
    assert len(alone) == int(0.3 * len(translator.source_ids([short])[0]))  # the limit was reached
    batched = translator.translate_ids(translator.source_ids([short, long]))[0]
    assert batched == alone


def test_length_options_change_outputs_as_documented(ci_run):
    """Two sentences a line, for the ci run's model half-way through training (step 80): trained
    on one sentence a line, it is unsure whether to stop after the first, so that the length
    penalty has a choice to make."""
    model, tokenizer, _ = load_for_inference(ci_run / "checkpoints" / "step_0000080.pt")
    val = toy_sentences("val")
    sources = [f"{first} {second}" for first, second in zip(val[:30], val[30:60])]

    def lengths(**options) -> list[int]:
        translator = Translator(model, tokenizer, SearchConfig(beam_size=4, **options))
        return [len(ids) for ids in translator.translate_ids(translator.source_ids(sources))]

    capped = lengths(max_len_ratio=0.0, max_len_extra=3)
    assert max(capped) <= 3 and max(lengths()) > 3
    assert sum(lengths(length_penalty=0.0)) < sum(lengths(length_penalty=2.0))  # alpha 0 favours short outputs


def test_n_best_hypotheses_are_distinct(trained):
    model, tokenizer = trained
    translator = Translator(model, tokenizer, SearchConfig(beam_size=4))
    for hyps in translator.find(translator.source_ids(SENTENCES), n_best=4):
        assert len(hyps) == 4 and len({tuple(h.tokens) for h in hyps}) == 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_a_translation_is_one_line_whatever_its_pieces_decode_to(trained):
    """Byte-fallback pieces can spell a line break (<0x0A>), and text can hold U+2028: either
    would split one translation over two output lines."""
    model, tokenizer = trained
    piece = tokenizer.tgt.piece_to_id
    ids = [piece("▁A"), piece("<0x0A>"), piece("▁dog"), *tokenizer.encode_tgt(["\u2028cat\u0085"])[0]]
    assert "\n" in tokenizer.decode_tgt([ids])[0]  # what the pieces spell
    (text,) = Translator(model, tokenizer).decode([ids])
    assert len(text.splitlines()) == 1 and "dog" in text and "cat" in text


def test_evaluation_helpers_give_back_training_mode(trained, toy):
    """The training loop relies on this: evaluating mid-run must not switch dropout off."""
    from torch.utils.data import DataLoader

    from data import TokenBucketSampler, collate
    from inference.attention import collect_attention
    from inference.measure import teacher_forced_loss

    model, tokenizer = trained
    model.train()
    translator = Translator(model, tokenizer, SearchConfig(beam_size=2))
    translator.translate(SENTENCES[:2])
    assert model.training
    collect_attention(model, tokenizer, SENTENCES[:2], translator.translate_ids(translator.source_ids(SENTENCES[:2])))
    assert model.training
    text = toy.text["val"][:20]
    val = [
        {"src_ids": s, "tgt_ids": t}
        for s, t in zip(tokenizer.encode_src(text["src"]), tokenizer.encode_tgt(text["tgt"]))
    ]
    loader = DataLoader(
        val,
        collate_fn=collate,
        batch_sampler=TokenBucketSampler(
            [len(x["src_ids"]) for x in val], [len(x["tgt_ids"]) for x in val], 4096, shuffle=False
        ),
    )
    teacher_forced_loss(model, loader, torch.device("cpu"), lambda: torch.autocast("cpu", enabled=False))
    assert model.training
    model.eval()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_batches_decoded_by_worker_processes_translate_as_one_process(trained, beam_size):
    """Two worker processes each decoding whole batches (the CPU default on two cores): the same
    hypotheses and scores as this process alone, in the input's order, across many batches of
    unequal lengths (blank lines among them); the progress callback counts every sentence once."""
    model, tokenizer = trained
    sources = unseen_sentences(60) + ["", *toy_sentences()[:50], "  "] + SENTENCES
    search = SearchConfig(beam_size=beam_size, batch_size=8)
    alone = Translator(model, tokenizer, search).translate_nbest(sources, 2 if beam_size > 1 else 1)
    pooled = Translator(model, tokenizer, search, workers=2)
    counted: list[int] = []
    try:
        assert pooled.translate_nbest(sources, 2 if beam_size > 1 else 1, progress=counted.append) == alone
        assert pooled.workers is not None and pooled.workers.processes  # the workers did decode
        assert sum(counted) == len(sources) - 2 and len(counted) > 2  # one call a batch; blanks in none
        assert pooled.translate(SENTENCES[:1]) == [alone[len(sources) - len(SENTENCES)][0][0]]  # one batch: here
    finally:
        pooled.workers.close()


def test_without_fork_the_batches_stay_in_this_process(trained, monkeypatch):
    """Where the system cannot fork (Windows), asking for workers decodes here, alike."""
    import inference.translator

    model, tokenizer = trained
    monkeypatch.setattr(inference.translator, "can_fork", lambda: False)
    search = SearchConfig(beam_size=2, batch_size=4)
    translator = Translator(model, tokenizer, search, workers=2)
    assert translator.workers is None
    assert translator.translate(SENTENCES) == Translator(model, tokenizer, search).translate(SENTENCES)
