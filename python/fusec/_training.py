"""Training steps: fusec.compile(graph, train=True) (docs/Training.md).

A TrainingKernel holds a training artifact: the graph's forward plan, which
returns its results and saves what the backward needs on the device, and
its backward plan, which takes the results' gradients and returns the
arguments'. A TrainingStep holds one step's saved tensors; the kernel's own
forward/backward use one default step per device. The CPU reference runs
the same pair on the float64 interpreter.
"""

import ctypes
import threading

from . import _capi, _interop


def _check(status):
    from . import _runtime_check
    _runtime_check(status)


class _TrainingModule(_capi.Handle):
    """A training artifact loaded on one device."""

    _release = "fusec_training_release"

    def __init__(self, artifact, device):
        from . import _device
        self.device = device
        handle, _, _, _ = _device(device)
        rt = _capi.runtime
        self.h = ctypes.c_void_p()
        _check(rt.fusec_training_load(handle, artifact, len(artifact),
                                      ctypes.byref(self.h)))
        self.args = self._infos(rt.fusec_training_num_args(self.h),
                                rt.fusec_training_arg_info)
        self.results = self._infos(rt.fusec_training_num_results(self.h),
                                   rt.fusec_training_result_info)
        self.grad_results = [rt.fusec_training_grad_result(self.h, i) for i
                             in range(rt.fusec_training_num_grads(self.h))]
        self.wrt = [rt.fusec_training_wrt(self.h, i)
                    for i in range(rt.fusec_training_num_wrt(self.h))]
        # Results the backward reads again (not saved a second time).
        self.forward_results = [
            rt.fusec_training_forward_result(self.h, i)
            for i in range(rt.fusec_training_num_forward_results(self.h))]
        self.saved_bytes = rt.fusec_training_saved_bytes(self.h)
        self.torch_args = self.torch_results = self.torch_device = None
        self._local = threading.local()

    def fast(self, first):
        """Whether the PyTorch fast path may run: `first` holds a plain
        PyTorch tensor (or parameter); sets up the torch dtypes and device
        once."""
        if not first or type(first[0]) not in _interop.torch_tensor_types():
            return False
        if self.torch_device is None:
            import torch
            self.torch_args, self.torch_results = _interop.torch_dtypes_of(
                self.args, self.results)
            self.torch_device = torch.device("cuda", self.device)
        return True

    def buffers(self, which):
        """This thread's ctypes arrays for the forward's or the backward's
        inputs and outputs, kept between calls."""
        local = self._local
        arrays = getattr(local, which, None)
        if arrays is None:
            if which == "forward":
                sides = (self.args, self.results)
            else:
                sides = ([self.results[r] for r in self.grad_results],
                         [self.args[a] for a in self.wrt])
            arrays = []
            for infos in sides:
                array = (_capi.Buffer * len(infos))()
                for b, (_, _, nbytes) in zip(array, infos):
                    b.bytes = nbytes
                arrays.append(array)
            arrays = tuple(arrays)
            setattr(local, which, arrays)
        return arrays


def _views(values, infos, what, device, handle, output=False):
    """Buffers for `values` (device tensors of the types `infos` give)."""
    from . import Kernel
    buffers = (_capi.Buffer * len(infos))()
    for i, (x, (shape, dtype, nbytes)) in enumerate(zip(values, infos)):
        name = "%s %d" % (what, i)
        if _interop.is_torch(x) and x.requires_grad:
            x = x.detach()  # the step is the backward; autograd is the caller's
        v = _interop.view(x, name, handle, output=output)
        Kernel._check(v, shape, dtype, device, name)
        buffers[i].ptr, buffers[i].bytes = v.ptr, nbytes
    return buffers


