"""Rejection sampler for draft-token verification.

The GPU work is real (target probabilities, argmax, comparison with the draft
tokens), but since the toy models are untrained the number of accepted draft
tokens is simulated with a seeded RNG: position i is accepted with probability
``accept_prob`` given that all earlier positions were accepted.
"""
import random

import torch
from torch import nn


class RejectionSampler(nn.Module):
    def __init__(self, accept_prob: float = 0.8, seed: int = 0):
        super().__init__()
        self.reset(accept_prob, seed)

    def reset(self, accept_prob: float, seed: int) -> None:
        self.accept_prob = accept_prob
        self.rng = random.Random(seed)

    def forward(self, draft_token_ids: torch.Tensor, target_logits: torch.Tensor):
        # target_logits: [num_spec + 1, vocab]; draft_token_ids: [num_spec]
        target_probs = torch.softmax(target_logits.float(), dim=-1)
        target_argmax = target_probs.argmax(dim=-1)
        num_spec = draft_token_ids.shape[0]
        draft_probs = target_probs[:num_spec].gather(-1, draft_token_ids.view(-1, 1)).squeeze(-1)
        match = (target_argmax[:num_spec] == draft_token_ids) | (draft_probs > 0.5)
        match.cpu()  # the GPU->CPU sync where vLLM's sampler output becomes host data
        accepted = 0
        while accepted < num_spec and self.rng.random() < self.accept_prob:
            accepted += 1
        return target_argmax, accepted
