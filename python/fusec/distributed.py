"""Batch norm whose statistics span every rank of a torch.distributed
process group (docs/PyTorch.md, "Data-parallel training").

Each rank's kernels write per-channel partial sums; torch.distributed (NCCL
on GPUs, gloo on CPUs) adds them across ranks on the caller's stream between
two fusec plans; the next plan normalises with the global statistics. fusec
links no collective library of its own.

  forward   stats plan: S1 = sum(x - K), S2 = sum((x - K)^2) per channel,
                        K = the running mean (the same on every rank)
            all_reduce([S1, S2, count])
            apply plan: the statistics from the sums (mean, variance,
                        a = weight * invstd, b = bias - mean * a), then
                        act(x * a + b)
  backward  sums plan:  sum(dt), sum(dt * (x - mean)), dt = act'(dz)
            all_reduce of both
            input plan: dx = a * (dt - mean(dt) - (x - mean) * invstd^2 *
                        mean(dt * (x - mean))), the means over the global
                        batch; dweight and dbias from this rank's sums

Ranks may hold different batch sizes: the counts are summed with the sums,
so the statistics are those of the global batch. The weight and bias
gradients are the rank's own, as nn.SyncBatchNorm's are: DDP averages them.

    import fusec.distributed
    model = fusec.distributed.convert_sync_batchnorm(model)
"""

import threading

import torch
import torch.nn as tnn
import torch.nn.functional as F

from . import Graph, _f64
from . import torch as _ft
from .nn import _DTYPES, ConvBNAct, _dtype

__all__ = ["SyncBatchNorm", "batch_norm", "convert_sync_batchnorm"]

_F32 = torch.float32
# Activations applied after the normalisation, and what their gradient is
# computed from (fuse.activation_grad): the result or the input.
_ACTIVATIONS = {None: None, "relu": "result", "relu6": "result",
                "silu": "input", "gelu": "input", "hardswish": "input"}
_TORCH_ACTIVATIONS = {None: lambda x: x, "relu": F.relu, "relu6": F.relu6,
                      "silu": F.silu, "gelu": F.gelu,
                      "hardswish": F.hardswish}


#===----------------------------------------------------------------------===#
# Process groups, by number, so that the custom ops take an int
#===----------------------------------------------------------------------===#

_groups_lock = threading.Lock()
_groups = {0: None}  # 0: the default group


def _group_id(group):
    if group is None:
        return 0
    with _groups_lock:
        for k, g in _groups.items():
            if g is group:
                return k
        k = len(_groups)
        _groups[k] = group
        return k


def _world_size(group_id):
    dist = torch.distributed
    if group_id < 0 or not dist.is_available() or \
            not dist.is_initialized():
        return 1
    return dist.get_world_size(_groups[group_id])


def _all_reduce(t, group_id):
    """Sums t across the group's ranks in place; the identity with no
    process group, one rank, or group -1 (no synchronisation)."""
    if _world_size(group_id) > 1:
        torch.distributed.all_reduce(t, group=_groups[group_id])


#===----------------------------------------------------------------------===#
# The four plans, one fusec op each per shape, dtype and activation
#===----------------------------------------------------------------------===#

_plans_lock = threading.Lock()
_plans = {}


def _plan(kind, shape, dtype, activation, eps):
    key = (kind, shape, dtype, activation, eps)
    with _plans_lock:
        op = _plans.get(key)
    if op is None:
        op = _ft.op(_BUILDERS[kind](list(shape), _DTYPES[dtype], activation,
                                    eps), train=False)
        with _plans_lock:
            _plans[key] = op
    return op


def _axes(rank):
    return "axes = array<i64: %s>" % ", ".join(
        str(a) for a in range(rank) if a != 1)


def _col(g, v, shape):
    """[C] values shaped to broadcast against shape's axis 1."""
    return g.reshape(v, [shape[1]] + [1] * (len(shape) - 2))


def _row(g, t, i, c):
    """Row i of a [rows, C] tensor, as [C]."""
    return g.reshape(g.slice(t, [i, 0], [1, c]), [c])


def _activate(g, t, activation):
    return t if activation is None else getattr(g, activation)(t)


def _f32(g, v, dt):
    return g.cast(v, "f32") if dt != "f32" else v


_BIG = 3.0e38  # clamp's open upper end


def _build_stats(shape, dt, activation, eps):
    g = Graph("sync_bn_stats")
    x = g.input(shape, dt)
    shift = g.input([shape[1]], "f32")
    d = g.sub(_f32(g, x, dt), _col(g, shift, shape))
    g.output(g.op("fuse.reduce_sum", [d], _axes(len(shape))),
             g.op("fuse.reduce_sum", [g.mul(d, d)], _axes(len(shape))))
    return g


