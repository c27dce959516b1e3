"""fusec from Python: compile graphs of deep-learning operators into fused
CUDA kernels and run them on GPU tensors, or evaluate them on the float64
reference interpreter with NumPy.

    import fusec, torch
    kernel = fusec.compile(open("block.mlir").read())   # or a fusec.Graph
    y = kernel(x, w)              # torch tensors in, torch tensors out
    kernel(x, w, out=y)           # into given outputs, no allocation
    ref = fusec.reference(text, x.cpu().numpy(), w.cpu().numpy())

Kernels run on the caller's stream (PyTorch's or CuPy's current stream, or
`stream=`), without copies. Errors are fusec.Error with fusec's message.
docs/Python.md has the whole story.
"""

import ctypes
import os
import threading
import warnings

from . import _capi, _interop
from ._interop import BF16, F16, F32

__all__ = ["Error", "Graph", "Kernel", "TrainingKernel", "TrainingStep",
           "compile", "compile_file", "reference", "reference_training",
           "tolerance", "tune", "version", "clear_memory_cache",
           "F32", "F16", "BF16", "DEFAULT_MAX_WORKSPACES"]

#: How many workspaces (sets of intermediates) a loaded kernel allocates at
#: most for calls on different streams at once (docs/Runtime.md).
DEFAULT_MAX_WORKSPACES = 4


class Error(Exception):
    """A fusec error: the compiler's located diagnostics, the reference
    interpreter's, or the runtime's (with its status name in `status`)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _b(s):
    return None if s is None else os.fsencode(s) if isinstance(
        s, os.PathLike) else s.encode()


def _runtime_check(status):
    if status != 0:
        name = _capi.runtime.fusec_status_name(status).decode()
        raise Error(_capi.runtime.fusec_last_error_message().decode(), name)


def version():
    """fusec's release and commit (part of every kernel cache key)."""
    return _capi.jit.fusec_jit_version().decode()


def clear_memory_cache():
    """Forgets the in-memory kernel cache (the disk cache stays)."""
    _capi.jit.fusec_jit_clear_memory_cache()


_DTYPES = {"f32": F32, "float32": F32, "f16": F16, "float16": F16,
           "bf16": BF16, "bfloat16": BF16}


def _dtype(d):
    if isinstance(d, int) and d in (F32, F16, BF16):
        return d
    name = getattr(d, "name", None) or str(d).replace("torch.", "")
    if name in _DTYPES:
        return _DTYPES[name]
    raise TypeError("unknown dtype %r: use 'f32', 'f16' or 'bf16'" % (d,))


def tolerance(dtype, fp32_math="ieee"):
    """The largest relative error (||x - ref|| / ||ref||) fusec's own tests
    accept for a GPU result of `dtype` against the reference."""
    return _capi.jit.fusec_jit_tolerance(_dtype(dtype), _b(fp32_math))


def _ll_array(values):
    values = [int(v) for v in values]
    return (ctypes.c_longlong * len(values))(*values), len(values)


class Tensor:
    """A value of a Graph being built."""
    __slots__ = ("graph", "id")

    def __init__(self, graph, id):
        self.graph, self.id = graph, id

    @property
    def shape(self):
        return self.graph.shape(self)

    def __repr__(self):
        return "fusec.Tensor(%d, shape=%s)" % (self.id, self.shape)


def _attribute_text(attributes):
    if not isinstance(attributes, str):
        raise TypeError("attributes are MLIR text, such as 'axis = 1, sizes "
                        "= array<i64: 2, 2>' (braces optional), not %s"
                        % type(attributes).__name__)
    return attributes.encode()


def _i64_array(values):
    return "array<i64: %s>" % ", ".join(str(int(v)) for v in values)


def _float(value):
    """An MLIR float literal (which needs its '.')."""
    text = repr(float(value))
    if "." not in text and text[-1].isdigit():
        mantissa, e, exponent = text.partition("e")
        text = mantissa + ".0" + e + exponent
    return text


def _f64(value):
    return _float(value) + " : f64"


