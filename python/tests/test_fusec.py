"""Tests of the Python module. The CPU ones (import, graph builder,
compilation, the cache, errors, the reference interpreter on NumPy) run
everywhere; the GPU ones need PyTorch with a CUDA device and skip without.

    python3 -m unittest discover -s python/tests -v
"""

import ctypes
import os
import re
import tempfile
import textwrap
import unittest

import numpy as np

import fusec
from fusec import _capi

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


class BuilderTest(unittest.TestCase):
    """The graph builder: every op, attributes, errors, names."""

    def test_graph_stays_usable_after_an_error(self):
        g = fusec.Graph()
        a = g.input([4, 8], "f32")
        b = g.input([5, 8], "f32")
        with self.assertRaises(fusec.Error) as e:
            g.add(a, b)
        self.assertIn("add: ", str(e.exception))
        # The next call is built, and the next error is its own.
        y = g.relu(a)
        self.assertEqual(y.shape, (4, 8))
        with self.assertRaises(fusec.Error) as e:
            g.matmul(a, b)
        self.assertTrue(str(e.exception).startswith("matmul: "),
                        str(e.exception))
        self.assertNotIn("add", str(e.exception))
        g.output(y)
        self.assertNotIn("fuse.add", g.mlir())
        fusec.compile(g, arch="sm_90", cache=False)

    def test_op_docstring_example_runs(self):
        doc = textwrap.dedent(fusec.Graph.op.__doc__.split("\n\n", 1)[1])
        scope = {"fusec": fusec}
        exec(doc, scope)
        self.assertEqual(scope["y"].shape, (1, 16, 64))
        self.assertEqual(scope["z"].shape, (1, 16, 128))
        g = scope["g"]
        g.output(scope["z"])
        fusec.compile(g, arch="sm_90", cache=False)

    def test_op_attributes_with_or_without_braces(self):
        g = fusec.Graph()
        x = g.input([2, 3], "f32")
        for attributes in ("{axis = 1 : i64}", "axis = 1 : i64", " axis = 1 ",
                           "{axis = 1}"):
            self.assertEqual(g.op("fuse.concat", [x, x], attributes).shape,
                             (2, 6), attributes)
        self.assertEqual(g.op("concat", [x, x], "axis = 0").shape, (4, 3))
        with self.assertRaises(fusec.Error) as e:
            g.op("fuse.concat", [x, x], "axis = ")
        self.assertIn("are not an MLIR attribute dictionary", str(e.exception))
        with self.assertRaises(fusec.Error) as e:
            g.op("fuse.concat", [x, x], "axes = 1")
        self.assertIn("fuse.concat has no attribute 'axes'; its attributes "
                      "are axis", str(e.exception))
        with self.assertRaises(fusec.Error) as e:
            g.op("fuse.frobnicate", [x])
        self.assertIn("'fuse.frobnicate' is not an op of the fuse dialect",
                      str(e.exception))
        with self.assertRaises(TypeError):
            g.op("fuse.concat", [x, x], {"axis": 1})

    def test_every_op(self):
        rng = np.random.default_rng(3)
        g = fusec.Graph("every")
        qkv = g.input([4, 12], "f32")
        q, k, v = g.split(qkv, [4, 4, 4])
        self.assertEqual(v.shape, (4, 4))
        outs = [g.cast(q, "bf16"), g.sub(q, k), g.div(k, v), g.relu6(q),
                g.hardswish(q), g.clamp(q, -0.5, 0.25),
                g.leaky_relu(q, alpha=0.2), g.gelu(q, approximate="tanh"),
                g.concat([g.slice(qkv, [0, 2], [4, 3]), k], axis=1),
                g.scale_shift(q, g.input([4], "f32"), g.input([4], "f32")),
                g.bias_add(q, g.input([4], "f32"), axis=0)]
        self.assertEqual(outs[8].shape, (4, 7))
        img = g.input([1, 8, 8, 4], "f16")
        pooled = g.avg_pool2d(img, [2, 2], count_include_pad=False)
        self.assertEqual(pooled.shape, (1, 4, 4, 4))
        self.assertEqual(g.max_pool2d(img, [2, 2]).shape, (1, 4, 4, 4))
        self.assertEqual(g.global_avg_pool(img).shape, (1, 1, 1, 4))
        self.assertEqual(g.upsample(img, scale=[2, 2], mode="bilinear").shape,
                         (1, 16, 16, 4))
        self.assertEqual(g.upsample(img, size=[3, 5]).shape, (1, 3, 5, 4))
        x = g.input([1, 2, 8, 16], "bf16")
        cs = g.input([8, 8], "bf16")
        self.assertEqual(g.rope(x, cs, cs, interleaved=True).shape,
                         (1, 2, 8, 16))
        g.output(*outs)
        fusec.compile(g, arch="sm_90", cache=False)

        data = rng.standard_normal((4, 12))
        vecs = [rng.standard_normal(4) for _ in range(3)]
        img_data = np.zeros((1, 8, 8, 4))
        got = fusec.reference(g, data, *vecs, img_data,
                              np.zeros((1, 2, 8, 16)), np.zeros((8, 8)))
        d32 = data.astype(np.float32).astype(np.float64)
        q_, k_, v_ = d32[:, 0:4], d32[:, 4:8], d32[:, 8:12]
        tol = dict(rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[0], q_, rtol=1e-2)  # to bf16
        np.testing.assert_allclose(got[1], q_ - k_, **tol)
        np.testing.assert_allclose(got[2], k_ / v_, rtol=1e-5)
        np.testing.assert_allclose(got[3], np.clip(q_, 0, 6), **tol)
        np.testing.assert_allclose(got[5], np.clip(q_, -0.5, 0.25), **tol)
        np.testing.assert_allclose(got[6], np.where(q_ >= 0, q_, 0.2 * q_),
                                   **tol)
        np.testing.assert_allclose(
            got[8], np.concatenate([d32[:, 2:5], k_], axis=1), **tol)

    def test_graph_name_is_any_text(self):
        name = 'a "quoted" name with spaces,\nnewline, @ and }'
        g = fusec.Graph(name)
        g.output(g.relu(g.input([3, 5], "f32")))
        self.assertIn("func.func @\"a \\22quoted", g.mlir())
        for backend in ("ptx", "cuda"):
            k = fusec.compile(g, arch="sm_90", backend=backend, cache=False)
            plan = re.search(r"// fusec-plan: (.*)", k.artifact).group(1)
            import json
            self.assertEqual(json.loads(plan)["graph"], name)
        with self.assertRaises(fusec.Error) as e:
            fusec.Graph("")
        self.assertIn("the graph name is empty", str(e.exception))

    def test_c_builder_refuses_a_dtype_outside_the_enum(self):
        h = _capi.jit.fusec_jit_graph_new(b"c")
        try:
            shape = (ctypes.c_longlong * 1)(4)
            self.assertEqual(_capi.jit.fusec_jit_graph_input(h, shape, 1, 7),
                             -1)
            self.assertEqual(
                _capi.jit.fusec_jit_graph_error(h).decode(),
                "input: dtype 7 is not a dtype: use f32 (0), f16 (1) or "
                "bf16 (2)")
        finally:
            _capi.jit.fusec_jit_graph_free(h)
        with self.assertRaises(TypeError):
            fusec.Graph().input([4], 7)


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
