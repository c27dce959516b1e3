"""ATen FX graphs to fuse graphs: the rules of the torch.compile backend
(fusec.torch.backend, docs/PyTorch.md).

Each rule turns one ATen node into fuse ops through the graph builder, or
raises Unsupported with the reason. The backend asks each node alone
whether it translates (a one-node graph, so fusec's own verifier has the
last word), partitions the graph into the nodes that do, and translates
each partition whole.
"""

import math
import operator

import torch

from . import Error, Graph, _f64

aten = torch.ops.aten

_FUSE_DTYPES = {torch.float32: "f32", torch.float16: "f16",
                torch.bfloat16: "bf16"}


class Unsupported(Exception):
    """fusec does not take this node; the message says why."""


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _tensor_meta(node):
    """(shape, fuse dtype) of a node's tensor value, or Unsupported."""
    v = _val(node)
    if not isinstance(v, torch.Tensor):
        raise Unsupported("%s is not a tensor" % getattr(node, "name", node))
    if v.dtype not in _FUSE_DTYPES:
        raise Unsupported("a tensor of %s (fusec takes float32, float16 and "
                          "bfloat16)" % str(v.dtype).replace("torch.", ""))
    shape = []
    for d in v.shape:
        # The trace of a static graph may carry its sizes as SymInts with
        # hints; the partition is compiled for those sizes.
        if isinstance(d, torch.SymInt) and d.node.has_hint():
            d = int(d.node.hint)
        if not isinstance(d, int):
            raise Unsupported("%s has a dynamic shape" % node.name)
        shape.append(d)
    if 0 in shape:
        raise Unsupported("%s is empty" % node.name)
    if len(shape) == 0:
        raise Unsupported("%s is a 0-d tensor" % node.name)
    return tuple(shape), _FUSE_DTYPES[v.dtype]


# The permutations between PyTorch's NCHW and the NHWC fusec's kernels read
# fastest (convolutions as implicit GEMMs load whole channel runs).
_TO_NHWC, _TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


class ChannelsLast:
    """A rule's 4-D result given as its NHWC permutation."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _same(value):
    return value


class Translator:
    """Builds one fuse graph from FX nodes. Inputs are the partition's
    placeholders, in order, then the scalar constants the rules need (each
    a [1] tensor the caller passes).

    With channels_last, convolutions, batch norms and pools run in NHWC,
    and the elementwise ops between them stay in it: a 4-D value lives in
    the layout its producer gave it, and a transpose makes the other one
    where a consumer needs it (each made once)."""

    def __init__(self, name, channels_last=False):
        self.g = Graph(name)
        self.channels_last = channels_last
        self.values = {}
        self.nhwc = {}  # node -> its NHWC value
        self.constants = []  # (value, torch dtype)
        # (an input node, its new value): buffers a node updates in place in
        # PyTorch (batch norm's running statistics), as extra graph results.
        self.updates = []

    def input(self, node):
        shape, dtype = _tensor_meta(node)
        self.values[node] = self.g.input(list(shape), dtype)
        return self.values[node]

    def v(self, arg, like=None):
        """The fuse value of an FX argument; a Python number becomes a
        constant input of `like`'s dtype."""
        if isinstance(arg, torch.fx.Node):
            value = self.values.get(arg)
            if value is None and arg in self.nhwc:
                value = self.values[arg] = self.g.transpose(self.nhwc[arg],
                                                            _TO_NCHW)
            if value is None:
                raise Unsupported("%s has no fuse value" % arg.name)
            if isinstance(value, tuple):
                raise Unsupported("%s is a tuple" % arg.name)
            return value
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            return self.constant(arg, like)
        raise Unsupported("argument %r is not a tensor or a number" % (arg,))

    def v_nhwc(self, node):
        """The NHWC value of a 4-D node."""
        value = self.nhwc.get(node)
        if value is None:
            value = self.nhwc[node] = self.g.transpose(self.v(node), _TO_NHWC)
        return value

    def spatial(self, node):
        """(the value a convolution, batch norm or pool reads, its layout
        attribute, the wrapper of its result)."""
        if self.channels_last:
            return self.v_nhwc(node), "nhwc", ChannelsLast
        return self.v(node), "nchw", _same

    def layout_of(self, node):
        """(the value of `node` in the layout it has, the wrapper that gives
        an elementwise result of it the same layout)."""
        if isinstance(node, torch.fx.Node) and node in self.nhwc:
            return self.nhwc[node], ChannelsLast
        return self.v(node), _same

    def _keep(self, node, result):
        if isinstance(result, ChannelsLast):
            self.nhwc[node] = result.value
        else:
            self.values[node] = result

    def constant(self, number, like):
        dtype = _val(like).dtype if like is not None else torch.float32
        self.constants.append((float(number), dtype))
        return self.g.input([1], _FUSE_DTYPES[dtype])

    def node(self, node):
        """Translates a call_function node (its arguments translated)."""
        if node.op != "call_function":
            raise Unsupported("%s is a %s" % (node.name, node.op))
        if node.target is operator.getitem:
            base, index = node.args
            value = self.values.get(base)
            if not isinstance(value, tuple) or value[index] is None:
                raise Unsupported("%s: output %d of %s is not taken"
                                  % (node.name, index, base.name))
            result = value[index]
            self._keep(node, result)
            return result
        else:
            rule = RULES.get(getattr(node.target, "overloadpacket",
                                     node.target))
            if rule is None:
                raise Unsupported("no rule for %s" % _op_name(node))
            try:
                result = rule(self, node, *node.args, **node.kwargs)
            except Error as e:
                raise Unsupported("fusec: %s" % str(e).strip()) from None
            except TypeError as e:  # the rule's arguments do not match
                raise Unsupported("%s: %s" % (_op_name(node), e)) from None
        self._keep(node, result)
        return result


