"""EAGLE/MTP-style drafter: one draft-model step per speculative token, each a
replay of a CUDA graph captured for a single token (as vLLM does for decode)."""
import torch


class EagleProposer:
    def __init__(self, draft_model, num_speculative_tokens: int):
        self.model = draft_model
        self.num_speculative_tokens = num_speculative_tokens
        self.num_calls = 0
        self.cudagraph = None

    @torch.inference_mode()
    def capture_model(self, device, hidden_size: int, dtype) -> None:
        self.input_ids = torch.zeros(1, dtype=torch.int64, device=device)
        self.hidden_states = torch.zeros(1, hidden_size, dtype=dtype, device=device)
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self._draft_step()
        torch.cuda.current_stream().wait_stream(side)
        self.cudagraph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.cudagraph):
            self._draft_step()
        torch.cuda.synchronize()

    def _draft_step(self) -> None:
        hidden_states = self.model(self.input_ids, self.hidden_states)
        logits = self.model.compute_logits(hidden_states)
        self.out_hidden_states = hidden_states
        self.out_token_ids = logits.argmax(dim=-1)

    def propose(self, target_hidden_states: torch.Tensor, next_token_ids: torch.Tensor) -> torch.Tensor:
        """target_hidden_states: [1, hidden]; next_token_ids: [1]. Returns [1, num_speculative_tokens]."""
        self.num_calls += 1
        self.input_ids.copy_(next_token_ids)
        self.hidden_states.copy_(target_hidden_states)
        draft_token_ids = []
        for i in range(self.num_speculative_tokens):
            self.cudagraph.replay()
            draft_token_ids.append(self.out_token_ids.clone())
            if i + 1 < self.num_speculative_tokens:
                self.input_ids.copy_(self.out_token_ids)
                self.hidden_states.copy_(self.out_hidden_states)
        return torch.stack(draft_token_ids, dim=1)


class CompiledEagleProposer(EagleProposer):
    """Drafter for ``gen_sample_traces.py --compile`` (--compile-cudagraph inductor):
    each draft step is a call of torch.compile(mode="reduce-overhead"), i.e. a
    replay by Inductor's CUDA graph trees inside ``## Call CompiledFxGraph ##``,
    instead of a torch.cuda.CUDAGraph replay."""

    def __init__(self, draft_model, num_speculative_tokens: int):
        super().__init__(draft_model, num_speculative_tokens)
        self.compiled_step = torch.compile(self._forward, mode="reduce-overhead", dynamic=False)

    def _forward(self, input_ids: torch.Tensor, hidden_states: torch.Tensor):
        hidden_states = self.model(input_ids, hidden_states)
        return hidden_states, self.model.compute_logits(hidden_states).argmax(dim=-1)

    @torch.inference_mode()
    def capture_model(self, device, hidden_size: int, dtype) -> None:
        self.input_ids = torch.zeros(1, dtype=torch.int64, device=device)
        self.hidden_states = torch.zeros(1, hidden_size, dtype=dtype, device=device)
        for _ in range(3):  # compile + eager warm-up, record, replay
            torch.compiler.cudagraph_mark_step_begin()
            self.compiled_step(self.input_ids, self.hidden_states)
        torch.cuda.synchronize()

    def propose(self, target_hidden_states: torch.Tensor, next_token_ids: torch.Tensor) -> torch.Tensor:
        """target_hidden_states: [1, hidden]; next_token_ids: [1]. Returns [1, num_speculative_tokens]."""
        self.num_calls += 1
        self.input_ids.copy_(next_token_ids)
        self.hidden_states.copy_(target_hidden_states)
        draft_token_ids = []
        for i in range(self.num_speculative_tokens):
            torch.compiler.cudagraph_mark_step_begin()
            hidden_states, token_ids = self.compiled_step(self.input_ids, self.hidden_states)
            draft_token_ids.append(token_ids.clone())
            if i + 1 < self.num_speculative_tokens:
                self.input_ids.copy_(token_ids)
                self.hidden_states.copy_(hidden_states)
        return torch.stack(draft_token_ids, dim=1)
