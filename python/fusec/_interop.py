"""Device tensors from other libraries, without copies: PyTorch tensors,
anything with __cuda_array_interface__ (CuPy, Numba), anything with
__dlpack__ (JAX, TensorFlow, ...)."""

import ctypes
import sys

F32, F16, BF16 = 0, 1, 2
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16"}
ITEMSIZE = {F32: 4, F16: 2, BF16: 2}


class View:
    """One device buffer: address, shape, fusec dtype, device ordinal."""
    __slots__ = ("ptr", "shape", "dtype", "device")

    def __init__(self, ptr, shape, dtype, device):
        self.ptr, self.shape, self.dtype, self.device = (ptr, shape, dtype,
                                                         device)


_torch_dtypes = None


def _torch_dtype_map():
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch
        _torch_dtypes = {torch.float32: F32, torch.float16: F16,
                         torch.bfloat16: BF16}
    return _torch_dtypes


_torch_tensor = None
_raw_stream = None


def torch_tensor_type():
    """torch.Tensor once PyTorch is imported (by the caller), else None."""
    global _torch_tensor
    if _torch_tensor is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        _torch_tensor = torch.Tensor
    return _torch_tensor


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


def is_torch(x):
    return type(x).__module__.startswith("torch")


def _contiguous_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _torch_view(x, what):
    dtype = _torch_dtype_map().get(x.dtype)
    if dtype is None:
        raise TypeError("%s is a %s tensor; fusec takes float32, float16 and "
                        "bfloat16" % (what, x.dtype))
    if not x.is_cuda:
        raise TypeError("%s is on %s; fusec runs on CUDA tensors"
                        % (what, x.device))
    if not x.is_contiguous():
        raise TypeError("%s is not contiguous; pass x.contiguous()" % what)
    return View(x.data_ptr(), tuple(x.shape), dtype, x.device.index or 0)


_typestrs = {"<f4": F32, "<f2": F16, "f4": F32, "f2": F16}


def _cai_view(x, cai, what):
    dtype = _typestrs.get(cai["typestr"].lstrip("|="))
    if dtype is None:
        raise TypeError("%s has element type %r; fusec takes float32 and "
                        "float16 (bfloat16 through PyTorch or DLPack)"
                        % (what, cai["typestr"]))
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != _contiguous_strides(
            shape, ITEMSIZE[dtype]):
        raise TypeError("%s is not C-contiguous" % what)
    ptr = cai["data"][0] or 0
    device = getattr(getattr(x, "device", None), "id", 0)
    return View(ptr, shape, dtype, device if isinstance(device, int) else 0)


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


_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_kDLCUDA, _kDLCUDAManaged = 2, 13
_dl_dtypes = {(2, 32): F32, (2, 16): F16, (4, 16): BF16}


def _dlpack_view(x, what, stream):
    try:
        capsule = x.__dlpack__(stream=stream)
    except TypeError:
        capsule = x.__dlpack__()
    # A DLManagedTensor begins with its DLTensor. The capsule keeps its
    # name, so its destructor frees it; `x` keeps the memory alive.
    t = _DLTensor.from_address(_PyCapsule_GetPointer(capsule, b"dltensor"))
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
    if t.strides:
        strides = tuple(t.strides[i] * ITEMSIZE[dtype] for i in range(t.ndim))
        if any(d != 1 and s != c for d, s, c in zip(
                shape, strides, _contiguous_strides(shape, ITEMSIZE[dtype]))):
            raise TypeError("%s is not C-contiguous" % what)
    return View((t.data or 0) + t.byte_offset, shape, dtype,
                t.device.device_id)


def view(x, what, stream=None):
    """The View of `x`, or TypeError saying why there is none."""
    if is_torch(x):
        return _torch_view(x, what)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_view(x, cai, what)
    if hasattr(x, "__dlpack__"):
        return _dlpack_view(x, what, stream)
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
        if strides is not None and tuple(strides) != _contiguous_strides(
                tuple(cai["shape"]), itemsize):
            raise TypeError("%s is not C-contiguous" % what)
        device = getattr(getattr(x, "device", None), "id", 0)
        return cai["data"][0] or 0, count * itemsize, device
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
