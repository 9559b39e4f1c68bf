#!/usr/bin/env python3
"""Record small PyTorch Profiler (Kineto) Chrome traces with profile_memory=True.

Used to produce the fixtures in tests/data/memory/ (see RECORDING.md there).
Run on a machine with one CUDA GPU:  OUT=/some/dir python3 record.py

Writes into $OUT:
  hf_greedy_memory.pt.trace.json.gz        greedy generate, CUDA, with_stack=False
  hf_assisted_memory.pt.trace.json.gz      assisted generate (smaller assistant model)
  cpu_only_memory.pt.trace.json.gz         CPU-only profile of a few forward passes
  hf_greedy_memory_stack.pt.trace.json.gz  greedy generate, with_stack=True
  hf_greedy_memory_timeline.json           prof.export_memory_timeline(... .json)
  hf_greedy_memory_timeline.raw.json.gz    prof.export_memory_timeline(... .raw.json.gz)
  RECORDING.md                             versions, this script, event counts, sizes
All models use configs built in code and random weights (no downloads).
"""
import collections
import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
import traceback

import torch
from torch.profiler import ProfilerActivity, profile

OUT = os.environ.get("OUT") or "."
os.makedirs(OUT, exist_ok=True)
TMP = tempfile.mkdtemp()
DEV = "cuda"
MAX_NEW = 24
PROMPT_LEN = 16
VOCAB = 2048

notes = []  # failures / remarks for RECORDING.md

try:
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel
    HAVE_TF = True
except Exception as e:  # pragma: no cover
    HAVE_TF = False
    notes.append(f"transformers not importable: {e!r}")


def make_model(n_layer, n_embd, n_head, device):
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=128,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=0,
    )
    m = GPT2LMHeadModel(cfg).to(device).eval()
    gc = m.generation_config
    gc.eos_token_id = None
    gc.pad_token_id = 0
    gc.bos_token_id = 0
    return m


