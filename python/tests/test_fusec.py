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
import threading
import unittest

import numpy as np

import fusec
from fusec import _capi, _interop

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


def _torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


class _Device:
    def __init__(self, id):
        self.id = id


class _CudaArray:
    """A __cuda_array_interface__ producer: `device` None leaves .device
    out, as Numba's arrays do."""

    def __init__(self, ptr, shape, read_only=False, device=0, strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": "<f4", "data": (ptr, read_only),
            "strides": strides, "version": 3}
        if device is not None:
            self.device = _Device(device)


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class _DLPackArray:
    """A DLPack producer of a made-up CUDA array of 3x5 floats: a versioned
    capsule with `flags` for consumers that ask for one, else a legacy
    capsule (which has no flags)."""
    _names = (b"dltensor", b"dltensor_versioned")  # outlive the capsules

    def __init__(self, flags):
        self.shape = (ctypes.c_int64 * 2)(3, 5)
        self.tensor = _interop._DLTensor(
            0x1000, _interop._DLDevice(_interop._kDLCUDA, 0), 2,
            _interop._DLDataType(2, 32, 1),
            ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
        self.versioned = _interop._DLManagedTensorVersioned(
            1, 0, None, None, flags, self.tensor)

    def __dlpack__(self, stream=None, max_version=None):
        if max_version is None:
            return _PyCapsule_New(ctypes.addressof(self.tensor),
                                  self._names[0], None)
        return _PyCapsule_New(ctypes.addressof(self.versioned),
                              self._names[1], None)

    def __dlpack_device__(self):
        return (_interop._kDLCUDA, 0)


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

    def test_reference_without_numpy_says_what_to_install(self):
        import subprocess
        import sys
        code = textwrap.dedent('''
            import sys
            sys.modules["numpy"] = None  # as if it were not installed
            import fusec
            try:
                fusec.reference("", 1.0)
            except ImportError as e:
                print(e)
            ''')
        out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                             text=True, env=os.environ)
        self.assertIn("fusec.reference needs NumPy", out.stdout, out.stderr)
        self.assertIn("pip install numpy", out.stdout)

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