def _op_name(node):
    target = node.target
    name = getattr(target, "__name__", None) or str(target)
    return "aten." + name if isinstance(target, torch._ops.OpOverload) \
        else name


RULES = {}


def rule(*packets):
    def register(fn):
        for p in packets:
            RULES[p] = fn
        return fn
    return register


def _rank(node):
    return _val(node).dim()


def _axis(node, dim):
    rank = _rank(node)
    return dim + rank if dim < 0 else dim


def _i64(values):
    return "array<i64: %s>" % ", ".join(str(int(v)) for v in values)


# ---- Views (functionalized: *_copy) ----------------------------------------

@rule(aten.t, aten.t_copy)
def _t(t, node, x):
    if _rank(x) < 2:
        return t.v(x)
    return t.g.transpose(t.v(x), [1, 0])


@rule(aten.permute, aten.permute_copy)
def _permute(t, node, x, dims):
    return t.g.transpose(t.v(x), [_axis(x, d) for d in dims])


@rule(aten.transpose, aten.transpose_copy)
def _transpose(t, node, x, d0, d1):
    perm = list(range(_rank(x)))
    a, b = _axis(x, d0), _axis(x, d1)
    perm[a], perm[b] = perm[b], perm[a]
    return t.g.transpose(t.v(x), perm)


@rule(aten.view, aten.view_copy, aten._unsafe_view, aten.reshape,
      aten._reshape_copy, aten.squeeze, aten.squeeze_copy, aten.unsqueeze,
      aten.unsqueeze_copy, aten.flatten)
def _reshape(t, node, x, *args, **kwargs):
    shape, _ = _tensor_meta(node)
    value = t.values.get(x)
    if value is None and x in t.nhwc and tuple(_val(x).shape[2:]) == (1, 1):
        value = t.nhwc[x]  # [N, 1, 1, C]: the elements in NCHW's order
    return t.g.reshape(t.v(x) if value is None else value, list(shape))


# Copies of a broadcast value, at most: past it, the concatenation's operand
# list grows without bound.
_EXPAND_COPIES = 256