class Graph:
    """Builds a graph op by op (NHWC convolutions, [tokens, features]
    linear layers, [batch, heads, tokens, head dim] attention). Each op's
    result type is inferred as it is added. An invalid op raises
    fusec.Error naming it and is left out; the graph stays usable, so fix
    the call and go on.

        g = fusec.Graph("block")
        x = g.input([1, 56, 56, 64], "bf16")
        w = g.input([64, 3, 3, 64], "bf16")
        g.output(g.relu(g.conv2d(x, w, padding=[1, 1])))
        kernel = fusec.compile(g)
    """

    def __init__(self, name="graph"):
        self._h = _capi.jit.fusec_jit_graph_new(_b(name))
        if not self._h:
            raise MemoryError("fusec: cannot create a graph")
        self._raise_error()

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _capi.jit.fusec_jit_graph_free(h)

    def _raise_error(self):
        """Raises the builder's recorded error, if any, and clears it: the
        caller learns of each failure once, and the graph goes on."""
        error = _capi.jit.fusec_jit_graph_error(self._h).decode()
        if error:
            _capi.jit.fusec_jit_graph_clear_error(self._h)
            raise Error(error)

    def _wrap(self, id):
        if id < 0:
            self._raise_error()
            raise Error("the graph builder failed without a message")
        return Tensor(self, id)

    def _id(self, t, what="operand"):
        if t is None:
            return -1
        if not isinstance(t, Tensor) or t.graph is not self:
            raise TypeError("%s is not a value of this graph" % what)
        return t.id

    def input(self, shape, dtype="f32"):
        arr, n = _ll_array(shape)
        return self._wrap(_capi.jit.fusec_jit_graph_input(
            self._h, arr, n, _dtype(dtype)))

    def conv2d(self, x, filter, strides=(1, 1), padding=(0, 0),
               dilation=(1, 1), groups=1, bias=None):
        """NHWC input, OHWI filter; padding [ph, pw] or [t, b, l, r]."""
        s, _ = _ll_array(strides)
        p, np_ = _ll_array(padding)
        d, _ = _ll_array(dilation)
        return self._wrap(_capi.jit.fusec_jit_graph_conv2d(
            self._h, self._id(x), self._id(filter), s, p, np_, d, groups,
            self._id(bias)))

    def batch_norm(self, x, mean, variance, scale, shift, epsilon=1e-5):
        return self._wrap(_capi.jit.fusec_jit_graph_batch_norm(
            self._h, self._id(x), self._id(mean), self._id(variance),
            self._id(scale), self._id(shift), epsilon))

    def _unary(self, op, x):
        return self._wrap(_capi.jit.fusec_jit_graph_unary(
            self._h, op.encode(), self._id(x)))

    def relu(self, x): return self._unary("relu", x)
    def relu6(self, x): return self._unary("relu6", x)
    def silu(self, x): return self._unary("silu", x)
    def sigmoid(self, x): return self._unary("sigmoid", x)
    def tanh(self, x): return self._unary("tanh", x)
    def hardswish(self, x): return self._unary("hardswish", x)
    def softmax(self, x): return self._unary("softmax", x)

    def gelu(self, x, approximate="none"):
        """approximate "none" (the normal CDF) or "tanh"."""
        if approximate == "none":
            return self._unary("gelu", x)
        return self.op("fuse.gelu", [x],
                       "approximate = #fuse.gelu_approx<%s>" % approximate)

    def clamp(self, x, min, max):
        return self.op("fuse.clamp", [x],
                       "min = %s, max = %s" % (_f64(min), _f64(max)))

    def leaky_relu(self, x, alpha=0.01):
        return self.op("fuse.leaky_relu", [x], "alpha = " + _f64(alpha))

    def _binary(self, op, a, b):
        return self._wrap(_capi.jit.fusec_jit_graph_binary(
            self._h, op.encode(), self._id(a), self._id(b)))

    def add(self, a, b): return self._binary("add", a, b)
    def sub(self, a, b): return self._binary("sub", a, b)
    def mul(self, a, b): return self._binary("mul", a, b)
    def div(self, a, b): return self._binary("div", a, b)
    def matmul(self, a, b): return self._binary("matmul", a, b)

    def bias_add(self, x, bias, axis=-1):
        """x + bias, bias [x.shape[axis]] broadcast along the other axes."""
        if axis == -1:
            return self._binary("bias_add", x, bias)
        return self.op("fuse.bias_add", [x, bias], "axis = %d" % axis)

    def scale_shift(self, x, scale, shift, axis=-1):
        """x * scale + shift, both [x.shape[axis]]."""
        return self.op("fuse.scale_shift", [x, scale, shift],
                       "axis = %d" % axis)

    def linear(self, x, weight, bias=None):
        """x [.., in] times weight [out, in] transposed, plus bias [out]."""
        return self._wrap(_capi.jit.fusec_jit_graph_linear(
            self._h, self._id(x), self._id(weight), self._id(bias)))

    def layer_norm(self, x, scale=None, shift=None, epsilon=1e-5):
        return self._wrap(_capi.jit.fusec_jit_graph_layer_norm(
            self._h, self._id(x), self._id(scale), self._id(shift), epsilon))

    def rms_norm(self, x, scale=None, epsilon=1e-6):
        return self._wrap(_capi.jit.fusec_jit_graph_rms_norm(
            self._h, self._id(x), self._id(scale), epsilon))

    def attention(self, q, k, v, causal=False, scale=None):
        return self._wrap(_capi.jit.fusec_jit_graph_attention(
            self._h, self._id(q), self._id(k), self._id(v), int(causal),
            int(scale is not None), 0.0 if scale is None else scale))

    def rope(self, x, cos, sin, interleaved=False):
        """Rotary embedding of x [..., N, D] by tables cos, sin [N, D/2]
        (half-split pairs, or interleaved ones)."""
        return self._wrap(_capi.jit.fusec_jit_graph_rope(
            self._h, self._id(x), self._id(cos), self._id(sin),
            int(interleaved)))

    def max_pool2d(self, x, kernel, strides=None, padding=(0, 0)):
        """NHWC; strides default to the kernel."""
        k, nk = _ll_array(kernel)
        s, ns = _ll_array(strides or ())
        p, np_ = _ll_array(padding)
        return self._wrap(_capi.jit.fusec_jit_graph_max_pool2d(
            self._h, self._id(x), k, nk, s, ns, p, np_))

    def avg_pool2d(self, x, kernel, strides=None, padding=(0, 0),
                   count_include_pad=True):
        """NHWC; strides default to the kernel."""
        k, nk = _ll_array(kernel)
        s, ns = _ll_array(strides or ())
        p, np_ = _ll_array(padding)
        return self._wrap(_capi.jit.fusec_jit_graph_avg_pool2d(
            self._h, self._id(x), k, nk, s, ns, p, np_,
            int(count_include_pad)))

    def global_avg_pool(self, x):
        """Mean over H and W of NHWC x: [N, 1, 1, C]."""
        return self.op("fuse.global_avg_pool", [x])

    def upsample(self, x, size=None, scale=None, mode="nearest",
                 align_corners=False):
        """NHWC resampling to size [Ho, Wo] or by scale [sh, sw];
        mode "nearest" or "bilinear"."""
        attributes = ["mode = #fuse.upsample_mode<%s>" % mode]
        if size is not None:
            attributes.append("size = " + _i64_array(size))
        if scale is not None:
            attributes.append("scale = array<f64: %s>" % ", ".join(
                _float(v) for v in scale))
        if align_corners:
            attributes.append("align_corners")
        return self.op("fuse.upsample", [x], ", ".join(attributes))

    def transpose(self, x, permutation):
        p, n = _ll_array(permutation)
        return self._wrap(_capi.jit.fusec_jit_graph_transpose(
            self._h, self._id(x), p, n))

    def reshape(self, x, shape):
        s, n = _ll_array(shape)
        return self._wrap(_capi.jit.fusec_jit_graph_reshape(
            self._h, self._id(x), s, n))

    def cast(self, x, dtype):
        """x converted to dtype ("f32", "f16", "bf16"; round to nearest
        even)."""
        return self._wrap(_capi.jit.fusec_jit_graph_cast(
            self._h, self._id(x), _dtype(dtype)))

    def slice(self, x, offsets, sizes):
        """The block of x at `offsets` of extents `sizes` (a view: fusion
        reads through it)."""
        o, n = _ll_array(offsets)
        s, ns = _ll_array(sizes)
        if ns != n:
            raise ValueError("slice: %d offsets but %d sizes" % (n, ns))
        return self._wrap(_capi.jit.fusec_jit_graph_slice(
            self._h, self._id(x), o, s, n))

    def concat(self, values, axis):
        ids = [self._id(t) for t in values]
        arr = (ctypes.c_int * len(ids))(*ids)
        return self._wrap(_capi.jit.fusec_jit_graph_concat(
            self._h, arr, len(ids), axis))

    def split(self, x, sizes, axis=-1):
        """Consecutive pieces of x along `axis` of extents `sizes`: a
        tuple of values (a fused QKV projection into q, k, v, say)."""
        s, n = _ll_array(sizes)
        results = (ctypes.c_int * max(n, 1))()
        count = _capi.jit.fusec_jit_graph_split(self._h, self._id(x), axis,
                                                 s, n, results)
        if count < 0:
            self._wrap(count)
        return tuple(Tensor(self, results[i]) for i in range(count))

    def op(self, name, operands, attributes=""):
        """Any fuse op this class has no method for, by name ("fuse.rope"
        or "rope"), with its attributes as MLIR text, braces optional. The
        result type is inferred (fuse.cast and fuse.reshape have methods).

            g = fusec.Graph()
            x = g.input([1, 16, 64], "bf16")
            cos = g.input([16, 32], "bf16")
            sin = g.input([16, 32], "bf16")
            y = g.op("fuse.rope", [x, cos, sin])
            y = g.op("fuse.rope", [x, cos, sin], "{interleaved}")
            z = g.op("fuse.concat", [x, y], "axis = 2")  # 1x16x128
        """
        ids = [self._id(t) for t in operands]
        arr = (ctypes.c_int * len(ids))(*ids)
        return self._wrap(_capi.jit.fusec_jit_graph_op(
            self._h, name.encode(), arr, len(ids),
            _attribute_text(attributes)))

    def op_results(self, name, operands, attributes="", count=8):
        """op() for an op of several results (fuse.batch_norm_train's
        five, say): a tuple of its results."""
        ids = [self._id(t) for t in operands]
        arr = (ctypes.c_int * len(ids))(*ids)
        results = (ctypes.c_int * count)()
        n = _capi.jit.fusec_jit_graph_op_results(
            self._h, name.encode(), arr, len(ids),
            _attribute_text(attributes), results, count)
        if n < 0:
            self._wrap(n)
        return tuple(Tensor(self, results[i]) for i in range(n))

    def output(self, *values):
        """Marks results of the graph, in order."""
        for t in values:
            _capi.jit.fusec_jit_graph_output(self._h, self._id(t))
            self._raise_error()

    def shape(self, t):
        rank = _capi.jit.fusec_jit_graph_shape(self._h, self._id(t), None, 0)
        out = (ctypes.c_longlong * max(rank, 0))()
        _capi.jit.fusec_jit_graph_shape(self._h, self._id(t), out, rank)
        return tuple(out)

    def mlir(self):
        """The graph's MLIR text (what fusec.compile and the fusec tool
        take)."""
        self._raise_error()
        text = _capi.jit.fusec_jit_graph_mlir(self._h).decode()
        if not text:
            raise Error("the graph has no output: call Graph.output")
        return text