class InteropTest(unittest.TestCase):
    """How device arrays are read, checked without a GPU where the logic
    allows (the GPU tests run the same paths for real)."""

    def test_channels_last_advice(self):
        # NCHW 2x3x4x5 in channels_last memory: strides (60, 1, 15, 3).
        v = _interop.View(0, (2, 3, 4, 5), fusec.F32, 0, (60, 1, 15, 3),
                          torch=True)
        nhwc = _interop.layout_error("input 0", v, (2, 4, 5, 3), fusec.F32)
        self.assertIn("input 0 is a channels_last tensor: NCHW shape 2x3x4x5 "
                      "over NHWC memory", nhwc)
        self.assertIn("the graph takes NHWC 2x4x5x3 f32: pass "
                      "x.permute(0, 2, 3, 1), an NHWC view of the same memory "
                      "(no copy)", nhwc)
        self.assertNotIn("contiguous()", nhwc)
        nchw = _interop.layout_error("input 0", v, (2, 3, 4, 5), fusec.F32)
        self.assertIn("the graph takes NCHW 2x3x4x5 f32: pass x.contiguous()",
                      nchw)
        other = _interop.layout_error("input 2", v, (7,), fusec.F32)
        self.assertIn("x.permute(0, 2, 3, 1) is its NHWC view (2x4x5x3", other)

    def test_strided_advice_names_the_argument_and_strides(self):
        t = _interop.View(0, (3, 5), fusec.F16, 0, (1, 3), torch=True)
        text = _interop.layout_error("output 1", t, (3, 5), fusec.F16)
        self.assertIn("output 1 is not row-major (C-contiguous): shape 3x5, "
                      "strides (1, 3) in elements", text)
        self.assertIn("pass x.contiguous() (a row-major copy)", text)
        cai = _interop.View(0, (3, 5), fusec.F32, 0, (10, 1))
        self.assertIn("pass a C-contiguous copy",
                      _interop.layout_error("input 0", cai, (3, 5), fusec.F32))
        # Extent-1 axes may have any stride: still row-major.
        self.assertIsNone(_interop._strides_unless_row_major((1, 5), (7, 1)))
        self.assertIsNone(
            _interop._strides_unless_row_major((3, 5), (5, 1)))
        v = _interop.view(_CudaArray(0x1000, (3, 5), strides=(4, 12)),
                          "input 0")
        self.assertEqual(v.strides, (1, 3))

    def test_cuda_array_interface_without_device_is_not_assumed_on_gpu0(self):
        x = _CudaArray(0x1000, (3, 5), device=None)
        # 0x1000 is no allocation: the driver says so, or there is no
        # driver; either way the array is not taken to be on GPU 0.
        with self.assertRaises(TypeError) as e:
            _interop.view(x, "input 0")
        self.assertIn("input 0 (a _CudaArray) has no .device, and fusec "
                      "cannot tell which GPU holds its "
                      "__cuda_array_interface__ pointer 0x1000",
                      str(e.exception))
        self.assertEqual(_interop.view(_CudaArray(0x1000, (3, 5), device=1),
                                       "input 0").device, 1)

    def test_pointer_device_needs_a_known_address(self):
        ordinal = ctypes.c_int(-7)
        status = _capi.runtime.fusec_pointer_device(0x1000,
                                                     ctypes.byref(ordinal))
        self.assertNotEqual(status, 0)
        self.assertEqual(ordinal.value, -7)
        self.assertNotEqual(_capi.runtime.fusec_last_error_message(), b"")

    def test_read_only_cuda_array_is_refused_as_output(self):
        x = _CudaArray(0x1000, (3, 5), read_only=True)
        self.assertEqual(_interop.view(x, "input 0").ptr, 0x1000)
        with self.assertRaises(TypeError) as e:
            _interop.view(x, "output 0", output=True)
        self.assertIn("output 0 (a _CudaArray) is read-only (its "
                      "__cuda_array_interface__ says so)", str(e.exception))

    def test_workspace_cuda_array(self):
        self.assertEqual(_interop.raw_buffer(_CudaArray(0x1000, (64,)),
                                             "workspace"), (0x1000, 256, 0))
        with self.assertRaises(TypeError) as e:
            _interop.raw_buffer(_CudaArray(0x1000, (4, 4), strides=(4, 16)),
                                "workspace")
        self.assertIn("workspace is not C-contiguous", str(e.exception))
        with self.assertRaises(TypeError) as e:
            _interop.raw_buffer(_CudaArray(0x1000, (64,), read_only=True),
                                "workspace")
        self.assertIn("workspace (a _CudaArray) is read-only",
                      str(e.exception))
        with self.assertRaises(TypeError) as e:
            _interop.raw_buffer(_CudaArray(0x1000, (64,), device=None),
                                "workspace")
        self.assertIn("workspace (a _CudaArray) has no .device",
                      str(e.exception))

    def test_read_only_dlpack_array_is_refused_as_output(self):
        self.assertEqual(_interop.view(_DLPackArray(1), "input 0").shape,
                         (3, 5))
        with self.assertRaises(TypeError) as e:
            _interop.view(_DLPackArray(1), "output 1", output=True)
        self.assertIn("output 1 (a _DLPackArray) is read-only (its DLPack "
                      "export says so)", str(e.exception))
        with self.assertRaises(TypeError) as e:
            _interop.view(_DLPackArray(2), "output 0", output=True)
        self.assertIn("is exported through DLPack as a copy",
                      str(e.exception))
        self.assertEqual(_interop.view(_DLPackArray(0), "output 0",
                                       output=True).ptr, 0x1000)


ADD = """func.func @add(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = fuse.add %a, %b : tensor<3x5xf32>, tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
"""


