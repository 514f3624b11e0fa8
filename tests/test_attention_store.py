"""The attention files behind the ATTENTION tab: what is written is what is read, atomically,
and only folders with attention are runs."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from model import AttentionMaps, AttentionSteps
from viz.attention_store import INSIDE, find_runs, in_memory, read_step, step_path, steps, write_step
from viz.kinds import KINDS


def fake_attention(source: str, s: int, t: int, layers: int = 2, heads: int = 3, seed: int = 0) -> SimpleNamespace:
    """A sentence's maps as inference.attention.collect_attention returns them: softmax rows, causal decoder."""
    generator = torch.Generator().manual_seed(seed)

    def maps(t_q: int, t_k: int, causal: bool = False) -> list[torch.Tensor]:
        scores = torch.randn(layers, heads, t_q, t_k, generator=generator)
        if causal:
            scores = scores.masked_fill(torch.ones(t_q, t_k).triu(1).bool(), float("-inf"))
        return list(scores.softmax(-1))

    return SimpleNamespace(
        source=source,
        translation="a dog .",
        reference=None,
        src_pieces=[f"▁s{i}" for i in range(s)],
        tgt_in_pieces=["<s>", *[f"▁t{i}" for i in range(t - 1)]],
        tgt_out_pieces=[*[f"▁t{i}" for i in range(t - 1)], "</s>"],
        maps={"encoder_self": maps(s, s), "decoder_self": maps(t, t, causal=True), "cross": maps(t, s)},
        inside={},
    )  # as from a version before the values inside were kept


def test_the_kinds_and_values_inside_are_the_models_in_its_order():
    """viz/ writes them out (TensorBoard's process has no torch); they must not drift."""
    assert KINDS == AttentionMaps._fields
    assert INSIDE == AttentionSteps._fields


def test_stored_queries_and_keys_give_the_stored_weights(ci_run):
    """At every evaluation of the ci run, for every probe, kind, layer and head: softmax(q·k /
    sqrt(d_k)) of the stored float16 queries and keys, under the causal mask for the decoder, is
    the stored weights, the stored head outputs are the weights times the stored values, and
    the stored layer output (test below) the heads concatenated and projected by W_O."""
    for step in steps(ci_run):
        stored = read_step(ci_run, step)
        for probe in range(len(stored.sentences)):
            assert stored.has_inside(probe)
            for kind in KINDS:
                for layer, weights in enumerate(stored.weights(probe, kind)):  # (H, T_q, T_k)
                    inside = stored.inside(probe, kind, layer)
                    q, k, v = inside["query"], inside["key"], inside["value"]  # (H, T, d_head)
                    assert q.shape[:2] == weights.shape[:2] and k.shape[1] == weights.shape[2]
                    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (H, T_q, T_k)
                    if kind == "decoder_self":
                        scores = np.where(np.tri(*scores.shape[1:], dtype=bool), scores, -np.inf)
                    softmax = np.exp(scores - scores.max(-1, keepdims=True))
                    softmax /= softmax.sum(-1, keepdims=True)
                    # float16 keeps 3 significant digits of q and k: scores of a few units move
                    # by a few thousandths, and the weights as much
                    np.testing.assert_allclose(softmax, weights, atol=1e-2)
                    assert np.abs(softmax - weights).mean() < 1e-3
                    np.testing.assert_allclose(weights @ v, inside["heads"], atol=2e-2, rtol=1e-2)


