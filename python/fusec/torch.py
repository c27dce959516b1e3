"""fusec graphs as PyTorch operators, and fusec as a torch.compile backend
(docs/PyTorch.md).

    import fusec, fusec.torch
    g = fusec.Graph("mlp")
    ...
    mlp = fusec.torch.op(g)       # torch.ops.fusec.mlp_<hash> and friends
    y = mlp(x, w1, w2)            # autograd through fusec's backward graph

Each op is a torch.library custom op: a fake implementation (the plan's
shapes and dtypes, for torch.compile and FakeTensor), a CUDA one (the
compiled plans, on the current stream, with the intermediates in a
PyTorch-allocated workspace, so that the call can be captured in a CUDA
graph) and a CPU one (fusec's float64 reference interpreter, for checking
without a GPU). With train=True (the default) a call whose inputs need a
gradient runs the training forward, which returns the tensors its backward
reads as extra outputs that autograd keeps; the backward is a second op
that runs fusec's backward plan.
"""

import hashlib
import json
import operator
import re
import threading

import torch

from . import Error, _capi, _graph_text, _runtime_check
from . import compile as _compile

__all__ = ["Op", "Report", "backend", "op", "report", "reports"]

_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_PLAN_LINE = re.compile(r"^// fusec-plan: (.*?)\r?$", re.M)
_NAME = re.compile(r"[^A-Za-z0-9_]")


def _plans(artifact):
    """The launch plans of an artifact (one, or a training artifact's
    forward and backward), as dicts."""
    return [json.loads(line) for line in _PLAN_LINE.findall(artifact)]


def _buffers(plan, role):
    """[(shape, torch dtype)] of the plan's buffers of `role`, by index."""
    found = sorted((b["index"], tuple(b["shape"]), _DTYPES[b["dtype"]])
                   for b in plan["buffers"] if b["role"] == role)
    return [(shape, dtype) for _, shape, dtype in found]


def _describe(shape, dtype):
    return "%s %s" % (str(dtype).replace("torch.", ""), list(shape))


# Every op takes and returns lists: a schema has at most 64 arguments, and a
# partition of a whole network takes hundreds of weights.
_SCHEMA = "(Tensor[] args) -> Tensor[]"


class _Plan:
    """A plan of a loaded artifact on one device (a Kernel's module, or a
    training module's forward or backward plan): runs it on PyTorch
    tensors, with the intermediates in a PyTorch-allocated workspace."""

    def __init__(self, handle, owner):
        self.h, self._owner = handle, owner  # the owner keeps it loaded
        rt = _capi.runtime
        self.workspace_bytes = rt.fusec_module_workspace_bytes(handle)
        self._local = threading.local()

    def run(self, inputs, outputs):
        local = self._local
        try:
            ins, outs = local.ins, local.outs
        except AttributeError:
            ins = local.ins = (_capi.Buffer * len(inputs))()
            outs = local.outs = (_capi.Buffer * len(outputs))()
        for buffers, tensors in ((ins, inputs), (outs, outputs)):
            for b, t in zip(buffers, tensors):
                b.ptr, b.bytes = t.data_ptr(), t.numel() * t.element_size()
        device = inputs[0].device if inputs else outputs[0].device
        stream = torch.cuda.current_stream(device).cuda_stream
        rt = _capi.runtime
        if self.workspace_bytes:
            # The caching allocator's memory: torch accounts for it, a CUDA
            # graph capture takes it from its pool, and freeing it after the
            # call is ordered on this stream.
            ws = torch.empty(self.workspace_bytes, dtype=torch.uint8,
                             device=device)
            _runtime_check(rt.fusec_module_run_with_workspace(
                self.h, stream, ins, len(inputs), outs, len(outputs),
                _capi.Buffer(ws.data_ptr(), self.workspace_bytes)))
        else:
            _runtime_check(rt.fusec_module_run(
                self.h, stream, ins, len(inputs), outs, len(outputs)))


