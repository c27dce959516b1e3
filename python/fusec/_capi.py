"""ctypes declarations of fusec's two C APIs: the JIT library
(fusec/fusec_jit.h) and the runtime (fusec/runtime/fusec_runtime.h).

The libraries are the ones installed beside this file (the wheel carries
them), or those in $FUSEC_LIBRARY_DIR.
"""

import ctypes
import os
import re

from ctypes import (POINTER, Structure, c_char_p, c_double, c_int,
                    c_longlong, c_size_t, c_uint64, c_void_p)

_c_str_p = POINTER(c_char_p)
_c_ll_p = POINTER(c_longlong)


class JitOptions(Structure):
    _fields_ = [
        ("arch", c_char_p),
        ("fp32_math", c_char_p),
        ("tuning_db", c_char_p),
        ("entry", c_char_p),
        ("cache", c_int),
        ("cache_dir", c_char_p),
        ("backend", c_char_p),
        ("sm_count", c_longlong),
        ("gpu", c_char_p),
        ("tile_kernels", _c_str_p),
        ("tiles", _c_str_p),
        ("num_tiles", c_size_t),
        ("train", c_int),
        ("wrt", POINTER(ctypes.c_uint)),
        ("num_wrt", c_size_t),
        ("deterministic", c_int),
    ]


class TuneOptions(Structure):
    _fields_ = [
        ("arch", c_char_p),
        ("fp32_math", c_char_p),
        ("tuning_db", c_char_p),
        ("entry", c_char_p),
        ("device", c_int),
        ("seed", ctypes.c_ulonglong),
        ("repeat", ctypes.c_uint),
        ("reference_gflop", c_double),
    ]


#: fusec_jit_tune_callback: (kind, text, located, user_data).
TuneCallback = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_int, c_void_p)


class HostTensor(Structure):
    _fields_ = [("data", POINTER(c_double)), ("shape", _c_ll_p),
                ("rank", c_size_t)]


class Buffer(Structure):
    _fields_ = [("ptr", c_uint64), ("bytes", c_uint64)]


class BufferInfo(Structure):
    _fields_ = [("dtype", c_int), ("rank", c_size_t), ("shape", _c_ll_p),
                ("bytes", c_uint64)]


class Handle:
    """A runtime object held through `self.h` (a loaded module, a training
    module, a training step): the descriptions of its buffers, and its
    release, by the runtime function named `_release`, when the Python
    object goes."""

    _release = None

    def _infos(self, count, info):
        """(shape, dtype, bytes) of buffers 0..count-1 as `info(h, i,
        &BufferInfo)` describes them."""
        from . import _runtime_check
        out = []
        for i in range(count):
            bi = BufferInfo()
            _runtime_check(info(self.h, i, ctypes.byref(bi)))
            out.append((tuple(bi.shape[j] for j in range(bi.rank)),
                        bi.dtype, bi.bytes))
        return out

    def __del__(self):
        h, self.h = getattr(self, "h", None), None
        if h:
            getattr(runtime, self._release)(h)


def _library_dir():
    override = os.environ.get("FUSEC_LIBRARY_DIR")
    return override if override else os.path.dirname(os.path.abspath(__file__))


def _load(name):
    path = os.path.join(_library_dir(), name)
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(_cannot_load(path, str(e))) from None


_REINSTALL = ("reinstall the package, or set FUSEC_LIBRARY_DIR to the "
              "directory that holds libfusec_jit.so and libfusec_runtime.so")