def _build_apply(shape, dt, activation, eps):
    """(x, the summed [S1, S2, count], shift, weight, bias, ones) ->
    (the result, saved = [a, b, mean, invstd, count, unbiased var])."""
    c = shape[1]
    g = Graph("sync_bn_apply")
    x = g.input(shape, dt)
    packed = g.input([2 * c + 1], "f32")
    shift, weight, bias, ones = (g.input([c], "f32") for _ in range(4))
    s1, s2 = g.slice(packed, [0], [c]), g.slice(packed, [c], [c])
    n = g.slice(packed, [2 * c], [1])
    m1 = g.div(s1, n)
    var = g.clamp(g.sub(g.div(s2, n), g.mul(m1, m1)), 0.0, _BIG)
    mean = g.add(shift, m1)
    eps_attr = "epsilon = %s" % _f64(eps)
    a, b = g.op_results("fuse.batch_norm_coefficients",
                        [mean, var, weight, bias], eps_attr)
    invstd = g.op_results("fuse.batch_norm_coefficients",
                          [mean, var, ones, bias], eps_attr)[0]
    one = g.slice(ones, [0], [1])
    unbiased = g.mul(var, g.div(n, g.clamp(g.sub(n, one), 1.0, _BIG)))
    saved = g.concat([g.reshape(v, [1, c]) for v in
                      (a, b, mean, invstd, g.mul(ones, n), unbiased)], 0)
    y = g.add(g.mul(_f32(g, x, dt), _col(g, a, shape)), _col(g, b, shape))
    y = _activate(g, y, activation)
    g.output(g.cast(y, dt) if dt != "f32" else y, saved)
    return g


def _output_grad(g, shape, dt, activation):
    """Inputs dz, x and saved; (dt, x - mean, saved) in f32."""
    c = shape[1]
    dz, x = g.input(shape, dt), g.input(shape, dt)
    saved = g.input([6, c], "f32")
    a, b, mean = (_col(g, _row(g, saved, i, c), shape) for i in range(3))
    dzf, xf = _f32(g, dz, dt), _f32(g, x, dt)
    if activation is not None:
        t = g.add(g.mul(xf, a), b)
        value = _activate(g, t, activation) \
            if _ACTIVATIONS[activation] == "result" else t
        dzf = g.op("fuse.activation_grad", [dzf, value],
                   "activation = #fuse.activation<%s>" % activation)
    return dzf, g.sub(xf, mean), saved


def _build_grad_sums(shape, dt, activation, eps):
    g = Graph("sync_bn_grad_sums")
    d, xc, _ = _output_grad(g, shape, dt, activation)
    g.output(g.op("fuse.reduce_sum", [d], _axes(len(shape))),
             g.op("fuse.reduce_sum", [g.mul(d, xc)], _axes(len(shape))))
    return g


def _build_input_grad(shape, dt, activation, eps):
    """(dz, x, saved, this rank's sum(dt) and sum(dt * (x - mean)), both
    summed over the ranks) -> (dx, dweight); dbias is sum(dt)."""
    c = shape[1]
    g = Graph("sync_bn_input_grad")
    d, xc, saved = _output_grad(g, shape, dt, activation)
    sdyx = g.input([c], "f32")
    packed = g.input([2 * c], "f32")
    a, invstd, n = (_row(g, saved, i, c) for i in (0, 3, 4))
    gdy = g.div(g.slice(packed, [0], [c]), n)
    gdyx = g.div(g.slice(packed, [c], [c]), n)
    # dx = a * (dt - mean(dt) - (x - mean) * invstd^2 * mean(dt (x - mean)))
    r = g.op("fuse.neg", [g.mul(g.mul(a, g.mul(invstd, invstd)), gdyx)])
    q = g.op("fuse.neg", [g.mul(a, gdy)])
    dx = g.add(g.add(g.mul(d, _col(g, a, shape)),
                     g.mul(xc, _col(g, r, shape))), _col(g, q, shape))
    g.output(g.cast(dx, dt) if dt != "f32" else dx, g.mul(sdyx, invstd))
    return g


_BUILDERS = {"stats": _build_stats, "apply": _build_apply,
             "grad_sums": _build_grad_sums, "input_grad": _build_input_grad}


def _run(kind, x, activation, eps, *args):
    """Runs a plan on tensors straight through the op's implementation: the
    caller is a custom op already, so no second dispatch or check."""
    op = _plan(kind, tuple(x.shape), x.dtype, activation, eps)
    return op._infer_cuda(*args) if x.is_cuda else op._infer_cpu(*args)