class Op:
    """A fusec graph as PyTorch custom ops (made by fusec.torch.op).

    Calling it runs `torch.ops.fusec.<name>` (the inference plan) or, when
    a gradient is needed, `<name>_fwd` with autograd, whose backward runs
    `<name>_bwd`. Attributes: name, text (the graph), args / results (the
    [(shape, dtype)] the graph takes and returns), wrt (the arguments
    differentiated), kernel (fusec.Kernel), training (fusec.TrainingKernel
    or None)."""

    def __init__(self, text, name, train, wrt, options):
        self.text = text
        self.kernel = _compile(text, **options)
        (plan,) = _plans(self.kernel.artifact)
        self.args = _buffers(plan, "input")
        self.results = _buffers(plan, "output")
        self.name = name
        # Both compiles before any registration: a graph that fails (no
        # gradient rule) leaves no half-registered op behind.
        self.training = _compile(text, train=True, wrt=wrt, **options) \
            if train else None
        self._lock = threading.Lock()
        self._plans = {}
        self.infer_op = self._define(
            name, self._infer_cpu, self._infer_cuda,
            lambda *args: self._empty(self.results, args, "fake"))
        if not train:
            return
        forward, backward = _plans(self.training.artifact)
        t = backward["training"]
        self.wrt = list(t["wrt"])
        self.grad_results = list(t["grad_results"])
        self.forward_args = list(t["forward_args"])
        self.forward_results = list(t["forward_results"])
        self.saved = _buffers(forward, "output")[len(self.results):]
        self.fwd_op = self._define(
            name + "_fwd", self._fwd_cpu, self._fwd_cuda,
            lambda *args: self._empty(self.results + self.saved, args,
                                      "fake"))
        # The backward takes every argument (the CPU path recomputes the
        # forward from them), the results, the saved tensors and one
        # gradient per result with one.
        self.bwd_op = self._define(name + "_bwd", self._bwd_cpu,
                                   self._bwd_cuda, self._bwd_fake,
                                   check=False)
        self.fwd_op.register_autograd(self._backward,
                                      setup_context=self._setup_context)

    # ---- registration ----------------------------------------------------

    def _define(self, name, cpu, cuda, fake, check=True):
        def dispatch(args):
            if check:
                self._check(args)
            device = args[0].device if args else None
            if device is not None and device.type == "cuda":
                return list(cuda(*args))
            if device is not None and device.type == "cpu":
                return list(cpu(*args))
            raise TypeError("fusec op %s runs on CUDA and CPU tensors, not "
                            "on %s" % (self.name, device))

        def fake_impl(args):
            if check:
                self._check(args)
            return list(fake(*args))

        op = torch.library.custom_op("fusec::" + name, dispatch,
                                     mutates_args=(), schema=_SCHEMA)
        op.register_fake(fake_impl)
        return op

    def _check(self, args):
        """Raises TypeError naming the first argument that is not a tensor
        of the graph's shape and dtype, on one device."""
        if len(args) != len(self.args):
            raise TypeError("fusec op %s takes %d tensors, %d were given"
                            % (self.name, len(self.args), len(args)))
        device = None
        for i, (x, (shape, dtype)) in enumerate(zip(args, self.args)):
            if not isinstance(x, torch.Tensor):
                raise TypeError("fusec op %s: argument %d is a %s, not a "
                                "tensor" % (self.name, i, type(x).__name__))
            if tuple(x.shape) != shape or x.dtype != dtype:
                raise TypeError("fusec op %s: argument %d is %s; the graph "
                                "takes %s" % (self.name, i,
                                              _describe(x.shape, x.dtype),
                                              _describe(shape, dtype)))
            if device is None:
                device = x.device
            elif x.device != device:
                raise TypeError("fusec op %s: argument %d is on %s, "
                                "argument 0 on %s"
                                % (self.name, i, x.device, device))

    @staticmethod
    def _empty(infos, like, what):
        device = like[0].device
        return [torch.empty(shape, dtype=dtype, device=device)
                for shape, dtype in infos]

    # ---- calls -----------------------------------------------------------

    def __call__(self, *args):
        """Runs the graph: one tensor per graph argument; returns a tensor,
        or a tuple of several."""
        self._check(args)
        if self.training is not None and torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad
                for a in args):
            out = self.fwd_op(list(args))
        else:
            out = self.infer_op(list(args))
        n = len(self.results)
        return out[0] if n == 1 else tuple(out[:n])

    def __repr__(self):
        return "<fusec.torch.Op %s: %s -> %s>" % (
            self.name, ", ".join(_describe(*a) for a in self.args),
            ", ".join(_describe(*r) for r in self.results))

    # ---- CUDA ------------------------------------------------------------

    def _plan(self, which, device):
        key = (which, device)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    rt = _capi.runtime
                    if which == "infer":
                        m = self.kernel._module(device)
                        plan = _Plan(m.h, m)
                    else:
                        m = self.training._module(device)
                        get = rt.fusec_training_forward_plan \
                            if which == "fwd" else \
                            rt.fusec_training_backward_plan
                        plan = _Plan(get(m.h), m)
                    self._plans[key] = plan
        return plan

    @staticmethod
    def _dense(args):
        # Non-contiguous and channels_last tensors are copied to the row-
        # major layout fusec's plans take.
        return [a.contiguous() for a in args]

    def _infer_cuda(self, *args):
        args = self._dense(args)
        out = self._empty(self.results, args, "result")
        self._plan("infer", args[0].device.index).run(args, out)
        return out

    def _fwd_cuda(self, *args):
        args = self._dense(args)
        out = self._empty(self.results + self.saved, args, "result")
        self._plan("fwd", args[0].device.index).run(args, out)
        return out

    def _split_bwd(self, inputs):
        n_args, n_results = len(self.args), len(self.results)
        args = inputs[:n_args]
        results = inputs[n_args:n_args + n_results]
        rest = inputs[n_args + n_results:]
        saved, grads = rest[:len(self.saved)], rest[len(self.saved):]
        return args, results, saved, grads

    def _bwd_cuda(self, *inputs):
        args, results, saved, grads = self._split_bwd(self._dense(inputs))
        ins = [args[a] for a in self.forward_args] + \
              [results[r] for r in self.forward_results] + \
              list(saved) + list(grads)
        out = self._empty([self.args[a] for a in self.wrt], inputs,
                          "gradient")
        self._plan("bwd", inputs[0].device.index).run(ins, out)
        return out

    def _bwd_fake(self, *inputs):
        return self._empty([self.args[a] for a in self.wrt], inputs, "fake")

    # ---- CPU: the reference interpreter ------------------------------------

    @staticmethod
    def _numpy(args):
        return [a.detach().to(torch.float64).numpy() for a in args]

    @staticmethod
    def _tensors(arrays, infos):
        # Reshaped before conversion: a result must not be a view (an
        # in-place op on it, a ReLU(inplace=True), would be refused).
        return [torch.from_numpy(a.reshape(shape)).to(dtype)
                for a, (shape, dtype) in zip(arrays, infos)]

    def _infer_cpu(self, *args):
        from . import reference
        return self._tensors(reference(self.text, *self._numpy(args)),
                             self.results)

    def _fwd_cpu(self, *args):
        from ._training import _evaluate
        r = _evaluate(self.text, self._numpy(args), None, self.wrt, None)
        results = self._tensors(r["results"], self.results)
        # The interpreter's saved tensors where they are the plan's; else
        # zeros of the plan's shapes (the CPU backward recomputes the
        # forward from the arguments and reads none of them).
        saved = r["saved"]
        if [tuple(s.shape) for s in saved] == [s for s, _ in self.saved]:
            saved = self._tensors(saved, self.saved)
        else:
            saved = [torch.zeros(shape, dtype=dtype)
                     for shape, dtype in self.saved]
        return results + saved

    def _bwd_cpu(self, *inputs):
        from ._training import _evaluate
        args, _, _, grads = self._split_bwd(inputs)
        full = [None] * len(self.results)
        for r, g in zip(self.grad_results, grads):
            full[r] = g.detach().to(torch.float64).numpy()
        r = _evaluate(self.text, self._numpy(args), full, self.wrt, None)
        return self._tensors([r["gradients"][a] for a in self.wrt],
                             [self.args[a] for a in self.wrt])

    # ---- autograd --------------------------------------------------------

    def _setup_context(self, ctx, inputs, output):
        (args,) = inputs
        saved = output[len(self.results):]
        # The results that depend on no differentiated argument (fusec's
        # autodiff gives them no gradient) need none, as in eager.
        constant = [output[r] for r in range(len(self.results))
                    if r not in self.grad_results]
        if saved or constant:
            ctx.mark_non_differentiable(*saved, *constant)
        # Results without a gradient stay None (not zeros the size of each
        # result and saved tensor, made and filled at every backward).
        ctx.set_materialize_grads(False)
        # Only the results the backward plan reads: fewer tensors kept, and
        # an in-place op on another result (a ReLU(inplace=True)) is fine.
        ctx.kept = sorted(set(self.forward_results))
        # Likewise only the arguments it reads on CUDA (the CPU backward
        # recomputes the forward from all of them).
        ctx.args = self._kept_args(args[0].device)
        ctx.device = args[0].device
        kept_args = [args[a] for a in ctx.args]
        if ctx.device.type == "cpu":
            # Copies: the graph may write into an argument after the call
            # (acc.add_(x) on an input), and the CPU backward needs the
            # values the forward read. The interpreter is for checking.
            kept_args = [a.detach().clone() for a in kept_args]
        ctx.save_for_backward(*kept_args, *[output[r] for r in ctx.kept],
                              *saved)

    def _kept_args(self, device):
        if device.type == "cpu":
            return list(range(len(self.args)))
        return sorted(set(self.forward_args))

    def _backward(self, ctx, grads):
        tensors = ctx.saved_tensors
        n_args, n_kept = len(ctx.args), len(ctx.kept)
        device = ctx.device
        # The backward reads no other argument or result: empty stand-ins,
        # one per dtype.
        empty = {}

        def stand_in(dtype):
            if dtype not in empty:
                empty[dtype] = torch.empty(0, dtype=dtype, device=device)
            return empty[dtype]
        args = [stand_in(dtype) for _, dtype in self.args]
        for a, t in zip(ctx.args, tensors[:n_args]):
            args[a] = t
        kept, saved = tensors[n_args:n_args + n_kept], tensors[n_args + n_kept:]
        results = [stand_in(dtype) for _, dtype in self.results]
        for r, t in zip(ctx.kept, kept):
            results[r] = t
        given = []
        for r in self.grad_results:
            g = grads[r]
            shape, dtype = self.results[r]
            given.append(torch.zeros(shape, dtype=dtype, device=device)
                         if g is None else g)
        out = self.bwd_op([*args, *results, *saved, *given])
        gradients = [None] * len(self.args)
        for a, g in zip(self.wrt, out):
            gradients[a] = g
        return gradients


