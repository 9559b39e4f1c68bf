#!/usr/bin/env python3
"""Record CUDA-graph capture traces beside shapes-recorded worker traces (issues 57 and 58).

The toy engine of gen_sample_traces.py (same model, seed, workloads, scheduler and acceptance
simulation; its own code is imported, not changed), with two differences:

* graphs: the target decoder is captured as one FULL CUDA graph per batch size in
  ``--capture-sizes`` (vLLM's ``cudagraph_capture_sizes``), and in MTP the drafter too, as the
  ``speculator``. Each capture is profiled on its own, as vLLM does with
  ``--profiler-config.capture_torch_profiler_dir``: torch.profiler(record_shapes=True,
  with_stack=True) around a ``capture_<bs>_FULL`` (decoder) or ``speculator_capture_<bs>_FULL``
  record_function holding the ``torch.cuda.graph`` capture, one trace file per capture in
  ``<run>/capture_traces/`` with an ``execution_details.json`` (vllm/profiler/graph_capture.py
  in scripts/fakevllm). A decode step of n tokens replays the smallest captured size >= n
  (AR: 1 token -> bs 1; MTP with 2 draft tokens: 3 tokens -> bs 4, padded); the drafter
  replays its bs-1 graph (one request) once per draft token.
* the served run is profiled with record_shapes=True as well as with_stack=True.

Captures happen before any warm-up request, as in vLLM's start-up; the served run is profiled
after warm-up. Usage (on a CUDA GPU, torch only):

    python3 scripts/gen_graph_traces.py --out sample_traces --seed 1234
    python3 scripts/check_graph_traces.py tests/data/cuda_graphs
"""
import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_sample_traces as gst  # noqa: E402  (puts scripts/fakevllm on sys.path, imports torch)
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler  # noqa: E402

from vllm.model_executor.models.toy_decoder import ToyEagleDraftModel, ToyForCausalLM  # noqa: E402
from vllm.v1.core.sched.scheduler import Request  # noqa: E402
from vllm.v1.spec_decode.eagle import CapturedGraphsEagleProposer  # noqa: E402
from vllm.v1.worker.gpu_model_runner import CapturedGraphsGPUModelRunner  # noqa: E402


def build(device, seed, out_dir, workload, modes, sizes):
    torch.manual_seed(seed)
    cfg = gst.MODEL_CFG
    dtype = getattr(torch, cfg["dtype"])
    target = ToyForCausalLM(cfg["vocab"], cfg["hidden"], cfg["layers"], cfg["heads"]).to(device=device, dtype=dtype)
    target = target.eval()
    draft = ToyEagleDraftModel(target, cfg["hidden"], cfg["heads"], cfg["draft_layers"]).to(device=device, dtype=dtype)
    draft = draft.eval()
    runners = {}
    for mode in modes:
        if mode == "ar":
            runner = CapturedGraphsGPUModelRunner(target, device, cudagraph_capture_sizes=sizes)
        else:
            proposer = CapturedGraphsEagleProposer(draft, gst.NUM_SPEC_TOKENS, cudagraph_capture_sizes=sizes)
            runner = CapturedGraphsGPUModelRunner(target, device, proposer, gst.NUM_SPEC_TOKENS,
                                                  cudagraph_capture_sizes=sizes)
        capture_dir = os.path.join(out_dir, f"{workload}_graphs_{mode}", "capture_traces")
        t0 = time.perf_counter()
        runner.capture_model(capture_dir=capture_dir)
        print(f"{mode}: captured sizes {sizes} in {time.perf_counter() - t0:.2f}s -> {capture_dir}", flush=True)
        runners[mode] = runner
    # Warm-up after capture (not profiled): a full request in each mode.
    for mode, runner in runners.items():
        runner.rejection_sampler.reset(0.8, seed)
        warm = [Request(f"warmup-{mode}-{i}", list(range(1, 33 + 16 * i)), 6) for i in range(2)]
        gst.serve(runner, warm, runner.num_spec_tokens)
    torch.cuda.synchronize()
    return runners


