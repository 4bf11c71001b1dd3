#!/usr/bin/python3
"""Prints two profiler traces (Chrome's trace format: LibTorch's RecordProfile, torch.profiler's
export_chrome_trace) side by side: each operation's self time in ms per step (its time less that of
the operations it called, on the same thread), the operations sorted by the larger of the two.
Usage: op_profile_table.py STEPS NAME_A TRACE_A NAME_B TRACE_B [ROWS]
"""
import collections
import json
import sys


def self_times(path, steps):
    """{operation: (ms per step, calls per step)}, and the ms per step of all top-level events."""
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    own = collections.Counter()
    calls = collections.Counter()
    top = 0.0
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []
        for e in thread_events:
            start, duration = float(e["ts"]), float(e["dur"])
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= start:
                stack.pop()
            if stack:
                own[stack[-1]["name"]] -= duration
            else:
                top += duration
            own[e["name"]] += duration
            calls[e["name"]] += 1
            stack.append(e)
    us_per_ms = 1000.0
    return ({name: (t / steps / us_per_ms, calls[name] / steps) for name, t in own.items()},
            top / steps / us_per_ms)


def main():
    steps = int(sys.argv[1])
    name_a, trace_a, name_b, trace_b = sys.argv[2:6]
    rows = int(sys.argv[6]) if len(sys.argv) > 6 else 25
    a, top_a = self_times(trace_a, steps)
    b, top_b = self_times(trace_b, steps)
    names = sorted(set(a) | set(b), key=lambda n: -max(a.get(n, (0, 0))[0], b.get(n, (0, 0))[0]))
    width = min(70, max(len(n) for n in names[:rows]))
    print("%-*s %14s %14s" % (width, "self time, ms per step (calls)", name_a, name_b))
    for n in names[:rows]:
        cells = []
        for side in (a, b):
            ms, count = side.get(n, (0.0, 0.0))
            cells.append("%7.3f (%4.0f)" % (ms, count) if count else "%14s" % "-")
        print("%-*s %s %s" % (width, n[:width], *cells))
    rest_a = sum(v[0] for k, v in a.items() if k not in names[:rows])
    rest_b = sum(v[0] for k, v in b.items() if k not in names[:rows])
    print("%-*s %7.3f        %7.3f" % (width, "all other operations", rest_a, rest_b))
    print("%-*s %7.3f        %7.3f" % (width, "profiled time per step (with the profiler)", top_a,
                                        top_b))


if __name__ == "__main__":
    main()