def test_a_sentence_in_memory_reads_as_from_a_file_and_its_output_is_the_heads_through_w_o(tmp_path, trained):
    from inference.attention import collect_attention

    model, tokenizer = trained
    [attention] = collect_attention(model, tokenizer, ["Ein Hund rennt."], [[5, 6, 7]], inside=True)
    write_step(tmp_path, 0, [attention])
    written, kept = read_step(tmp_path, 0), in_memory([attention])
    assert kept.sentences == written.sentences and kept.has_inside(0)
    [maps_only] = collect_attention(model, tokenizer, ["Ein Hund rennt."], [[5, 6, 7]])  # what translate.py draws
    assert maps_only.inside == {} and not in_memory([maps_only]).has_inside(0)
    for kind, modules in model.attention_modules().items():
        for a, b in zip(kept.weights(0, kind), written.weights(0, kind)):
            np.testing.assert_array_equal(a, b)
        for layer, module in enumerate(modules):
            inside = kept.inside(0, kind, layer)
            for name in INSIDE:
                np.testing.assert_array_equal(inside[name], written.inside(0, kind, layer)[name])
            merged = torch.from_numpy(inside["heads"]).transpose(0, 1).flatten(1)  # (T_q, H * d_head)
            with torch.no_grad():
                np.testing.assert_allclose(module.out_proj(merged).numpy(), inside["output"], atol=2e-2, rtol=1e-2)


def test_written_weights_and_sentences_are_read_back(tmp_path):
    sentences = [
        fake_attention("Ein Hund.", s=4, t=5, seed=1),
        fake_attention("Zwei Männer im Park.", s=9, t=7, seed=2),
    ]
    path = write_step(tmp_path, 80, sentences)
    assert path == step_path(tmp_path, 80) and path.name == "step_00000080.npz"
    stored = read_step(tmp_path, 80)
    for probe, sentence in enumerate(sentences):
        meta = stored.sentences[probe]
        assert meta["source"] == sentence.source and meta["reference"] is None
        assert meta["layers"] == {kind: 2 for kind in KINDS} and meta["heads"] == {kind: 3 for kind in KINDS}
        for kind in KINDS:
            read = stored.weights(probe, kind)
            assert len(read) == 2
            for written, back in zip(sentence.maps[kind], read):
                assert back.shape == tuple(written.shape)  # trimmed lengths kept, nothing padded
                # float16: 3 significant digits, the rows still sum to one
                np.testing.assert_allclose(back, written.numpy(), atol=5e-4)
                np.testing.assert_allclose(back.sum(-1), 1.0, atol=3e-3)
        rows, cols = stored.axis_labels(probe, "decoder_self")
        assert rows == sentence.tgt_out_pieces and cols == sentence.tgt_in_pieces
        assert stored.axis_labels(probe, "cross") == (sentence.tgt_out_pieces, sentence.src_pieces)
        assert stored.axis_labels(probe, "encoder_self") == (sentence.src_pieces, sentence.src_pieces)
    assert stored.weights(0, "decoder_self")[0][:, 0, 1:].max() == 0  # the causal zeros survive


def test_steps_are_numeric_and_ignore_partial_files(tmp_path):
    for step in (1000, 80, 0):
        write_step(tmp_path, step, [fake_attention("x", 2, 2)])
    (tmp_path / "attention" / "step_00002000.npz.partial").write_bytes(b"half a file")  # a write in progress
    assert steps(tmp_path) == [0, 80, 1000]
    assert steps(tmp_path / "nowhere") == []
    with pytest.raises(FileNotFoundError):
        read_step(tmp_path, 2000)


def test_runs_are_the_folders_with_attention_by_relative_name(tmp_path):
    write_step(tmp_path / "de-en" / "a", 0, [fake_attention("x", 2, 2)])
    write_step(tmp_path / "b", 80, [fake_attention("x", 2, 2)])
    (tmp_path / "empty" / "attention").mkdir(parents=True)  # started, nothing written yet: not a run
    (tmp_path / "scalars_only").mkdir()
    runs = find_runs(tmp_path)
    assert list(runs) == ["b", "de-en/a"]
    assert runs["de-en/a"] == tmp_path / "de-en" / "a"
    write_step(tmp_path, 0, [fake_attention("x", 2, 2)])
    assert list(find_runs(tmp_path)) == [".", "b", "de-en/a"]  # the logdir itself, as TensorBoard names it
    assert find_runs(Path(tmp_path / "scalars_only")) == {}