_consts_lock = threading.Lock()
_consts = {}


def _const(value, n, device):
    """A cached f32 tensor of n copies of value."""
    key = (value, n, device)
    t = _consts.get(key)
    if t is None:
        t = torch.full((n,), float(value), dtype=_F32, device=device)
        # One made while a CUDA graph is captured lives in the graph's pool.
        if device.type != "cuda" or \
                not torch.cuda.is_current_stream_capturing():
            with _consts_lock:
                _consts[key] = t
    return t


def _check(x, activation):
    _dtype(x, "the input of sync batch norm")
    if x.dim() < 2:
        raise TypeError("sync batch norm takes [N, C, ...]; the input is %s"
                        % list(x.shape))
    if activation not in _ACTIVATIONS:
        raise ValueError("activation %r: one of %s" % (
            activation, ", ".join(str(a) for a in _ACTIVATIONS)))


#===----------------------------------------------------------------------===#
# The custom ops: opaque to dynamo, so a compiled model keeps one graph
#===----------------------------------------------------------------------===#

@torch.library.custom_op("fusec::sync_batch_norm", mutates_args=())
def sync_batch_norm(x: torch.Tensor, weight: torch.Tensor | None,
                    bias: torch.Tensor | None, shift: torch.Tensor | None,
                    eps: float, activation: str | None,
                    group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (the result, [a, b, mean, invstd, count, unbiased variance]
    as [6, C] f32), with the global batch's statistics. `shift`: a
    per-channel value near the mean, the same on every rank (the running
    mean), or None (zero)."""
    _check(x, activation)
    x = x.contiguous()
    c, dev = x.shape[1], x.device
    shift = shift.to(_F32) if shift is not None else _const(0, c, dev)
    empty = x.numel() == 0
    if empty:
        result = torch.empty_like(x)
        # This rank adds nothing to the sums but takes part in the
        # all-reduce; the apply plan runs on one value a channel for the
        # statistics.
        packed = torch.zeros(2 * c + 1, dtype=_F32, device=dev)
        x = x.new_zeros([1, c] + [1] * (x.dim() - 2))
    else:
        s1, s2 = _run("stats", x, activation, eps, x, shift)
        packed = torch.cat([s1, s2, _const(x.numel() // c, 1, dev)])
    _all_reduce(packed, group)
    ones = _const(1, c, dev)
    weight = weight.to(_F32) if weight is not None else ones
    bias = bias.to(_F32) if bias is not None else _const(0, c, dev)
    y, saved = _run("apply", x, activation, eps, x, packed, shift, weight,
                    bias, ones)
    return (result if empty else y), saved


@sync_batch_norm.register_fake
def _(x, weight, bias, shift, eps, activation, group):
    _check(x, activation)
    return torch.empty_like(x, memory_format=torch.contiguous_format), \
        x.new_empty((6, x.shape[1]), dtype=_F32)


@torch.library.custom_op("fusec::sync_batch_norm_backward", mutates_args=())
def sync_batch_norm_backward(
        dz: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None,
        saved: torch.Tensor, eps: float, activation: str | None,
        group: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input, weight and bias gradients); the last two are this rank's."""
    x, dz = x.contiguous(), dz.contiguous()
    wdt = weight.dtype if weight is not None else _F32
    c = x.shape[1]
    if x.numel() == 0:  # no sums to add, but the all-reduce all the same
        _all_reduce(torch.zeros(2 * c, dtype=_F32, device=x.device), group)
        zero = torch.zeros(c, dtype=wdt, device=x.device)
        return torch.empty_like(x), zero, zero.clone()
    sdy, sdyx = _run("grad_sums", x, activation, eps, dz, x, saved)
    packed = torch.cat([sdy, sdyx])
    _all_reduce(packed, group)
    dx, dweight = _run("input_grad", x, activation, eps, dz, x, saved, sdyx,
                       packed)
    return dx, dweight.to(wdt), sdy.to(wdt)


@sync_batch_norm_backward.register_fake
def _(dz, x, weight, saved, eps, activation, group):
    wdt = weight.dtype if weight is not None else _F32
    c = x.shape[1]
    return torch.empty_like(x, memory_format=torch.contiguous_format), \
        x.new_empty(c, dtype=wdt), x.new_empty(c, dtype=wdt)


def _setup_context(ctx, inputs, output):
    x, weight, bias = inputs[:3]
    ctx.eps, ctx.activation, ctx.group = inputs[4:7]
    ctx.has_weight, ctx.has_bias = weight is not None, bias is not None
    ctx.save_for_backward(x, weight, output[1])
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, dz, _dsaved):
    x, weight, saved = ctx.saved_tensors
    dx, dweight, dbias = torch.ops.fusec.sync_batch_norm_backward(
        dz, x, weight, saved, ctx.eps, ctx.activation, ctx.group)
    return (dx, dweight if ctx.has_weight else None,
            dbias if ctx.has_bias else None, None, None, None, None)


