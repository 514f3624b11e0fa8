"""The tiny model must actually learn: reversing random token sequences."""

import torch
import torch.nn.functional as F

from model import Transformer, TransformerConfig
from model.search import greedy_search

_IDS = TransformerConfig()  # the model is told its special ids; these are the defaults
PAD_ID, BOS_ID, EOS_ID = _IDS.pad_id, _IDS.bos_id, _IDS.eos_id

VOCAB, FIRST_SYMBOL = 16, 4  # ids 0-3 are pad/unk/bos/eos


def reversal_batch(batch, generator, min_len=4, max_len=9):
    """Random sequences of random length (padded) and their reversals as decoder in/out."""
    lengths = torch.randint(min_len, max_len + 1, (batch,), generator=generator)
    src = torch.full((batch, max_len), PAD_ID)
    tgt_in = torch.full((batch, max_len + 1), PAD_ID)
    tgt_out = torch.full((batch, max_len + 1), PAD_ID)
    for i, n in enumerate(lengths.tolist()):
        seq = torch.randint(FIRST_SYMBOL, VOCAB, (n,), generator=generator)
        src[i, :n] = seq
        tgt_in[i, 0], tgt_in[i, 1 : n + 1] = BOS_ID, seq.flip(0)
        tgt_out[i, :n], tgt_out[i, n] = seq.flip(0), EOS_ID
    return src, tgt_in, tgt_out


def test_tiny_model_learns_to_reverse_sequences():
    torch.manual_seed(0)
    cfg = TransformerConfig(
        src_vocab_size=VOCAB,
        tgt_vocab_size=VOCAB,
        d_model=64,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=128,
        dropout=0.0,
        attention_dropout=0.0,
        max_len=16,
    )
    model = Transformer(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 200))
    train_gen = torch.Generator().manual_seed(1)
    steps = 800
    for _ in range(steps):
        src, tgt_in, tgt_out = reversal_batch(64, train_gen)
        logits = model(src, tgt_in).logits
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()

    model.eval()
    src, _, tgt_out = reversal_batch(500, torch.Generator().manual_seed(12345))  # held out
    hyps = [h.tokens for h in greedy_search(model, src, max_len=12)]
    correct = total = 0
    for hyp, ref in zip(hyps, tgt_out.tolist()):
        ref = ref[: ref.index(EOS_ID)]
        total += len(ref)
        correct += sum(h == r for h, r in zip(hyp, ref))  # autoregressive, position by position
    assert correct / total >= 0.99, f"token accuracy {correct / total:.3f} after {steps} steps"
