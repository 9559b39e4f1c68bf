"""Model runner: input preparation, forward pass (CUDA graph for decode), logits,
then -- in a separate call, outside the step annotation -- sampling, rejection
sampling and drafting, as in vLLM V1's GPUModelRunner."""
from dataclasses import dataclass
from typing import Optional

import torch

from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.sample.sampler import Sampler


@dataclass
class ModelRunnerOutput:
    req_id: str
    sampled_token_ids: list
    draft_token_ids: Optional[list]


@dataclass
class ExecuteModelState:
    scheduler_output: object
    logits: torch.Tensor
    hidden_states: torch.Tensor


class GPUModelRunner:
    def __init__(self, model, device, drafter=None, num_speculative_tokens: int = 0,
                 max_num_tokens: int = 1024):
        self.model = model
        self.device = device
        self.drafter = drafter
        self.num_spec_tokens = num_speculative_tokens if drafter is not None else 0
        self.sampler = Sampler()
        self.rejection_sampler = RejectionSampler()
        # Pinned host buffer + device buffer; the H2D copy runs on a second stream.
        self.input_ids_cpu = torch.zeros(max_num_tokens, dtype=torch.int64, pin_memory=True)
        self.input_ids_np = self.input_ids_cpu.numpy()
        self.input_ids_gpu = torch.zeros(max_num_tokens, dtype=torch.int64, device=device)
        self.main_stream = torch.cuda.current_stream(device)
        self.copy_stream = torch.cuda.Stream(device=device)
        self.decode_num_tokens = 1 + self.num_spec_tokens
        self.cudagraph = None
        self.execute_model_state: Optional[ExecuteModelState] = None

    # ---- set-up (runs before profiling) ----
    @torch.inference_mode()
    def capture_model(self) -> None:
        n = self.decode_num_tokens
        self.static_input_ids = torch.zeros(n, dtype=torch.int64, device=self.device)
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.static_hidden_states = self.model(self.static_input_ids)
        torch.cuda.current_stream().wait_stream(side)
        self.cudagraph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.cudagraph):
            self.static_hidden_states = self.model(self.static_input_ids)
        torch.cuda.synchronize()
        if self.drafter is not None:
            p = next(self.model.parameters())
            self.drafter.capture_model(self.device, self.static_hidden_states.shape[-1], p.dtype)

    # ---- inside the step annotation ----
    def _prepare_inputs(self, scheduler_output) -> int:
        token_ids = scheduler_output.input_token_ids
        n = len(token_ids)
        self.input_ids_np[:n] = token_ids
        self.copy_stream.wait_stream(self.main_stream)
        with torch.cuda.stream(self.copy_stream):
            self.input_ids_gpu[:n].copy_(self.input_ids_cpu[:n], non_blocking=True)
        self.main_stream.wait_stream(self.copy_stream)
        return n

    @torch.inference_mode()
    def execute_model(self, scheduler_output) -> None:
        n = self._prepare_inputs(scheduler_output)
        if scheduler_output.is_prefill:
            # Prefill runs eagerly.
            hidden_states = self.model(self.input_ids_gpu[:n])
            sample_hidden = hidden_states[-1:]
        else:
            # Decode replays the captured CUDA graph.
            assert n == self.decode_num_tokens
            self.static_input_ids.copy_(self.input_ids_gpu[:n])
            self.cudagraph.replay()
            hidden_states = self.static_hidden_states
            sample_hidden = hidden_states
        logits = self.model.compute_logits(sample_hidden)
        self.execute_model_state = ExecuteModelState(scheduler_output, logits, hidden_states)
        return None

    # ---- after the step annotation ----
    @torch.inference_mode()
    def sample_tokens(self, grammar_output=None) -> ModelRunnerOutput:
        state = self.execute_model_state
        self.execute_model_state = None
        so = state.scheduler_output
        if so.is_prefill or self.num_spec_tokens == 0:
            sampled = self.sampler(state.logits)            # [1]
            valid_sampled_token_ids = sampled.tolist()     # GPU->CPU sync
            num_accepted = 0
            last_pos = state.hidden_states.shape[0] - 1
            next_token = sampled[-1:]
        else:
            draft_ids = self.input_ids_gpu[1:1 + self.num_spec_tokens]
            target_argmax, num_accepted = self.rejection_sampler(draft_ids, state.logits)
            valid_sampled_token_ids = target_argmax[:num_accepted + 1].tolist()
            last_pos = num_accepted
            next_token = target_argmax[num_accepted:num_accepted + 1]
        draft_token_ids = None
        if self.drafter is not None:
            draft_token_ids = self.propose_draft_token_ids(
                state.hidden_states[last_pos:last_pos + 1], next_token)
        return ModelRunnerOutput(so.req_id, valid_sampled_token_ids, draft_token_ids)

    def propose_draft_token_ids(self, target_hidden_states, next_token_ids) -> list:
        with torch.profiler.record_function("proposer.propose"):
            draft_token_ids = self.drafter.propose(target_hidden_states, next_token_ids)
        return draft_token_ids[0].tolist()


