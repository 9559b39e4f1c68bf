"""Stand-in for vllm/profiler/graph_capture.py (vLLM PRs #37524 and #54061), used only by
scripts/gen_graph_traces.py.

vLLM with ``--profiler-config.capture_torch_profiler_dir DIR`` profiles each CUDA-graph capture
with torch.profiler and writes one trace per captured shape into DIR (``capture_traces/`` beside
the worker traces), the capture inside a ``capture_<num_tokens>_<MODE>`` record_function.
#54061 binds one profiler per capture subsystem (encoder, decoder, speculator), each with its own
trace file name and annotation prefix. Where vLLM's exact names for the speculator were not found,
this stand-in uses: worker name ``graph_capture_rank_<r>`` and annotation ``capture_<bs>_<MODE>``
for the decoder (as in the TraceLens vLLM example), ``graph_capture_speculator_rank_<r>`` and
``speculator_capture_<bs>_<MODE>`` for the speculator. ``execution_details.json`` lists
``file``, ``batch_size``, ``mode`` (TraceLens's fields) and ``subsystem`` (added here).
"""
import contextlib
import contextvars
import json
import os

from torch.profiler import ProfilerActivity, profile, record_function, tensorboard_trace_handler

_ACTIVE = contextvars.ContextVar("graph_capture_profiler", default=None)


class GraphCaptureProfiler:
    def __init__(self, out_dir: str, subsystem: str, label_prefix: str, rank: int = 0):
        self.out_dir = out_dir
        self.subsystem = subsystem
        self.label_prefix = label_prefix
        self.worker_name = (f"graph_capture_rank_{rank}" if subsystem == "decoder"
                            else f"graph_capture_{subsystem}_rank_{rank}")
        self.entries = []

    @contextlib.contextmanager
    def step(self, num_tokens: int, mode: str):
        os.makedirs(self.out_dir, exist_ok=True)
        before = set(os.listdir(self.out_dir))
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            record_shapes=True,
            with_stack=True,
            on_trace_ready=tensorboard_trace_handler(self.out_dir, worker_name=self.worker_name, use_gzip=True),
        ):
            with record_function(f"{self.label_prefix}capture_{num_tokens}_{mode}"):
                yield
        new = sorted(set(os.listdir(self.out_dir)) - before)
        assert len(new) == 1, new
        self.entries.append({"file": new[0], "batch_size": num_tokens, "mode": mode,
                             "subsystem": self.subsystem})


def _write_execution_details(out_dir: str, entries: list) -> None:
    path = os.path.join(out_dir, "execution_details.json")
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    with open(path, "w") as f:
        json.dump(old + entries, f, indent=2)
        f.write("\n")


@contextlib.contextmanager
def graph_capture_profiler(out_dir, subsystem: str, label_prefix: str = ""):
    """Bind a capture profiler for one subsystem; a no-op when out_dir is None."""
    if out_dir is None:
        yield None
        return
    prof = GraphCaptureProfiler(out_dir, subsystem, label_prefix)
    token = _ACTIVE.set(prof)
    try:
        yield prof
    finally:
        _ACTIVE.reset(token)
        if prof.entries:
            _write_execution_details(out_dir, prof.entries)


def graph_capture_step(num_tokens: int, mode: str):
    """Profile one captured shape inside ``<prefix>capture_<num_tokens>_<mode>``; a no-op when not active."""
    prof = _ACTIVE.get()
    return prof.step(num_tokens, mode) if prof is not None else contextlib.nullcontext()
