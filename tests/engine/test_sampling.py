import pytest
import torch

from lantern_studio.engine.sampling import DistributionError, SamplingParams, guided_logits, kth_largest, probs_from_logits


def reference_probs(logits, params):
    """The transform as written out in the module docstring: guidance, temperature, top-k, softmax."""
    x = guided_logits(logits.float(), params.cfg_scale) / max(params.temperature, 1e-5)
    if 0 < params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    return x.softmax(-1)


@pytest.mark.parametrize("shape", [(1, 64), (25, 64), (1, 25, 64), (2, 3, 7)])
def test_kth_largest_is_topks_kth_value_ties_included(shape):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g)
    x[..., :4] = x[..., 4:5]  # ties
    for k in (1, 2, 5, shape[-1] - 1, shape[-1]):
        want = torch.topk(x, k, dim=-1).values[..., -1:]
        got = kth_largest(x, k)
        assert got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want)
    xb = x.bfloat16()  # no numpy kernel for bf16: the torch path
    assert torch.equal(kth_largest(xb, 3), torch.topk(xb, 3, dim=-1).values[..., -1:])


@pytest.mark.parametrize("cfg, temperature, top_k", [(1.0, 1.0, 0), (4.0, 0.9, 10), (1.0, 0.7, 5), (2.5, 1.3, 0)])
def test_probs_from_logits_gives_the_reference_numbers_bit_for_bit(cfg, temperature, top_k):
    params = SamplingParams(cfg_scale=cfg, temperature=temperature, top_k=top_k)
    logits = torch.randn(2, 25, 64, generator=torch.Generator().manual_seed(1)) * 3
    before = logits.clone()
    p = probs_from_logits(logits, params)
    assert torch.equal(p, reference_probs(logits, params))
    assert torch.equal(logits, before)  # the caller's logits are left alone (the transform works in its own copy)


def test_non_finite_logits_are_refused():
    logits = torch.zeros(2, 1, 8)
    logits[0, 0, 3] = float("nan")
    with pytest.raises(DistributionError):
        probs_from_logits(logits, SamplingParams(cfg_scale=4.0, top_k=4))
    with pytest.raises(DistributionError):
        probs_from_logits(torch.full((1, 8), float("inf")), SamplingParams())
