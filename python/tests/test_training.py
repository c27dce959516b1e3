"""Training steps from Python (docs/Training.md): fusec.compile(...,
train=True), the CPU reference of the step (in CI), and forward/backward on
a GPU (PyTorch with a CUDA device; skipped without).

    python3 -m unittest discover -s python/tests -p test_training.py -v
"""

import unittest

import numpy as np

import fusec

# The forward returns its arguments, %x twice: the backward sums %x's two
# gradients. No gradient rule is involved.
PAIR = """func.func @f(%x: tensor<4xf32>, %y: tensor<3xf32>) -> (tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) {
  return %x, %y, %x : tensor<4xf32>, tensor<3xf32>, tensor<4xf32>
}
"""

# relu(x * w): the rules of mul and relu (GradientOpInterface).
LAYER = """func.func @layer(%x: tensor<3x5xf32>, %w: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %p = fuse.mul %x, %w : tensor<3x5xf32>, tensor<3x5xf32>
  %y = fuse.relu %p : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
"""

# relu(a @ b): relu's rule reads its result, which is the graph's result:
# the backward reads it where the caller holds it (forward_results).
RESULT_READ = """func.func @mm(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %m = fuse.matmul %a, %b : tensor<3x4xf32>, tensor<4x5xf32>
  %y = fuse.relu %m : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
"""


def _gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def _compile_or_skip(test, text, **options):
    """compile(train=True), skipping where an op's gradient rule is not
    there yet."""
    try:
        return fusec.compile(text, train=True, cache=False, **options)
    except fusec.Error as e:
        if "has no gradient rule" in str(e):
            test.skipTest("no gradient rule yet: %s" % e)
        raise


class TrainingCompileTest(unittest.TestCase):
    def test_training_artifact_holds_both_plans(self):
        k = fusec.compile(PAIR, train=True, arch="sm_90", cache=False)
        self.assertIsInstance(k, fusec.TrainingKernel)
        plans = [line for line in k.artifact.splitlines()
                 if line.startswith("// fusec-plan: ")]
        self.assertEqual(len(plans), 2)
        self.assertIn('"role":"forward"', plans[0])
        self.assertIn('"role":"backward"', plans[1])
        self.assertIn('"kernel":"bwd_k0_add"', plans[1])
        self.assertIn(".entry bwd_k0_add(", k.artifact)

    def test_backward_reads_a_result_instead_of_saving_it(self):
        k = fusec.compile(RESULT_READ, train=True, arch="sm_90", cache=False)
        plans = [line for line in k.artifact.splitlines()
                 if line.startswith("// fusec-plan: ")]
        self.assertIn('"forward_results":[0]', plans[1])
        self.assertIn('"num_saved":0', plans[1])
        self.assertNotIn('"kind":"copy"', plans[0])

    def test_wrt_and_cache(self):
        k = fusec.compile(PAIR, train=True, wrt=[1], arch="sm_90",
                          cache=False)
        self.assertIn('"wrt":[1]', k.artifact)
        # Training and inference artifacts of one graph are cached apart.
        plain = fusec.compile(PAIR, arch="sm_90")
        trained = fusec.compile(PAIR, train=True, arch="sm_90")
        self.assertIsInstance(plain, fusec.Kernel)
        self.assertIsInstance(trained, fusec.TrainingKernel)
        self.assertNotEqual(plain.artifact, trained.artifact)

    def test_deterministic(self):
        attn = """func.func @a(%q: tensor<1x2x70x64xbf16>, %k: tensor<1x2x300x64xbf16>, %v: tensor<1x2x300x64xbf16>) -> tensor<1x2x70x64xbf16> {
  %o = fuse.attention %q, %k, %v : tensor<1x2x70x64xbf16>, tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>
  return %o : tensor<1x2x70x64xbf16>
}
"""
        # The ordered dQ: counters beside the accumulator, spun on by an
        # atomic (sm_90a); the direct family's backward on sm_90.
        fast = fusec.compile(attn, train=True, arch="sm_90a", cache=False)
        det = fusec.compile(attn, train=True, deterministic=True,
                            arch="sm_90a", cache=False)
        self.assertNotIn("atom.global.or.b32", fast.artifact)
        self.assertIn("atom.global.or.b32", det.artifact)
        self.assertIn("attention_grad_wgmma", det.artifact)
        sm90 = fusec.compile(attn, train=True, deterministic=True,
                             arch="sm_90", cache=False)
        self.assertNotIn("attention_grad_mma_sync", sm90.artifact)
        self.assertIn("attention_direct", sm90.artifact)

    def test_errors(self):
        with self.assertRaisesRegex(TypeError, "needs train=True"):
            fusec.compile(PAIR, wrt=[0])
        with self.assertRaisesRegex(TypeError, "needs train=True"):
            fusec.compile(PAIR, deterministic=True)
        with self.assertRaisesRegex(TypeError, "wrt must list"):
            fusec.compile(PAIR, train=True, wrt=["x"])
        with self.assertRaisesRegex(fusec.Error,
                                    r"argument #7 does not exist; @f has 2"):
            fusec.compile(PAIR, train=True, wrt=[7], arch="sm_90",
                          cache=False)
        norule = """func.func @s(%x: tensor<4x6xf32>) -> tensor<4xf32> {
  %0 = fuse.reduce_sum %x {axes = array<i64: 1>} : tensor<4x6xf32>
  return %0 : tensor<4xf32>
}
"""
        with self.assertRaisesRegex(fusec.Error,
                                    "fuse.reduce_sum has no gradient rule"):
            fusec.compile(norule, train=True, arch="sm_90", cache=False)


