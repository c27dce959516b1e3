"""One kernel run at once on several streams and threads, captured into a
CUDA graph on its first call, and called with an output over an input
(docs/Runtime.md), on a GPU with PyTorch (skipped without one).

The graph is a GPT-2-small decoder block (8 x 512 tokens, 768 features, 12
heads, a 3072-wide FFN): 69 MB of intermediates, kernels long enough for
runs on two streams to overlap. fusec's kernels are deterministic, so a
result must match the same call made alone bit for bit.

    python3 -m unittest discover -s python/tests -p 'test_concurrency.py' -v
"""

import threading
import unittest

import fusec

ROUNDS = 8
THREADS = 4


def _gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def gpt_block(b=8, s=512, d=768, h=12, f=3072, t="bf16"):
    """Pre-norm decoder block with rotary embeddings and causal attention."""
    hd = d // h

    def T(*dims):
        return "tensor<" + "x".join(map(str, dims)) + "x%s>" % t

    X, V = T(b, s, d), T(d)
    return f"""func.func @gpt_block(%x: {X}, %ln1_g: {V}, %ln1_b: {V},
    %wq: {T(d, d)}, %wk: {T(d, d)}, %wv: {T(d, d)}, %wo: {T(d, d)},
    %cos: {T(s, hd // 2)}, %sin: {T(s, hd // 2)}, %ln2_g: {V}, %ln2_b: {V},
    %w1: {T(f, d)}, %b1: {T(f)}, %w2: {T(d, f)}, %b2: {V}) -> {X} {{
  %h = fuse.layer_norm %x scale(%ln1_g : {V}) shift(%ln1_b : {V}) : {X}
  %q0 = fuse.linear %h, %wq : {X}, {T(d, d)}
  %k0 = fuse.linear %h, %wk : {X}, {T(d, d)}
  %v0 = fuse.linear %h, %wv : {X}, {T(d, d)}
  %q1 = fuse.reshape %q0 : {X} to {T(b, s, h, hd)}
  %k1 = fuse.reshape %k0 : {X} to {T(b, s, h, hd)}
  %v1 = fuse.reshape %v0 : {X} to {T(b, s, h, hd)}
  %q2 = fuse.transpose %q1 {{permutation = array<i64: 0, 2, 1, 3>}} : {T(b, s, h, hd)}
  %k2 = fuse.transpose %k1 {{permutation = array<i64: 0, 2, 1, 3>}} : {T(b, s, h, hd)}
  %v2 = fuse.transpose %v1 {{permutation = array<i64: 0, 2, 1, 3>}} : {T(b, s, h, hd)}
  %q = fuse.rope %q2, %cos, %sin : {T(b, h, s, hd)}, {T(s, hd // 2)}
  %k = fuse.rope %k2, %cos, %sin : {T(b, h, s, hd)}, {T(s, hd // 2)}
  %a = fuse.attention %q, %k, %v2 {{causal}} : {T(b, h, s, hd)}, {T(b, h, s, hd)}, {T(b, h, s, hd)}
  %a1 = fuse.transpose %a {{permutation = array<i64: 0, 2, 1, 3>}} : {T(b, h, s, hd)}
  %a2 = fuse.reshape %a1 : {T(b, s, h, hd)} to {X}
  %o = fuse.linear %a2, %wo : {X}, {T(d, d)}
  %r1 = fuse.add %x, %o : {X}, {X}
  %h2 = fuse.layer_norm %r1 scale(%ln2_g : {V}) shift(%ln2_b : {V}) : {X}
  %f1 = fuse.linear %h2, %w1, %b1 : {X}, {T(f, d)}, {T(f)}
  %f2 = fuse.gelu %f1 {{approximate = #fuse.gelu_approx<tanh>}} : {T(b, s, f)}
  %f3 = fuse.linear %f2, %w2, %b2 : {T(b, s, f)}, {T(d, f)}, {V}
  %r2 = fuse.add %r1, %f3 : {X}, {X}
  return %r2 : {X}
}}
"""