sync_batch_norm.register_autograd(_backward, setup_context=_setup_context)


#===----------------------------------------------------------------------===#
# Modules
#===----------------------------------------------------------------------===#

def batch_norm(bn, x, activation, group):
    """The forward of batch norm module `bn` (an nn.BatchNorm*) on x,
    followed by `activation`: with the statistics of the group's global
    batch in training mode (updating bn's running statistics as PyTorch
    does), with the running statistics in eval mode."""
    if x.dim() < 2 or x.shape[1] != bn.num_features:
        raise TypeError("batch norm over %d channels takes [N, %d, ...]; "
                        "the input is %s" % (bn.num_features,
                                             bn.num_features,
                                             list(x.shape)))
    if bn.training and x.numel() == x.shape[1] and _world_size(group) < 2:
        raise ValueError("Expected more than 1 value per channel when "
                         "training, got input size %s" % (x.size(),))
    if not bn.training and bn.running_mean is not None:
        y = F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight,
                         bn.bias, False, 0.0, bn.eps)
        return _TORCH_ACTIVATIONS[activation](y)
    # Batch statistics outside training (no running statistics to use) are
    # the rank's own, as in nn.SyncBatchNorm.
    y, saved = torch.ops.fusec.sync_batch_norm(
        x, bn.weight, bn.bias, bn.running_mean, bn.eps, activation,
        group if bn.training else -1)
    if bn.training and bn.track_running_stats:
        bn.num_batches_tracked.add_(1)
        if x.numel() == 0 and _world_size(group) < 2:
            return y  # no values: the running statistics stay, as PyTorch's
        factor = 1.0 / float(bn.num_batches_tracked) \
            if bn.momentum is None else bn.momentum
        with torch.no_grad():
            stats = saved.detach()
            bn.running_mean.lerp_(stats[2].to(bn.running_mean.dtype), factor)
            bn.running_var.lerp_(stats[5].to(bn.running_var.dtype), factor)
    return y


class SyncBatchNorm(tnn.modules.batchnorm._BatchNorm):
    """nn.SyncBatchNorm on fusec kernels, with an optional activation after
    it (relu, relu6, silu, gelu, hardswish). Takes [N, C, ...]; parameters,
    buffers and state_dict keys are nn.SyncBatchNorm's. In training mode
    the statistics are those of the whole batch across process_group's
    ranks (default: the default group; none initialised or one rank: this
    rank's batch)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None,
                 activation=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine,
                         track_running_stats, device=device, dtype=dtype)
        if activation not in _ACTIVATIONS:
            raise ValueError("activation %r: one of %s" % (
                activation, ", ".join(str(a) for a in _ACTIVATIONS)))
        self.process_group = process_group
        self.activation = activation
        self._group = _group_id(process_group)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got %dD input)"
                             % input.dim())

    def forward(self, x):
        self._check_input_dim(x)
        return batch_norm(self, x, self.activation, self._group)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (", activation=%s" % self.activation
                    if self.activation else "")


def convert_sync_batchnorm(module, process_group=None):
    """Replaces every batch norm inside `module` (nn.BatchNorm1d/2d/3d,
    nn.SyncBatchNorm) by a fusec SyncBatchNorm sharing its parameters and
    buffers, and makes each fusec.nn.ConvBNAct synchronise its batch norm.
    Returns the converted module (the same object unless `module` itself is
    a batch norm)."""
    if isinstance(module, ConvBNAct):
        module.sync = True
        module.process_group = process_group
        return module
    if isinstance(module, tnn.modules.batchnorm._BatchNorm) and \
            not isinstance(module, SyncBatchNorm):
        out = SyncBatchNorm(module.num_features, module.eps, module.momentum,
                            module.affine, module.track_running_stats,
                            process_group)
        if module.affine:
            out.weight, out.bias = module.weight, module.bias
        out.running_mean = module.running_mean
        out.running_var = module.running_var
        out.num_batches_tracked = module.num_batches_tracked
        out.train(module.training)
        return out
    for name, child in module.named_children():
        new = convert_sync_batchnorm(child, process_group)
        if new is not child:
            setattr(module, name, new)
    return module