class TrainingReferenceTest(unittest.TestCase):
    def test_reference_step(self):
        x, y = np.arange(4.0), np.arange(3.0) - 1
        g = [np.full(4, 0.5), np.full(3, 2.0), np.full(4, 0.25)]
        r = fusec.reference_training(PAIR, [x, y], g)
        np.testing.assert_array_equal(r["results"][0], x)
        np.testing.assert_array_equal(r["results"][1], y)
        self.assertEqual(r["wrt"], [0, 1])
        self.assertEqual(r["saved"], [])
        np.testing.assert_array_equal(r["gradients"][0], np.full(4, 0.75))
        np.testing.assert_array_equal(r["gradients"][1], np.full(3, 2.0))
        # A result the loss does not use has no gradient: None is zeros.
        r = fusec.reference_training(PAIR, [x, y], [None, g[1], g[2]],
                                     wrt=[0])
        self.assertEqual(r["wrt"], [0])
        np.testing.assert_array_equal(r["gradients"][0], np.full(4, 0.25))
        self.assertIsNone(r["gradients"][1])

    def test_cpu_forward_backward(self):
        k = fusec.compile(PAIR, train=True, arch="sm_90")
        step = k.cpu()
        x, y = np.arange(4.0), np.arange(3.0)
        outs = step.forward(x, y)
        self.assertEqual(len(outs), 3)
        dx, dy = step.backward(np.ones(4), np.ones(3), np.ones(4))
        np.testing.assert_array_equal(dx, np.full(4, 2.0))
        np.testing.assert_array_equal(dy, np.ones(3))
        with self.assertRaisesRegex(TypeError, "backward before forward"):
            k.cpu().backward(np.ones(4), np.ones(3), np.ones(4))

    def test_reference_errors(self):
        with self.assertRaisesRegex(fusec.Error,
                                    "the graph takes 3 result gradients, 1 "
                                    "were given"):
            fusec.reference_training(PAIR, [np.zeros(4), np.zeros(3)],
                                     [np.zeros(4)])

    def test_layer_gradients(self):
        # relu(x * w): dx = g * w * (x * w > 0), dw = g * x * (x * w > 0).
        k = _compile_or_skip(self, LAYER, arch="sm_90")
        rng = np.random.default_rng(0)
        x, w, g = (rng.standard_normal((3, 5)) for _ in range(3))
        (y,), (dx, dw) = k.reference(x, w, grads=[g])
        x32, w32, g32 = (a.astype(np.float32).astype(np.float64)
                         for a in (x, w, g))
        mask = (x32 * w32) > 0
        np.testing.assert_allclose(y, np.maximum(x32 * w32, 0), rtol=1e-6)
        np.testing.assert_allclose(dx, g32 * w32 * mask, rtol=1e-6)
        np.testing.assert_allclose(dw, g32 * x32 * mask, rtol=1e-6)


