"""Device tensors from other libraries, without copies: PyTorch tensors,
anything with __cuda_array_interface__ (CuPy, Numba), anything with
__dlpack__ (JAX, TensorFlow, ...)."""

import ctypes
import sys

from . import _capi

F32, F16, BF16 = 0, 1, 2
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16"}
ITEMSIZE = {F32: 4, F16: 2, BF16: 2}


class View:
    """One device buffer: address, shape, fusec dtype, device ordinal (None
    for an empty array at no address), and its strides in elements where
    they are not row-major (None when they are: the only layout a kernel
    reads). `torch` says whose advice fits a layout error."""
    __slots__ = ("ptr", "shape", "dtype", "device", "strides", "torch")

    def __init__(self, ptr, shape, dtype, device, strides=None, torch=False):
        self.ptr, self.shape, self.dtype, self.device = (ptr, shape, dtype,
                                                         device)
        self.strides, self.torch = strides, torch


def describe(shape, dtype):
    return "%s %s" % ("x".join(map(str, shape)) or "scalar",
                      DTYPE_NAMES[dtype])


_torch_dtypes = None


def _torch_dtype_map():
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch
        _torch_dtypes = {torch.float32: F32, torch.float16: F16,
                         torch.bfloat16: BF16}
    return _torch_dtypes


_raw_stream = None
_torch_tensor_types = None


def torch_tensor_types():
    """{torch.Tensor, torch.nn.Parameter} once PyTorch is imported, else
    an empty set: the plain tensors the fast paths take (a subclass may
    hold its data elsewhere)."""
    global _torch_tensor_types
    if _torch_tensor_types is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return frozenset()
        _torch_tensor_types = frozenset((torch.Tensor, torch.nn.Parameter))
    return _torch_tensor_types


def plain_torch(x, shape, dtype, device):
    """Whether `x` is a contiguous PyTorch tensor (or parameter) of
    `shape` and torch `dtype` on CUDA `device`: what the fast paths take
    without the general path's checks."""
    return type(x) in torch_tensor_types() and x.dtype is dtype and \
        x.shape == shape and x.get_device() == device and x.is_contiguous()


def torch_dtypes_of(inputs, outputs):
    """The torch dtypes of a plan's (shape, dtype, bytes) entries."""
    back = {v: k for k, v in _torch_dtype_map().items()}
    return ([back[d] for _, d, _ in inputs], [back[d] for _, d, _ in outputs])