@rule(aten.expand, aten.expand_copy)
def _expand(t, node, x, size, implicit=False):
    """Size-1 axes broadcast to n: n copies concatenated (a class token
    expanded to the batch); new leading axes are size-1 axes first."""
    shape, _ = _tensor_meta(node)
    value = t.v(x)
    rank = _rank(x)
    if rank < len(shape):
        value = t.g.reshape(value, [1] * (len(shape) - rank) +
                            list(_val(x).shape))
    current = [1] * (len(shape) - rank) + list(_val(x).shape)
    for axis, (have, want) in enumerate(zip(current, shape)):
        if have == want:
            continue
        if have != 1 or want > _EXPAND_COPIES:
            raise Unsupported("expand of an axis of %d to %d (fusec copies "
                              "a size-1 axis up to %d times)"
                              % (have, want, _EXPAND_COPIES))
        value = t.g.concat([value] * want, axis)
    return value


def rms_norm(x, eps, weight=None):
    """x / sqrt(mean(x^2 over the last axis) + eps), times weight if given:
    what the backend puts in place of a hand-written RMSNorm's ATen ops
    (fusec.torch), so that one fuse.rms_norm takes them. PyTorch runs this
    where fusec does not."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


@rule(rms_norm)
def _rms_norm(t, node, x, eps, weight=None):
    return t.g.rms_norm(t.v(x), None if weight is None else t.v(weight),
                        float(eps))


def _packet(node):
    """The ATen overload packet a call node runs (aten.mm), else None."""
    return getattr(node.target, "overloadpacket", None) \
        if isinstance(node, torch.fx.Node) and node.op == "call_function" \
        else None


def fold_rms_norms(graph):
    """Rewrites x * rsqrt(mean(x^2, -1, keepdim) + eps) (either order of the
    product) into rms_norm(x, eps), where the rsqrt has no other users, and a
    following product with a weight vector into rms_norm(x, eps, weight).
    Returns how many it rewrote."""
    folded = 0
    for r in list(graph.nodes):
        if _packet(r) is not aten.rsqrt:
            continue
        a = r.args[0]
        if not (_packet(a) is aten.add and len(a.args) == 2 and
                isinstance(a.args[1], (int, float)) and
                a.kwargs.get("alpha", 1) == 1):
            continue
        m = a.args[0]
        if not (_packet(m) is aten.mean and len(m.args) >= 2 and
                list(m.args[1]) in ([-1], [_rank(m.args[0]) - 1]) and
                (m.args[2] if len(m.args) > 2 else
                 m.kwargs.get("keepdim", False))):
            continue
        p = m.args[0]
        if not (_packet(p) is aten.pow and p.args[1] == 2):
            continue
        x = p.args[0]
        muls = list(r.users)
        if not muls or any(
                _packet(u) is not aten.mul or set(u.args) != {x, r}
                or u.kwargs for u in muls):
            continue
        for u in muls:
            with graph.inserting_before(u):
                n = graph.call_function(rms_norm, (x, a.args[1]))
            n.meta.update(u.meta)
            u.replace_all_uses_with(n)
            graph.erase_node(u)
            folded += 1
            # The learned scale: a product with a vector along the last axis
            # of the same dtype.
            (s,) = n.users if len(n.users) == 1 else (None,)
            if _packet(s) is aten.mul and not s.kwargs and n in s.args:
                w = s.args[1] if s.args[0] is n else s.args[0]
                if isinstance(w, torch.fx.Node) and _val(w) is not None and \
                        _val(w).dim() == 1 and \
                        _val(w).shape[0] == _val(n).shape[-1] and \
                        _val(w).dtype == _val(n).dtype == _val(s).dtype:
                    n.args = (x, a.args[1], w)
                    n.meta.update(s.meta)
                    s.replace_all_uses_with(n)
                    graph.erase_node(s)
    return folded


@rule(aten.clone, aten.alias, aten.alias_copy, aten.detach,
      aten.detach_copy, aten.contiguous, aten.lift_fresh_copy)
def _identity(t, node, x, *args, **kwargs):
    value, same = t.layout_of(x)
    return same(value)


# ---- Elementwise -------------------------------------------------------------

def _promoted(t, node, arg, nhwc=False, wide=False):
    """The fuse value of `arg` in the node's result dtype (PyTorch's type
    promotion of a float operand, or of a number), or with `wide` in
    float32; with nhwc, a 4-D tensor's NHWC value."""
    target = "f32" if wide else _tensor_meta(node)[1]
    if not isinstance(arg, torch.fx.Node):
        return t.v(arg, None if wide else node)
    value = _nhwc_operand(t, arg) if nhwc else t.v(arg)
    _, dtype = _tensor_meta(arg)
    return value if dtype == target else t.g.cast(value, target)