_ops = {}
_ops_lock = threading.Lock()


def op(graph, *, name=None, train=True, wrt=None, **options):
    """The graph (a fusec.Graph or MLIR text) as PyTorch custom ops under
    torch.ops.fusec: returns an Op, called like a function on tensors.

    name: the ops' name (default: the graph's, with a hash of the graph
    and options, so that different graphs never collide). train: also
    compile the training step (fusec.compile(train=True)), so that calls
    whose inputs need a gradient get one; wrt: the arguments to
    differentiate (None: every argument a gradient reaches). Other options
    are fusec.compile's. The same graph and options give the same Op."""
    text = _graph_text(graph, "fusec.torch.op")
    key = json.dumps([text, name, train, wrt, sorted(options.items())],
                     default=repr)
    with _ops_lock:
        found = _ops.get(key)
        if found is not None:
            return found
        digest = hashlib.sha256(key.encode()).hexdigest()[:10]
        if name is None:
            m = re.search(r"func\.func @([A-Za-z0-9_$.]+)", text)
            name = "%s_%s" % (_NAME.sub("_", m.group(1) if m else "graph"),
                              digest)
        elif _NAME.search(name) or not name[:1].isalpha():
            raise ValueError("op name %r: letters, digits and '_', "
                             "starting with a letter" % name)
        found = _ops[key] = Op(text, name, train, wrt, options)
        return found


#===----------------------------------------------------------------------===#
# torch.compile(model, backend="fusec")
#===----------------------------------------------------------------------===#

# Nodes that move no data in PyTorch (views, getitem): a partition of only
# these would turn a free view into a copy kernel, so it stays with PyTorch.
_FREE = {"t", "t_copy", "permute", "permute_copy", "transpose",
         "transpose_copy", "view", "view_copy", "_unsafe_view", "reshape",
         "_reshape_copy", "squeeze", "squeeze_copy", "unsqueeze",
         "unsqueeze_copy", "flatten", "clone", "alias", "alias_copy",
         "detach", "detach_copy", "contiguous", "lift_fresh_copy",
         "getitem"}


def _short(node):
    target = node.target
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", None) or getattr(
        target, "__name__", str(target))


class Report:
    """What the backend did with one graph: which ATen ops fusec took,
    which it left and why, the kernels it made and the time it took.
    str(report) is the text fusec.torch.report() prints."""

    def __init__(self, name):
        self.name = name
        self.ops = 0            # ATen call_function nodes (getitem aside)
        self.taken = 0
        self.flops = 0
        self.flops_taken = 0
        self.left = {}          # reason -> {op name: count}
        self.kernels = []       # (op name, ATen ops, kernel names, source, ms)
        self.failed = []        # (partition, ATen ops, error)
        self.training = False
        self.seconds = 0.0
        self.note = None        # why the whole graph went to PyTorch
        self.cudagraphs = False  # replayed from CUDA graphs
        self.channels_last = False  # 4-D values in NHWC inside fusec
        self.buckets = None     # the shape bucket compiled, or why none

    def leave(self, op, reason):
        counts = self.left.setdefault(reason, {})
        counts[op] = counts.get(op, 0) + 1

    def __str__(self):
        lines = ["fusec backend: graph %s (%s%s%s)" % (
            self.name, "training" if self.training else "inference",
            ", NHWC inside" if self.channels_last else "",
            ", CUDA graphs" if self.cudagraphs else "")]
        if self.note:
            lines.append("  left whole to PyTorch: " + self.note)
        if self.buckets:
            lines.append("  shape buckets: " + self.buckets)
        share = 100.0 * self.taken / self.ops if self.ops else 0.0
        fshare = 100.0 * self.flops_taken / self.flops if self.flops else 0.0
        lines.append("  ATen ops: %d of %d taken (%.0f%%); FLOPs: %.3g of "
                     "%.3g (%.0f%%); %.2f s" % (
                         self.taken, self.ops, share, self.flops_taken,
                         self.flops, fshare, self.seconds))
        for name, ops, kernels, source, ms in self.kernels:
            lines.append("  %s: %d ops -> %d kernels [%s] (%s, %.0f ms)" % (
                name, ops, len(kernels), ", ".join(kernels), source, ms))
        for name, ops, error in self.failed:
            lines.append("  left to PyTorch (%d ops): fusec could not "
                         "compile %s: %s" % (ops, name, error))
        for reason, counts in sorted(self.left.items()):
            lines.append("  left to PyTorch: %s: %s" % (
                ", ".join("%s x%d" % kv for kv in sorted(counts.items())),
                reason))
        return "\n".join(lines)


_reports = []


def reports():
    """The Reports of every graph the backend has compiled, oldest first."""
    return list(_reports)


def report():
    """The text of every Report, one after the other."""
    return "\n".join(str(r) for r in _reports)