#===----------------------------------------------------------------------===#
# Devices
#===----------------------------------------------------------------------===#

_devices = {}
_devices_lock = threading.Lock()


def _device(ordinal):
    """(handle, chip, SM count, name) of CUDA device `ordinal`, opened
    once."""
    with _devices_lock:
        d = _devices.get(ordinal)
        if d is None:
            h = ctypes.c_void_p()
            _runtime_check(_capi.runtime.fusec_device_open(
                ordinal, ctypes.byref(h)))
            major, minor = ctypes.c_int(), ctypes.c_int()
            _capi.runtime.fusec_device_compute_capability(
                h, ctypes.byref(major), ctypes.byref(minor))
            chip = _capi.jit.fusec_jit_chip_for_device(major, minor).decode()
            sms = _capi.runtime.fusec_device_multiprocessor_count(h)
            name = _capi.runtime.fusec_device_name(h).decode()
            d = _devices[ordinal] = (h, chip, sms, name)
        return d


def _default_target():
    """The arch, SM count and GPU name of device 0, or sm_90 without one."""
    count = ctypes.c_int()
    try:
        if _capi.runtime.fusec_device_count(ctypes.byref(count)) == 0 and \
                count.value > 0:
            _, chip, sms, name = _device(0)
            return chip, sms, name
    except Error:
        pass
    return "sm_90", 0, None


