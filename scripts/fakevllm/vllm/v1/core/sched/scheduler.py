"""A one-request-at-a-time scheduler: prefill a request, then decode it until
it reaches max_tokens, then the next request. Keeps the run's statistics."""
from collections import deque
from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class Request:
    req_id: str
    prompt_token_ids: List[int]
    max_tokens: int
    output_token_ids: List[int] = field(default_factory=list)
    draft_token_ids: List[int] = field(default_factory=list)
    num_prefills: int = 0
    num_decode_steps: int = 0

    @property
    def num_remaining(self) -> int:
        return self.max_tokens - len(self.output_token_ids)


@dataclass
class SchedulerOutput:
    req_id: str
    is_prefill: bool
    input_token_ids: List[int]
    num_context_reqs: int
    num_context_tokens: int
    num_generation_reqs: int
    num_generation_tokens: int
    num_scheduled_draft_tokens: int


@dataclass
class SchedulerStats:
    prefill_steps: int = 0
    decode_steps: int = 0
    completion_tokens: int = 0
    accepted_draft_tokens: int = 0      # accepted draft tokens that were emitted
    accepted_draft_tokens_raw: int = 0  # accepted by the rejection sampler, before max_tokens truncation
    scheduled_draft_tokens: int = 0
    step_names: dict = field(default_factory=dict)


class Scheduler:
    def __init__(self, requests: List[Request], num_speculative_tokens: int = 0):
        self.waiting = deque(requests)
        self.running: Optional[Request] = None
        self.finished: List[Request] = []
        self.num_spec_tokens = num_speculative_tokens
        self.stats = SchedulerStats()

    def has_requests(self) -> bool:
        return self.running is not None or bool(self.waiting)

    def schedule(self) -> SchedulerOutput:
        if self.running is None:
            req = self.waiting.popleft()
            self.running = req
            n = len(req.prompt_token_ids)
            return SchedulerOutput(req.req_id, True, list(req.prompt_token_ids), 1, n, 0, 0, 0)
        req = self.running
        drafts = list(req.draft_token_ids[: self.num_spec_tokens])
        tokens = [req.output_token_ids[-1]] + drafts
        return SchedulerOutput(req.req_id, False, tokens, 0, 0, 1, len(tokens), len(drafts))

    def update_from_output(self, so: SchedulerOutput, out) -> None:
        req = self.running
        assert req is not None and req.req_id == so.req_id == out.req_id
        name = (f"execute_context_{so.num_context_reqs}({so.num_context_tokens})"
                f"_generation_{so.num_generation_reqs}({so.num_generation_tokens})")
        self.stats.step_names[name] = self.stats.step_names.get(name, 0) + 1
        sampled = list(out.sampled_token_ids)
        emitted = sampled[: req.num_remaining]
        req.output_token_ids.extend(emitted)
        self.stats.completion_tokens += len(emitted)
        if so.is_prefill:
            self.stats.prefill_steps += 1
            req.num_prefills += 1
        else:
            self.stats.decode_steps += 1
            req.num_decode_steps += 1
            self.stats.scheduled_draft_tokens += so.num_scheduled_draft_tokens
            self.stats.accepted_draft_tokens_raw += len(sampled) - 1
            self.stats.accepted_draft_tokens += len(emitted) - 1
        req.draft_token_ids = list(out.draft_token_ids or [])
        if req.num_remaining <= 0:
            self.finished.append(req)
            self.running = None