class _Runner(torch.nn.Module):
    """A partition's fusec Op inside the rewritten FX graph: appends the
    scalar constants (made once per device) to the partition's inputs."""

    def __init__(self, op, constants, single, updates=()):
        super().__init__()
        self.fusec_op, self.constants, self.single = op, constants, single
        # Arguments updated in place (running statistics): the graph's last
        # results are their new values, copied in after the call.
        self.updates = list(updates)
        self._made = {}

    def forward(self, *args):
        targets = [args[i] for i in self.updates]
        # Autograd keeps the inputs the op's backward reads; those of the
        # buffers, which change below, must be copies.
        kept = set()
        if targets and torch.is_grad_enabled() and \
                getattr(self.fusec_op, "training", None) is not None:
            kept = set(self.fusec_op._kept_args(args[0].device))
        if kept.intersection(self.updates):
            args = list(args)
            for i in kept.intersection(self.updates):
                args[i] = args[i].clone()
            args = tuple(args)
        if self.constants:
            device = args[0].device
            made = self._made.get(device)
            if made is None:
                made = [torch.full([1], value, dtype=dtype, device=device)
                        for value, dtype in self.constants]
                # Traced (AOTAutograd, for CUDA graphs), they are fake:
                # the real ones are made by the traced graph.
                if not _is_fake(args[0]):
                    self._made[device] = made
            args = args + tuple(made)
        out = self.fusec_op(*args)
        if targets:
            out = out if isinstance(out, tuple) else (out,)
            n = len(out) - len(targets)
            with torch.no_grad():
                for buffer, value in zip(targets, out[n:]):
                    buffer.copy_(value)
            out = out[0] if n == 1 else out[:n]
        if self.single:
            return out
        return out if isinstance(out, tuple) else (out,)


def _kernel_names(artifact):
    m = re.search(r"^// fusec-kernels: (.*?)\r?$", artifact, re.M)
    if not m:
        return []
    return [k.get("kernel", "?") for k in json.loads(m.group(1))]


# fuse ops a training compile found without a gradient rule: in training
# graphs, nodes that become them stay with PyTorch.
_NO_GRADIENT = set()
_NO_RULE = re.compile(r"(fuse\.[a-z0-9_]+) has no gradient rule")


class _Support:
    """Whether fusec takes each node alone: a one-node fuse graph of the
    node on inputs of its arguments' types, which the rule and fusec's
    verifier accept or refuse (with the reason)."""

    def __init__(self, training=False, channels_last=False):
        from . import _fx
        self._fx = _fx
        self.reasons = {}
        self.training = training
        self.channels_last = channels_last

    def reason(self, node):
        if node in self.reasons:
            return self.reasons[node]
        fx = self._fx
        why = None
        try:
            if node.op != "call_function":
                raise fx.Unsupported("not an operator call")
            if self.training and _short(node) in ("detach", "detach_copy"):
                # Inside a fusec op the gradient would flow through it.
                raise fx.Unsupported("detach stops the gradient")
            if node.target is operator.getitem:
                base = node.args[0]
                why = self.reason(base)
                if why is None and base.target is not operator.getitem:
                    t = self._alone(base)
                    value = t.values[base]
                    if not isinstance(value, tuple) or \
                            value[node.args[1]] is None:
                        why = "output %d of %s is not taken" % (
                            node.args[1], base.name)
            else:
                self._alone(node)
        except fx.Unsupported as e:
            why = str(e)
        except Exception as e:  # noqa: BLE001 - a rule's bug: leave the node
            why = "%s: %s" % (type(e).__name__, e)
        self.reasons[node] = why
        return why

    def _alone(self, node):
        fx = self._fx
        t = fx.Translator("probe", self.channels_last)
        for arg in node.all_input_nodes:
            t.input(arg)
        result = t.node(node)
        for value in (result if isinstance(result, tuple) else (result,)):
            if isinstance(value, fx.ChannelsLast):
                value = value.value
            if value is not None:
                t.g.output(value)
        text = t.g.mlir()  # fusec's verifier on the whole one-node graph
        if self.training:
            for name in sorted(_NO_GRADIENT):
                if name in text:
                    raise fx.Unsupported("%s has no gradient rule" % name)
        return t


def _partitions(gm, support):
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Supported(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return support.reason(node) is None

    partitioner = CapabilityBasedPartitioner(
        gm, Supported(), allows_single_node_partition=True)
    proposed = [p for p in partitioner.propose_partitions()
                if any(_short(n) not in _FREE for n in p.nodes)]
    return partitioner.fuse_partitions(proposed) if proposed else gm


def _translate(sub, name, channels_last=False):
    """A fused partition's submodule as a fuse graph: (MLIR text, scalar
    constants, whether it returns one value)."""
    from . import _fx
    t = _fx.Translator(name, channels_last)
    outputs = None
    # The placeholders first (FX may interleave them with the nodes): the
    # graph's arguments are the partition's inputs in order, then the
    # constants the rules add.
    for node in sub.graph.nodes:
        if node.op == "placeholder":
            t.input(node)
    for node in sub.graph.nodes:
        if node.op == "output":
            outputs = node.args[0]
        elif node.op != "placeholder":
            t.node(node)
    single = not isinstance(outputs, (tuple, list))
    for out in ([outputs] if single else outputs):
        t.g.output(t.v(out))
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    updates = []
    for node, value in t.updates:
        if node not in placeholders:
            raise _fx.Unsupported("%s is updated in place but is not an "
                                  "input of the partition" % node.name)
        t.g.output(value)
        updates.append(placeholders.index(node))
    return t.g.mlir(), t.constants, single, updates


def _write_back(buffer, value):
    """The functionalized graph's write into an input that needs no
    gradient (a running statistic): a fusec op may take the new value in
    one partition with differentiable results, which would give the buffer
    a gradient history it never has in the program (its update runs under
    no_grad)."""
    with torch.no_grad():
        return buffer.copy_(value)


# A write with no users is not dead code.
torch.fx.node._side_effectful_functions.add(_write_back)


def _copy_from(dst, src, non_blocking=False):
    """aten.copy (dst's shape, dtype and device, src's values) through ops
    with a derivative: src's gradient flows, dst's is zero."""
    return src.to(dtype=dst.dtype, device=dst.device).expand(
        dst.shape).clone()


def _trace(gm, example_inputs):
    """The dynamo graph at the ATen level, without views or mutations
    (functionalized), traced on fake tensors."""
    from torch._guards import tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functionalize
    # A fake mode of our own, outside dynamo's tracing context, so that
    # nothing of this trace reaches dynamo's shape environment or guards.
    with tracing(None):
        mode = FakeTensorMode(allow_non_fake_inputs=False)
        fakes = [mode.from_tensor(x, static_shapes=True)
                 if isinstance(x, torch.Tensor) else x
                 for x in example_inputs]
        with mode:
            traced = make_fx(functionalize(
                gm, remove="mutations_and_views"))(*fakes)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    no_grad_inputs = {n for n, x in zip(placeholders, example_inputs)
                      if not (isinstance(x, torch.Tensor) and x.requires_grad)}
    from . import _fx
    traced.graph.eliminate_dead_code()  # functionalization's dead aliases
    _fx.fold_rms_norms(traced.graph)
    for node in traced.graph.nodes:
        if node.target is torch.ops.aten.detach_copy.default:
            # No autograd formula ("not implemented"); with the mutations
            # gone, detach (a view) does what it did in the program.
            node.target = torch.ops.aten.detach.default
        elif node.target is torch.ops.aten.copy_.default and \
                node.args[0] in no_grad_inputs:
            node.target = _write_back
        elif node.target is torch.ops.aten.copy.default:
            # No derivative either (a z.copy_(y) into a fresh tensor).
            node.target = _copy_from
    traced.graph.eliminate_dead_code()
    traced.recompile()
    return traced


def _compile_graph(gm, example_inputs, options):
    """The dynamo graph with what fusec takes replaced by fusec ops; the
    rest runs as PyTorch's ATen ops. Never raises for the graph's sake:
    anything fusec cannot do goes to PyTorch, in the report."""
    import time
    start = time.perf_counter()
    train = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad
        for x in example_inputs)
    # A training compile that meets a fuse op without a gradient rule
    # leaves the nodes that make it to PyTorch and partitions again.
    for _ in range(4):
        known = len(_NO_GRADIENT)
        fused, rep = _compile_once(gm, example_inputs, options, train)
        if len(_NO_GRADIENT) == known:
            break
    return fused, rep, start



