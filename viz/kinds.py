"""The three kinds of attention: names, titles and axes, for every figure, stored file and the
ATTENTION tab (whose page gets them from plugin.py's /runs).

    encoder_self   source pieces attending to source pieces
    decoder_self   the piece being produced attending to the decoder input so far (causal)
    cross          the piece being produced attending to the source pieces (the alignment)

The names are model.AttentionMaps's fields (tests/test_attention_store.py checks): written out
here because TensorBoard's process imports viz without the model, or torch.
"""

KINDS = ("encoder_self", "decoder_self", "cross")
TITLES = {
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder masked self-attention",
    "cross": "cross-attention",
}


def axis_labels(
    kind: str, src_pieces: list[str], tgt_in_pieces: list[str], tgt_out_pieces: list[str]
) -> tuple[list[str], list[str]]:
    """(row labels, column labels) of a map of this kind: rows are queries, columns keys;
    decoder rows are the pieces produced at that position."""
    if kind == "encoder_self":
        return src_pieces, src_pieces
    if kind == "decoder_self":
        return tgt_out_pieces, tgt_in_pieces
    return tgt_out_pieces, src_pieces


def visible_keys(kind: str, query: int, keys: int) -> list[bool]:
    """Which of a map's `keys` (trimmed to real pieces: none is padding) the mask lets query
    row `query` see: in the decoder's self-attention itself and what came before, else all."""
    return [kind != "decoder_self" or key <= query for key in range(keys)]
