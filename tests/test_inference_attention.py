"""inference/attention.py: a translation's attention maps, cut from a padded batch to each
sentence's own pieces (the figures drawn from them: test_viz_attention.py)."""

import torch

from viz.kinds import KINDS, axis_labels


def test_weights_behind_the_figures(probe_maps):
    model, maps = probe_maps
    for att in maps:
        assert len(att.maps["cross"]) == model.cfg.n_decoder_layers
        for kind in KINDS:
            rows, cols = axis_labels(kind, att.src_pieces, att.tgt_in_pieces, att.tgt_out_pieces)
            for weights in att.maps[kind]:
                assert weights.shape == (model.cfg.n_heads, len(rows), len(cols))
                # rows still sum to 1 after padding columns were cut away, so the padding
                # positions of the padded batch got exactly zero weight
                torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
        for weights in att.maps["decoder_self"]:
            assert (weights.triu(diagonal=1) == 0).all(), "decoder self-attention must not look ahead"
    short = maps[0]
    assert short.src_pieces[-1] != "<pad>" and len(short.src_pieces) < len(maps[1].src_pieces)
    assert short.tgt_in_pieces[0] == "<s>" and short.tgt_out_pieces[-1] == "</s>"