class TrainingStep(_capi.Handle):
    """One training step's state on one device: the tensors the forward
    saves (device memory the step owns) and its arguments and results,
    which the backward reads again (the step keeps them alive; a result
    changed in place before the backward is refused, as autograd does)."""

    _release = "fusec_training_step_release"

    def __init__(self, module):
        self._module = module  # keeps the module loaded while the step is
        self.h = ctypes.c_void_p()
        _check(_capi.runtime.fusec_training_step_create(
            module.h, ctypes.byref(self.h)))
        self._args = None
        self._like = None
        self._results = None
        self._versions = None

    def _torch_buffers(self, values, infos, dtypes, buffers):
        """Fills `buffers` from `values` when each is a contiguous PyTorch
        tensor (or parameter) of its plan entry's shape and dtype on the
        module's device; False (nothing filled) otherwise, for the general
        path to check and say what is wrong."""
        device = self._module.device
        if len(values) != len(infos) or not all(
                _interop.plain_torch(x, info[0], dtype, device)
                for x, info, dtype in zip(values, infos, dtypes)):
            return False
        for b, x in zip(buffers, values):
            b.ptr = x.data_ptr()
        return True

    def _torch_empty(self, infos, dtypes):
        import torch
        device = self._module.torch_device
        return [torch.empty(info[0], dtype=dtype, device=device)
                for info, dtype in zip(infos, dtypes)]

    def forward(self, *args, stream=None):
        """Runs the forward on device tensors, one per graph argument, and
        returns the results (a tensor, or a tuple of several), new tensors of
        the first argument's library."""
        m = self._module
        if stream is None and m.fast(args[:1]):
            # PyTorch tensors on the current stream, without the views and
            # checks of the general path (about 10 us a tensor on the host).
            ins, outs = m.buffers("forward")
            if self._torch_buffers(args, m.args, m.torch_args, ins):
                results = self._torch_empty(m.results, m.torch_results)
                self._torch_buffers(results, m.results, m.torch_results, outs)
                _check(_capi.runtime.fusec_training_step_forward(
                    self.h, _interop.torch_current_stream(m.device), ins,
                    len(m.args), outs, len(m.results)))
                return self._forwarded(args, args[0], results)
        if len(args) != len(m.args):
            raise TypeError("the graph takes %d arguments, %d were given"
                            % (len(m.args), len(args)))
        first = args[0]
        handle = _interop.current_stream(first, m.device) or 0 \
            if stream is None else _interop.stream_handle(stream)
        ins = _views(args, m.args, "argument", m.device, handle)
        results = [self._empty(first, shape, dtype)
                   for shape, dtype, _ in m.results]
        outs = _views(results, m.results, "result", m.device, handle,
                      output=True)
        _check(_capi.runtime.fusec_training_step_forward(
            self.h, handle, ins, len(m.args), outs, len(m.results)))
        return self._forwarded(args, first, results)

    def _forwarded(self, args, first, results):
        """Keeps what the backward reads again; the forward's return."""
        self._args, self._like, self._results = args, first, results
        self._versions = [getattr(results[r], "_version", None)
                          for r in self._module.forward_results]
        return results[0] if len(results) == 1 else tuple(results)

    def backward(self, *grads, stream=None):
        """Runs the backward of the last forward: one gradient per graph
        result (None, or anything, for results without one: running
        statistics). Returns one gradient per graph argument, None for the
        arguments not differentiated (as torch.autograd.Function.backward
        returns them)."""
        m = self._module
        if self._args is None:
            raise TypeError("backward before forward: the backward reads "
                            "what the forward saves")
        if len(grads) != len(m.results):
            raise TypeError("the graph has %d results: pass one gradient "
                            "per result (None where there is none), %d "
                            "were given" % (len(m.results), len(grads)))
        for r, version in zip(m.forward_results, self._versions):
            if getattr(self._results[r], "_version", None) != version:
                raise RuntimeError(
                    "result %d of the forward was modified in place after "
                    "the forward; the backward reads it again" % r)
        like = self._like
        if stream is None and m.fast((like,)):
            ins, outs = m.buffers("backward")
            given = [grads[r] for r in m.grad_results]
            infos = [m.results[r] for r in m.grad_results]
            dtypes = [m.torch_results[r] for r in m.grad_results]
            if self._torch_buffers(given, infos, dtypes, ins):
                wrt = [m.args[a] for a in m.wrt]
                wrt_dtypes = [m.torch_args[a] for a in m.wrt]
                out = self._torch_empty(wrt, wrt_dtypes)
                self._torch_buffers(out, wrt, wrt_dtypes, outs)
                _check(_capi.runtime.fusec_training_step_backward(
                    self.h, _interop.torch_current_stream(m.device), ins,
                    len(given), outs, len(out)))
                return self._gradients(out)
        handle = _interop.current_stream(like, m.device) or 0 \
            if stream is None else _interop.stream_handle(stream)
        given = []
        for r in m.grad_results:
            g = grads[r]
            if g is None:  # a result the loss does not use
                shape, dtype, _ = m.results[r]
                g = self._zeros(like, shape, dtype)
            given.append(g)
        ins = _views(given, [m.results[r] for r in m.grad_results],
                     "gradient of result", m.device, handle)
        out = [self._empty(like, m.args[a][0], m.args[a][1]) for a in m.wrt]
        outs = _views(out, [m.args[a] for a in m.wrt], "argument gradient",
                      m.device, handle, output=True)
        _check(_capi.runtime.fusec_training_step_backward(
            self.h, handle, ins, len(given), outs, len(out)))
        return self._gradients(out)

    def _gradients(self, out):
        """One per graph argument: `out` at the differentiated ones."""
        gradients = [None] * len(self._module.args)
        for a, g in zip(self._module.wrt, out):
            gradients[a] = g
        return tuple(gradients)

    def _empty(self, like, shape, dtype):
        t = _interop.empty_like_library(like, shape, dtype, self._module.device)
        if t is None:
            raise TypeError("fusec cannot allocate tensors for a %s; pass "
                            "PyTorch or CuPy tensors" % type(like).__name__)
        return t

    def _zeros(self, like, shape, dtype):
        t = self._empty(like, shape, dtype)
        t.fill_(0) if hasattr(t, "fill_") else t.fill(0)
        return t


