#!/usr/bin/env python3
"""Writes tests/data/damaged/: small damaged traces and EXPECTED.tsv.

Each case is a way a trace file gets damaged in practice (a flipped bit, a
cut, a tool that appends or pads, a second write into the same file, a
Windows editor's byte-order mark) or a hostile input. tests/damaged.rs runs
`torchtrace pair FILE` on every file listed in EXPECTED.tsv and checks the
exit code and a fragment of its stderr.

Names end in `.gz` or `.json`, never `.json.gz`: the fixture walks of
other tests (tests/it/fast_path.rs) take every `*.json.gz` under tests/data
for an intact trace.

The base is the first events of tests/data/hta_step_based_trace.json.gz
(a real Kineto trace), so the files stay a few KB. The output is
deterministic (gzip mtime 0); rerun after changing a case:

    python3 scripts/make_damaged.py
"""

import gzip
import json
import os
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "tests/data/hta_step_based_trace.json.gz")
OUT = os.path.join(ROOT, "tests/data/damaged")

# `torchtrace pair` on the intact base: its gpu_user_annotation steps are
# not vLLM's, so pair finds no step to pair and exits 1.
INTACT = (1, "no pure-decode vLLM step annotation found")


def base_doc():
    """The first 40 events with the top-level keys, laid out as Kineto does."""
    with gzip.open(SRC) as f:
        doc = json.load(f)
    events = doc["traceEvents"][:40]
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    head = json.dumps(meta, indent=2)[:-2]
    body = ",\n  ".join(json.dumps(e) for e in events)
    return (head + ',\n  "traceEvents": [\n  ' + body + "\n  ]\n}\n").encode()


def gz(data, level=9):
    """gzip with a fixed header (no name, mtime 0)."""
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def stored_digit_flip(base):
    """Stored (uncompressed) deflate blocks carry no check of their own: a
    flipped digit inside one is only caught by the gzip CRC-32 at the end,
    and the 100 bytes of whitespace after the document mean a reader that
    stops at the closing brace never gets there."""
    data = base + b" \n" * 50
    z = gz(data, level=0)
    at = data.index(b'"ts": ') + 8
    assert chr(data[at]).isdigit()
    # gzip header (10 bytes) + stored block header (5 bytes), first block.
    zat = 10 + 5 + at
    assert z[zat] == data[at]
    flipped = bytearray(z)
    flipped[zat] = ord("0") + (data[at] - ord("0") + 1) % 10
    return bytes(flipped)


def corrupt_last_block(base):
    """A byte changed near the end of the last deflate block, after the
    block has produced the closing brace: decoding fails (or the CRC does)
    only if the reader goes on to the end."""
    z = bytearray(gz(base + b"\n" * 200))
    for back in range(9, 40):
        bad = bytearray(z)
        bad[len(z) - back] ^= 0x55
        out, failed = b"", False
        d = zlib.decompressobj(31)
        try:
            for i in range(len(bad)):
                out += d.decompress(bytes(bad[i : i + 1]))
            failed = not d.eof or zlib.crc32(out) != int.from_bytes(bad[-8:-4], "little")
        except zlib.error:
            failed = True
        if failed and out.startswith(base.rstrip()):
            return bytes(bad)
    raise SystemExit("no corruption of the last block found that keeps the document")


def cases(base):
    cut = base.index(b'"ph"', len(base) // 2)
    nul_skipped = base.replace(b'"name": "', b'"name": "\0', 1)
    nul_read = base.replace(b'"cat": "cpu_op", "name": "', b'"cat": "user_annotation", "name": "\0', 1)
    assert nul_read != base
    half = len(base) // 2
    return [
        # name, bytes, exit, stderr fragment, why
        ("intact.gz", gz(base), *INTACT, "the base, intact"),
        ("bom.json", b"\xef\xbb\xbf" + base, *INTACT, "UTF-8 byte-order mark: accepted"),
        ("bom.gz", gz(b"\xef\xbb\xbf" + base), *INTACT, "byte-order mark inside gzip"),
        ("two_members.gz", gz(base[:half]) + gz(base[half:]), *INTACT, "multi-member gzip"),
        ("stored_digit_flip.gz", stored_digit_flip(base), 2, "gzip checksum mismatch", "digit flipped in a stored block, whitespace after the document"),
        ("corrupt_last_block.gz", corrupt_last_block(base), 2, "corrupt", "last deflate block damaged after the closing brace"),
        ("truncated.gz", gz(base)[:-20], 2, "data ends early or is corrupt", "gzip cut before its end"),
        ("cut_in_events.json", base[:cut], 2, "JSON ends early at byte", "JSON cut inside the event array"),
        ("trailing_garbage.json", base + b"}garbage", 2, "unexpected data after the end of the JSON document", "garbage after the document"),
        ("trailing_garbage.gz", gz(base + b"garbage"), 2, "unexpected data after the end of the JSON document", "garbage after the document, inside gzip"),
        ("garbage_after_gzip.gz", gz(base) + b"garbage", 2, "data ends early or is corrupt after byte 8085 of the JSON text (40 events read intact)", "bytes after the gzip member"),
        ("two_documents.gz", gz(base + base), 2, "a second JSON document", "two documents in one file"),
        ("nul_padding.json", base + b"\0" * 64, 2, "`\\0\\0\\0", "NUL padding after the document"),
        ("nul_padding.gz", gz(base + b"\0" * 64), 2, "`\\0\\0\\0", "NUL padding, inside gzip"),
        ("nul_in_skipped_event.json", nul_skipped, *INTACT, "a NUL in an event pair's prefilter skips: never parsed, so not seen"),
        ("nul_in_read_event.json", nul_read, 2, "control character (\\u0000-\\u001F) found while parsing a string at byte", "a NUL in an event pair reads"),
        ("nul_only.json", b"\0" * 64, 2, "not a trace: neither gzip nor JSON (first bytes 00 00", "only NULs"),
        ("whitespace_only.json", b"  \n\t\n  ", 2, "no events: only whitespace (7 bytes)", "only whitespace"),
        ("whitespace_only.gz", gz(b" " * 1000), 2, "no events: only whitespace (1000 bytes)", "only whitespace, inside gzip"),
        ("empty.gz", gz(b""), 2, "the file is empty", "gzip of nothing"),
        ("utf16.json", b"\xff\xfe" + base.decode().encode("utf-16-le"), 2, "UTF-16", "UTF-16 text"),
    ]


def main():
    base = base_doc()
    os.makedirs(OUT, exist_ok=True)
    rows = ["# file\texit\tstderr fragment\twhat (written by scripts/make_damaged.py)"]
    for name, data, code, fragment, why in cases(base):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        rows.append(f"{name}\t{code}\t{fragment}\t{why}")
    with open(os.path.join(OUT, "EXPECTED.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(rows) - 1} cases to {OUT}")


if __name__ == "__main__":
    main()
