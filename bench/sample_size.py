#!/usr/bin/env python3
"""Bytes per sample of a kvmprof sample file or a perf.data file.

  bench/sample_size.py [--table] FILE...

For each FILE one line (with --table, a Markdown table row): samples, the bytes of the records that carry them
(kvmprof: SAMPLE records and SAMPLES blocks, headers included; perf: the
PERF_RECORD_SAMPLE records, as `perf report -D` lists them), those bytes per
sample, and the whole file per sample. perf files need perf in PATH.
"""
import os
import re
import struct
import subprocess
import sys

KP_REC_SAMPLE, KP_REC_SAMPLES = 7, 15


def kvmprof(path):
    samples = sample_bytes = 0
    with open(path, "rb") as f:
        head = f.read(24)
        f.seek(struct.unpack_from("<I", head, 12)[0])
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            rtype, size = struct.unpack_from("<II", h)
            body = f.read(size - 16)
            if rtype == KP_REC_SAMPLE:
                samples += 1
                sample_bytes += size
            elif rtype == KP_REC_SAMPLES:
                samples += struct.unpack_from("<I", body)[0]
                sample_bytes += size
    return samples, sample_bytes


def perf(path):
    out = subprocess.run(["perf", "report", "-D", "-i", path], capture_output=True, text=True).stdout
    sizes = [int(m.group(1), 16) for m in re.finditer(r"\[(0x[0-9a-f]+)\]: PERF_RECORD_SAMPLE", out)]
    return len(sizes), sum(sizes)


table = sys.argv[1:2] == ["--table"]
if table:
    print("| recording | samples | bytes of sample records per sample | file bytes per sample |")
    print("|---|---:|---:|---:|")
for path in sys.argv[1 + table:]:
    with open(path, "rb") as f:
        magic = f.read(8)
    samples, sample_bytes = kvmprof(path) if magic == b"KVMPROF\0" else perf(path)
    total = os.path.getsize(path)
    per, file_per = sample_bytes / max(samples, 1), total / max(samples, 1)
    if table:
        print(f"| {path} | {samples} | {per:.2f} | {file_per:.2f} |")
    else:
        print(f"{path}: {samples} samples, {sample_bytes} bytes of sample records, "
              f"{per:.2f} bytes/sample, file {file_per:.2f} bytes/sample")