@unittest.skipUnless(_gpu(), "needs PyTorch with a CUDA device")
class TrainingGpuTest(unittest.TestCase):
    def test_pair_on_the_gpu(self):
        import torch
        k = fusec.compile(PAIR, train=True)
        x = torch.arange(4.0, device="cuda")
        y = torch.arange(3.0, device="cuda")
        a, b, c = k.forward(x, y)
        torch.testing.assert_close(a, x)
        torch.testing.assert_close(c, x)
        dx, dy = k.backward(torch.ones(4, device="cuda"),
                            torch.full((3,), 2.0, device="cuda"),
                            torch.ones(4, device="cuda"))
        torch.testing.assert_close(dx, torch.full((4,), 2.0, device="cuda"))
        torch.testing.assert_close(dy, torch.full((3,), 2.0, device="cuda"))

    def test_layer_against_the_reference(self):
        import torch
        k = _compile_or_skip(self, LAYER)
        x, w, g = (torch.randn(3, 5, device="cuda") for _ in range(3))
        step = k.step()
        y = step.forward(x, w)
        dx, dw = step.backward(g)
        torch.cuda.synchronize()
        (ry,), (rdx, rdw) = k.reference(*(t.cpu().numpy() for t in (x, w)),
                                        grads=[g.cpu().numpy()])
        for got, want in ((y, ry), (dx, rdx), (dw, rdw)):
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5,
                                       atol=1e-6)

    def test_backward_reads_the_result(self):
        import torch
        k = fusec.compile(RESULT_READ, train=True)
        a = torch.randn(3, 4, device="cuda")
        b = torch.randn(4, 5, device="cuda")
        g = torch.randn(3, 5, device="cuda")
        step = k.step()
        y = step.forward(a, b)
        da, db = step.backward(g)
        torch.cuda.synchronize()
        (ry,), (rda, rdb) = k.reference(a.cpu().numpy(), b.cpu().numpy(),
                                        grads=[g.cpu().numpy()])
        for got, want in ((y, ry), (da, rda), (db, rdb)):
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-4,
                                       atol=1e-5)
        self.assertEqual(k.signature()["forward_results"], [0])
        # The step keeps the result alive, and refuses it changed.
        y.mul_(2)
        with self.assertRaisesRegex(RuntimeError, "result 0 of the forward "
                                    "was modified in place"):
            step.backward(g)

    def test_fast_and_general_paths_agree(self):
        # Plain tensors and parameters on the current stream take the fast
        # path; a stream given, a non-contiguous tensor or a missing
        # gradient the general one. Same results, same errors.
        import torch
        k = _compile_or_skip(self, LAYER)
        x = torch.randn(3, 5, device="cuda")
        w = torch.nn.Parameter(torch.randn(3, 5, device="cuda"))
        g = torch.randn(3, 5, device="cuda")
        fast = k.step()
        y = fast.forward(x, w)
        dx, dw = fast.backward(g)
        general = k.step()
        s = torch.cuda.current_stream()
        y2 = general.forward(x, w, stream=s)
        dx2, dw2 = general.backward(g, stream=s)
        for a, b in ((y, y2), (dx, dx2), (dw, dw2)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        dx3, _ = fast.backward(None)
        torch.testing.assert_close(dx3, torch.zeros_like(dx3))
        with self.assertRaisesRegex(TypeError, "not row-major"):
            fast.backward(torch.zeros(5, 3, device="cuda").t())
        with self.assertRaisesRegex(TypeError, "argument 1 is 3x5 f16"):
            fast.forward(x, w.detach().half())
        with self.assertRaisesRegex(TypeError, "on cpu"):
            fast.forward(x, w.detach().cpu())

    def test_autograd_function(self):
        # The shape of the PyTorch issue's wrapper: one step per call.
        import torch
        k = _compile_or_skip(self, LAYER)

        class Layer(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.step = k.step()
                return ctx.step.forward(x, w)

            @staticmethod
            def backward(ctx, g):
                return ctx.step.backward(g.contiguous())

        x = torch.randn(3, 5, device="cuda", requires_grad=True)
        w = torch.randn(3, 5, device="cuda", requires_grad=True)
        Layer.apply(x, w).sum().backward()
        xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
        torch.relu(xr * wr).sum().backward()
        torch.testing.assert_close(x.grad, xr.grad)
        torch.testing.assert_close(w.grad, wr.grad)


if __name__ == "__main__":
    unittest.main()
