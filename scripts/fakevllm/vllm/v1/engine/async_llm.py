"""CPU-only frontend stand-in (AsyncLLM): tokenize, queue, detokenize. Used for
the small *.async_llm.*.pt.trace.json.gz frontend trace; no GPU work."""
import asyncio
import hashlib

import torch


class AsyncLLM:
    def __init__(self, vocab_size: int = 8192):
        self.vocab_size = vocab_size
        self.output_queue: asyncio.Queue = asyncio.Queue()

    def _tokenize(self, prompt: str) -> list:
        return [int(hashlib.md5(w.encode()).hexdigest()[:6], 16) % self.vocab_size for w in prompt.split()]

    def _detokenize(self, token_ids: list) -> str:
        return " ".join(f"t{t}" for t in token_ids)

    async def generate(self, prompt: str, request_id: str, max_tokens: int) -> str:
        prompt_ids = self._tokenize(prompt)
        ids = torch.tensor(prompt_ids, dtype=torch.int64)
        out = []
        for i in range(max_tokens):
            await asyncio.sleep(0)
            out.append(int((ids.sum() + i) % self.vocab_size))
        text = self._detokenize(out)
        await self.output_queue.put((request_id, text))
        return text

    async def output_handler(self, n: int) -> list:
        results = []
        for _ in range(n):
            results.append(await self.output_queue.get())
        return results