def _cannot_load(path, error):
    """The ImportError's message when a library fails to load: what the
    loader found missing, what the wheel's libraries need of the system
    (its _platform.py, written by python/fusec_build.py) and what this
    system has, and what to do."""
    if not os.path.exists(path):
        return "fusec: %s is missing; %s." % (path, _REINSTALL)
    wheel = None
    if not os.environ.get("FUSEC_LIBRARY_DIR"):
        try:
            from . import _platform as wheel
        except ImportError:  # not a wheel: a source tree
            pass
    needs = ""
    if wheel is not None:
        needs = " This wheel (%s) needs glibc %s or newer%s, and %s." % (
            wheel.TAG, wheel.GLIBC, ", libstdc++ with GLIBCXX_%s" %
            wheel.GLIBCXX if wheel.GLIBCXX else "",
            ", ".join(wheel.LIBRARIES))
    build_here = ("or build the wheel on this system (pip install . from "
                  "the repository: docs/Python.md)")
    m = re.search(r"version `GLIBC_([0-9.]+)' not found", error)
    if m:
        have = (os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION"
                in os.confstr_names else None) or "another C library"
        return ("fusec: cannot load %s: it needs glibc %s or newer, and this "
                "system has %s.%s Install fusec on a newer system, %s. "
                "(%s)" % (path, m.group(1), have, needs, build_here, error))
    m = re.search(r"version `((GLIBCXX|CXXABI|GCC)_[0-9.]+)' not found",
                  error)
    if m:
        library = "libgcc_s.so.1" if m.group(2) == "GCC" else "libstdc++.so.6"
        return ("fusec: cannot load %s: it needs %s of %s, and this "
                "system's %s is older.%s Update the system's GCC runtime "
                "libraries, %s. (%s)" % (path, m.group(1), library, library,
                                         needs, build_here, error))
    m = re.match(r"(\S+): cannot open shared object file", error)
    if m and m.group(1) != path:
        return ("fusec: cannot load %s: it needs %s, which this system "
                "lacks.%s Install the package that provides %s, %s. (%s)" % (
                    path, m.group(1), needs, m.group(1), build_here, error))
    return "fusec: cannot load %s (%s);%s %s." % (path, error, needs,
                                                   _REINSTALL)


def _declare(lib, table):
    for name, restype, argtypes in table:
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes


# The runtime first: libfusec_jit.so needs it and finds this copy by its
# name wherever it was loaded from.
runtime = _load("libfusec_runtime.so")
jit = _load("libfusec_jit.so")

