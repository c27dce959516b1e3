#!/usr/bin/env python3
"""The Python module's call overhead: wall time per call of a compiled
graph from Python (`kernel(*inputs, out=outputs)` on PyTorch tensors, on
the current stream) against the runtime's C API called directly
(fusec_module_run through ctypes, buffers prepared once), on graphs small
enough that the CPU side is what is timed. Needs fusec (the wheel), torch
and a GPU.

    python3 bench/python-overhead.py [--calls N] [--json FILE]
"""

import argparse
import ctypes
import json
import time

import torch

import fusec
from fusec import _capi

def relu_graph():
    g = fusec.Graph("relu")
    x = g.input([64, 64], "bf16")
    g.output(g.relu(x))
    return g, [(64, 64)]


def add_layer_norm_graph():
    g = fusec.Graph("add_layer_norm")
    x, r = g.input([8, 256], "bf16"), g.input([8, 256], "bf16")
    s, b = g.input([256], "bf16"), g.input([256], "bf16")
    g.output(g.layer_norm(g.add(x, r), s, b))
    return g, [(8, 256), (8, 256), (256,), (256,)]


def two_kernel_graph():
    """Two kernels through an intermediate: the runtime picks a workspace
    and records its event on every call."""
    g = fusec.Graph("linear_softmax")
    x, w = g.input([16, 64], "bf16"), g.input([64, 64], "bf16")
    g.output(g.softmax(g.linear(x, w)))
    return g, [(16, 64), (64, 64)]


GRAPHS = {"relu (1 in, 1 out)": relu_graph,
          "add + layer norm (4 in, 1 out)": add_layer_norm_graph,
          "linear, softmax (2 kernels)": two_kernel_graph}


def per_call_us(fn, calls):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, build in GRAPHS.items():
        graph, shapes = build()
        try:
            kernel = fusec.compile(graph)
        except fusec.Error as e:
            print(f"{name}: {e}")
            continue
        xs = [torch.randn(s, device="cuda").bfloat16() for s in shapes]
        y = torch.empty(shapes[0], device="cuda").bfloat16()
        kernel(*xs, out=y)  # loads the module
        python_us = per_call_us(lambda: kernel(*xs, out=y), args.calls)
        # The C API alone: the same module and stream, buffers filled once.
        m = kernel._module(0)
        ib, ob = m.buffers()
        for b, x in zip(ib, xs):
            b.ptr = x.data_ptr()
        ob[0].ptr = y.data_ptr()
        stream = torch.cuda.current_stream().cuda_stream
        run = _capi.runtime.fusec_module_run
        h, ni, no = m.h, len(xs), 1
        c_us = per_call_us(lambda: run(h, stream, ib, ni, ob, no), args.calls)
        row = {"graph": name, "python_us": python_us, "c_api_us": c_us,
               "overhead_us": python_us - c_us}
        line = (f"{name:<32} python {python_us:6.2f} us/call   C API (ctypes) "
                f"{c_us:6.2f} us/call   overhead {python_us - c_us:6.2f} us")
        # With intermediates: the module's own workspaces (a capture check,
        # an event recorded and waited on per call) against the caller's
        # workspace (none of that), the C API both times.
        nbytes = _capi.runtime.fusec_module_workspace_bytes(h)
        if nbytes:
            ws = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            wb = _capi.Buffer(ws.data_ptr(), nbytes)
            with_ws = _capi.runtime.fusec_module_run_with_workspace
            ws_us = per_call_us(
                lambda: with_ws(h, stream, ib, ni, ob, no, wb), args.calls)
            row["c_api_callers_workspace_us"] = ws_us
            line += (f"   C API, caller's workspace {ws_us:6.2f} us/call "
                     f"(workspace management {c_us - ws_us:5.2f} us)")
        rows.append(row)
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fusec": fusec.version(), "gpu": torch.cuda.get_device_name(),
                       "calls": args.calls, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