#===----------------------------------------------------------------------===#
# Compiling and running
#===----------------------------------------------------------------------===#

_SOURCES = {0: "compiled", 1: "memory cache", 2: "disk cache"}


class _Module(_capi.Handle):
    """An artifact loaded on one device, with ctypes buffers kept between
    calls."""

    _release = "fusec_module_release"

    def __init__(self, artifact, device):
        self.device = device
        handle, _, _, _ = _device(device)
        rt = _capi.runtime
        self.h = ctypes.c_void_p()
        _runtime_check(rt.fusec_module_load(
            handle, artifact, len(artifact), ctypes.byref(self.h)))
        self.inputs = self._infos(rt.fusec_module_num_inputs(self.h),
                                  rt.fusec_module_input_info)
        self.outputs = self._infos(rt.fusec_module_num_outputs(self.h),
                                   rt.fusec_module_output_info)
        self.torch_dtypes = None
        self.max_workspaces = DEFAULT_MAX_WORKSPACES
        self._local = threading.local()

    def buffers(self):
        """This thread's ctypes arrays of input and output buffers: a call
        fills them while another thread's call on the same kernel may still
        be reading its own."""
        local = self._local
        try:
            return local.ins, local.outs
        except AttributeError:
            pass
        local.ins = (_capi.Buffer * len(self.inputs))()
        local.outs = (_capi.Buffer * len(self.outputs))()
        for buffers, infos in ((local.ins, self.inputs),
                               (local.outs, self.outputs)):
            for b, (_, _, nbytes) in zip(buffers, infos):
                b.bytes = nbytes
        return local.ins, local.outs

    def run_torch(self, inputs, out):
        """The common case, fast: PyTorch tensors of the plan's shapes and
        dtypes on this device, given outputs, the current stream. False
        (nothing run) for anything else; the general path then runs or
        says what is wrong."""
        if self.torch_dtypes is None:
            self.torch_dtypes = _interop.torch_dtypes_of(self.inputs,
                                                         self.outputs)
        outs = out if isinstance(out, (list, tuple)) else (out,)
        if len(inputs) != len(self.inputs) or len(outs) != len(self.outputs):
            return False
        device = self.device
        ins, outs_buffers = self.buffers()
        grad = False
        for buffers, values, infos, dtypes in (
                (ins, inputs, self.inputs, self.torch_dtypes[0]),
                (outs_buffers, outs, self.outputs, self.torch_dtypes[1])):
            for b, x, info, dtype in zip(buffers, values, infos, dtypes):
                if not _interop.plain_torch(x, info[0], dtype, device):
                    return False
                if x.requires_grad:
                    grad = True
                b.ptr = x.data_ptr()
        # Weights are often parameters used under no_grad: only then ask
        # for the grad mode. With it on, the general path says which tensor.
        if grad and _interop.grad_enabled():
            return False
        _runtime_check(_capi.runtime.fusec_module_run(
            self.h, _interop.torch_current_stream(device), ins,
            len(self.inputs), outs_buffers, len(self.outputs)))
        return True