_v = c_void_p
_declare(jit, [
    ("fusec_jit_options_init", None, [POINTER(JitOptions)]),
    ("fusec_jit_compile", _v, [c_char_p, c_char_p, POINTER(JitOptions)]),
    ("fusec_jit_compile_file", _v, [c_char_p, POINTER(JitOptions)]),
    ("fusec_jit_result_free", None, [_v]),
    ("fusec_jit_ok", c_int, [_v]),
    ("fusec_jit_error", c_char_p, [_v]),
    ("fusec_jit_artifact", ctypes.POINTER(ctypes.c_char),
     [_v, POINTER(c_size_t)]),
    ("fusec_jit_warnings", c_char_p, [_v]),
    ("fusec_jit_result_source", c_int, [_v]),
    ("fusec_jit_milliseconds", c_double, [_v]),
    ("fusec_jit_evaluate", _v,
     [c_char_p, c_char_p, c_char_p, POINTER(HostTensor), c_size_t]),
    ("fusec_jit_evaluation_free", None, [_v]),
    ("fusec_jit_evaluation_error", c_char_p, [_v]),
    ("fusec_jit_evaluation_num_outputs", c_size_t, [_v]),
    ("fusec_jit_evaluation_output", POINTER(c_double),
     [_v, c_size_t, POINTER(_c_ll_p), POINTER(c_size_t), POINTER(c_int)]),
    ("fusec_jit_tolerance", c_double, [c_int, c_char_p]),
    ("fusec_jit_evaluate_training", _v,
     [c_char_p, c_char_p, c_char_p, POINTER(HostTensor), c_size_t,
      POINTER(HostTensor), c_size_t, POINTER(ctypes.c_uint), c_size_t]),
    ("fusec_jit_training_evaluation_free", None, [_v]),
    ("fusec_jit_training_evaluation_error", c_char_p, [_v]),
    ("fusec_jit_training_evaluation_count", c_size_t, [_v, c_int]),
    ("fusec_jit_training_evaluation_tensor", POINTER(c_double),
     [_v, c_int, c_size_t, POINTER(_c_ll_p), POINTER(c_size_t),
      POINTER(c_int)]),
    ("fusec_jit_training_evaluation_wrt", c_longlong, [_v, c_size_t]),
    ("fusec_jit_graph_new", _v, [c_char_p]),
    ("fusec_jit_graph_free", None, [_v]),
    ("fusec_jit_graph_input", c_int, [_v, _c_ll_p, c_size_t, c_int]),
    ("fusec_jit_graph_conv2d", c_int,
     [_v, c_int, c_int, _c_ll_p, _c_ll_p, c_size_t, _c_ll_p, c_longlong,
      c_int]),
    ("fusec_jit_graph_batch_norm", c_int,
     [_v, c_int, c_int, c_int, c_int, c_int, c_double]),
    ("fusec_jit_graph_unary", c_int, [_v, c_char_p, c_int]),
    ("fusec_jit_graph_binary", c_int, [_v, c_char_p, c_int, c_int]),
    ("fusec_jit_graph_linear", c_int, [_v, c_int, c_int, c_int]),
    ("fusec_jit_graph_layer_norm", c_int,
     [_v, c_int, c_int, c_int, c_double]),
    ("fusec_jit_graph_rms_norm", c_int, [_v, c_int, c_int, c_double]),
    ("fusec_jit_graph_attention", c_int,
     [_v, c_int, c_int, c_int, c_int, c_int, c_double]),
    ("fusec_jit_graph_rope", c_int, [_v, c_int, c_int, c_int, c_int]),
    ("fusec_jit_graph_max_pool2d", c_int,
     [_v, c_int, _c_ll_p, c_size_t, _c_ll_p, c_size_t, _c_ll_p, c_size_t]),
    ("fusec_jit_graph_avg_pool2d", c_int,
     [_v, c_int, _c_ll_p, c_size_t, _c_ll_p, c_size_t, _c_ll_p, c_size_t,
      c_int]),
    ("fusec_jit_graph_transpose", c_int, [_v, c_int, _c_ll_p, c_size_t]),
    ("fusec_jit_graph_reshape", c_int, [_v, c_int, _c_ll_p, c_size_t]),
    ("fusec_jit_graph_cast", c_int, [_v, c_int, c_int]),
    ("fusec_jit_graph_slice", c_int, [_v, c_int, _c_ll_p, _c_ll_p, c_size_t]),
    ("fusec_jit_graph_concat", c_int,
     [_v, POINTER(c_int), c_size_t, c_longlong]),
    ("fusec_jit_graph_split", c_int,
     [_v, c_int, c_longlong, _c_ll_p, c_size_t, POINTER(c_int)]),
    ("fusec_jit_graph_op", c_int,
     [_v, c_char_p, POINTER(c_int), c_size_t, c_char_p]),
    ("fusec_jit_graph_op_results", c_int,
     [_v, c_char_p, POINTER(c_int), c_size_t, c_char_p, POINTER(c_int),
      c_size_t]),
    ("fusec_jit_graph_output", None, [_v, c_int]),
    ("fusec_jit_graph_shape", c_longlong, [_v, c_int, _c_ll_p, c_size_t]),
    ("fusec_jit_graph_error", c_char_p, [_v]),
    ("fusec_jit_graph_clear_error", None, [_v]),
    ("fusec_jit_graph_mlir", c_char_p, [_v]),
    ("fusec_jit_tune_options_init", None, [POINTER(TuneOptions)]),
    ("fusec_jit_tune", _v,
     [c_char_p, c_char_p, POINTER(TuneOptions), TuneCallback, c_void_p]),
    ("fusec_jit_tuning_free", None, [_v]),
    ("fusec_jit_tuning_status", c_int, [_v]),
    ("fusec_jit_tune_status_name", c_char_p, [c_int]),
    ("fusec_jit_tuning_error", c_char_p, [_v]),
    ("fusec_jit_tuning_warnings", c_char_p, [_v]),
    ("fusec_jit_tuning_database", c_char_p, [_v]),
    ("fusec_jit_tuning_seconds", c_double, [_v]),
    ("fusec_jit_tuning_num_kernels", c_size_t, [_v]),
    ("fusec_jit_tuning_kernel", c_int,
     [_v, c_size_t, _c_str_p, _c_str_p, _c_str_p, POINTER(c_double),
      POINTER(c_double)]),
    ("fusec_jit_chip_for_device", c_char_p, [c_int, c_int]),
    ("fusec_jit_clear_memory_cache", None, []),
    ("fusec_jit_version", c_char_p, []),
])

