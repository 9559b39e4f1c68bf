#!/usr/bin/env python3
"""Generate the small real PyTorch-profiler traces bundled in sample_traces/.

Runs on a CUDA GPU with PyTorch only (no vLLM). A toy decoder-only target
model and a one-layer draft model are served by stand-ins for vLLM's V1 classes
(scripts/fakevllm/vllm/...: EngineCore -> Worker -> GPUModelRunner ->
Sampler / RejectionSampler / EagleProposer), so that the traces have vLLM's
step structure:

* step annotation ``execute_context_<n>(<tok>)_generation_<n>(<tok>)`` around
  the model runner's execute_model only (H2D input copy on a second stream,
  eager prefill or CUDA-graph replay for decode, logits);
* ``Worker.sample_tokens -> GPUModelRunner.sample_tokens`` afterwards, outside
  the annotation; under MTP it holds
  ``propose_draft_token_ids -> record_function("proposer.propose") -> EagleProposer.propose``.

Three workloads (text, reasoning, tool_calling) x two modes (ar, mtp with 2
draft tokens) = six worker traces, each with a run summary beside it, plus a
CPU-only frontend trace and a profiler_out_0.txt in text_mtp/.

Usage: python3 scripts/gen_sample_traces.py --out sample_traces --seed 1234
"""
import argparse
import asyncio
import glob
import json
import os
import random
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fakevllm"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, tensorboard_trace_handler  # noqa: E402

from vllm.model_executor.models.toy_decoder import ToyEagleDraftModel, ToyForCausalLM  # noqa: E402
from vllm.v1.core.sched.scheduler import Request, Scheduler  # noqa: E402
from vllm.v1.engine.async_llm import AsyncLLM  # noqa: E402
from vllm.v1.engine.core import EngineCore  # noqa: E402
from vllm.v1.spec_decode.eagle import EagleProposer  # noqa: E402
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402
from vllm.v1.worker.gpu_worker import Worker  # noqa: E402

WORKER_NAME = "dp0_pp0_tp0_dcp0_ep0_rank0"
NUM_SPEC_TOKENS = 2
MODEL_CFG = dict(vocab=8192, hidden=1024, layers=4, heads=16, draft_layers=1, dtype="bfloat16")

# Same requested output lengths in AR and MTP, so completion tokens are equal.
WORKLOADS = {
    "text": dict(accept_prob=0.70, prompt_lens=[96, 128, 80, 112], output_lens=[14, 18, 16, 20]),
    "reasoning": dict(accept_prob=0.75, prompt_lens=[64, 72, 96, 80], output_lens=[15, 17, 16, 18]),
    "tool_calling": dict(accept_prob=0.90, prompt_lens=[384, 448, 416, 512], output_lens=[12, 14, 12, 16]),
}
MODES = ("ar", "mtp")


def make_requests(workload: str, seed: int, vocab: int):
    cfg = WORKLOADS[workload]
    rng = random.Random(f"{seed}-{workload}-prompts")
    return [
        Request(f"{workload}-{i}", [rng.randrange(vocab) for _ in range(p)], o)
        for i, (p, o) in enumerate(zip(cfg["prompt_lens"], cfg["output_lens"]))
    ]


def serve(runner, requests, num_spec):
    scheduler = Scheduler(requests, num_spec)
    engine = EngineCore(Worker(runner), scheduler)
    engine.run_busy_loop()
    return scheduler


def build(device, seed):
    torch.manual_seed(seed)
    dtype = getattr(torch, MODEL_CFG["dtype"])
    target = ToyForCausalLM(MODEL_CFG["vocab"], MODEL_CFG["hidden"], MODEL_CFG["layers"], MODEL_CFG["heads"])
    target = target.to(device=device, dtype=dtype).eval()
    draft = ToyEagleDraftModel(target, MODEL_CFG["hidden"], MODEL_CFG["heads"], MODEL_CFG["draft_layers"])
    draft = draft.to(device=device, dtype=dtype).eval()
    runners = {
        "ar": GPUModelRunner(target, device),
        "mtp": GPUModelRunner(target, device, EagleProposer(draft, NUM_SPEC_TOKENS), NUM_SPEC_TOKENS),
    }
    # Warm-up before any profiling: CUDA graph capture and a full request
    # (first prefill, decode, sampling, drafting) in both modes.
    for mode, runner in runners.items():
        runner.capture_model()
        runner.rejection_sampler.reset(0.8, seed)
        warm = [Request(f"warmup-{mode}-{i}", list(range(1, 33 + 16 * i)), 6) for i in range(2)]
        serve(runner, warm, runner.num_spec_tokens)
    torch.cuda.synchronize()
    return runners