class CompiledGPUModelRunner(GPUModelRunner):
    """GPUModelRunner for ``gen_sample_traces.py --compile``.

    Forward pass and logits run through torch.compile: prefill in the default
    mode (Inductor's Triton kernels and extern cuBLAS/attention calls, launched
    one by one), decode with mode="reduce-overhead" (Inductor's CUDA graph trees
    record the graph during warm-up and replay it). Both run inside Inductor's
    ``## Call CompiledFxGraph <key> ##`` range, which torch 2.11 records as a
    cpu_op, not a user annotation, so it gets no gpu_user_annotation.

    custom_scopes=True adds vLLM's VLLM_CUSTOM_SCOPES_FOR_PROFILING ranges
    (``record_function_or_nullcontext``): ``gpu_model_runner: preprocess`` around
    the H2D input copy and ``gpu_model_runner: forward`` around the forward pass.
    Then no GPU work is launched while the step annotation itself is the
    innermost user range, and Kineto gives the step annotation no
    gpu_user_annotation.
    """

    def __init__(self, model, device, drafter=None, num_speculative_tokens: int = 0,
                 max_num_tokens: int = 1024, custom_scopes: bool = True):
        super().__init__(model, device, drafter, num_speculative_tokens, max_num_tokens)
        self.custom_scopes = custom_scopes
        self.compiled_prefill = torch.compile(self._prefill_forward, dynamic=False)
        self.compiled_decode = torch.compile(self._decode_forward, mode="reduce-overhead", dynamic=False)

    def _prefill_forward(self, input_ids: torch.Tensor):
        hidden_states = self.model(input_ids)
        return hidden_states, self.model.compute_logits(hidden_states[-1:])

    def _decode_forward(self, input_ids: torch.Tensor):
        hidden_states = self.model(input_ids)
        return hidden_states, self.model.compute_logits(hidden_states)

    def record_function_or_nullcontext(self, name: str):
        import contextlib  # (imported here so that the lines above keep their numbers)

        return torch.profiler.record_function(name) if self.custom_scopes else contextlib.nullcontext()

    # ---- set-up (runs before profiling) ----
    @torch.inference_mode()
    def capture_model(self) -> None:
        # CUDA graph trees: the first call compiles and runs eagerly, the second
        # records the graph, later calls replay it. Each call begins a new
        # "step", so the previous call's outputs may be overwritten; every
        # caller reads them before the next compiled call.
        n = self.decode_num_tokens
        for _ in range(3):
            torch.compiler.cudagraph_mark_step_begin()
            self.compiled_decode(self.input_ids_gpu[:n])
        torch.cuda.synchronize()
        if self.drafter is not None:
            p = next(self.model.parameters())
            self.drafter.capture_model(self.device, self.model.lm_head.in_features, p.dtype)

    # ---- inside the step annotation ----
    @torch.inference_mode()
    def execute_model(self, scheduler_output) -> None:
        with self.record_function_or_nullcontext("gpu_model_runner: preprocess"):
            n = self._prepare_inputs(scheduler_output)
        with self.record_function_or_nullcontext("gpu_model_runner: forward"):
            if scheduler_output.is_prefill:
                hidden_states, logits = self.compiled_prefill(self.input_ids_gpu[:n])
            else:
                assert n == self.decode_num_tokens
                torch.compiler.cudagraph_mark_step_begin()
                hidden_states, logits = self.compiled_decode(self.input_ids_gpu[:n])
        self.execute_model_state = ExecuteModelState(scheduler_output, logits, hidden_states)
        return None