@unittest.skipUnless(_torch(), "needs PyTorch")
class TorchTest(unittest.TestCase):
    """The PyTorch paths on CPU tensors: what is refused before any GPU
    work."""

    REQUIRES_GRAD = ("requires grad, but fusec kernels have no backward yet: "
                     "call under torch.no_grad() / torch.inference_mode(), or "
                     "pass x.detach()")

    def _fake_module(self):
        """A loaded module as the fast path sees it, for CPU tensors (whose
        get_device() is -1), with no handle: a call that gets as far as
        running fails in the runtime."""
        m = object.__new__(fusec._Module)
        m.device, m.h, m.torch_dtypes = -1, None, None
        m.inputs = [((3, 5), fusec.F32, 60)] * 2
        m.outputs = [((3, 5), fusec.F32, 60)]
        m._local = threading.local()
        return m

    def test_requires_grad_is_refused_under_grad_mode(self):
        import torch
        k = fusec.compile(ADD, arch="sm_90", cache=False)
        a = torch.zeros(3, 5)
        b = torch.zeros(3, 5, requires_grad=True)
        with self.assertRaises(TypeError) as e:
            k(b, a)
        self.assertEqual(str(e.exception), "input 0 " + self.REQUIRES_GRAD)
        with self.assertRaises(TypeError) as e:
            _interop.view(b, "input 1")
        self.assertEqual(str(e.exception), "input 1 " + self.REQUIRES_GRAD)
        with self.assertRaises(TypeError) as e:
            _interop.view(b, "output 0", output=True)
        self.assertIn("output 0 requires grad", str(e.exception))
        # Without grad mode it is an ordinary input (here: not on a GPU).
        for mode in (torch.no_grad, torch.inference_mode):
            with mode():
                with self.assertRaises(TypeError) as e:
                    k(b, a)
                self.assertIn("is on cpu", str(e.exception))
        self.assertIn("is on cpu", str(self._raised(k, b.detach(), a)))

    def _raised(self, k, *args):
        try:
            k(*args)
        except TypeError as e:
            return e
        self.fail("no TypeError")

    def test_requires_grad_is_refused_on_the_fast_path(self):
        import torch
        k = fusec.compile(ADD, arch="sm_90", cache=False)
        m = k._modules[-1] = self._fake_module()
        a, y = torch.zeros(3, 5), torch.empty(3, 5)
        b = torch.zeros(3, 5, requires_grad=True)
        self.assertFalse(m.run_torch((a, b), y))
        self.assertFalse(m.run_torch((a, a), b))
        with self.assertRaises(TypeError) as e:
            k(b, a, out=y)
        self.assertEqual(str(e.exception), "input 0 " + self.REQUIRES_GRAD)
        # Under no_grad the fast path takes it (and runs the fake module, on
        # a made-up stream: CPU tensors have none).
        stream, _interop._raw_stream = _interop._raw_stream, lambda d: 0
        try:
            with torch.no_grad():
                with self.assertRaises(fusec.Error) as e:
                    m.run_torch((a, b), y)
                self.assertEqual(e.exception.status,
                                 "FUSEC_ERROR_INVALID_ARGUMENT")
        finally:
            _interop._raw_stream = stream

    def test_channels_last_tensor(self):
        import torch
        x = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
        self.assertFalse(x.is_contiguous())
        # What the message recommends is a row-major view of the memory.
        self.assertTrue(x.permute(0, 2, 3, 1).is_contiguous())
        self.assertEqual(x.permute(0, 2, 3, 1).data_ptr(), x.data_ptr())
        v = _interop.View(0, tuple(x.shape), fusec.F32, 0,
                          _interop._strides_unless_row_major(
                              tuple(x.shape), x.stride()), torch=True)
        self.assertIn("x.permute(0, 2, 3, 1), an NHWC view of the same memory",
                      _interop.layout_error("input 0", v, (2, 4, 5, 3),
                                            fusec.F32))


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

    def test_requires_grad(self):
        import torch
        k = fusec.compile(ADD)
        a = torch.randn(3, 5, device="cuda")
        b = torch.randn(3, 5, device="cuda", requires_grad=True)
        y = torch.empty(3, 5, device="cuda")
        with self.assertRaises(TypeError) as e:
            k(a, b)  # the general path
        self.assertIn("input 1 requires grad", str(e.exception))
        with torch.no_grad():
            k(a, b, out=y)  # loads the module
        with self.assertRaises(TypeError) as e:
            k(a, b, out=y)  # the fast path
        self.assertIn("input 1 requires grad", str(e.exception))
        with torch.inference_mode():
            k(a, b, out=y)
        k(a, b.detach(), out=y)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, a + b.detach())

    def test_channels_last(self):
        import torch
        g = fusec.Graph("nhwc")
        g.output(g.relu(g.input([2, 4, 5, 3], "f32")))
        k = fusec.compile(g)
        x = torch.randn(2, 3, 4, 5, device="cuda").to(
            memory_format=torch.channels_last)
        with self.assertRaises(TypeError) as e:
            k(x)
        self.assertIn("pass x.permute(0, 2, 3, 1)", str(e.exception))
        y = k(x.permute(0, 2, 3, 1))
        torch.cuda.synchronize()
        torch.testing.assert_close(y, torch.relu(x).permute(0, 2, 3, 1))

    def test_cuda_array_interface_without_device(self):
        import torch

        class Bare:  # only __cuda_array_interface__, as Numba's arrays
            def __init__(self, t, read_only=False):
                self.t = t
                cai = dict(t.__cuda_array_interface__)
                cai["data"] = (cai["data"][0], read_only)
                self.__cuda_array_interface__ = cai

        k = fusec.compile(RELU)
        for d in range(min(torch.cuda.device_count(), 2)):
            x = torch.randn(3, 5, device="cuda:%d" % d)
            y = torch.full((3, 5), float("nan"), device="cuda:%d" % d)
            k(Bare(x), out=Bare(y), stream=0)
            torch.cuda.synchronize(d)
            torch.testing.assert_close(y, torch.relu(x))
            with self.assertRaises(TypeError) as e:
                k(Bare(x), out=Bare(y, read_only=True), stream=0)
            self.assertIn("output 0 (a Bare) is read-only", str(e.exception))


if __name__ == "__main__":
    unittest.main()