def run_one(runner, workload, mode, out_dir, seed, keep_prof=False):
    cfg = WORKLOADS[workload]
    run_dir = os.path.join(out_dir, f"{workload}_{mode}")
    os.makedirs(run_dir, exist_ok=True)
    before = set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")))
    num_spec = NUM_SPEC_TOKENS if mode == "mtp" else 0
    accept_seed = f"{seed}-{workload}-acceptance"
    runner.rejection_sampler.reset(cfg["accept_prob"], accept_seed)
    if runner.drafter is not None:
        runner.drafter.num_calls = 0
    requests = make_requests(workload, seed, MODEL_CFG["vocab"])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        with_stack=True,
        record_shapes=False,
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name=WORKER_NAME, use_gzip=True),
    ) as prof:
        scheduler = serve(runner, requests, num_spec)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    new = sorted(set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz"))) - before)
    assert len(new) == 1, new
    trace_path = new[0]
    st = scheduler.stats
    steps = st.prefill_steps + st.decode_steps
    summary = {
        "mode": mode,
        "workload": workload,
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
        "tokens_per_step": round(st.completion_tokens / steps, 4),
        "tokens_per_decode_step": round((st.completion_tokens - st.prefill_steps) / st.decode_steps, 4),
        # Eq. 15 of the analysis: completion tokens / steady-state (decode) contexts
        "completion_tokens_per_decode_context": round(st.completion_tokens / st.decode_steps, 4),
        "prompt_lens": [len(r.prompt_token_ids) for r in requests],
        "output_lens": [len(r.output_token_ids) for r in scheduler.finished],
        "step_annotations": dict(sorted(st.step_names.items())),
        "seed": seed,
        "device": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "model": MODEL_CFG,
        "cuda_graph_decode": True,
        "cuda_graph_drafter": mode == "mtp",
        "profiled_wall_s": round(wall, 4),
        "worker_trace": os.path.basename(trace_path),
        "generator": "scripts/gen_sample_traces.py",
    }
    assert st.completion_tokens == sum(WORKLOADS[workload]["output_lens"])
    assert st.completion_tokens == st.prefill_steps + st.decode_steps + st.accepted_draft_tokens
    summary_path = trace_path[: -len(".pt.trace.json.gz")] + ".summary.json"
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"{workload}_{mode}: completion_tokens={st.completion_tokens} prefill={st.prefill_steps} "
          f"decode={st.decode_steps} accepted_drafts={st.accepted_draft_tokens} "
          f"proposals={summary['draft_proposals']} tokens/decode_ctx={summary['completion_tokens_per_decode_context']} "
          f"wall={wall:.3f}s trace={os.path.basename(trace_path)} "
          f"size={os.path.getsize(trace_path)}")
    return prof if keep_prof else None


