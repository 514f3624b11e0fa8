"""Model configuration: shape, regularisation, and the special token ids it is told."""

from dataclasses import asdict, dataclass


@dataclass
class TransformerConfig:
    """Shape and regularisation of an encoder-decoder Transformer.

    Plain dataclass on purpose: the model never sees Hydra or OmegaConf, so it can be built
    from a checkpoint, a test or a notebook alike.
    """

    src_vocab_size: int = 8000
    tgt_vocab_size: int = 8000
    # The one-hour CPU recipe's shape (conf/model/compact.yaml): Wu et al. 2021's text-only
    # Transformer-Tiny, 4+4 layers, d_model 128, d_ff 256, 4 heads; ~2.4M parameters with a
    # joint 8000-piece vocabulary. Small and regularised: on ~30k pairs it trains ~40 epochs
    # in an hour on 2 cores without overfitting. Wu et al. train it for 8k steps with dropout
    # 0.3; at the ~5,300 steps of our hour, 0.2 validated better (docs/recipe_search.md).
    d_model: int = 128
    n_heads: int = 4
    n_encoder_layers: int = 4
    n_decoder_layers: int = 4
    d_ff: int = 256
    dropout: float = 0.2  # residual and embedding dropout
    attention_dropout: float = 0.1  # dropout on the attention weights
    activation: str = "relu"  # "relu" or "gelu"
    norm_first: bool = True  # pre-norm trains stably without a long warmup
    positional: str = "sinusoidal"  # or "learned"
    max_len: int = 256  # longest sequence (in pieces, bos/eos included) the model accepts
    share_embeddings: bool = True  # one embedding for source and target (joint vocabulary)
    tie_output: bool = True  # output projection reuses the target embedding matrix
    # The plain computation where a fast one stands in for it: the loss as F.cross_entropy
    # (not model/output_loss.py's fused one), dropout as F.dropout (not model/dropout.py's bit
    # masks), and in beam search each hypothesis with its own copy of the source in cross-
    # attention (not the hypotheses of a sentence sharing one) and one top-k over every beam and
    # token (not model/search.py's two rounds). The loss equal to rounding and the same
    # translations, slower; dropout the same keep rate and scale from other random bits (docs/
    # guide.md, section 12; tests/test_plain_and_fast.py and tests/test_search.py prove each pair,
    # bench/plain_and_fast.py times them).
    plain: bool = False
    # Special ids: the tokenizer decides them and training copies them in (these defaults
    # are SentencePiece's ids as data/ trains it, for models built by hand in tests).
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        sizes = (
            "src_vocab_size",
            "tgt_vocab_size",
            "d_model",
            "n_heads",
            "n_encoder_layers",
            "n_decoder_layers",
            "d_ff",
            "max_len",
        )
        for name in sizes:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                "share_embeddings needs one joint vocabulary, but src_vocab_size "
                f"{self.src_vocab_size} != tgt_vocab_size {self.tgt_vocab_size}"
            )
        if not (0.0 <= self.dropout < 1.0 and 0.0 <= self.attention_dropout < 1.0):
            raise ValueError(
                f"dropout and attention_dropout must be in [0, 1), not {self.dropout} and {self.attention_dropout}"
            )
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', not {self.activation!r}")
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', not {self.positional!r}")

    def to_dict(self) -> dict:
        return asdict(self)
