#!/usr/bin/env python3
"""What a gzipped pprof profile says, as sorted text lines, for comparing
two reports of one recording: duration, time, period, sample types, and the
samples' values summed by leaf function (image and symbol), and the main
mapping's file name (pprof takes the first mapping for the main binary). Process labels
are left out: kvmprof report tags them with the domain, kvmprof-agent does
not. Reads profile.proto's wire format directly (no protobuf module).
With --labels, prints instead each distinct set of a sample's string labels
(key=value, sorted, comma-separated) with the sample counts summed."""
import gzip
import sys


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field number, value) pairs; value is an int or the bytes of a length-delimited field."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, v


def ints(v):
    """A repeated integer field: packed (bytes) or one value."""
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def main(path, labels_only=False):
    prof = gzip.open(path).read()
    strings, samples, locs, funcs, mappings, mapping_order = [], [], {}, {}, {}, []
    top = {"duration_nanos": 0, "time_nanos": 0, "period": 0}
    types, period_type = [], None
    for num, v in fields(prof):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 1:
            types.append(dict(fields(v)))
        elif num == 2:
            s = {"loc": [], "val": [], "labels": []}
            for n, x in fields(v):
                if n == 1:
                    s["loc"] += ints(x)
                elif n == 2:
                    s["val"] += ints(x)
                elif n == 3:
                    s["labels"].append(dict(fields(x)))
            samples.append(s)
        elif num == 3:
            m = dict(fields(v))
            mappings[m.get(1, 0)] = m
            mapping_order.append(m.get(1, 0))
        elif num == 4:
            loc, lines = {}, []
            for n, x in fields(v):
                if n == 4:
                    lines.append(dict(fields(x)))
                else:
                    loc[n] = x
            loc["lines"] = lines
            locs[loc.get(1, 0)] = loc
        elif num == 5:
            f = dict(fields(v))
            funcs[f.get(1, 0)] = f
        elif num == 9:
            top["time_nanos"] = v
        elif num == 10:
            top["duration_nanos"] = v
        elif num == 11:
            period_type = dict(fields(v))
        elif num == 12:
            top["period"] = v

    def s(i):
        return strings[i] if i < len(strings) else "?"

    def leaf(sample):
        if not sample["loc"]:
            return "(no location)"
        loc = locs.get(sample["loc"][0], {})
        m = mappings.get(loc.get(2, 0), {})
        image = s(m.get(5, 0)) if m else ""
        name = s(funcs.get(loc["lines"][0].get(1, 0), {}).get(2, 0)) if loc.get("lines") else "0x%x" % loc.get(3, 0)
        return "%s`%s" % (image, name)

    if labels_only:
        by_set = {}
        for smp in samples:
            key = ",".join(sorted("%s=%s" % (s(lb.get(1, 0)), s(lb.get(2, 0))) for lb in smp["labels"] if lb.get(2)))
            by_set[key] = by_set.get(key, 0) + (smp["val"][0] if smp["val"] else 0)
        print("\n".join("labels %s %d" % (k, v) for k, v in sorted(by_set.items())))
        return
    out = ["%s %d" % (k, top[k]) for k in sorted(top)]
    out.append("sample_type " + ",".join("%s/%s" % (s(t.get(1, 0)), s(t.get(2, 0))) for t in types))
    if period_type:
        out.append("period_type %s/%s" % (s(period_type.get(1, 0)), s(period_type.get(2, 0))))
    if mapping_order:
        # pprof takes the first mapping for the main binary.
        out.append("main_mapping %s" % s(mappings[mapping_order[0]].get(5, 0)).rsplit("/", 1)[-1])
    by_leaf = {}
    for smp in samples:
        acc = by_leaf.setdefault(leaf(smp), [0] * len(smp["val"]))
        for j, x in enumerate(smp["val"]):
            if j < len(acc):
                acc[j] += x
    out += sorted("leaf %s %s" % (k, " ".join(map(str, v))) for k, v in by_leaf.items())
    print("\n".join(out))


if __name__ == "__main__":
    if sys.argv[1] == "--labels":
        main(sys.argv[2], True)
    else:
        main(sys.argv[1])