def frontend_trace(run_dir):
    llm = AsyncLLM()

    async def main():
        tasks = [asyncio.create_task(llm.generate(f"request number {i} about tracing " * 3, f"req-{i}", 8))
                 for i in range(4)]
        results = await llm.output_handler(len(tasks))
        await asyncio.gather(*tasks)
        return results

    before = set(glob.glob(os.path.join(run_dir, "*.async_llm.*.pt.trace.json.gz")))
    worker_name = f"{socket.gethostname()}_{os.getpid()}.async_llm"
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 on_trace_ready=tensorboard_trace_handler(run_dir, worker_name=worker_name, use_gzip=True)):
        asyncio.run(main())
    new = sorted(set(glob.glob(os.path.join(run_dir, "*.async_llm.*.pt.trace.json.gz"))) - before)
    print(f"frontend trace: {[os.path.basename(p) for p in new]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="sample_traces")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--compile", action="store_true",
                    help="run the models through torch.compile (see main_compiled); writes only the compiled runs")
    ap.add_argument("--compile-scopes", choices=("vllm", "none"), default="vllm",
                    help="vllm: the H2D copy and the forward run inside 'gpu_model_runner: preprocess' / "
                         "'gpu_model_runner: forward' (vLLM with VLLM_CUSTOM_SCOPES_FOR_PROFILING=1), so the step "
                         "annotation gets no gpu_user_annotation; none: no such ranges")
    ap.add_argument("--compile-workloads", default="text", help="comma-separated workloads for --compile")
    ap.add_argument("--compile-modes", default="ar,mtp", help="comma-separated modes for --compile")
    ap.add_argument("--compile-requests", type=int, default=2,
                    help="for --compile: the first N requests of each workload")
    args = ap.parse_args()
    if args.compile:
        return main_compiled(args)
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    device = torch.device("cuda", 0)
    print(f"torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name()}")
    runners = build(device, args.seed)
    os.makedirs(args.out, exist_ok=True)
    for workload in WORKLOADS:
        for mode in MODES:
            keep = (workload, mode) == ("text", "mtp")
            prof = run_one(runners[mode], workload, mode, args.out, args.seed, keep_prof=keep)
            if prof is not None:
                ka = prof.key_averages()
                try:
                    table = ka.table(sort_by="self_cuda_time_total", row_limit=15)
                except Exception:  # noqa: BLE001
                    table = ka.table(sort_by="self_device_time_total", row_limit=15)
                with open(os.path.join(args.out, "text_mtp", "profiler_out_0.txt"), "w") as f:
                    f.write(table)
                    f.write("\n")
    frontend_trace(os.path.join(args.out, "text_mtp"))


# ---------------------------------------------------------------------------
# --compile: the same toy engine with the models run through torch.compile.
# A separate code path: the default run above does not use anything below.

COMPILE_SUMMARY = {
    "target_prefill": "torch.compile(dynamic=False) of forward + logits of the last token; no CUDA graph",
    "target_decode": "torch.compile(mode='reduce-overhead', dynamic=False) of forward + logits: "
                     "Inductor CUDA graph trees, replayed inside '## Call CompiledFxGraph <key> ##'",
    "drafter": "torch.compile(mode='reduce-overhead', dynamic=False) of one draft step + argmax, "
               "called once per draft token",
    "compiled_fx_graph_range": "a cpu_op in torch 2.11 (Inductor opens it with _RecordFunctionFast), "
                               "so Kineto gives it no gpu_user_annotation",
}
SCOPES_SUMMARY = {
    "vllm": "H2D input copy inside user range 'gpu_model_runner: preprocess', compiled forward inside "
            "'gpu_model_runner: forward' (as vLLM with VLLM_CUSTOM_SCOPES_FOR_PROFILING=1): the step annotation "
            "is the innermost user range of no GPU work",
    "none": "no user range inside the step annotation: it is the innermost user range of all the step's GPU work",
}


def build_compiled(device, seed, mode, custom_scopes):
    from vllm.v1.spec_decode.eagle import CompiledEagleProposer
    from vllm.v1.worker.gpu_model_runner import CompiledGPUModelRunner

    torch.manual_seed(seed)
    dtype = getattr(torch, MODEL_CFG["dtype"])
    target = ToyForCausalLM(MODEL_CFG["vocab"], MODEL_CFG["hidden"], MODEL_CFG["layers"], MODEL_CFG["heads"])
    target = target.to(device=device, dtype=dtype).eval()
    draft = ToyEagleDraftModel(target, MODEL_CFG["hidden"], MODEL_CFG["heads"], MODEL_CFG["draft_layers"])
    draft = draft.to(device=device, dtype=dtype).eval()
    if mode == "ar":
        return CompiledGPUModelRunner(target, device, custom_scopes=custom_scopes)
    return CompiledGPUModelRunner(target, device, CompiledEagleProposer(draft, NUM_SPEC_TOKENS), NUM_SPEC_TOKENS,
                                  custom_scopes=custom_scopes)


def warm_up_compiled(runner, workloads, seed, num_requests):
    """Compile, autotune and record every shape the profiled run will use: the
    decode shape in capture_model, then each profiled request (same prompt
    lengths) twice, so that no compilation or graph recording is profiled."""
    runner.capture_model()
    for _ in range(2):
        runner.rejection_sampler.reset(0.8, seed)
        for workload in workloads:
            serve(runner, make_requests(workload, seed, MODEL_CFG["vocab"])[:num_requests], runner.num_spec_tokens)
    torch.cuda.synchronize()


