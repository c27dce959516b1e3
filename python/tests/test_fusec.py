"""Tests of the Python module. The CPU ones (import, graph builder,
compilation, the cache, errors, the reference interpreter on NumPy) run
everywhere; the GPU ones need PyTorch with a CUDA device and skip without.

    python3 -m unittest discover -s python/tests -v
"""

import os
import tempfile
import unittest

import numpy as np

import fusec

RELU = """func.func @relu(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = fuse.relu %x : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
"""


def _gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def _layer_norm(x, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


class CPUTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.TemporaryDirectory()
        fusec.clear_memory_cache()

    def tearDown(self):
        self.cache.cleanup()

    def test_installed_copy(self):
        # The lit test installs the wheel and checks that it is what runs.
        where = os.environ.get("FUSEC_EXPECT_INSTALLED_IN")
        if where:
            self.assertTrue(os.path.realpath(fusec.__file__).startswith(
                os.path.realpath(where)), fusec.__file__)
            self.assertTrue(os.path.exists(os.path.join(
                os.path.dirname(fusec.__file__), "libfusec_jit.so")))

    def test_version(self):
        self.assertRegex(fusec.version(), r"^\d+\.\d+\.\d+")

    def test_builder_shapes_and_text(self):
        g = fusec.Graph("block")
        x = g.input([1, 7, 9, 16], "bf16")
        w = g.input([8, 3, 3, 16], "bf16")
        y = g.relu(g.conv2d(x, w, padding=[1, 1]))
        self.assertEqual(y.shape, (1, 7, 9, 8))
        g.output(y)
        text = g.mlir()
        self.assertIn("func.func @block", text)
        self.assertIn("fuse.conv2d", text)

    def test_builder_error_names_the_op(self):
        g = fusec.Graph()
        a = g.input([4, 8], "f32")
        b = g.input([5, 8], "f32")
        with self.assertRaises(fusec.Error) as e:
            g.add(a, b)
        self.assertIn("add", str(e.exception))

    def test_builder_rejects_foreign_values(self):
        g, h = fusec.Graph(), fusec.Graph()
        x = h.input([4], "f32")
        with self.assertRaises(TypeError):
            g.relu(x)

    def test_compile_and_cache(self):
        k = fusec.compile(RELU, arch="sm_90", cache_dir=self.cache.name)
        self.assertEqual(k.source, "compiled")
        self.assertIn('"kind":"ptx"', k.artifact.replace(" ", ""))
        again = fusec.compile(RELU, arch="sm_90", cache_dir=self.cache.name)
        self.assertEqual(again.source, "memory cache")
        self.assertEqual(again.artifact, k.artifact)
        fusec.clear_memory_cache()
        disk = fusec.compile(RELU, arch="sm_90", cache_dir=self.cache.name)
        self.assertEqual(disk.source, "disk cache")
        self.assertEqual(disk.artifact, k.artifact)

    def test_cuda_backend(self):
        k = fusec.compile(RELU, arch="sm_90", backend="cuda", cache=False)
        self.assertIn('"kind":"cuda"', k.artifact.replace(" ", ""))
        self.assertIn("__global__", k.artifact)

    def test_compile_errors_are_located(self):
        bad = RELU.replace("%y = fuse.relu %x : tensor<3x5xf32>",
                           "%y = fuse.relu %x : tensor<3x6xf32>")
        with self.assertRaises(fusec.Error) as e:
            fusec.compile(bad, name="bad.mlir", cache=False)
        self.assertRegex(str(e.exception), r"^bad\.mlir:2:\d+: error:")

    def test_bad_options(self):
        with self.assertRaises(fusec.Error) as e:
            fusec.compile(RELU, arch="sm_90", backend="metal", cache=False)
        self.assertIn("backend", str(e.exception))
        with self.assertRaises(fusec.Error) as e:
            fusec.compile(RELU, arch="sm_99", cache=False)
        self.assertIn("sm_99", str(e.exception))

    def test_tile_override(self):
        g = fusec.Graph("mm")
        a = g.input([64, 128], "bf16")
        w = g.input([96, 128], "bf16")
        g.output(g.linear(a, w))
        with self.assertRaises(fusec.Error) as e:
            fusec.compile(g, arch="sm_90", cache=False,
                          tiles={"k9_nothing": "#fuse.tile<bm = 64>"})
        self.assertIn("k0_linear", str(e.exception))
        tile = ("#fuse.tile<bm = 64, bn = 32, bk = 32, tm = 0, tn = 0, "
                "warps_m = 2, warps_n = 1, stages = 2>")
        k = fusec.compile(g, arch="sm_90", cache=False,
                          tiles={"k0_linear": tile})
        self.assertIn("bm = 64, bn = 32", k.artifact)

    def test_compile_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".mlir",
                                         delete=False) as f:
            f.write(RELU)
        try:
            k = fusec.compile_file(f.name, arch="sm_90", cache=False)
            self.assertTrue(k.artifact.startswith("// fusec artifact"))
        finally:
            os.unlink(f.name)
        with self.assertRaises(fusec.Error):
            fusec.compile_file("/nonexistent/graph.mlir", cache=False)

    def test_reference_relu(self):
        x = np.random.default_rng(0).standard_normal((3, 5))
        (y,) = fusec.reference(RELU, x)
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_array_equal(y, np.maximum(x.astype(np.float32), 0))

    def test_reference_layer_norm_f16(self):
        g = fusec.Graph()
        x = g.input([4, 33], "f16")
        g.output(g.layer_norm(x))
        data = np.random.default_rng(1).standard_normal((4, 33))
        (y,) = fusec.reference(g, data)
        self.assertEqual(y.dtype, np.float16)
        expect = _layer_norm(data.astype(np.float16).astype(np.float64))
        self.assertLess(np.abs(y - expect).max(), 4e-3)

    def test_reference_errors(self):
        with self.assertRaises(fusec.Error) as e:
            fusec.reference(RELU)
        self.assertIn("takes 1 inputs", str(e.exception))
        with self.assertRaises(fusec.Error) as e:
            fusec.reference(RELU, np.zeros((5, 3)))
        self.assertIn("shape", str(e.exception))

    def test_tolerance(self):
        self.assertEqual(fusec.tolerance("bf16"), 3e-2)
        self.assertEqual(fusec.tolerance("f32", "tf32"), 5e-3)

    def test_not_a_gpu_tensor(self):
        k = fusec.compile(RELU, arch="sm_90", cache=False)
        with self.assertRaises(TypeError) as e:
            k(np.zeros((3, 5), np.float32))
        self.assertIn("fusec.reference", str(e.exception))