_declare(runtime, [
    ("fusec_status_name", c_char_p, [c_int]),
    ("fusec_last_error_message", c_char_p, []),
    ("fusec_device_count", c_int, [POINTER(c_int)]),
    ("fusec_device_open", c_int, [c_int, POINTER(_v)]),
    ("fusec_device_release", None, [_v]),
    ("fusec_device_name", c_char_p, [_v]),
    ("fusec_device_compute_capability", None,
     [_v, POINTER(c_int), POINTER(c_int)]),
    ("fusec_device_multiprocessor_count", c_int, [_v]),
    ("fusec_device_synchronize", c_int, [_v, _v]),
    ("fusec_module_load", c_int, [_v, c_char_p, c_size_t, POINTER(_v)]),
    ("fusec_module_release", None, [_v]),
    ("fusec_module_num_inputs", c_size_t, [_v]),
    ("fusec_module_num_outputs", c_size_t, [_v]),
    ("fusec_module_input_info", c_int, [_v, c_size_t, POINTER(BufferInfo)]),
    ("fusec_module_output_info", c_int, [_v, c_size_t, POINTER(BufferInfo)]),
    ("fusec_module_run", c_int,
     [_v, _v, POINTER(Buffer), c_size_t, POINTER(Buffer), c_size_t]),
    ("fusec_module_run_with_workspace", c_int,
     [_v, _v, POINTER(Buffer), c_size_t, POINTER(Buffer), c_size_t, Buffer]),
    ("fusec_module_workspace_bytes", c_uint64, [_v]),
    ("fusec_module_workspace_count", c_size_t, [_v]),
    ("fusec_module_set_max_workspaces", None, [_v, c_size_t]),
    ("fusec_pointer_device", c_int, [c_uint64, POINTER(c_int)]),
    ("fusec_training_load", c_int, [_v, c_char_p, c_size_t, POINTER(_v)]),
    ("fusec_training_release", None, [_v]),
    ("fusec_training_num_args", c_size_t, [_v]),
    ("fusec_training_num_results", c_size_t, [_v]),
    ("fusec_training_arg_info", c_int, [_v, c_size_t, POINTER(BufferInfo)]),
    ("fusec_training_result_info", c_int,
     [_v, c_size_t, POINTER(BufferInfo)]),
    ("fusec_training_num_grads", c_size_t, [_v]),
    ("fusec_training_grad_result", c_longlong, [_v, c_size_t]),
    ("fusec_training_num_wrt", c_size_t, [_v]),
    ("fusec_training_wrt", c_longlong, [_v, c_size_t]),
    ("fusec_training_num_forward_results", c_size_t, [_v]),
    ("fusec_training_forward_result", c_longlong, [_v, c_size_t]),
    ("fusec_training_num_forward_args", c_size_t, [_v]),
    ("fusec_training_forward_arg", c_longlong, [_v, c_size_t]),
    ("fusec_training_forward_plan", _v, [_v]),
    ("fusec_training_backward_plan", _v, [_v]),
    ("fusec_training_num_saved", c_size_t, [_v]),
    ("fusec_training_saved_bytes", c_uint64, [_v]),
    ("fusec_training_step_create", c_int, [_v, POINTER(_v)]),
    ("fusec_training_step_release", None, [_v]),
    ("fusec_training_step_forward", c_int,
     [_v, _v, POINTER(Buffer), c_size_t, POINTER(Buffer), c_size_t]),
    ("fusec_training_step_backward", c_int,
     [_v, _v, POINTER(Buffer), c_size_t, POINTER(Buffer), c_size_t]),
])