class Kernel:
    """A compiled graph. Call it on device tensors: kernel(*inputs) returns
    new outputs (as the first input's library makes them), kernel(*inputs,
    out=[...]) writes into given ones. Loaded onto a GPU at its first call
    there."""

    def __init__(self, artifact, source, milliseconds, warnings_text,
                 options):
        self.artifact = artifact
        #: "compiled", "memory cache" or "disk cache".
        self.source = source
        #: Wall time of the compilation (or cache load), in milliseconds.
        self.milliseconds = milliseconds
        self.warnings = warnings_text
        self.options = options
        self._modules = {}
        self._lock = threading.Lock()

    def _module(self, device):
        m = self._modules.get(device)
        if m is None:
            with self._lock:
                m = self._modules.get(device)
                if m is None:
                    m = self._modules[device] = _Module(
                        self.artifact.encode(), device)
        return m

    def signature(self, device=0):
        """([(shape, dtype)] of the inputs, the same of the outputs)."""
        m = self._module(device)
        name = _interop.DTYPE_NAMES
        return ([(s, name[d]) for s, d, _ in m.inputs],
                [(s, name[d]) for s, d, _ in m.outputs])

    def memory(self, device=0):
        """The device memory the kernel holds on `device` (loading it
        there): {"workspace_bytes": bytes of one set of intermediates,
        "workspaces": how many sets it holds, "max_workspaces": ...}.
        Calls on N streams at once use N sets, at most max_workspaces
        (docs/Runtime.md)."""
        m = self._module(device)
        return {"workspace_bytes":
                _capi.runtime.fusec_module_workspace_bytes(m.h),
                "workspaces": _capi.runtime.fusec_module_workspace_count(m.h),
                "max_workspaces": m.max_workspaces}

    def set_max_workspaces(self, count, device=0):
        """At most `count` (>= 1) sets of intermediates on `device`; past
        it, a call on a new stream waits on the GPU for an earlier one."""
        m = self._module(device)
        m.max_workspaces = max(int(count), 1)
        _capi.runtime.fusec_module_set_max_workspaces(m.h, m.max_workspaces)

    def __call__(self, *inputs, out=None, stream=None, workspace=None):
        if not inputs:
            raise TypeError("the kernel takes its graph's inputs")
        first = inputs[0]
        if out is not None and stream is None and workspace is None and \
                type(first) in _interop.torch_tensor_types():
            m = self._modules.get(first.get_device())
            if m is not None and m.run_torch(inputs, out):
                return out
        return self._call(inputs, out, stream, workspace)

    def _call(self, inputs, out, stream, workspace=None):
        first = inputs[0]
        v0 = _interop.view(first, "input 0")
        device = 0 if v0.device is None else v0.device
        m = self._module(device)
        if len(inputs) != len(m.inputs):
            raise TypeError("the graph takes %d inputs, %d were given"
                            % (len(m.inputs), len(inputs)))
        if stream is None:
            handle = _interop.current_stream(first, device) or 0
        else:
            handle = _interop.stream_handle(stream)
        buffers, out_buffers = m.buffers()
        for i, (x, (shape, dtype, _)) in enumerate(zip(inputs, m.inputs)):
            v = v0 if i == 0 else _interop.view(x, "input %d" % i, handle)
            self._check(v, shape, dtype, device, "input %d" % i)
            buffers[i].ptr = v.ptr
        single = out is not None and not isinstance(out, (list, tuple))
        if out is None:
            out = []
            for shape, dtype, _ in m.outputs:
                t = _interop.empty_like_library(first, shape, dtype,
                                                device)
                if t is None:
                    raise TypeError(
                        "fusec cannot allocate outputs for a %s; pass out="
                        % type(first).__name__)
                out.append(t)
            single = len(out) == 1
        elif single:
            out = [out]
        if len(out) != len(m.outputs):
            raise TypeError("the graph has %d outputs, %d were given"
                            % (len(m.outputs), len(out)))
        for i, (y, (shape, dtype, _)) in enumerate(zip(out, m.outputs)):
            v = _interop.view(y, "output %d" % i, handle, output=True)
            self._check(v, shape, dtype, device, "output %d" % i)
            out_buffers[i].ptr = v.ptr
        if workspace is None:
            _runtime_check(_capi.runtime.fusec_module_run(
                m.h, handle, buffers, len(m.inputs), out_buffers,
                len(m.outputs)))
        else:
            ptr, nbytes, where = _interop.raw_buffer(workspace, "workspace")
            if where != device:
                raise TypeError("the workspace is on cuda:%d, input 0 on "
                                "cuda:%d" % (where, device))
            _runtime_check(_capi.runtime.fusec_module_run_with_workspace(
                m.h, handle, buffers, len(m.inputs), out_buffers,
                len(m.outputs), _capi.Buffer(ptr, nbytes)))
        return out[0] if single else tuple(out)

    @staticmethod
    def _check(v, shape, dtype, device, what):
        if v.strides is not None:
            raise TypeError(_interop.layout_error(what, v, shape, dtype))
        if v.shape != shape or v.dtype != dtype:
            raise TypeError("%s is %s; the graph takes %s" % (
                what, _interop.describe(v.shape, v.dtype),
                _interop.describe(shape, dtype)))
        if v.device is not None and v.device != device:
            raise TypeError("%s is on cuda:%d, input 0 on cuda:%d"
                            % (what, v.device, device))

    def synchronize(self, stream=None, device=0):
        """Waits for `stream` and raises fusec.Error for a kernel fault."""
        _runtime_check(_capi.runtime.fusec_device_synchronize(
            _device(device)[0], _interop.stream_handle(stream)))