@unittest.skipUnless(_gpu(), "needs PyTorch with a CUDA device")
class GPUTest(unittest.TestCase):
    def test_conv_bf16_matches_reference(self):
        import torch
        g = fusec.Graph("conv")
        x = g.input([2, 13, 11, 24], "bf16")
        w = g.input([40, 3, 3, 24], "bf16")
        g.output(g.relu(g.conv2d(x, w, padding=[1, 1])))
        for backend in ("ptx", "cuda"):
            k = fusec.compile(g, backend=backend)
            xs = torch.randn(2, 13, 11, 24, device="cuda").bfloat16()
            ws = torch.randn(40, 3, 3, 24, device="cuda").bfloat16()
            y = k(xs, ws)
            (ref,) = fusec.reference(g, xs.float().cpu().numpy(),
                                     ws.float().cpu().numpy())
            err = np.linalg.norm(y.float().cpu().numpy() - ref) / \
                np.linalg.norm(ref)
            self.assertLess(err, fusec.tolerance("bf16"), backend)

    def test_out_and_stream(self):
        import torch
        k = fusec.compile(RELU)
        x = torch.randn(3, 5, device="cuda")
        y = torch.full((3, 5), float("nan"), device="cuda")
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            x2 = x * 1  # ordered on s
            self.assertIs(k(x2, out=y), y)
        s.synchronize()
        torch.testing.assert_close(y, torch.relu(x))
        y2 = torch.empty(3, 5, device="cuda")
        k(x, out=[y2], stream=torch.cuda.current_stream())
        torch.cuda.synchronize()
        torch.testing.assert_close(y2, torch.relu(x))

    def test_wrong_shape_dtype_layout(self):
        import torch
        k = fusec.compile(RELU)
        with self.assertRaises(TypeError) as e:
            k(torch.zeros(5, 3, device="cuda"))
        self.assertIn("3x5 f32", str(e.exception))
        with self.assertRaises(TypeError):
            k(torch.zeros(3, 5, device="cuda").half())
        with self.assertRaises(TypeError):
            k(torch.zeros(5, 3, device="cuda").t())
        with self.assertRaises(TypeError):
            k(torch.zeros(3, 5))

    def test_dlpack_consumer(self):
        import torch

        class Opaque:  # only __dlpack__, as JAX arrays are
            def __init__(self, t):
                self.t = t

            def __dlpack__(self, stream=None):
                return self.t.__dlpack__()

            def __dlpack_device__(self):
                return self.t.__dlpack_device__()

        k = fusec.compile(RELU)
        x = torch.randn(3, 5, device="cuda")
        y = torch.empty(3, 5, device="cuda")
        k(Opaque(x), out=Opaque(y), stream=0)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, torch.relu(x))


if __name__ == "__main__":
    unittest.main()
