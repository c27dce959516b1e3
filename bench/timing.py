"""Timing shared by bench/bench.py and bench/training.py (PyTorch is passed
in: importing this needs none).

The method: CUDA events around `inner` back-to-back calls (host launch
overhead hides behind the GPU, for every contender alike), the median of
`reps` such measurements after a warm-up; the contenders of a row take turns
over rounds, each keeping its best median, each round starting one
contender later and each turn after an idle moment (so that none always
inherits the clocks a heavy predecessor left); when a row's tensors fit in
L2, several copies of them rotate.
"""
import time


def median_ms(torch, fns, reps, inner, warm, cuda=True):
    """Median ms per call of fns[i % len(fns)] called back to back: `warm`
    calls, then `reps` measurements of `inner` calls each, between CUDA
    events (with cuda=False, the wall clock)."""
    for i in range(warm):
        fns[i % len(fns)]()
    if cuda:
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if cuda:
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            for i in range(inner):
                fns[i % len(fns)]()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / inner)
        else:
            s = time.perf_counter()
            for i in range(inner):
                fns[i % len(fns)]()
            ts.append((time.perf_counter() - s) * 1e3 / inner)
    ts.sort()
    return ts[len(ts) // 2]


def take_turns(contenders, measure, rounds, sync, idle_s=0.1, catch=False):
    """({name: best of measure(fns) over the rounds, or None}, {name:
    exception}) for {name: fns, or None (absent)}: round r starts with the
    r-th contender; each turn syncs and idles `idle_s` first. With catch, a
    contender that raises drops out with its exception; without, it
    propagates."""
    best = {name: None for name in contenders}
    errors = {}
    names = list(contenders)
    for r in range(rounds):
        k = r % max(len(names), 1)
        for name in names[k:] + names[:k]:
            fns = contenders[name]
            if fns is None or name in errors:
                continue
            try:
                sync()
                if idle_s:
                    time.sleep(idle_s)
                ms = measure(fns)
            except Exception as e:  # noqa: BLE001 - the caller's n/a
                if not catch:
                    raise
                errors[name] = e
                continue
            best[name] = ms if best[name] is None else min(best[name], ms)
    return best, errors


def copies(nbytes, l2):
    """How many copies of a working set of `nbytes` rotate past an L2 of
    `l2` bytes."""
    return max(1, min(8, -(-3 * l2 // max(nbytes, 1))))


def cuda_graph(torch, step, warm=3):
    """(replay, outputs): `step()` captured in a CUDA graph, and what the
    captured call returned (static tensors of the graph's pool, which each
    replay writes again); a replay reads the tensors `step` reads where they
    were at capture.

    What whole-network capture needs (PyTorch's "CUDA Graphs" notes): a
    warm-up on a side stream first (cuDNN's benchmark search, the lazy
    initializations, the allocator's first blocks: none of it may fall in
    the capture), then the capture on the same stream. A `step` that
    differentiates must find no autograd graph alive over its leaves: such a
    graph holds the leaves' AccumulateGrad nodes, with the stream they were
    made on (the default one, usually), and every later backward, the
    captured one included, then waits on that stream, which breaks the
    capture ("operation failed due to a previous error during capture")."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        outputs = step()
    return graph.replay, outputs
