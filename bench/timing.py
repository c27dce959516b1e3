"""Timing shared by bench/bench.py and bench/training.py (PyTorch is passed
in: importing this needs none)."""


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