def _nhwc_operand(t, arg):
    """An operand of a 4-D elementwise node in NHWC: a 4-D value's
    permutation (which broadcasts as it did); a lower-rank one (a [C, 1, 1]
    bias) with the leading size-1 axes broadcasting adds, then permuted;
    one element as it is."""
    shape = list(_val(arg).shape)
    if len(shape) == 4:
        return t.v_nhwc(arg)
    if len(shape) <= 1 and _val(arg).numel() == 1:
        return t.v(arg)
    full = [1] * (4 - len(shape)) + shape
    return t.g.transpose(t.g.reshape(t.v(arg), full), _TO_NHWC)


def _in_nhwc(t, node, operands):
    """Whether an elementwise node runs on NHWC values: one operand has
    them, the result is 4-D, and every tensor operand broadcasts to it (a
    squeeze-and-excitation scale [N, C, 1, 1], a [C, 1, 1] bias)."""
    tensors = [a for a in operands if isinstance(a, torch.fx.Node)]
    if not any(a in t.nhwc for a in tensors):
        return False
    shape = tuple(_val(node).shape)
    if len(shape) != 4:
        return False
    for a in tensors:
        have = tuple(_val(a).shape)
        if len(have) > 4:
            return False
        have = (1,) * (4 - len(have)) + have
        if any(h not in (1, s) for h, s in zip(have, shape)):
            return False
    return True


def _binary(name):
    def fn(t, node, a, b, alpha=1):
        nhwc = _in_nhwc(t, node, (a, b))
        _, target = _tensor_meta(node)
        numbers = alpha != 1 or not all(isinstance(x, torch.fx.Node)
                                        for x in (a, b))
        if numbers and target in ("f16", "bf16"):
            # PyTorch computes a half tensor with a number in float32 and
            # rounds once: -1e9 or 1e-8 would not survive float16 first.
            lhs, rhs = (_promoted(t, node, x, nhwc, wide=True)
                        for x in (a, b))
            if alpha != 1:
                rhs = t.g.mul(rhs, t.constant(alpha, None))
            out = t.g.cast(getattr(t.g, name)(lhs, rhs), target)
            return ChannelsLast(out) if nhwc else out
        lhs, rhs = _promoted(t, node, a, nhwc), _promoted(t, node, b, nhwc)
        if alpha != 1:
            rhs = t.g.mul(rhs, t.constant(alpha, node))
        out = getattr(t.g, name)(lhs, rhs)
        return ChannelsLast(out) if nhwc else out
    return fn


for _name in ("add", "sub", "mul", "div"):
    rule(getattr(aten, _name))(_binary(_name))


@rule(aten.pow)
def _pow(t, node, x, exponent):
    if exponent != 2 or not isinstance(x, torch.fx.Node):
        raise Unsupported("pow other than a tensor squared")
    nhwc = _in_nhwc(t, node, (x,))
    value = _promoted(t, node, x, nhwc)
    out = t.g.mul(value, value)
    return ChannelsLast(out) if nhwc else out


@rule(aten.neg)
def _neg(t, node, x):
    value, same = t.layout_of(x)
    return same(t.g.op("fuse.neg", [value]))