_GRAD_MODE_SWITCHES = {"_set_grad_enabled", "_enter_inference_mode",
                       "_exit_inference_mode"}


def _switch(node):
    return node.op == "call_function" and getattr(
        node.target, "__name__", None) in _GRAD_MODE_SWITCHES


def _needs_grad_value(value):
    return any(isinstance(v, torch.Tensor) and v.requires_grad
               for v in torch.utils._pytree.tree_leaves(value))


def _grad_mode_switch(gm):
    """Why the graph must stay whole with PyTorch, else None: when it
    switches grad mode inside (torch.no_grad or enable_grad in the compiled
    region) around an op whose gradient that changes, enters inference
    mode, or switches anything inside a submodule's graph (a checkpointed
    body). The ATen trace keeps no grad mode, and its ops all run in the
    caller's. A no_grad region over values that need no gradient (a
    rotary table from a buffer) changes nothing."""
    for name, sub in gm.named_modules():
        if sub is not gm and isinstance(sub, torch.fx.GraphModule) and \
                any(_switch(n) for n in sub.graph.nodes):
            return "the graph switches grad mode inside %s" % name
    outer = mode = torch.is_grad_enabled()
    for node in gm.graph.nodes:
        if _switch(node):
            if node.target.__name__ != "_set_grad_enabled":
                # Inference mode is a state of its own (enable_grad inside
                # it records nothing; inference_mode(False) turns grad
                # mode on): whole to PyTorch.
                return ("the graph switches grad mode inside (inference "
                        "mode at %s)" % node.name)
            mode = bool(node.args[0])
            continue
        if mode == outer or node.op not in ("call_function", "call_method",
                                            "call_module"):
            continue
        # Under no_grad, an operand that needs a gradient would get one
        # through the trace; under enable_grad (the caller's no_grad), a
        # result that needs one would lose it.
        if (not mode and any(_needs_grad_value(a.meta.get("example_value"))
                             for a in node.all_input_nodes)) or \
                (mode and _needs_grad_value(node.meta.get("example_value"))):
            return ("the graph switches grad mode inside around %s, whose "
                    "gradient that changes" % node.name)
    return None


def _aliased_output(gm):
    """Why the graph must stay whole with PyTorch when a result shares
    elements with an input or another result (`return x.view(-1)`), else
    None: the functionalized trace computes every result afresh, so a
    later write through one would not reach the other. Disjoint parts of
    one buffer (the k and v of a split) are fine."""
    from torch.multiprocessing.reductions import StorageWeakRef

    def value(node):
        v = node.meta.get("example_value") if isinstance(
            node, torch.fx.Node) else None
        if not isinstance(v, torch.Tensor) or v.layout != torch.strided:
            return None
        return v
    seen = {}
    for n in gm.graph.find_nodes(op="placeholder"):
        if value(n) is not None:
            seen.setdefault(StorageWeakRef(value(n).untyped_storage()),
                            []).append(n)
    for out in gm.graph.find_nodes(op="output"):
        for n in out.all_input_nodes:
            v = value(n)
            if v is None:
                continue
            others = seen.setdefault(StorageWeakRef(v.untyped_storage()), [])
            # The same node twice (or an input returned as it is) stays
            # the same tensor.
            for other in others:
                if other is not n and _may_overlap(v, value(other)):
                    return "result %s shares memory with %s" % (n.name,
                                                                other.name)
            others.append(n)
    return None


def _may_overlap(a, b):
    """Whether two views of one buffer may share an element: False only
    when both have the same strides, nest (each stride past the span of
    the smaller ones) and their boxes of indices are apart."""
    # Sizes known only by their hints (dynamic shapes) prove nothing for
    # the other sizes; views of other element sizes count other units.
    ints = [*a.shape, *b.shape, *a.stride(), *b.stride(),
            a.storage_offset(), b.storage_offset()]
    if not all(type(i) is int for i in ints) or \
            a.element_size() != b.element_size():
        return True
    if a.numel() == 0 or b.numel() == 0:
        return False
    if a.dim() != b.dim() or a.stride() != b.stride():
        return True
    dims = [d for d in range(a.dim()) if max(a.shape[d], b.shape[d]) > 1]
    if any(a.stride(d) <= 0 for d in dims):
        return True
    order = sorted(dims, key=lambda d: -a.stride(d))

    def digits(offset):
        out = {}
        for d in order:
            out[d], offset = divmod(offset, a.stride(d))
        return out, offset
    (da, ra), (db, rb) = digits(a.storage_offset()), digits(
        b.storage_offset())
    high = {d: max(da[d] + a.shape[d], db[d] + b.shape[d]) for d in order}
    for i, d in enumerate(order):
        span = max(ra, rb) + sum((high[e] - 1) * a.stride(e)
                                 for e in order[i + 1:])
        if a.stride(d) <= span:
            return True
    return ra == rb and all(da[d] < db[d] + b.shape[d] and
                            db[d] < da[d] + a.shape[d] for d in order)


def _aliased_write(gm, traced, example_inputs):
    """Why the graph must stay whole with PyTorch when it writes into an
    input that shares memory with another (a buffer and a view of it,
    both passed in), else None: the trace functionalizes each input on
    its own, so the other would not see the write."""
    from torch.multiprocessing.reductions import StorageWeakRef
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    # Named as in dynamo's graph (L_self_buffers_buf_, L_v_).
    names = dict(zip(placeholders, (n.name for n in gm.graph.nodes
                                    if n.op == "placeholder")))
    storages = {}
    for node, x in zip(placeholders, example_inputs):
        if isinstance(x, torch.Tensor):
            storages.setdefault(StorageWeakRef(x.untyped_storage()),
                                []).append(node)
    written = {n.args[0] for n in traced.graph.nodes
               if n.op == "call_function" and
               (n.target is _write_back or
                n.target is torch.ops.aten.copy_.default)}
    for nodes in storages.values():
        hit = [n for n in nodes if n in written]
        if len(nodes) > 1 and hit:
            return ("inputs %s share memory and the graph writes into %s"
                    % (", ".join(names.get(n, n.name) for n in nodes),
                       ", ".join(names.get(n, n.name) for n in hit)))
    return None