def run_compiled(runner, workload, mode, out_dir, seed, scopes, num_requests, warmup_s):
    cfg = WORKLOADS[workload]
    suffix = "" if scopes == "vllm" else "_noscopes"
    run_dir = os.path.join(out_dir, f"{workload}_{mode}{suffix}")
    os.makedirs(run_dir, exist_ok=True)
    before = set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")))
    num_spec = NUM_SPEC_TOKENS if mode == "mtp" else 0
    runner.rejection_sampler.reset(cfg["accept_prob"], f"{seed}-{workload}-acceptance")
    if runner.drafter is not None:
        runner.drafter.num_calls = 0
    requests = make_requests(workload, seed, MODEL_CFG["vocab"])[:num_requests]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        with_stack=True,
        record_shapes=False,
        on_trace_ready=tensorboard_trace_handler(run_dir, worker_name=WORKER_NAME, use_gzip=True),
    ):
        scheduler = serve(runner, requests, num_spec)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    new = sorted(set(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz"))) - before)
    assert len(new) == 1, new
    trace_path = new[0]
    st = scheduler.stats
    steps = st.prefill_steps + st.decode_steps
    summary = {
        "mode": mode,
        "workload": workload,
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
        "tokens_per_step": round(st.completion_tokens / steps, 4),
        "tokens_per_decode_step": round((st.completion_tokens - st.prefill_steps) / st.decode_steps, 4),
        "completion_tokens_per_decode_context": round(st.completion_tokens / st.decode_steps, 4),
        "prompt_lens": [len(r.prompt_token_ids) for r in requests],
        "output_lens": [len(r.output_token_ids) for r in scheduler.finished],
        "step_annotations": dict(sorted(st.step_names.items())),
        "seed": seed,
        "device": torch.cuda.get_device_name(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "triton_version": getattr(sys.modules.get("triton"), "__version__", None),
        "model": MODEL_CFG,
        "torch_compile": True,
        "compile": COMPILE_SUMMARY,
        "compile_scopes": scopes,
        "compile_scopes_meaning": SCOPES_SUMMARY[scopes],
        "cuda_graph_decode": True,
        "cuda_graph_drafter": mode == "mtp",
        "compile_and_warmup_s": round(warmup_s, 1),
        "profiled_wall_s": round(wall, 4),
        "worker_trace": os.path.basename(trace_path),
        "generator": f"scripts/gen_sample_traces.py --compile --compile-scopes {scopes}",
    }
    assert st.completion_tokens == sum(cfg["output_lens"][:num_requests])
    assert st.completion_tokens == st.prefill_steps + st.decode_steps + st.accepted_draft_tokens
    summary_path = trace_path[: -len(".pt.trace.json.gz")] + ".summary.json"
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"{workload}_{mode}{suffix}: completion_tokens={st.completion_tokens} prefill={st.prefill_steps} "
          f"decode={st.decode_steps} accepted_drafts={st.accepted_draft_tokens} "
          f"proposals={summary['draft_proposals']} wall={wall:.3f}s trace={os.path.basename(trace_path)} "
          f"size={os.path.getsize(trace_path)}", flush=True)


def main_compiled(args):
    """--compile: for each mode, build the models, compile and warm up (before
    any profiling), then profile the first --compile-requests requests of each
    workload. No frontend trace and no profiler_out table."""
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    import torch._dynamo as dynamo

    # Each runner compiles its own graphs (one per prompt length and decode width).
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(dynamo.config, name):
            setattr(dynamo.config, name, 64)
            break
    device = torch.device("cuda", 0)
    print(f"torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name()} "
          f"(--compile, scopes {args.compile_scopes})", flush=True)
    workloads = [w for w in args.compile_workloads.split(",") if w]
    modes = [m for m in args.compile_modes.split(",") if m]
    assert all(w in WORKLOADS for w in workloads) and all(m in MODES for m in modes), (workloads, modes)
    os.makedirs(args.out, exist_ok=True)
    for mode in modes:
        t0 = time.perf_counter()
        runner = build_compiled(device, args.seed, mode, args.compile_scopes == "vllm")
        warm_up_compiled(runner, workloads, args.seed, args.compile_requests)
        warmup_s = time.perf_counter() - t0
        print(f"{mode}: compile + warm-up {warmup_s:.1f}s", flush=True)
        for workload in workloads:
            run_compiled(runner, workload, mode, args.out, args.seed, args.compile_scopes,
                         args.compile_requests, warmup_s)


if __name__ == "__main__":
    main()
