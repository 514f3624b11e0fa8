"""The output layer and its label-smoothed cross-entropy: plainly (`plain_output_cross_entropy`,
PyTorch's own operations, what the model computes with its `plain` setting), and as one autograd
function that computes the same faster (`output_cross_entropy`, the default).

For each target position the model's last state h goes through the output projection,
z = h W^T (one score per vocabulary piece), and training minimises

    loss = sum over positions of  -sum_j q_j log softmax(z)_j,   q = (1 - eps) onehot(y) + eps / V

(label smoothing eps spreads eps of each target's probability evenly over the V pieces).

Why not `F.cross_entropy(h @ W^T, y, label_smoothing=eps)`: the (positions x V) matrices are
the largest tensors of a training step (4,096 x 8,000 floats = 131 MB), and every pass over
them is a trip to main memory. Written as separate ops, the loss's backward alone fills one
with zeros, scatters into it, adds two of them and runs log_softmax's backward over two more.
Here the gradient comes straight from its closed form,

    d loss / d z = softmax(z) - q,

whose uniform part eps / V is rank one and is applied to the small (positions x d_model)
and (V x d_model) results instead of the big matrix: one in-place exp and the two matmuls
are all the backward does with it. Padded positions are left out by the caller, so they cost
nothing at all.

R-Drop (Liang et al. 2021) passes every batch through the model twice, each pass with its own
dropout masks, and also penalises the two passes for disagreeing: with p and p' the two
passes' next-token distributions at a position, and alpha the consistency weight,

    loss = sum over positions of  (CE(p) + CE(p')) / 2  +  alpha / 4 (KL(p || p') + KL(p' || p))

(the paper's CE + CE' + alpha/2 (KL + KL'), halved so that the loss per token stays on the
scale of one pass's). Its gradient has a closed form too: with D = log p - log p',

    d (KL(p || p') + KL(p' || p)) / d z = p (D - KL(p || p') + 1) - p'

and the same with the two passes exchanged for z'.
"""

import torch
import torch.nn.functional as F
from torch import Tensor


def plain_output_cross_entropy(
    states: Tensor, weight: Tensor, targets: Tensor, label_smoothing: float = 0.0, consistency: float = 0.0
) -> Tensor:
    """The loss as written above, in PyTorch's own operations: what `output_cross_entropy`
    computes faster (arguments and value as there)."""
    logits = states @ weight.t()  # (N, V) z = h W^T; bf16 under bf16 autocast
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # the loss in at least fp32
    cross_entropy = F.cross_entropy(logits, targets, label_smoothing=label_smoothing, reduction="sum")
    if consistency == 0.0:
        return cross_entropy
    # R-Drop: the first half of the positions is the first pass, the second half the second
    first, second = F.log_softmax(logits, dim=-1).chunk(2)  # log p, log p': 2 x (N/2, V)
    # F.kl_div(log q, log p, log_target=True) is KL(p || q)
    kl_first = F.kl_div(second, first, reduction="sum", log_target=True)  # KL(p || p')
    kl_second = F.kl_div(first, second, reduction="sum", log_target=True)  # KL(p' || p)
    return cross_entropy / 2 + consistency / 4 * (kl_first + kl_second)


class _OutputCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx, states: Tensor, weight: Tensor, targets: Tensor, label_smoothing: float, consistency: float
    ) -> Tensor:
        logits = states @ weight.t()  # (N, V); bf16 under bf16 autocast
        ctx.matmul_dtype = logits.dtype
        # (N, V), at least fp32 whatever the matmul's precision
        log_probs = torch.log_softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))
        del logits
        nll = -log_probs.gather(1, targets[:, None]).sum()  # -log p(target), summed
        uniform = -log_probs.sum() / weight.size(0)  # -(1/V) sum_j log p_j, summed
        loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
        ctx.label_smoothing, ctx.consistency = label_smoothing, consistency
        if consistency == 0.0:
            ctx.save_for_backward(states, weight, targets, log_probs)
            return loss
        # R-Drop: the first half of the positions is the first pass, the second half the second
        first, second = log_probs.chunk(2)  # 2 x (N/2, V)
        difference = first - second  # D = log p - log p'
        kl_first = (first.exp() * difference).sum(1)  # (N/2,) KL(p || p')
        kl_second = -(second.exp() * difference).sum(1)  # (N/2,) KL(p' || p)
        ctx.save_for_backward(states, weight, targets, log_probs, difference, kl_first, kl_second)
        return loss / 2 + consistency / 4 * (kl_first + kl_second).sum()

    @staticmethod
    def backward(ctx, grad_loss: Tensor) -> tuple[Tensor, Tensor, None, None, None]:
        states, weight, targets, log_probs, *agreement = ctx.saved_tensors
        eps, vocab_size, dtype = ctx.label_smoothing, weight.size(0), ctx.matmul_dtype
        # softmax(z) - (1 - eps) onehot(y), overwriting the saved log-probabilities: they are
        # not needed again (so this backward can run once per forward, as training does)
        grad_logits = log_probs.exp_()  # (N, V)
        if agreement:  # R-Drop: the agreement term's gradient, from the probabilities both passes gave
            difference, kl_first, kl_second = agreement
            first, second = grad_logits.chunk(2)
            grad_first = (difference - kl_first[:, None] + 1.0) * first - second  # d/dz of KL + KL'
            grad_second = (1.0 - difference - kl_second[:, None]) * second - first  # the same for z' (D' = -D)
            grad_agreement = torch.cat([grad_first, grad_second]) * (2 * ctx.consistency / 4)
        grad_logits[torch.arange(targets.numel(), device=targets.device), targets] -= 1.0 - eps
        if agreement:  # the loss is half of the two cross-entropies: the agreement term is doubled
            grad_logits += grad_agreement  # to match, and everything halved below
            grad_loss = grad_loss / 2
        grad_logits = grad_logits.to(dtype)  # the forward matmul's precision
        # 1. through z = h W^T, then 2. the uniform part -eps / V of q, rank one
        grad_states = (grad_logits @ weight.to(dtype)).to(states.dtype)  # (N, d_model)
        grad_states -= (eps / vocab_size) * weight.sum(0).to(states.dtype)
        grad_weight = (grad_logits.t() @ states.to(dtype)).to(weight.dtype)  # (V, d_model)
        grad_weight -= (eps / vocab_size) * states.sum(0).to(weight.dtype)
        return grad_states * grad_loss, grad_weight * grad_loss, None, None, None


def output_cross_entropy(
    states: Tensor, weight: Tensor, targets: Tensor, label_smoothing: float = 0.0, consistency: float = 0.0
) -> Tensor:
    """Summed label-smoothed cross-entropy of the scores `states @ weight.T` against `targets`.

    Equal to `F.cross_entropy(states @ weight.T, targets, label_smoothing=label_smoothing,
    reduction="sum")` in value and gradient, without holding the scores or their gradient
    twice (see the module docstring). The backward pass can be taken once.

    Args:
        states: (N, d_model) the final states of the positions that have a target.
        weight: (V, d_model) the output projection (the tied embedding, by default).
        targets: (N,) target ids.
        consistency: R-Drop's alpha (module docstring); above 0, the second half of the N
            positions is a second pass over the first half's targets, and the loss is the mean
            of the two passes' cross-entropies plus alpha / 4 times their symmetric KL divergence.
    """
    return _OutputCrossEntropy.apply(states, weight, targets, label_smoothing, consistency)
