#!/usr/bin/env python3
"""Where a cached compile's time goes: torch.compile(model, backend="fusec")
compiled once into a fresh kernel cache, then again from that cache (the
in-memory cache cleared, dynamo reset) under cProfile.

    python3 bench/compile_profile.py --models resnet50,mobilenet_v2 [--device cuda]

Prints, per model, the wall time of the cached compile (first call
included) and the cumulative time of the functions that take most of it.
"""

import argparse
import cProfile
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models as tm  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="resnet50,mobilenet_v2")
    p.add_argument("--device", default="cuda")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--out", default=None, help="a directory for .prof files")
    a = p.parse_args()
    import fusec
    import fusec.torch  # noqa: F401 - registers the backend
    for name in a.models.split(","):
        model, args, _ = tm.make(name, a.device, a.quick)
        model = model.to(a.device).eval()
        args = tuple(x.to(a.device) for x in args)
        with torch.no_grad(), torch.autocast(a.device, dtype=torch.bfloat16):
            tm._fresh_cache()
            _, cold = tm._compile_fusec(model, args, a.device, {})
            fusec.clear_memory_cache()
            _, warm = tm._compile_fusec(model, args, a.device, {})
            fusec.clear_memory_cache()
            prof = cProfile.Profile()
            t = time.perf_counter()
            prof.enable()
            tm._compile_fusec(model, args, a.device, {})
            prof.disable()
            profiled = time.perf_counter() - t
        print("== %s: cold %.2f s, cached %.2f s, cached under cProfile "
              "%.2f s" % (name, cold, warm, profiled))
        st = pstats.Stats(prof)
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            st.dump_stats(os.path.join(a.out, name + ".prof"))
        st.sort_stats("cumulative").print_stats(a.top)


if __name__ == "__main__":
    main()
