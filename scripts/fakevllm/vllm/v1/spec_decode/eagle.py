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


class CapturedGraphsEagleProposer(EagleProposer):
    """Drafter for ``gen_graph_traces.py``: one FULL draft-step graph per size in
    ``cudagraph_capture_sizes`` (batch = number of requests), captured largest first, each
    capture profiled as the ``speculator`` subsystem when ``capture_dir`` is given. propose()
    replays the graph of the smallest captured size >= the number of requests (1 here) once per
    draft token."""

    def __init__(self, draft_model, num_speculative_tokens: int, cudagraph_capture_sizes=(1, 2, 4)):
        super().__init__(draft_model, num_speculative_tokens)
        self.cudagraph_capture_sizes = sorted(cudagraph_capture_sizes)
        self.cudagraphs = {}
        self.graph_outputs = {}
        self.graph_replays = {}

    def _draft_step_tokens(self, input_ids: torch.Tensor, hidden_states: torch.Tensor):
        hidden_states = self.model(input_ids, hidden_states)
        return hidden_states, self.model.compute_logits(hidden_states).argmax(dim=-1)

    @torch.inference_mode()
    def capture_model(self, device, hidden_size: int, dtype, capture_dir=None) -> None:
        from vllm.profiler.graph_capture import graph_capture_profiler, graph_capture_step

        max_bs = max(self.cudagraph_capture_sizes)
        self.input_ids = torch.zeros(max_bs, dtype=torch.int64, device=device)
        self.hidden_states = torch.zeros(max_bs, hidden_size, dtype=dtype, device=device)
        with graph_capture_profiler(capture_dir, "speculator", label_prefix="speculator_"):
            for bs in reversed(self.cudagraph_capture_sizes):
                side = torch.cuda.Stream(device=device)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        self._draft_step_tokens(self.input_ids[:bs], self.hidden_states[:bs])
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with graph_capture_step(bs, "FULL"):
                    with torch.cuda.graph(graph):
                        outputs = self._draft_step_tokens(self.input_ids[:bs], self.hidden_states[:bs])
                self.cudagraphs[bs] = graph
                self.graph_outputs[bs] = outputs
        torch.cuda.synchronize()

    def propose(self, target_hidden_states: torch.Tensor, next_token_ids: torch.Tensor) -> torch.Tensor:
        """target_hidden_states: [r, hidden]; next_token_ids: [r]. Returns [r, num_speculative_tokens]."""
        self.num_calls += 1
        r = next_token_ids.shape[0]
        bs = next(b for b in self.cudagraph_capture_sizes if b >= r)
        self.input_ids[:r].copy_(next_token_ids)
        self.hidden_states[:r].copy_(target_hidden_states)
        out_hidden_states, out_token_ids = self.graph_outputs[bs]
        draft_token_ids = []
        for i in range(self.num_speculative_tokens):
            self.cudagraphs[bs].replay()
            self.graph_replays[bs] = self.graph_replays.get(bs, 0) + 1
            draft_token_ids.append(out_token_ids[:r].clone())
            if i + 1 < self.num_speculative_tokens:
                self.input_ids[:r].copy_(out_token_ids[:r])
                self.hidden_states[:r].copy_(out_hidden_states[:r])
        return torch.stack(draft_token_ids, dim=1)