def _unary(name):
    def fn(t, node, x):
        value, same = t.layout_of(x)
        return same(getattr(t.g, name)(value))
    return fn


for _name in ("relu", "silu", "sigmoid", "tanh", "hardswish"):
    rule(getattr(aten, _name))(_unary(_name))


@rule(aten.gelu)
def _gelu(t, node, x, approximate="none"):
    value, same = t.layout_of(x)
    return same(t.g.gelu(value, approximate))


@rule(aten.hardtanh)
def _hardtanh(t, node, x, min_val=-1.0, max_val=1.0):
    value, same = t.layout_of(x)
    if min_val == 0 and max_val == 6:
        return same(t.g.relu6(value))
    return same(t.g.clamp(value, min_val, max_val))


@rule(aten.clamp)
def _clamp(t, node, x, min=None, max=None):
    if min is None or max is None or isinstance(min, torch.fx.Node):
        raise Unsupported("clamp without both bounds as numbers")
    value, same = t.layout_of(x)
    return same(t.g.clamp(value, min, max))


@rule(aten.leaky_relu)
def _leaky_relu(t, node, x, negative_slope=0.01):
    value, same = t.layout_of(x)
    return same(t.g.leaky_relu(value, negative_slope))


@rule(aten._to_copy)
def _to_copy(t, node, x, dtype=None, layout=None, device=None,
             pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and device != _val(x).device:
        raise Unsupported("a copy to another device")
    if memory_format not in (None, torch.preserve_format,
                             torch.contiguous_format):
        raise Unsupported("a copy to %s" % memory_format)
    _, target = _tensor_meta(node)
    value, same = t.layout_of(x)
    return same(t.g.cast(value, target))


# ---- Normalisation and reductions -----------------------------------------

@rule(aten._softmax)
def _softmax(t, node, x, dim, half_to_float=False):
    if half_to_float:
        raise Unsupported("softmax with half_to_float")
    return t.g.op("fuse.softmax", [t.v(x)], "axis = %d" % _axis(x, dim))


def _only_first_output(node):
    for user in node.users:
        if user.target is not operator.getitem or user.args[1] != 0:
            raise Unsupported("%s: its other outputs are used (mean, rstd "
                              "or indices)" % _op_name(node))


@rule(aten.native_layer_norm)
def _layer_norm(t, node, x, normalized_shape, weight, bias, eps):
    _only_first_output(node)
    if len(normalized_shape) != 1:
        raise Unsupported("layer_norm over more than the last axis")
    y = t.g.layer_norm(t.v(x), None if weight is None else t.v(weight),
                       None if bias is None else t.v(bias), float(eps))
    return (y, None, None)


def _inference_batch_norm(t, node, x, weight, bias, mean, var, eps):
    _only_first_output(node)
    if weight is None or bias is None or _rank(x) != 4:
        raise Unsupported("batch norm: 4-D, with weight and bias")
    # Under autocast the input is half precision and the statistics float32:
    # the statistics are rounded to the input's type, which keeps the
    # convolution + batch norm + activation chain one fused kernel (a cast
    # between them would split it); the error stays within that type's.
    _, dtype = _tensor_meta(x)
    params = []
    for p in (mean, var, weight, bias):
        value = t.v(p)
        params.append(value if _tensor_meta(p)[1] == dtype else
                      t.g.cast(value, dtype))
    value, layout, wrap = t.spatial(x)
    y = t.g.op("fuse.batch_norm", [value] + params,
               "epsilon = %s, layout = #fuse.layout<%s>" % (_f64(eps),
                                                           layout))
    out = _FUSE_DTYPES.get(_val(node)[0].dtype)
    if out != dtype:
        y = t.g.cast(y, out)
    return (wrap(y), None, None)


@rule(aten._native_batch_norm_legit_no_training)
def _batch_norm_legit(t, node, x, weight, bias, mean, var, momentum, eps):
    return _inference_batch_norm(t, node, x, weight, bias, mean, var, eps)


@rule(aten.native_batch_norm)
def _native_batch_norm(t, node, x, weight, bias, mean, var, training,
                       momentum, eps):
    if not training:
        if mean is None or var is None:
            raise Unsupported("batch norm without running statistics")
        return _inference_batch_norm(t, node, x, weight, bias, mean, var,
                                     eps)
    # Training: the batch's statistics, and the running statistics updated
    # as PyTorch does (in place there; here new values that the caller
    # copies into the buffers after the partition has run).
    _only_first_output(node)
    if weight is None or bias is None or mean is None or var is None or \
            _rank(x) != 4:
        raise Unsupported("batch norm in training mode: 4-D, with weight, "
                          "bias and running statistics")
    if momentum is None:
        raise Unsupported("batch norm with a cumulative average "
                          "(momentum=None)")
    for stat in (mean, var):
        if len(stat.users) != 1:
            raise Unsupported("the running statistics are read elsewhere")
    value, layout, wrap = t.spatial(x)
    outs = t.g.op_results(
        "fuse.batch_norm_train",
        [value, t.v(mean), t.v(var), t.v(weight), t.v(bias)],
        "epsilon = %s, momentum = %s, layout = #fuse.layout<%s>"
        % (_f64(eps), _f64(momentum), layout))
    t.updates.append((mean, outs[3]))
    t.updates.append((var, outs[4]))
    return (wrap(outs[0]), None, None)


@rule(aten.sum)
def _sum(t, node, x, dims=None, keepdim=False, dtype=None):
    if dims is None or dtype is not None:
        raise Unsupported("sum over every axis or to another dtype")
    axes = sorted(_axis(x, d) for d in dims)
    return t.g.op("fuse.reduce_sum", [t.v(x)], "axes = %s%s" % (
        _i64(axes), ", keep_dims" if keepdim else ""))


@rule(aten.mean)
def _mean(t, node, x, dims=None, keepdim=False, dtype=None):
    if dims is None or dtype is not None:
        raise Unsupported("mean over every axis or to another dtype")
    shape, _ = _tensor_meta(x)
    axes = sorted(_axis(x, d) for d in dims)
    if len(shape) == 4 and axes == [2, 3]:
        # A spatial mean (adaptive average pooling to 1 x 1), which has a
        # gradient rule: [N, C, 1, 1], or [N, 1, 1, C] from an NHWC value;
        # without the kept axes, [N, C] is the same in both.
        nhwc = x in t.nhwc
        value = t.nhwc[x] if nhwc else t.v(x)
        y = t.g.op("fuse.global_avg_pool", [value],
                   "layout = #fuse.layout<%s>" % ("nhwc" if nhwc else "nchw"))
        if not keepdim:
            return t.g.reshape(y, [shape[0], shape[1]])
        return ChannelsLast(y) if nhwc else y
    count = math.prod(shape[a] for a in axes)
    total = t.g.op("fuse.reduce_sum", [t.v(x)], "axes = %s%s" % (
        _i64(axes), ", keep_dims" if keepdim else ""))
    return t.g.mul(total, t.constant(1.0 / count, x))


# ---- GEMMs and convolutions -----------------------------------------------

def _transposed_weight(t, w):
    """The [out, in] weight W when `w` is t(W) of a 2-D W, else None. Also
    when `w` is a cast of t(W) (autocast casts the transposed weight): then
    the cast of W, so that the GEMM reads W's [out, in] layout and no
    kernel transposes the weight at every call."""
    if _packet(w) is aten._to_copy and len(w.args) == 1 and \
            set(w.kwargs) <= {"dtype"} and len(w.args[0].users) == 1:
        weight = _transposed_weight(t, w.args[0])
        if weight is None:
            return None
        _, target = _tensor_meta(w)
        return t.g.cast(weight, target)
    if _packet(w) in (aten.t, aten.t_copy) and w.args[0] in t.values and \
            _rank(w.args[0]) == 2:
        return t.values[w.args[0]]
    return None


@rule(aten.mm)
def _mm(t, node, a, b):
    weight = _transposed_weight(t, b)
    if weight is not None:
        return t.g.linear(t.v(a), weight)
    return t.g.matmul(t.v(a), t.v(b))


@rule(aten.bmm)
def _bmm(t, node, a, b):
    return t.g.matmul(t.v(a), t.v(b))


@rule(aten.addmm)
def _addmm(t, node, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise Unsupported("addmm with beta or alpha")
    weight = _transposed_weight(t, b)
    if weight is not None and _rank(bias) == 1:
        return t.g.linear(t.v(a), weight, t.v(bias))
    return t.g.add(t.g.matmul(t.v(a), t.v(b)), t.v(bias))


@rule(aten.convolution)
def _convolution(t, node, x, w, bias, stride, padding, dilation, transposed,
                 output_padding, groups):
    if transposed or _rank(x) != 4:
        raise Unsupported("only 2-D, non-transposed convolutions")
    value, layout, wrap = t.spatial(x)
    # NHWC's filter is [out, kh, kw, in]: the same permutation.
    weight = t.v_nhwc(w) if layout == "nhwc" else t.v(w)
    operands = [value, weight] + ([] if bias is None else [t.v(bias)])
    return wrap(t.g.op("fuse.conv2d", operands,
                       "strides = %s, padding = %s, dilation = %s, "
                       "groups = %d, layout = #fuse.layout<%s>" % (
                           _i64(stride), _i64(padding), _i64(dilation),
                           groups, layout)))


@rule(aten.max_pool2d_with_indices)
def _max_pool(t, node, x, kernel, stride=(), padding=(0, 0),
              dilation=(1, 1), ceil_mode=False):
    _only_first_output(node)
    if ceil_mode or any(d != 1 for d in dilation) or _rank(x) != 4:
        raise Unsupported("max pool with ceil_mode or dilation")
    kernel = list(kernel) * (2 // len(kernel))
    stride = list(stride or kernel) * (2 // len(stride or kernel))
    padding = list(padding) * (2 // len(padding))
    value, layout, wrap = t.spatial(x)
    y = t.g.op("fuse.max_pool2d", [value],
               "kernel = %s, strides = %s, padding = %s, layout = "
               "#fuse.layout<%s>" % (_i64(kernel), _i64(stride),
                                     _i64(padding), layout))
    return (wrap(y), None)


@rule(aten.avg_pool2d)
def _avg_pool(t, node, x, kernel, stride=(), padding=(0, 0),
              ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    if ceil_mode or divisor_override is not None or _rank(x) != 4:
        raise Unsupported("avg pool with ceil_mode or divisor_override")
    kernel = list(kernel) * (2 // len(kernel))
    stride = list(stride or kernel) * (2 // len(stride or kernel))
    padding = list(padding) * (2 // len(padding))
    value, layout, wrap = t.spatial(x)
    return wrap(t.g.op("fuse.avg_pool2d", [value],
                       "kernel = %s, strides = %s, padding = %s, layout = "
                       "#fuse.layout<%s>%s" % (
                           _i64(kernel), _i64(stride), _i64(padding), layout,
                           ", count_include_pad" if count_include_pad else
                           ", count_include_pad = false")))


@rule(aten.split, aten.split_copy, aten.split_with_sizes,
      aten.split_with_sizes_copy)
def _split(t, node, x, sizes, dim=0):
    shape, _ = _tensor_meta(x)
    axis = _axis(x, dim)
    if isinstance(sizes, int):
        sizes = [min(sizes, shape[axis] - i)
                 for i in range(0, shape[axis], sizes)]
    if len(sizes) == 1:
        return (t.v(x),)
    return t.g.split(t.v(x), list(sizes), axis)


@rule(aten.slice, aten.slice_copy)
def _slice(t, node, x, dim=0, start=None, end=None, step=1):
    shape, _ = _tensor_meta(x)
    axis = _axis(x, dim)
    begin, stop, stride = slice(start, end, step).indices(shape[axis])
    if stride != 1:
        raise Unsupported("a strided slice")
    if begin == 0 and stop == shape[axis]:
        return t.v(x)
    offsets = [0] * len(shape)
    sizes = list(shape)
    offsets[axis], sizes[axis] = begin, max(stop - begin, 0)
    return t.g.slice(t.v(x), offsets, sizes)


@rule(aten.select, aten.select_copy)
def _select(t, node, x, dim, index):
    shape, _ = _tensor_meta(x)
    axis = _axis(x, dim)
    index = index + shape[axis] if index < 0 else index
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[axis], sizes[axis] = index, 1
    out, _ = _tensor_meta(node)
    return t.g.reshape(t.g.slice(t.v(x), offsets, sizes), list(out))


@rule(aten.cat)
def _cat(t, node, tensors, dim=0):
    return t.g.concat([t.v(x) for x in tensors], _axis(tensors[0], dim))


# ---- Attention -------------------------------------------------------------

def _attention(t, node, q, k, v, mask, dropout_p, causal, scale):
    if dropout_p:
        raise Unsupported("attention with dropout")
    for user in node.users:
        if user.target is not operator.getitem or user.args[1] != 0:
            raise Unsupported("its log-sum-exp or other outputs are used")
    operands = [t.v(q), t.v(k), t.v(v)]
    attributes = []
    if mask is not None:
        operands.append(t.v(mask))
    if causal:
        attributes.append("causal")
    if scale is not None:
        attributes.append("scale = " + _f64(scale))
    out = t.g.op("fuse.attention", operands, ", ".join(attributes))
    return (out,) + (None,) * 8


@rule(aten._scaled_dot_product_flash_attention_for_cpu)
def _sdpa_cpu(t, node, q, k, v, dropout_p=0.0, is_causal=False,
              attn_mask=None, scale=None):
    return _attention(t, node, q, k, v, attn_mask, dropout_p, is_causal,
                      scale)


@rule(aten._scaled_dot_product_flash_attention)
def _sdpa_flash(t, node, q, k, v, dropout_p=0.0, is_causal=False,
                return_debug_mask=False, scale=None):
    return _attention(t, node, q, k, v, None, dropout_p, is_causal, scale)


@rule(aten._scaled_dot_product_efficient_attention)
def _sdpa_efficient(t, node, q, k, v, attn_bias, compute_log_sumexp,
                    dropout_p=0.0, is_causal=False, scale=None):
    return _attention(t, node, q, k, v, attn_bias, dropout_p, is_causal,
                      scale)


@rule(aten._scaled_dot_product_cudnn_attention)
def _sdpa_cudnn(t, node, q, k, v, attn_bias, compute_log_sumexp,
                dropout_p=0.0, is_causal=False, return_debug_mask=False,
                scale=None):
    return _attention(t, node, q, k, v, attn_bias, dropout_p, is_causal,
                      scale)


# ---- FLOPs, for the coverage report ---------------------------------------

def flops(node):
    """Multiply-adds times 2 of the GEMM-like nodes (0 for the rest)."""
    packet = getattr(node.target, "overloadpacket", None)
    try:
        if packet in (aten.mm, aten.addmm, aten.bmm):
            out = _val(node)
            a = _val(node.args[1] if packet is aten.addmm else node.args[0])
            return 2 * out.numel() * a.shape[-1]
        if packet is aten.convolution:
            out, w = _val(node), _val(node.args[1])
            return 2 * out.numel() * (w.numel() // w.shape[0])
        if packet in (aten._scaled_dot_product_flash_attention_for_cpu,
                      aten._scaled_dot_product_flash_attention,
                      aten._scaled_dot_product_efficient_attention,
                      aten._scaled_dot_product_cudnn_attention):
            q, k = _val(node.args[0]), _val(node.args[1])
            return 4 * q.numel() * k.shape[-2]
    except (AttributeError, IndexError, TypeError):
        pass
    return 0