def _options(arch, backend, fp32_math, tiles, tuning_db, entry, cache,
             cache_dir, sm_count, gpu, train=False, wrt=None,
             deterministic=False):
    o = _capi.JitOptions()
    _capi.jit.fusec_jit_options_init(ctypes.byref(o))
    if arch is None:
        arch, default_sms, default_gpu = _default_target()
        sm_count = default_sms if sm_count is None else sm_count
        gpu = default_gpu if gpu is None else gpu
    keep = []  # the bytes the struct points to

    def s(value):
        b = _b(value)
        keep.append(b)
        return b

    o.arch, o.backend, o.fp32_math = s(arch), s(backend), s(fp32_math)
    o.tuning_db, o.entry, o.cache_dir = s(tuning_db), s(entry), s(cache_dir)
    o.gpu = s(gpu)
    o.cache = int(bool(cache))
    o.sm_count = int(sm_count or 0)
    if tiles:
        names = [s(k) for k in tiles]
        values = [s(v) for v in tiles.values()]
        o.tile_kernels = (ctypes.c_char_p * len(names))(*names)
        o.tiles = (ctypes.c_char_p * len(values))(*values)
        keep += [o.tile_kernels, o.tiles]
        o.num_tiles = len(names)
    if wrt is not None and not train:
        raise TypeError("wrt names the arguments to differentiate; it "
                        "needs train=True")
    if deterministic and not train:
        raise TypeError("deterministic asks for deterministic gradients; it "
                        "needs train=True")
    if train:
        o.train = 1
        wrt = list(wrt or [])
        for i in wrt:
            if isinstance(i, bool) or not isinstance(i, int) or i < 0:
                raise TypeError("wrt must list argument positions (ints of "
                                "0 or more), not %r" % (i,))
        if wrt:
            o.wrt = (ctypes.c_uint * len(wrt))(*wrt)
            keep.append(o.wrt)
            o.num_wrt = len(wrt)
        o.deterministic = int(bool(deterministic))
    return o, keep, dict(arch=arch, backend=backend, fp32_math=fp32_math,
                         sm_count=sm_count, gpu=gpu)