def _compile_once(gm, example_inputs, options, train):
    name = options.get("name") or "graph%d" % len(_reports)
    rep = Report(name)
    # The fuse graphs are named by position, not by this counter: the same
    # model compiled again gives the same text, which the kernel cache finds.
    prefix = options.get("name") or "fx"
    rep.training = train
    compile_options = dict(options.get("compile_options") or {})
    rep.note = _grad_mode_switch(gm) or _aliased_output(gm)
    if rep.note:
        return gm, rep
    try:
        traced = _trace(gm, example_inputs)
    except Exception as e:  # noqa: BLE001 - PyTorch runs the graph
        rep.note = "tracing to ATen failed: %s: %s" % (type(e).__name__, e)
        return gm, rep
    rep.note = _aliased_write(gm, traced, example_inputs)
    if rep.note:
        return gm, rep
    from . import _fx
    channels_last = options.get("channels_last")
    if channels_last is None:
        channels_last = any(
            n.op == "call_function" and _short(n) == "convolution" and
            getattr(n.args[0].meta.get("val"), "dim", lambda: 0)() == 4
            for n in traced.graph.nodes)
    rep.channels_last = bool(channels_last)
    support = _Support(train, channels_last)
    for node in traced.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        rep.ops += 1
        f = _fx.flops(node)
        rep.flops += f
        why = support.reason(node)
        if why is not None:
            rep.leave(_short(node), why)
    fused = _partitions(traced, support)
    needs = _needs_grad(fused, example_inputs) if train else set()
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        sub = getattr(fused, node.target)
        ops = [n for n in sub.graph.nodes if n.op == "call_function" and
               n.target is not operator.getitem]
        label = "%s_%s" % (prefix, node.target)
        try:
            text, constants, single, updates = _translate(sub, label,
                                                          channels_last)
            # Gradients for the arguments that need one (not the images).
            wrt = [i for i, a in enumerate(node.args) if a in needs]
            fop = _partition_op(text, train, wrt, compile_options)
        except Exception as e:  # noqa: BLE001 - PyTorch runs the partition
            message = str(e).strip().splitlines()
            missing = _NO_RULE.search(str(e))
            if missing:
                _NO_GRADIENT.add(missing.group(1))
            rep.failed.append((label, len(ops),
                               message[0] if message else type(e).__name__))
            for n in ops:
                rep.leave(_short(n), "its partition did not compile")
            continue
        setattr(fused, node.target, _Runner(fop, constants, single,
                                            updates))
        rep.taken += len(ops)
        rep.flops_taken += sum(_fx.flops(n) for n in ops)
        kernel = fop.training or fop.kernel
        rep.kernels.append((fop.name, len(ops),
                            _kernel_names(kernel.artifact), kernel.source,
                            fop.kernel.milliseconds +
                            (fop.training.milliseconds if fop.training
                             else 0)))
    fused.recompile()
    return fused, rep


def _needs_grad(gm, example_inputs):
    """The nodes of the partitioned graph whose values may need a gradient:
    those that depend on an input that requires one (the trace's fake
    values do not say). Over-approximates: a gradient more costs time,
    one less would be wrong."""
    needs = set()
    inputs = iter(example_inputs)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            x = next(inputs, None)
            if isinstance(x, torch.Tensor) and x.requires_grad:
                needs.add(n)
        elif n.op != "output" and _short(n) not in ("detach", "_write_back") \
                and any(a in needs for a in n.all_input_nodes):
            needs.add(n)
    return needs


def _partition_op(text, train, wrt, compile_options):
    """The fusec Op of a partition, differentiated for the arguments in
    `wrt` (the scalar constants after the real ones need none)."""
    if not train or not wrt:
        return op(text, train=False, **compile_options)
    try:
        return op(text, wrt=wrt, **compile_options)
    except Error:
        return op(text, **compile_options)


def _is_fake(x):
    from torch._subclasses.fake_tensor import is_fake
    return is_fake(x)


def _batch_write_backs(gm):
    """The writes into inputs (running statistics, batch counters) at the
    end of an AOTAutograd forward, as few CUDA graph nodes as possible:
    - copy_(p, copy(p, v)) -> copy_(p, v) (functionalization copies each
      new value twice);
    - copy_(p, add(p, c)) for a scalar c -> one _foreach_add_ per dtype;
    - the other copy_ into inputs -> one _foreach_copy_ per pair of dtypes.
    A ResNet-18 step's 120 small copies and 20 adds become 3 kernels.
    The batches run after every other op, so a value that shares storage
    with a written input (the input itself, a view of it) is neither
    folded in nor batched: it would be read after the writes."""
    from torch.multiprocessing.reductions import StorageWeakRef
    aten = torch.ops.aten
    graph = gm.graph
    placeholders = {n for n in graph.nodes if n.op == "placeholder"}
    output = next(n for n in graph.nodes if n.op == "output")

    def val(n):
        return n.meta.get("val") if isinstance(n, torch.fx.Node) else None

    def storage(n):
        v = val(n)
        try:
            return StorageWeakRef(v.untyped_storage())
        except Exception:  # no fake value, or no storage: assume the worst
            return None

    def same(a, b):
        a, b = val(a), val(b)
        return a is not None and b is not None and a.shape == b.shape and \
            a.dtype == b.dtype and a.device == b.device

    writes = [n for n in graph.nodes if n.target is aten.copy_.default and
              n.args[0] in placeholders and not n.users]
    written = {storage(w.args[0]) for w in writes}

    def fresh(n):
        s = storage(n)
        return s is not None and s not in written
    changed = False
    for w in writes:
        src = w.args[1]
        if src.target is aten.copy.default and same(src, src.args[1]) and \
                len(src.users) == 1 and fresh(src.args[1]):
            w.replace_input_with(src, src.args[1])
            graph.erase_node(src)
            changed = True
    adds, copies = {}, {}
    for w in writes:
        dst, src = w.args[0], w.args[1]
        if not isinstance(src, torch.fx.Node) or not fresh(src):
            continue
        if src.target is aten.add.Tensor and src.args[0] is dst and \
                len(src.users) == 1 and isinstance(src.args[1], (int, float)) \
                and same(src, dst) and not src.kwargs:
            adds.setdefault((val(dst).dtype, src.args[1]), []).append(w)
        elif val(dst) is not None and val(src) is not None:
            copies.setdefault((val(dst).dtype, val(src).dtype, val(dst).device,
                               val(src).device), []).append(w)
    with graph.inserting_before(output):
        for (_, c), ws in adds.items():
            # One write per input in a batch: a _foreach op may run its
            # tensors in any order.
            if len(ws) < 2 or len({w.args[0] for w in ws}) < len(ws):
                continue
            graph.call_function(aten._foreach_add_.Scalar,
                                ([w.args[0] for w in ws], c))
            for w in ws:
                add = w.args[1]
                graph.erase_node(w)
                graph.erase_node(add)
            changed = True
        for ws in copies.values():
            if len(ws) < 2 or len({w.args[0] for w in ws}) < len(ws):
                continue
            graph.call_function(aten._foreach_copy_.default,
                                ([w.args[0] for w in ws],
                                 [w.args[1] for w in ws]))
            for w in ws:
                graph.erase_node(w)
            changed = True
    if changed:
        graph.lint()
        gm.recompile()