def torch_current_stream(device):
    """PyTorch's current stream on `device`, as a CUstream."""
    global _raw_stream
    if _raw_stream is None:
        import torch
        # The raw query is what PyTorch's own code generators call per
        # launch; torch.cuda.current_stream builds a Python object.
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) \
            or (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _raw_stream(device)


def grad_enabled():
    """torch.is_grad_enabled(), for the fast path once a tensor requires
    grad."""
    return sys.modules["torch"].is_grad_enabled()


def is_torch(x):
    return type(x).__module__.startswith("torch")


def _dense(shape, strides, order):
    """Whether `strides` lay the axes out densely in `order` (outermost
    first); an axis of extent 1 may have any stride."""
    step = 1
    for i in reversed(order):
        if shape[i] != 1 and strides[i] != step:
            return False
        step *= shape[i]
    return True


def _strides_unless_row_major(shape, strides):
    if strides is None or 0 in shape or _dense(shape, strides,
                                               range(len(shape))):
        return None
    return tuple(strides)


def layout_error(what, v, shape, dtype):
    """Why `v` (strides not row-major) cannot be read, and what to pass
    instead, given the graph's `shape` and `dtype` for it."""
    dims = "x".join(map(str, v.shape))
    contiguous = "x.contiguous() (a row-major copy)" if v.torch else \
        "a C-contiguous copy"
    if len(v.shape) == 4 and _dense(v.shape, v.strides, (0, 2, 3, 1)):
        n, c, h, w = v.shape
        nhwc = (n, h, w, c)
        permute = "x.%s(0, 2, 3, 1)" % ("permute" if v.torch else
                                        "transpose")
        head = ("%s is a channels_last tensor: NCHW shape %s over NHWC "
                "memory (strides %s); fusec reads tensors row-major"
                % (what, dims, v.strides))
        if tuple(shape) == nhwc:
            return ("%s, and the graph takes NHWC %s: pass %s, an NHWC view "
                    "of the same memory (no copy)"
                    % (head, describe(shape, dtype), permute))
        if tuple(shape) == tuple(v.shape):
            return ("%s, and the graph takes NCHW %s: pass %s, or build the "
                    "graph NHWC and pass %s (an NHWC view, no copy)"
                    % (head, describe(shape, dtype), contiguous, permute))
        return ("%s; the graph takes %s. %s is its NHWC view (%s, no copy), "
                "%s its NCHW one" % (head, describe(shape, dtype), permute,
                                     "x".join(map(str, nhwc)), contiguous))
    return ("%s is not row-major (C-contiguous): shape %s, strides %s in "
            "elements (a transposed, sliced or expanded view); fusec reads "
            "tensors row-major: pass %s" % (what, dims, v.strides,
                                            contiguous))


def _torch_view(x, what):
    dtype = _torch_dtype_map().get(x.dtype)
    if dtype is None:
        raise TypeError("%s is a %s tensor; fusec takes float32, float16 and "
                        "bfloat16" % (what, x.dtype))
    if x.requires_grad and sys.modules["torch"].is_grad_enabled():
        # Running it would hand back a result with no grad_fn: a training
        # loop would drop this layer's gradients without a word.
        raise TypeError(
            "%s requires grad, but fusec kernels have no backward yet: call "
            "under torch.no_grad() / torch.inference_mode(), or pass "
            "x.detach()" % what)
    if not x.is_cuda:
        raise TypeError("%s is on %s; fusec runs on CUDA tensors"
                        % (what, x.device))
    shape = tuple(x.shape)
    strides = None if x.is_contiguous() else \
        _strides_unless_row_major(shape, x.stride())
    return View(x.data_ptr(), shape, dtype, x.device.index or 0, strides,
                torch=True)


def pointer_device(ptr, what, x):
    """The device that holds `ptr`, asked of the driver."""
    ordinal = ctypes.c_int()
    if _capi.runtime.fusec_pointer_device(ptr, ctypes.byref(ordinal)) != 0:
        raise TypeError(
            "%s (a %s) has no .device, and fusec cannot tell which GPU holds "
            "its __cuda_array_interface__ pointer 0x%x: %s"
            % (what, type(x).__name__, ptr,
               _capi.runtime.fusec_last_error_message().decode()))
    return ordinal.value


_typestrs = {"<f4": F32, "<f2": F16, "f4": F32, "f2": F16}


def _cai_view(x, cai, what, output):
    dtype = _typestrs.get(cai["typestr"].lstrip("|="))
    if dtype is None:
        raise TypeError("%s has element type %r; fusec takes float32 and "
                        "float16 (bfloat16 through PyTorch or DLPack)"
                        % (what, cai["typestr"]))
    shape = tuple(cai["shape"])
    ptr, read_only = cai["data"][0] or 0, cai["data"][1]
    if output and read_only:
        raise TypeError("%s (a %s) is read-only (its __cuda_array_interface__ "
                        "says so) and fusec would write the graph's result "
                        "into it: pass a writable array"
                        % (what, type(x).__name__))
    strides = cai.get("strides")
    if strides is not None:
        itemsize = ITEMSIZE[dtype]
        if any(s % itemsize for s in strides):
            raise TypeError("%s has strides %s bytes, not whole elements of "
                            "%d bytes: pass a C-contiguous copy"
                            % (what, tuple(strides), itemsize))
        strides = _strides_unless_row_major(
            shape, [s // itemsize for s in strides])
    # CuPy's arrays say where they are; others (Numba's) only through their
    # pointer. An empty array may have none: it is on no device.
    device = getattr(getattr(x, "device", None), "id", None)
    if not isinstance(device, int):
        device = pointer_device(ptr, what, x) if ptr else None
    return View(ptr, shape, dtype, device, strides)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    """DLPack 1.x: the version and flags come before the tensor."""
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]

_kDLCUDA, _kDLCUDAManaged = 2, 13
_dl_dtypes = {(2, 32): F32, (2, 16): F16, (4, 16): BF16}
_DLPACK_READ_ONLY, _DLPACK_IS_COPIED = 1, 2


def _dlpack_capsule(x, stream):
    """x's DLPack capsule: a versioned one (with flags) where x makes
    them, else the legacy one."""
    for kwargs in ({"stream": stream, "max_version": (1, 0)},
                   {"stream": stream}):
        try:
            return x.__dlpack__(**kwargs)
        except TypeError:
            pass
    return x.__dlpack__()


def _dlpack_view(x, what, stream, output):
    capsule = _dlpack_capsule(x, stream)
    # The capsule keeps its name, so its destructor frees the tensor; `x`
    # keeps the memory alive.
    if _PyCapsule_GetName(capsule) == b"dltensor_versioned":
        m = _DLManagedTensorVersioned.from_address(
            _PyCapsule_GetPointer(capsule, b"dltensor_versioned"))
        if m.major != 1:
            raise TypeError("%s (a %s) is exported as DLPack %d.%d; fusec "
                            "reads DLPack 1.x" % (what, type(x).__name__,
                                                  m.major, m.minor))
        t, flags = m.dl_tensor, m.flags
    else:
        # A DLManagedTensor begins with its DLTensor.
        t = _DLTensor.from_address(_PyCapsule_GetPointer(capsule,
                                                         b"dltensor"))
        flags = 0
    if output and flags & _DLPACK_READ_ONLY:
        raise TypeError("%s (a %s) is read-only (its DLPack export says so) "
                        "and fusec would write the graph's result into it: "
                        "pass a writable array" % (what, type(x).__name__))
    if output and flags & _DLPACK_IS_COPIED:
        raise TypeError("%s (a %s) is exported through DLPack as a copy, so "
                        "the result fusec writes there would be lost: pass "
                        "an array whose memory DLPack shares"
                        % (what, type(x).__name__))
    if t.device.device_type not in (_kDLCUDA, _kDLCUDAManaged):
        raise TypeError("%s (a %s) is not in CUDA memory (DLPack device type "
                        "%d); fusec kernels take GPU tensors, and "
                        "fusec.reference evaluates graphs on host arrays"
                        % (what, type(x).__name__, t.device.device_type))
    dtype = _dl_dtypes.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise TypeError("%s has DLPack type code %d, %d bits; fusec takes "
                        "float32, float16 and bfloat16"
                        % (what, t.dtype.code, t.dtype.bits))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = _strides_unless_row_major(
            shape, [t.strides[i] for i in range(t.ndim)])
    return View((t.data or 0) + t.byte_offset, shape, dtype,
                t.device.device_id, strides)


def view(x, what, stream=None, output=False):
    """The View of `x`, or TypeError saying why there is none; an `output`
    must be writable."""
    if is_torch(x):
        return _torch_view(x, what)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_view(x, cai, what, output)
    if hasattr(x, "__dlpack__"):
        return _dlpack_view(x, what, stream, output)
    raise TypeError("%s is a %s: fusec takes GPU tensors (PyTorch, CuPy, "
                    "or anything with __cuda_array_interface__ or "
                    "__dlpack__); for NumPy arrays, see fusec.reference"
                    % (what, type(x).__name__))


def raw_buffer(x, what):
    """(address, bytes, device) of a contiguous device buffer of any
    element type: a PyTorch tensor or anything with
    __cuda_array_interface__ (a workspace is untyped memory)."""
    if is_torch(x):
        if not x.is_cuda or not x.is_contiguous():
            raise TypeError("%s must be a contiguous CUDA tensor" % what)
        return x.data_ptr(), x.numel() * x.element_size(), x.device.index or 0
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        itemsize = int(cai["typestr"][2:])
        count = 1
        for d in cai["shape"]:
            count *= d
        strides = cai.get("strides")
        if strides is not None and (
                any(s % itemsize for s in strides) or
                _strides_unless_row_major(tuple(cai["shape"]), [
                    s // itemsize for s in strides]) is not None):
            raise TypeError("%s is not C-contiguous" % what)
        ptr = cai["data"][0] or 0
        if cai["data"][1]:
            raise TypeError("%s (a %s) is read-only (its "
                            "__cuda_array_interface__ says so) and fusec "
                            "would write into it: pass a writable array"
                            % (what, type(x).__name__))
        device = getattr(getattr(x, "device", None), "id", None)
        if not isinstance(device, int):
            device = pointer_device(ptr, what, x) if ptr else 0
        return ptr, count * itemsize, device
    raise TypeError("%s is a %s: pass a CUDA tensor (PyTorch, CuPy)"
                    % (what, type(x).__name__))


def current_stream(x, device):
    """The stream work on `x` is ordered on: PyTorch's or CuPy's current
    stream, else None (the caller then uses the legacy default stream)."""
    if is_torch(x):
        return torch_current_stream(device)
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(x).__module__.startswith("cupy"):
        return cupy.cuda.get_current_stream().ptr
    return None


def stream_handle(stream):
    """A CUstream from an int, a torch.cuda.Stream, a cupy Stream, ..."""
    if stream is None or isinstance(stream, int):
        return stream or 0
    for attribute in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    raise TypeError("stream must be an int (a CUstream) or an object with "
                    "cuda_stream or ptr, not %s" % type(stream).__name__)


def empty_like_library(x, shape, dtype, device):
    """A new output in the library `x` comes from."""
    if is_torch(x):
        import torch
        torch_dtype = {v: k for k, v in _torch_dtype_map().items()}[dtype]
        return torch.empty(shape, dtype=torch_dtype,
                           device=torch.device("cuda", device))
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(x).__module__.startswith("cupy") and \
            dtype != BF16:
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype="float32" if dtype == F32
                              else "float16")
    return None