def _finish(result, options, training=None):
    try:
        if not _capi.jit.fusec_jit_ok(result):
            raise Error(_capi.jit.fusec_jit_error(result).decode().rstrip())
        size = ctypes.c_size_t()
        data = _capi.jit.fusec_jit_artifact(result, ctypes.byref(size))
        artifact = ctypes.string_at(data, size.value).decode()
        warning = _capi.jit.fusec_jit_warnings(result).decode()
        if warning:
            warnings.warn(warning.rstrip(), RuntimeWarning, stacklevel=4)
        if training is not None:
            from ._training import TrainingKernel
            return TrainingKernel(
                artifact, _SOURCES[_capi.jit.fusec_jit_result_source(result)],
                _capi.jit.fusec_jit_milliseconds(result), warning, options,
                *training)
        return Kernel(artifact,
                      _SOURCES[_capi.jit.fusec_jit_result_source(result)],
                      _capi.jit.fusec_jit_milliseconds(result), warning,
                      options)
    finally:
        _capi.jit.fusec_jit_result_free(result)


def _compile(call, arch=None, backend="ptx", fp32_math="ieee", tiles=None,
             tuning_db=None, entry=None, cache=True, cache_dir=None,
             sm_count=None, gpu=None, train=False, wrt=None,
             deterministic=False, text=None):
    o, keep, summary = _options(arch, backend, fp32_math, tiles, tuning_db,
                                entry, cache, cache_dir, sm_count, gpu,
                                train, wrt, deterministic)
    training = (text, list(wrt or []), entry) if train else None
    return _finish(call(ctypes.byref(o)), summary, training)


def _graph_text(graph, what, hint=""):
    """The MLIR text of a fusec.Graph or of text, for `what`."""
    if isinstance(graph, Graph):
        return graph.mlir()
    if isinstance(graph, str):
        return graph
    raise TypeError("%s takes a fusec.Graph or MLIR text, not %s%s"
                    % (what, type(graph).__name__, hint))


def compile(graph, *, name=None, **options):
    """Compiles a graph (a fusec.Graph or MLIR text) into a Kernel.

    Options (keywords): arch: "sm_80" ... "sm_90a"; default: GPU 0's
      (sm_90a on an H100/H200, with its SM count and name), or sm_90 without
      a GPU. backend: "ptx", or "cuda" (CUDA C that the runtime compiles with
      NVRTC at load). fp32_math: "ieee" or "tf32". tiles: {kernel name:
      "#fuse.tile<...>"} overrides. tuning_db: a path, "none", or None for
      $FUSEC_TUNING_DB / the per-user default. entry: the graph function.
      cache / cache_dir: the kernel cache (memory, then $FUSEC_CACHE_DIR or
      ~/.cache/fusec/kernels). sm_count, gpu: the GPU to size grids and pick
      tuning entries for. `name` names the graph in messages.
      train=True compiles a training step instead (docs/Training.md): a
      fusec.TrainingKernel with forward(*args) and backward(*grads); wrt
      lists the arguments to differentiate (None: every argument a
      gradient reaches); deterministic=True makes the gradients the same
      bit for bit run to run (the attention backward adds dQ in a fixed
      order, at some cost in speed).
    """
    text = _graph_text(graph, "compile", " (compile_file takes a path)")
    return _compile(lambda o: _capi.jit.fusec_jit_compile(
        text.encode(), _b(name or "<graph>"), o), text=text, **options)


def compile_file(path, **options):
    """compile() on the graph in the file at `path`."""
    text = None
    if options.get("train"):
        with open(path) as f:
            text = f.read()
    return _compile(lambda o: _capi.jit.fusec_jit_compile_file(_b(path), o),
                    text=text, **options)


def reference(graph, *inputs, entry=None):
    """Evaluates a graph (fusec.Graph, MLIR text) on the float64 reference
    interpreter. Inputs are NumPy arrays (or anything np.asarray takes),
    rounded to the graph's dtypes; returns a list of arrays, one per graph
    result: float32 for f32 and bf16 results, float16 for f16 ones (each
    value is exact)."""
    try:
        import numpy as np
    except ImportError:
        raise ImportError("fusec.reference needs NumPy, a dependency of the "
                          "fusec package that is not installed here: pip "
                          "install numpy (or, in a Debian venv, create it "
                          "with --system-site-packages and apt install "
                          "python3-numpy)") from None
    text = graph.mlir() if isinstance(graph, Graph) else graph
    arrays = [np.ascontiguousarray(np.asarray(x, dtype=np.float64))
              for x in inputs]
    tensors = (_capi.HostTensor * len(arrays))()
    shapes = []
    for t, a in zip(tensors, arrays):
        shape, rank = _ll_array(a.shape)
        shapes.append(shape)
        t.data = a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        t.shape, t.rank = shape, rank
    e = _capi.jit.fusec_jit_evaluate(text.encode(), b"<graph>", _b(entry),
                                     tensors, len(arrays))
    try:
        error = _capi.jit.fusec_jit_evaluation_error(e).decode()
        if error:
            raise Error(error.rstrip())
        outputs = []
        for i in range(_capi.jit.fusec_jit_evaluation_num_outputs(e)):
            shape_p = ctypes.POINTER(ctypes.c_longlong)()
            rank, dtype = ctypes.c_size_t(), ctypes.c_int()
            data = _capi.jit.fusec_jit_evaluation_output(
                e, i, ctypes.byref(shape_p), ctypes.byref(rank),
                ctypes.byref(dtype))
            shape = tuple(shape_p[j] for j in range(rank.value))
            count = int(np.prod(shape, dtype=np.int64))
            values = np.ctypeslib.as_array(data, shape=(count,)) if count \
                else np.zeros(0)
            outputs.append(values.reshape(shape).astype(
                np.float16 if dtype.value == F16 else np.float32))
        return outputs
    finally:
        _capi.jit.fusec_jit_evaluation_free(e)