class _InputWritesOutside(Exception):
    """A forward writes into an input that is not a parameter or buffer:
    cudagraph trees copy such inputs in, so the write cannot replay inside
    the graph."""


def _graphed(fused, inputs):
    """The rewritten graph replayed from CUDA graphs, by the machinery of
    torch.compile's reduce-overhead: AOTAutograd splits it into a forward
    and a backward (fusec's ops carry their autograd rules), and cudagraph
    trees capture each. This is PyTorch's "cudagraphs" backend, except that
    parameters and buffers are static inputs, read in place (that backend
    copies them into the graph at every replay when dynamo inlines the
    modules: 0.8 GB a call for a LLaMA layer's f32 weights), and that
    writes into them (running statistics) replay inside the forward's
    graph. A graph that writes into another input is traced again with
    every write outside the graphs, after each replay, as that backend
    does. Anything that cannot be captured (a CPU tensor) runs uncaptured,
    and PyTorch logs why ("skipping cudagraphs due to ...")."""
    from torch._dynamo.utils import get_static_address_type
    # A graph with symbolic sizes is built per size: its scalar inputs
    # (the sizes) are constants here, and AOTAutograd's graph would carry
    # them as placeholders without a fake value, which the capture cannot
    # read. The callable still takes every input.
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    baked = len(tensors) < len(inputs)
    if baked:
        fused = _bake_scalars(fused, inputs)
        inputs = [inputs[i] for i in tensors]
    static = [i for i, x in enumerate(inputs)
              if isinstance(x, torch.nn.Parameter) or
              get_static_address_type(x) is not None]
    try:
        run = _aot_graphed(fused, inputs, static, keep_mutations=True)
    except _InputWritesOutside:
        run = _aot_graphed(fused, inputs, static, keep_mutations=False)
    if not baked:
        return run
    return lambda *args: run(*[args[i] for i in tensors])


def _bake_scalars(gm, inputs):
    """A copy of the graph with its non-tensor inputs replaced by their
    values (the graph may be dynamo's own, which later sizes build from
    again)."""
    graph = torch.fx.Graph()
    copies = {}
    graph.output(graph.graph_copy(gm.graph, copies))
    for node, x in zip(gm.graph.find_nodes(op="placeholder"), inputs):
        if isinstance(x, torch.Tensor):
            continue
        copy = copies[node]
        for user in list(copy.users):
            user.args = torch.fx.node.map_arg(
                user.args, lambda a, copy=copy, x=x: x if a is copy else a)
            user.kwargs = torch.fx.node.map_arg(
                user.kwargs, lambda a, copy=copy, x=x: x if a is copy else a)
        graph.erase_node(copy)
    return torch.fx.GraphModule(gm, graph)


def _aot_graphed(fused, inputs, static, keep_mutations):
    import functools
    from torch._dynamo.backends import cudagraphs as cg
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.cudagraph_trees import cudagraphify_impl
    device = cg.BoxedDeviceIndex(None)
    graphed = cg.BoxedBool(True)

    def capture(model, aot_inputs, static_idxs, is_backward, is_inference,
                mutated_idxs):
        mutated = mutated_idxs - set(static_idxs)
        if mutated and not torch._dynamo.config.\
                cudagraph_backend_support_input_mutation:
            return None
        out = cudagraphify_impl(
            cg.boxed_nop(model, aot_inputs), aot_inputs, static_idxs,
            device_index=device.value, is_backward=is_backward,
            is_inference=is_inference,
            stack_traces=cg.get_stack_traces(model),
            placeholders=cg.get_placeholder_info(model.graph),
            mutated_input_idxs=mutated_idxs)
        out._boxed_call = True
        return out

    def static_indices(aot_inputs):
        # Inputs AOTAutograd adds (lifted parameters) come first. When it
        # merges inputs that alias (a synthetic base), the positions move:
        # then none is static (copied in at each replay, which is right).
        extra = len(aot_inputs) - len(inputs)
        if extra < 0 or any(
                tuple(aot_inputs[extra + i].shape) != tuple(inputs[i].shape) or
                aot_inputs[extra + i].dtype != inputs[i].dtype
                for i in static):
            return []
        return list(range(extra)) + [extra + i for i in static]

    def forward(model, aot_inputs, is_inference=False):
        static_idxs = static_indices(aot_inputs)
        # Found before batching: find_input_mutations reads single tensors,
        # not the lists of the _foreach ops.
        mutated = cg.find_input_mutations(model.graph)
        if keep_mutations and mutated - set(static_idxs):
            raise _InputWritesOutside()
        _batch_write_backs(model)
        device.set(cg.get_device_index(model))
        out = capture(model, aot_inputs, static_idxs, False, is_inference,
                      mutated)
        if out is None:
            cg.BoxedBool.disable(graphed)
            cg.log_cudagraph_skip_and_bump_counter(
                "skipping cudagraphs due to mutated inputs")
            return cg.boxed_nop(model, aot_inputs)
        return out

    def backward(model, aot_inputs):
        if not graphed:
            return model
        out = capture(model, aot_inputs,
                      list(range(cg.count_tangents(model))), True, False,
                      cg.find_input_mutations(model.graph))
        if out is None:
            # As PyTorch's backend: the forward ran in the tree.
            manager = torch._inductor.cudagraph_trees.get_manager(
                device.value or 0, create_if_none_exists=False)

            def run(args):
                manager.set_to_running_backward()
                return model(args)
            run._boxed_call = True
            return run
        return out

    compiler = aot_autograd(
        fw_compiler=forward, bw_compiler=backward,
        inference_compiler=functools.partial(forward, is_inference=True),
        keep_inference_input_mutations=keep_mutations)
    # Traced with autocast off: the graph already holds autocast's casts.
    with torch.autocast("cuda", enabled=False), \
            torch.autocast("cpu", enabled=False):
        return compiler(fused, inputs)