class CapturedGraphsGPUModelRunner(GPUModelRunner):
    """GPUModelRunner for ``gen_graph_traces.py``: one FULL CUDA graph per size in
    ``cudagraph_capture_sizes`` (as vLLM's ``cudagraph_capture_sizes``), captured largest first,
    each capture profiled when ``capture_dir`` is given (vllm/profiler/graph_capture.py). A decode
    step of n tokens replays the graph of the smallest captured size >= n; the padding slots at
    the end are left as they are (causal attention: the real tokens never see them)."""

    def __init__(self, model, device, drafter=None, num_speculative_tokens: int = 0,
                 max_num_tokens: int = 1024, cudagraph_capture_sizes=(1, 2, 4)):
        super().__init__(model, device, drafter, num_speculative_tokens, max_num_tokens)
        self.cudagraph_capture_sizes = sorted(cudagraph_capture_sizes)
        self.cudagraphs = {}
        self.graph_outputs = {}
        self.graph_replays = {}

    def padded_batch_size(self, num_tokens: int) -> int:
        return next(bs for bs in self.cudagraph_capture_sizes if bs >= num_tokens)

    @torch.inference_mode()
    def capture_model(self, capture_dir=None) -> None:
        from vllm.profiler.graph_capture import graph_capture_profiler, graph_capture_step

        assert self.decode_num_tokens <= max(self.cudagraph_capture_sizes)
        self.static_input_ids = torch.zeros(max(self.cudagraph_capture_sizes), dtype=torch.int64,
                                            device=self.device)
        with graph_capture_profiler(capture_dir, "decoder"):
            for bs in reversed(self.cudagraph_capture_sizes):
                input_ids = self.static_input_ids[:bs]
                side = torch.cuda.Stream(device=self.device)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        self.model(input_ids)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with graph_capture_step(bs, "FULL"):
                    with torch.cuda.graph(graph):
                        hidden_states = self.model(input_ids)
                self.cudagraphs[bs] = graph
                self.graph_outputs[bs] = hidden_states
        torch.cuda.synchronize()
        if self.drafter is not None:
            p = next(self.model.parameters())
            self.drafter.capture_model(self.device, self.model.lm_head.in_features, p.dtype,
                                       capture_dir=capture_dir)

    @torch.inference_mode()
    def execute_model(self, scheduler_output) -> None:
        n = self._prepare_inputs(scheduler_output)
        if scheduler_output.is_prefill:
            hidden_states = self.model(self.input_ids_gpu[:n])
            sample_hidden = hidden_states[-1:]
        else:
            bs = self.padded_batch_size(n)
            self.static_input_ids[:n].copy_(self.input_ids_gpu[:n])
            self.cudagraphs[bs].replay()
            self.graph_replays[bs] = self.graph_replays.get(bs, 0) + 1
            hidden_states = self.graph_outputs[bs][:n]
            sample_hidden = hidden_states
        logits = self.model.compute_logits(sample_hidden)
        self.execute_model_state = ExecuteModelState(scheduler_output, logits, hidden_states)
        return None