#===----------------------------------------------------------------------===#
# Autotuning
#===----------------------------------------------------------------------===#

_MESSAGE_KINDS = {0: "progress", 1: "warning", 2: "error"}


def tune(graph, *, tuning_db=None, arch=None, fp32_math="ieee", entry=None,
         device=0, seed=0, repeat=10, reference_gflop=2.0, progress=None,
         name=None):
    """`fusec tune` as a function: on GPU `device`, times each kernel's
    candidate tiles (each checked against the reference first) and records
    the fastest in the tuning database (docs/Tuning.md).

    graph: a fusec.Graph or MLIR text. tuning_db: the database written (a
    path, or None for $FUSEC_TUNING_DB / the per-user default). arch: None
    for the GPU's own. progress: None, or a callable given each progress
    line (str) as `fusec tune` prints it. The database's warnings are
    RuntimeWarnings. Returns the entries written: a list of dicts with
    kernel, family, tile, heuristic_ms and tuned_ms. Raises fusec.Error
    with .status "invalid_argument", "invalid_graph", "no_device" (no GPU)
    or "failed"."""
    text = _graph_text(graph, "tune")
    if progress is not None and not callable(progress):
        raise TypeError("progress must be callable (it is given each "
                        "progress line), not %s" % type(progress).__name__)
    for what, value in (("device", device), ("seed", seed),
                        ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < 0:
            raise TypeError("%s must be an int of 0 or more, not %r"
                            % (what, value))
    o = _capi.TuneOptions()
    _capi.jit.fusec_jit_tune_options_init(ctypes.byref(o))
    keep = [_b(v) for v in (arch, fp32_math, tuning_db, entry)]
    o.arch, o.fp32_math, o.tuning_db, o.entry = keep
    o.device, o.seed, o.repeat = device, seed, repeat
    o.reference_gflop = float(reference_gflop)
    raised = []

    def forward(kind, message, located, user_data):
        # An exception may not cross the C API: the first is raised after.
        if raised:
            return
        try:
            message = message.decode()
            if _MESSAGE_KINDS.get(kind) == "progress":
                if progress is not None:
                    progress(message)
            elif _MESSAGE_KINDS.get(kind) == "warning":
                warnings.warn(message.rstrip(), RuntimeWarning, stacklevel=3)
        except BaseException as e:  # noqa: B902 - re-raised below
            raised.append(e)

    callback = _capi.TuneCallback(forward)
    t = _capi.jit.fusec_jit_tune(text.encode(), _b(name or "<graph>"),
                                 ctypes.byref(o), callback, None)
    try:
        if raised:
            raise raised[0]
        status = _capi.jit.fusec_jit_tuning_status(t)
        if status != 0:
            raise Error(_capi.jit.fusec_jit_tuning_error(t).decode().rstrip(),
                        _capi.jit.fusec_jit_tune_status_name(status).decode())
        entries = []
        for i in range(_capi.jit.fusec_jit_tuning_num_kernels(t)):
            kernel, family, tile = (ctypes.c_char_p(), ctypes.c_char_p(),
                                    ctypes.c_char_p())
            heuristic, tuned = ctypes.c_double(), ctypes.c_double()
            _capi.jit.fusec_jit_tuning_kernel(
                t, i, ctypes.byref(kernel), ctypes.byref(family),
                ctypes.byref(tile), ctypes.byref(heuristic),
                ctypes.byref(tuned))
            entries.append(dict(kernel=kernel.value.decode(),
                                family=family.value.decode(),
                                tile=tile.value.decode(),
                                heuristic_ms=heuristic.value,
                                tuned_ms=tuned.value))
        return entries
    finally:
        _capi.jit.fusec_jit_tuning_free(t)


# Training steps (compile(..., train=True)); at the end: _training imports
# from this module.
from ._training import (TrainingKernel, TrainingStep,  # noqa: E402
                        reference_training)