def export_gz(prof, name):
    raw = os.path.join(TMP, name.replace(".gz", ""))
    prof.export_chrome_trace(raw)
    dst = os.path.join(OUT, name)
    with open(raw, "rb") as fi, gzip.open(dst, "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)
    return raw, dst


def count_memory(raw_path):
    with open(raw_path) as f:
        data = json.load(f)
    evs = data.get("traceEvents", data) if isinstance(data, dict) else data
    per = collections.Counter()
    n = 0
    for e in evs:
        if e.get("name") == "[memory]":
            n += 1
            a = e.get("args", {})
            per[(a.get("Device Type"), a.get("Device Id"))] += 1
    return n, per, len(evs)


results = {}  # name -> (raw path, gz path, extra text)


def record(name, activities, fn, with_stack=False, after=None):
    try:
        with profile(activities=activities, profile_memory=True,
                     record_shapes=True, with_stack=with_stack) as prof:
            out = fn()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        raw, gz = export_gz(prof, name)
        extra = ""
        if after is not None:
            extra = after(prof)
        results[name] = (raw, gz, extra, out)
        print(f"recorded {name}", flush=True)
    except Exception:
        tb = traceback.format_exc()
        notes.append(f"{name} FAILED:\n```\n{tb}```")
        print(tb, flush=True)


def main():
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.manual_seed(1234)
    prompt = torch.randint(1, VOCAB, (1, PROMPT_LEN), device=DEV)
    attn = torch.ones_like(prompt)
    CPU, CUDA = ProfilerActivity.CPU, ProfilerActivity.CUDA

    model = make_model(n_layer=2, n_embd=256, n_head=4, device=DEV)
    assistant = make_model(n_layer=1, n_embd=128, n_head=2, device=DEV)

    def greedy():
        with torch.no_grad():
            return model.generate(prompt, attention_mask=attn, do_sample=False,
                                  max_new_tokens=MAX_NEW)

    def assisted():
        with torch.no_grad():
            return model.generate(prompt, attention_mask=attn, do_sample=False,
                                  max_new_tokens=MAX_NEW, assistant_model=assistant)

    # Warm-up outside the profiler (cuBLAS handles, caching allocator, etc.).
    greedy()
    try:
        assisted()
    except Exception:
        notes.append("assisted warm-up FAILED:\n```\n" + traceback.format_exc() + "```")
    torch.cuda.synchronize()

    # 1. greedy, CUDA
    record("hf_greedy_memory.pt.trace.json.gz", [CPU, CUDA], greedy)
    # 2. assisted, CUDA
    record("hf_assisted_memory.pt.trace.json.gz", [CPU, CUDA], assisted)

    # 3. CPU only: a few forward passes of a tiny model on CPU
    cpu_model = make_model(n_layer=2, n_embd=256, n_head=4, device="cpu")
    cpu_in = prompt.cpu()

    def cpu_fwd():
        with torch.no_grad():
            for _ in range(3):
                cpu_model(cpu_in)
        return None

    cpu_fwd()  # warm-up
    record("cpu_only_memory.pt.trace.json.gz", [CPU], cpu_fwd)

    # 4. greedy with with_stack=True + export_memory_timeline
    def timelines(prof):
        lines = []
        for suffix in ("_timeline.json", "_timeline.raw.json.gz"):
            p = os.path.join(OUT, "hf_greedy_memory" + suffix)
            try:
                prof.export_memory_timeline(p, device="cuda:0")
                lines.append(f"- export_memory_timeline({os.path.basename(p)!r}, device='cuda:0'): OK, "
                             f"{os.path.getsize(p)} bytes")
            except Exception:
                tb = traceback.format_exc()
                lines.append(f"- export_memory_timeline({os.path.basename(p)!r}) FAILED:\n```\n{tb}```")
                print(tb, flush=True)
        return "\n".join(lines)

    record("hf_greedy_memory_stack.pt.trace.json.gz", [CPU, CUDA], greedy,
           with_stack=True, after=timelines)


def write_recording():
    script = open(os.path.abspath(__file__)).read()
    L = ["# Recording of the memory-profile fixtures", ""]
    L.append("Recorded with `tests/data/memory/record.py` (embedded below) on the torchtrace "
             "device machine; all models are GPT-2 configs built in code with random weights.")
    L.append("")
    L.append("## Environment")
    L.append(f"- python: {sys.version.split()[0]} ({platform.platform()})")
    L.append(f"- torch: {torch.__version__}")
    L.append(f"- CUDA (torch.version.cuda): {torch.version.cuda}")
    L.append(f"- cuDNN: {torch.backends.cudnn.version()}")
    L.append(f"- transformers: {transformers.__version__ if HAVE_TF else 'missing'}")
    if torch.cuda.is_available():
        L.append(f"- GPU: {torch.cuda.get_device_name(0)} "
                 f"(capability {torch.cuda.get_device_capability(0)})")
    L.append("")
    L.append("## Settings")
    L.append(f"- main model: GPT2 n_layer=2 n_embd=256 n_head=4 vocab={VOCAB}; "
             f"assistant: GPT2 n_layer=1 n_embd=128 n_head=2 vocab={VOCAB}")
    L.append(f"- prompt: batch 1, {PROMPT_LEN} random token ids; max_new_tokens={MAX_NEW}, do_sample=False, eos disabled")
    L.append("- profile(activities=..., profile_memory=True, record_shapes=True, with_stack=False|True), no schedule; "
             "one warm-up of each generate outside the profiler")
    L.append("- CPU-only trace: activities=[CPU], 3 forward passes of the same config on CPU (after one warm-up pass)")
    L.append("")
    L.append("## Traces")
    for name, (raw, gz, extra, out) in results.items():
        n, per, total = count_memory(raw)
        L.append(f"### {name}")
        L.append(f"- compressed size: {os.path.getsize(gz)} bytes; uncompressed: {os.path.getsize(raw)} bytes")
        L.append(f"- traceEvents: {total}; `[memory]` events: {n}")
        for (dt, di), c in sorted(per.items(), key=lambda kv: str(kv[0])):
            L.append(f"  - Device Type {dt}, Device Id {di}: {c}")
        if out is not None and hasattr(out, "shape"):
            L.append(f"- generate output shape: {tuple(out.shape)}")
        if extra:
            L.append(extra)
        L.append("")
    L.append("## Notes / failures")
    L.extend(notes if notes else ["- none"])
    L.append("")
    L.append("## Script")
    L.append("```python")
    L.append(script.rstrip())
    L.append("```")
    text = "\n".join(L) + "\n"
    with open(os.path.join(OUT, "RECORDING.md"), "w") as f:
        f.write(text)
    print(text[: text.index("## Script")], flush=True)


if __name__ == "__main__":
    try:
        if HAVE_TF:
            main()
        else:
            notes.append("skipped everything: transformers missing")
    finally:
        write_recording()
        # guard the 16 MiB-per-file return limit of the device tool
        for fn in os.listdir(OUT):
            p = os.path.join(OUT, fn)
            if os.path.getsize(p) > 15 * 2**20 and not fn.endswith(".gz"):
                with open(p, "rb") as fi, gzip.open(p + ".gz", "wb") as fo:
                    shutil.copyfileobj(fi, fo)
                os.remove(p)
                print(f"gzipped oversized {fn}", flush=True)