def run(runner, workload, mode, out_dir, seed, num_requests, sizes):
    cfg = gst.WORKLOADS[workload]
    run_dir = os.path.join(out_dir, f"{workload}_graphs_{mode}")
    os.makedirs(run_dir, exist_ok=True)
    before = set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")))
    num_spec = gst.NUM_SPEC_TOKENS if mode == "mtp" else 0
    runner.rejection_sampler.reset(cfg["accept_prob"], f"{seed}-{workload}-acceptance")
    runner.graph_replays = {}
    if runner.drafter is not None:
        runner.drafter.num_calls = 0
        runner.drafter.graph_replays = {}
    requests = gst.make_requests(workload, seed, gst.MODEL_CFG["vocab"])[:num_requests]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        with_stack=True,
        record_shapes=True,
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name=gst.WORKER_NAME, use_gzip=True),
    ):
        scheduler = gst.serve(runner, requests, num_spec)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    new = sorted(set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz"))) - before)
    assert len(new) == 1, new
    trace_path = new[0]
    with open(os.path.join(run_dir, "capture_traces", "execution_details.json")) as f:
        details = json.load(f)
    st = scheduler.stats
    summary = {
        "mode": mode,
        "workload": f"{workload}_graphs",  # its own workload: batch compares it with its own AR, never with the eager-captured samples
        "completion_tokens": st.completion_tokens,
        "num_requests": len(requests),
        "num_speculative_tokens": num_spec,
        "decode_steps": st.decode_steps,
        "prefill_steps": st.prefill_steps,
        "accepted_draft_tokens": st.accepted_draft_tokens,
        "accepted_draft_tokens_before_max_tokens_cut": st.accepted_draft_tokens_raw,
        "scheduled_draft_tokens": st.scheduled_draft_tokens,
        "draft_proposals": runner.drafter.num_calls if runner.drafter is not None else 0,
        "draft_tokens_proposed": (runner.drafter.num_calls * num_spec) if runner.drafter is not None else 0,
        "acceptance_prob_per_position": cfg["accept_prob"] if mode == "mtp" else None,
        "completion_tokens_per_decode_context": round(st.completion_tokens / st.decode_steps, 4),
        "prompt_lens": [len(r.prompt_token_ids) for r in requests],
        "output_lens": [len(r.output_token_ids) for r in scheduler.finished],
        "step_annotations": dict(sorted(st.step_names.items())),
        "seed": seed,
        "device": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "model": gst.MODEL_CFG,
        "record_shapes": True,
        "with_stack": True,
        "cuda_graph_mode": "FULL",
        "cudagraph_capture_sizes": list(sizes),
        "decode_graph_batch_size": runner.padded_batch_size(runner.decode_num_tokens),
        "decoder_graph_replays": {str(k): v for k, v in sorted(runner.graph_replays.items())},
        "speculator_graph_replays": ({str(k): v for k, v in sorted(runner.drafter.graph_replays.items())}
                                     if runner.drafter is not None else {}),
        "capture_traces": details,
        "profiled_wall_s": round(wall, 4),
        "worker_trace": os.path.basename(trace_path),
        "generator": "scripts/gen_graph_traces.py",
    }
    assert st.completion_tokens == sum(cfg["output_lens"][:num_requests])
    assert st.completion_tokens == st.prefill_steps + st.decode_steps + st.accepted_draft_tokens
    with open(trace_path[: -len(".pt.trace.json.gz")] + ".summary.json", "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"{workload}_{mode}: completion_tokens={st.completion_tokens} prefill={st.prefill_steps} "
          f"decode={st.decode_steps} accepted_drafts={st.accepted_draft_tokens} "
          f"decoder_replays={summary['decoder_graph_replays']} speculator_replays={summary['speculator_graph_replays']} "
          f"wall={wall:.3f}s trace={os.path.basename(trace_path)} size={os.path.getsize(trace_path)}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="sample_traces")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--workload", default="text", choices=sorted(gst.WORKLOADS))
    ap.add_argument("--modes", default="ar,mtp", help="comma-separated: ar, mtp")
    ap.add_argument("--requests", type=int, default=2, help="the first N requests of the workload")
    ap.add_argument("--capture-sizes", default="1,2,4", help="comma-separated CUDA-graph batch sizes")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    modes = [m for m in args.modes.split(",") if m]
    assert all(m in gst.MODES for m in modes), modes
    sizes = tuple(sorted(int(s) for s in args.capture_sizes.split(",") if s))
    device = torch.device("cuda", 0)
    print(f"torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name()}", flush=True)
    runners = build(device, args.seed, args.out, args.workload, modes, sizes)
    for mode in modes:
        run(runners[mode], args.workload, mode, args.out, args.seed, args.requests, sizes)


if __name__ == "__main__":
    main()