class TrainingKernel:
    """A compiled training step (fusec.compile(graph, train=True)).

    forward(*args) runs the forward on device tensors and keeps what the
    backward needs; backward(*grads) takes one gradient per result and
    returns one per argument (None for those not differentiated). step()
    makes an independent step (one per micro-batch in flight, or per
    torch.autograd.Function call). reference(...) is the CPU path."""

    def __init__(self, artifact, source, milliseconds, warnings_text,
                 options, text, wrt, entry):
        self.artifact = artifact
        self.source = source
        self.milliseconds = milliseconds
        self.warnings = warnings_text
        self.options = options
        self._text, self._wrt, self._entry = text, wrt, entry
        self._modules, self._steps = {}, {}
        self._lock = threading.Lock()

    def _module(self, device):
        with self._lock:
            m = self._modules.get(device)
            if m is None:
                m = self._modules[device] = _TrainingModule(
                    self.artifact.encode(), device)
            return m

    def step(self, device=0):
        """A new step on `device`, with saved tensors of its own."""
        return TrainingStep(self._module(device))

    def _default_step(self, device):
        step = self._steps.get(device)
        if step is None:
            step = self._steps[device] = self.step(device)
        return step

    def forward(self, *args, stream=None):
        if not args:
            raise TypeError("forward takes the graph's arguments")
        v = _interop.view(args[0].detach() if _interop.is_torch(args[0])
                          else args[0], "argument 0")
        device = 0 if v.device is None else v.device
        self._device = device
        return self._default_step(device).forward(*args, stream=stream)

    def backward(self, *grads, stream=None):
        step = self._steps.get(getattr(self, "_device", 0))
        if step is None:
            raise TypeError("backward before forward: the backward reads "
                            "what the forward saves")
        return step.backward(*grads, stream=stream)

    def signature(self, device=0):
        """{"args": [(shape, dtype)], "results": [...], "wrt": [argument
        indices differentiated], "grad_results": [results with a
        gradient], "forward_results": [results the backward reads
        again], "saved_bytes": bytes a step holds}."""
        m = self._module(device)
        name = _interop.DTYPE_NAMES
        return {"args": [(s, name[d]) for s, d, _ in m.args],
                "results": [(s, name[d]) for s, d, _ in m.results],
                "wrt": list(m.wrt), "grad_results": list(m.grad_results),
                "forward_results": list(m.forward_results),
                "saved_bytes": m.saved_bytes}

    def reference(self, *args, grads):
        """The step on the float64 reference interpreter (no GPU): NumPy
        arrays in, (results, gradients) out, gradients one per argument
        (None for those not differentiated)."""
        r = reference_training(self._text, args, grads, wrt=self._wrt,
                               entry=self._entry)
        return r["results"], r["gradients"]

    def cpu(self):
        """The same forward/backward interface on the reference interpreter,
        with NumPy arrays: for checking without a GPU."""
        return ReferenceStep(self._text, self._wrt, self._entry)