class _Compiled:
    """What the backend returns: the rewritten graph, run with autocast off
    (the trace already holds autocast's casts), specialised per input
    shape when dynamo hands a graph with symbolic shapes, and replayed from
    CUDA graphs with the "cudagraphs" option."""

    def __init__(self, gm, example_inputs, options):
        self.gm, self.options = gm, options
        self.by_shape = {}
        self.buckets, self.no_buckets = None, None
        self.read = _read_inputs(gm)
        # The shapes whose build left the graph to PyTorch, which reads the
        # values at each call itself: those need no build per value.
        self.read_at_run = set()
        if _is_static(example_inputs) and not self.read:
            self.static = self._build(example_inputs)
            return
        self.static = None
        policy = options.get("shape_buckets", "pow2")
        if policy != "off":
            from . import _buckets
            try:
                self.buckets = _buckets.plan(gm, example_inputs, policy)
            except _buckets.Refused as e:
                self.no_buckets = str(e)
            except Exception as e:  # noqa: BLE001 - size by size then
                self.no_buckets = "checking the graph failed: %s: %s" % (
                    type(e).__name__, e)

    def _build(self, inputs, bucket=None):
        fused, rep, start = _compile_graph(self.gm, inputs, self.options)
        rep.buckets = bucket or (
            "not used: " + self.no_buckets if self.no_buckets else None)
        if self.options.get("cudagraphs") and any(
                isinstance(x, torch.Tensor) and x.is_cuda for x in inputs):
            fused = _graphed(fused, inputs)
            rep.cudagraphs = True
        import time
        rep.seconds = time.perf_counter() - start
        _reports.append(rep)
        if self.options.get("report") or _env_flag("FUSEC_TORCH_REPORT"):
            print(rep, flush=True)
        return fused

    def __call__(self, *args):
        fn = self.static
        v = b = None
        if fn is None:
            if self.buckets is not None:
                v = self.buckets.size(args)
                b = self.buckets.bucket(v)
                args = self.buckets.pad(args, v, b)
            key = tuple((tuple(a.shape), a.dtype, a.device, a.requires_grad)
                        if isinstance(a, torch.Tensor) else a for a in args)
            fn = self.by_shape.get(key) if key in self.read_at_run else None
            if self.read and fn is None:
                # repr: exact for floats, hashable for .tolist()'s lists.
                shape_key = key
                key += tuple(repr(args[i].tolist()) for i in self.read)
            if fn is None:
                fn = self.by_shape.get(key)
            if fn is None:
                fn = self.by_shape[key] = self._build(
                    list(args), b is not None and
                    self.buckets.describe(v, b))
                if self.read and fn is self.gm:
                    self.read_at_run.add(shape_key)
                    self.by_shape[shape_key] = fn
        with torch.autocast("cuda", enabled=False), \
                torch.autocast("cpu", enabled=False):
            out = fn(*args)
        return out if b is None else self.buckets.cut(out, v, b)


_READS = {"item", "tolist", "__bool__", "__float__", "__int__"}


def _read_inputs(gm):
    """The positions of the inputs whose values the graph reads as Python
    numbers (dynamo passes a float it does not specialise as a 0-d tensor
    and calls .item()). The trace makes such a value a constant, so the
    graph is built per value."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, n in enumerate(placeholders)
            if any((u.op == "call_method" and u.target in _READS) or
                   (u.op == "call_function" and
                    getattr(u.target, "__name__", None) in _READS)
                   for u in n.users)]


def _is_static(inputs):
    for x in inputs:
        # A scalar input (a size, or a float dynamo does not specialise)
        # is a constant of the trace: the graph is built per value.
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return False
        if isinstance(x, torch.Tensor) and any(
                not isinstance(d, int) for d in x.shape):
            return False
    return True


def _env_flag(name):
    import os
    return os.environ.get(name, "") not in ("", "0")


_MODES = {"default": {}, "reduce-overhead": {"cudagraphs": True}}


def backend(gm, example_inputs, options=None, mode=None, name=None):
    """The torch.compile backend: torch.compile(model, backend="fusec",
    mode=..., options={...}). Modes: "default"; "reduce-overhead": replay
    from CUDA graphs (the option "cudagraphs"). Options: "report": print
    the coverage report of each graph (also $FUSEC_TORCH_REPORT=1);
    "compile_options": a dict of fusec.compile options (arch, fp32_math,
    tuning_db, ...); "name": the graphs' name in reports; "cudagraphs";
    "channels_last": run convolutions, batch norms, pools and the
    elementwise ops between them in NHWC inside fusec (None, the default:
    where the graph has a 2-D convolution; True; False); "shape_buckets":
    for a size declared dynamic with a range (mark_dynamic(x, dim, min=,
    max=)), compile once per bucket: "pow2" (the default; the next power
    of two), "range" (the declared maximum) or "off" (once per size)."""
    options = dict(options or {})
    if name and "name" not in options:
        options["name"] = name
    if mode is not None:
        if mode not in _MODES:
            raise ValueError(
                'torch.compile(backend="fusec", mode=%r): fusec\'s modes '
                'are %s' % (mode, ", ".join(repr(m) for m in _MODES)))
        options.update(_MODES[mode])
    unknown = set(options) - {"report", "compile_options", "name",
                              "cudagraphs", "channels_last", "shape_buckets"}
    if unknown:
        raise ValueError('torch.compile(backend="fusec", options=...): '
                         'unknown option %s; the options are report, '
                         'compile_options, name, cudagraphs, channels_last '
                         'and shape_buckets' % ", ".join(sorted(map(
                             repr, unknown))))
    from ._buckets import POLICIES
    if options.get("shape_buckets", "pow2") not in POLICIES:
        raise ValueError('torch.compile(backend="fusec", options=...): '
                         'shape_buckets is %r; it takes %s' % (
                             options["shape_buckets"],
                             ", ".join(map(repr, POLICIES))))
    return _Compiled(gm, list(example_inputs), options)


def _register():
    """backend="fusec" for a source tree; an installed package registers
    through its entry point, which PyTorch loads (and would refuse a second
    registration)."""
    from importlib.metadata import entry_points
    try:
        installed = any(e.name == "fusec" for e in entry_points(
            group="torch_dynamo_backends"))
    except TypeError:  # Python < 3.10
        installed = any(e.name == "fusec" for e in entry_points().get(
            "torch_dynamo_backends", ()))
    from torch._dynamo.backends.registry import _COMPILER_FNS
    if not installed and "fusec" not in _COMPILER_FNS:
        torch._dynamo.register_backend(name="fusec")(backend)


_register()