@unittest.skipUnless(_gpu(), "needs PyTorch and a CUDA GPU")
class ConcurrencyGPUTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = gpt_block()
        cls.kernel = fusec.compile(cls.text, name="gpt_block")

    def inputs(self, seed):
        """Random inputs of the block (weights scaled to keep it finite)."""
        import torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        sig, _ = self.kernel.signature()
        out = []
        for shape, _ in sig:
            scale = 1.0 / shape[-1] ** 0.5 if len(shape) == 2 else 1.0
            out.append((torch.rand(shape, generator=g, device="cuda") * 2 - 1)
                       .mul_(scale).bfloat16())
        return out

    def alone(self, kernel, inputs):
        """The result of a call with nothing else running."""
        import torch
        torch.cuda.synchronize()
        y = kernel(*inputs)
        torch.cuda.synchronize()
        return y

    def enqueue_on_two_streams(self, kernel, a, b, **kwargs):
        """ROUNDS calls with inputs `a` on one stream and `b` on another,
        interleaved, nothing waited for in between."""
        import torch
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        ya = [torch.empty_like(a[0]) for _ in range(ROUNDS)]
        yb = [torch.empty_like(a[0]) for _ in range(ROUNDS)]
        torch.cuda.synchronize()
        for r in range(ROUNDS):
            with torch.cuda.stream(s1):
                kernel(*a, out=ya[r], **kwargs)
            with torch.cuda.stream(s2):
                kernel(*b, out=yb[r], **kwargs)
        torch.cuda.synchronize()
        return ya, yb

    def test_two_streams_match_one(self):
        import torch
        # A Kernel of its own (from the memory cache), so that its workspaces
        # are only this test's.
        kernel = fusec.compile(self.text, name="gpt_block")
        a, b = self.inputs(1), self.inputs(2)
        ra, rb = self.alone(kernel, a), self.alone(kernel, b)
        self.assertFalse(torch.equal(ra, rb))
        ya, yb = self.enqueue_on_two_streams(kernel, a, b)
        for r in range(ROUNDS):
            self.assertTrue(torch.equal(ya[r], ra), "stream 1, round %d" % r)
            self.assertTrue(torch.equal(yb[r], rb), "stream 2, round %d" % r)
        memory = kernel.memory()
        self.assertGreater(memory["workspace_bytes"], 60 << 20)
        # The default stream's, and at most one more per stream at once.
        self.assertLessEqual(memory["workspaces"], 3)

    def test_one_shared_workspace_races(self):
        """The check above can fail: with one caller workspace for both
        streams (the runtime's behaviour before workspaces), the same
        calls give wrong numbers."""
        import torch
        a, b = self.inputs(1), self.inputs(2)
        ra, rb = self.alone(self.kernel, a), self.alone(self.kernel, b)
        workspace = torch.empty(self.kernel.memory()["workspace_bytes"],
                                dtype=torch.uint8, device="cuda")
        ya, yb = self.enqueue_on_two_streams(self.kernel, a, b,
                                             workspace=workspace)
        wrong = sum(not torch.equal(y, r) for y, r in
                    [(y, ra) for y in ya] + [(y, rb) for y in yb])
        self.assertGreater(wrong, 0, "runs sharing one workspace on two "
                           "streams did not interfere: the test above "
                           "cannot see a race on this GPU")

    def test_threads_on_their_own_streams(self):
        import torch
        inputs = [self.inputs(10 + t) for t in range(THREADS)]
        refs = [self.alone(self.kernel, x) for x in inputs]
        errors = []
        start = threading.Barrier(THREADS)

        def body(t):
            try:
                stream = torch.cuda.Stream()
                ys = [torch.empty_like(refs[t]) for _ in range(ROUNDS)]
                start.wait()
                with torch.cuda.stream(stream):
                    for y in ys:
                        self.kernel(*inputs[t], out=y)
                stream.synchronize()
                for r, y in enumerate(ys):
                    if not torch.equal(y, refs[t]):
                        errors.append("thread %d round %d differs" % (t, r))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append("thread %d: %r" % (t, e))

        threads = [threading.Thread(target=body, args=(t,))
                   for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertLessEqual(self.kernel.memory()["workspaces"],
                             fusec.DEFAULT_MAX_WORKSPACES)

    def test_first_call_inside_a_cuda_graph_capture(self):
        import torch
        a, b = self.inputs(3), self.inputs(4)
        ra, rb = self.alone(self.kernel, a), self.alone(self.kernel, b)
        # A new Kernel (from the memory cache): not loaded on the GPU yet.
        fresh = fusec.compile(self.text, name="gpt_block")
        x = [t.clone() for t in a]
        y = torch.empty_like(ra)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fresh(*x, out=y)
        graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y, ra))
        # Replays read the inputs' memory as it is then.
        for t, u in zip(x, b):
            t.copy_(u)
        graph.replay()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y, rb))
        # A replay and an eager call on another stream at once: the graph's
        # intermediates are its own.
        stream = torch.cuda.Stream()
        z = torch.empty_like(ra)
        torch.cuda.synchronize()
        for _ in range(ROUNDS):
            graph.replay()
            with torch.cuda.stream(stream):
                fresh(*a, out=z)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y, rb))
        self.assertTrue(torch.equal(z, ra))

    def test_output_over_an_input_is_refused(self):
        import torch
        a = self.inputs(5)
        with self.assertRaisesRegex(fusec.Error, r"output 0 \[0x[0-9a-f]+, "
                                    r"\+6291456 bytes\) overlaps input 0"):
            self.kernel(*a, out=a[0])
        # A view that starts inside the input.
        big = torch.empty(a[0].numel() * 2, dtype=torch.bfloat16,
                          device="cuda")
        x = big[:a[0].numel()].view(a[0].shape)
        x.copy_(a[0])
        y = big[a[0].numel() // 2:][:a[0].numel()].view(a[0].shape)
        with self.assertRaisesRegex(fusec.Error, "overlaps input 0"):
            self.kernel(x, *a[1:], out=y)


if __name__ == "__main__":
    unittest.main()