class ReferenceStep:
    """forward(*arrays) / backward(*grads) on the float64 interpreter."""

    def __init__(self, text, wrt, entry):
        self._text, self._wrt, self._entry = text, wrt, entry
        self._args = None

    def forward(self, *args):
        self._args = args
        # The forward alone: gradients of zero, whose backward is not kept.
        outs = _evaluate(self._text, args, None, self._wrt, self._entry)
        results = outs["results"]
        return results[0] if len(results) == 1 else tuple(results)

    def backward(self, *grads):
        if self._args is None:
            raise TypeError("backward before forward: the backward reads "
                            "what the forward saves")
        return tuple(_evaluate(self._text, self._args, grads, self._wrt,
                               self._entry)["gradients"])


def _host_tensors(arrays):
    import numpy as np
    arrays = [np.ascontiguousarray(np.asarray(x, dtype=np.float64))
              for x in arrays]
    tensors = (_capi.HostTensor * len(arrays))()
    keep = [arrays]
    for t, a in zip(tensors, arrays):
        shape = (ctypes.c_longlong * max(a.ndim, 1))(*a.shape)
        keep.append(shape)
        t.data = a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        t.shape, t.rank = shape, a.ndim
    return tensors, len(arrays), keep


def _evaluate(text, args, grads, wrt, entry):
    """fusec_jit_evaluate_training; grads None: zeros of the results'
    shapes (for the forward alone)."""
    import numpy as np
    from . import Error, _b, F16
    jit = _capi.jit
    if grads is None or any(g is None for g in grads):
        # Zeros of the results' shapes, which a forward evaluation gives.
        from . import reference
        shapes = [r.shape for r in reference(text, *args, entry=entry)]
        grads = [np.zeros(shapes[i]) if grads is None or grads[i] is None
                 else grads[i] for i in range(len(shapes))]
    ins, n_in, keep_in = _host_tensors(args)
    gs, n_g, keep_g = _host_tensors(grads)
    wrt_list = list(wrt or [])
    wrt_array = (ctypes.c_uint * max(len(wrt_list), 1))(*wrt_list)
    e = jit.fusec_jit_evaluate_training(
        text.encode(), b"<graph>", _b(entry), ins, n_in, gs, n_g, wrt_array,
        len(wrt_list))
    try:
        error = jit.fusec_jit_training_evaluation_error(e).decode()
        if error:
            raise Error(error.rstrip())

        def part(kind):
            out = []
            for i in range(jit.fusec_jit_training_evaluation_count(e, kind)):
                shape_p = ctypes.POINTER(ctypes.c_longlong)()
                rank, dtype = ctypes.c_size_t(), ctypes.c_int()
                data = jit.fusec_jit_training_evaluation_tensor(
                    e, kind, i, ctypes.byref(shape_p), ctypes.byref(rank),
                    ctypes.byref(dtype))
                shape = tuple(shape_p[j] for j in range(rank.value))
                count = int(np.prod(shape, dtype=np.int64))
                values = np.ctypeslib.as_array(data, shape=(count,)).copy() \
                    if count else np.zeros(0)
                out.append(values.reshape(shape).astype(
                    np.float16 if dtype.value == F16 else np.float32))
            return out

        results, saved, grads_out = part(0), part(1), part(2)
        differentiated = [jit.fusec_jit_training_evaluation_wrt(e, i)
                          for i in range(len(grads_out))]
        gradients = [None] * len(args)
        for a, g in zip(differentiated, grads_out):
            gradients[a] = g
        return {"results": results, "saved": saved, "gradients": gradients,
                "wrt": differentiated}
    finally:
        jit.fusec_jit_training_evaluation_free(e)


def reference_training(graph, args, grads, wrt=None, entry=None):
    """A training step on the float64 reference interpreter: the graph's
    forward on `args` (NumPy arrays), its backward on `grads` (one per
    graph result; None for a result the loss does not use). Returns a dict:
    "results" (one per result), "saved" (what the forward saves),
    "gradients" (one per argument, None for those not differentiated) and
    "wrt" (the arguments differentiated)."""
    from . import _graph_text
    text = _graph_text(graph, "reference_training")
    return _evaluate(text, args, grads, wrt, entry)
