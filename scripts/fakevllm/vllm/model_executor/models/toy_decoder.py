"""Toy decoder-only target model and a one-layer EAGLE-style draft model.

No KV cache: attention is causal over the tokens of the current step only.
"""
import torch
import torch.nn.functional as F
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.input_layernorm = nn.LayerNorm(hidden)
        self.qkv_proj = nn.Linear(hidden, 3 * hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.post_attention_layernorm = nn.LayerNorm(hidden)
        self.up_proj = nn.Linear(hidden, 4 * hidden, bias=False)
        self.act_fn = nn.GELU(approximate="tanh")
        self.down_proj = nn.Linear(4 * hidden, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, h = x.shape
        qkv = self.qkv_proj(self.input_layernorm(x))
        q, k, v = qkv.view(1, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [1, heads, t, d]
        x = x + self.o_proj(attn.transpose(1, 2).reshape(t, h))
        x = x + self.down_proj(self.act_fn(self.up_proj(self.post_attention_layernorm(x))))
        return x


class ToyForCausalLM(nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int, heads: int):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden_states)


class ToyEagleDraftModel(nn.Module):
    """Draft head: fc(embed(token) ++ target hidden) -> one decoder layer; shares the target's embedding and lm_head."""

    def __init__(self, target: ToyForCausalLM, hidden: int, heads: int, layers: int = 1):
        super().__init__()
        self.embed_tokens = target.embed_tokens
        self.fc = nn.Linear(2 * hidden, hidden, bias=False)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.lm_head = target.lm_head

    def forward(self, input_ids: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        x = self.fc(torch.cat([self.embed_tokens(input_ids), hidden_states], dim=-1))
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden_states)
