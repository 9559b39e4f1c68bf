"""Greedy sampler (softmax + argmax on the GPU)."""
import torch
from torch import nn


class Sampler(nn.Module):
    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax(logits.float(), dim=-1)
        return probs.argmax(dim=-1)
