"""Drop-in modules whose forward and backward are fusec kernels
(docs/PyTorch.md): LayerNorm, RMSNorm, MLP, Attention and ConvBNAct.

Each keeps its parameters as its torch.nn counterpart names them, so that
state dicts load across, and compiles one fusec op (fusec.torch.op) per input
shape and dtype on first use. On CPU tensors the ops run on the reference
interpreter.

    import fusec.nn
    ln = fusec.nn.LayerNorm(768).cuda().bfloat16()
    y = ln(x)                      # x: [..., 768] bfloat16
    model = fusec.nn.fuse_modules(model)   # Conv2d+BatchNorm2d(+act) -> ConvBNAct
"""

import math

import torch
import torch.nn as tnn

from . import Graph
from . import torch as _ft

__all__ = ["Attention", "ConvBNAct", "ConvBNReLU", "LayerNorm", "MLP",
           "RMSNorm", "fuse_modules"]

_DTYPES = {torch.float32: "f32", torch.float16: "f16",
           torch.bfloat16: "bf16"}


def _dtype(x, what):
    if x.dtype not in _DTYPES:
        raise TypeError("%s is %s; fusec takes float32, float16 and "
                        "bfloat16" % (what, x.dtype))
    return _DTYPES[x.dtype]


def _trailing(module, x):
    """(x's shape, the number of normalised axes), or TypeError when x does
    not end in the module's normalized_shape."""
    shape = tuple(x.shape)
    k = len(module.normalized_shape)
    if shape[-k:] != module.normalized_shape:
        raise TypeError("%s over %s: the input is %s" % (
            type(module).__name__, list(module.normalized_shape),
            list(shape)))
    return shape, k


class _Compiled(tnn.Module):
    """Keeps one fusec op per key (shapes, dtypes) of the module's inputs."""

    def __init__(self):
        super().__init__()
        self._fusec_ops = {}

    def _op(self, key, build):
        op = self._fusec_ops.get(key)
        if op is None:
            op = self._fusec_ops[key] = _ft.op(build())
        return op

    @staticmethod
    def _same_dtype(x, tensors):
        for name, t in tensors:
            if t is not None and t.dtype != x.dtype:
                raise TypeError("%s is %s but the input is %s; convert the "
                                "module (module.to(dtype)) or the input"
                                % (name, t.dtype, x.dtype))


class _Norm(_Compiled):
    """What LayerNorm and RMSNorm share: the normalised trailing shape."""

    def __init__(self, normalized_shape, eps, elementwise_affine):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine


class LayerNorm(_Norm):
    """torch.nn.LayerNorm over the trailing `normalized_shape` axes."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine)
        kw = {"device": device, "dtype": dtype}
        if elementwise_affine:
            self.weight = tnn.Parameter(torch.ones(self.normalized_shape, **kw))
            self.bias = tnn.Parameter(torch.zeros(self.normalized_shape,
                                                  **kw)) if bias else None
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        shape, k = _trailing(self, x)
        self._same_dtype(x, [("weight", self.weight), ("bias", self.bias)])
        dt = _dtype(x, "the input")
        width = math.prod(self.normalized_shape)
        params = [p for p in (self.weight, self.bias) if p is not None]

        def build():
            g = Graph("layer_norm")
            v = g.input(list(shape), dt)
            ins = [g.input(list(self.normalized_shape), dt) for _ in params]
            flat = [g.reshape(p, [width]) for p in ins]
            scale = flat[0] if self.weight is not None else None
            shift = flat[-1] if self.bias is not None else None
            y = g.layer_norm(g.reshape(v, list(shape[:-k]) + [width]),
                             scale, shift, self.eps)
            g.output(g.reshape(y, list(shape)))
            return g

        op = self._op((shape, dt, len(params)), build)
        return op(x, *params)

    def extra_repr(self):
        return "%s, eps=%s, elementwise_affine=%s" % (
            self.normalized_shape, self.eps, self.elementwise_affine)


class RMSNorm(_Norm):
    """torch.nn.RMSNorm over the trailing `normalized_shape` axes (eps None:
    the input dtype's machine epsilon, as PyTorch)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine)
        if elementwise_affine:
            self.weight = tnn.Parameter(torch.ones(
                self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        shape, k = _trailing(self, x)
        self._same_dtype(x, [("weight", self.weight)])
        dt = _dtype(x, "the input")
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        width = math.prod(self.normalized_shape)

        def build():
            g = Graph("rms_norm")
            v = g.input(list(shape), dt)
            scale = None
            if self.weight is not None:
                scale = g.reshape(g.input(list(self.normalized_shape), dt),
                                  [width])
            y = g.rms_norm(g.reshape(v, list(shape[:-k]) + [width]), scale,
                           eps)
            g.output(g.reshape(y, list(shape)))
            return g

        op = self._op((shape, dt, eps), build)
        return op(x, self.weight) if self.weight is not None else op(x)


_ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "silu", "swiglu")


def _activate(g, h, activation):
    if activation == "gelu":
        return g.gelu(h)
    if activation == "gelu_tanh":
        return g.gelu(h, "tanh")
    if activation == "relu":
        return g.relu(h)
    return g.silu(h)


class MLP(_Compiled):
    """A transformer's feed-forward block on [..., in_features]:
    fc2(act(fc1(x))), or with activation="swiglu" down(silu(gate(x)) *
    up(x)) (LLaMA's), as nn.Linear submodules of those names."""

    def __init__(self, in_features, hidden_features, out_features=None,
                 activation="gelu", bias=True, device=None, dtype=None):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError("activation %r: one of %s"
                             % (activation, ", ".join(_ACTIVATIONS)))
        out_features = out_features or in_features
        self.activation = activation
        kw = {"bias": bias, "device": device, "dtype": dtype}
        if activation == "swiglu":
            self.gate = tnn.Linear(in_features, hidden_features, **kw)
            self.up = tnn.Linear(in_features, hidden_features, **kw)
            self.down = tnn.Linear(hidden_features, out_features, **kw)
            self._layers = ("gate", "up", "down")
        else:
            self.fc1 = tnn.Linear(in_features, hidden_features, **kw)
            self.fc2 = tnn.Linear(hidden_features, out_features, **kw)
            self._layers = ("fc1", "fc2")

    def forward(self, x):
        shape = tuple(x.shape)
        layers = [getattr(self, n) for n in self._layers]
        if shape[-1] != layers[0].in_features:
            raise TypeError("MLP of %d input features: the input is %s"
                            % (layers[0].in_features, list(shape)))
        params = []
        for name, layer in zip(self._layers, layers):
            params.append(("%s.weight" % name, layer.weight))
            if layer.bias is not None:
                params.append(("%s.bias" % name, layer.bias))
        self._same_dtype(x, params)
        dt = _dtype(x, "the input")
        rows = math.prod(shape[:-1])

        def build():
            g = Graph("mlp")
            v = g.reshape(g.input(list(shape), dt), [rows, shape[-1]])
            lin = []
            for layer in layers:
                w = g.input(list(layer.weight.shape), dt)
                b = g.input([layer.out_features], dt) \
                    if layer.bias is not None else None
                lin.append((w, b))
            if self.activation == "swiglu":
                (wg, bg), (wu, bu), (wd, bd) = lin
                h = g.mul(g.silu(g.linear(v, wg, bg)), g.linear(v, wu, bu))
                y = g.linear(h, wd, bd)
            else:
                (w1, b1), (w2, b2) = lin
                y = g.linear(_activate(g, g.linear(v, w1, b1),
                                       self.activation), w2, b2)
            g.output(g.reshape(y, list(shape[:-1]) + [layers[-1].out_features]))
            return g

        op = self._op((shape, dt), build)
        return op(x, *[p for _, p in params])


class Attention(_Compiled):
    """Multi-head self-attention on [batch, tokens, embed_dim] with
    grouped-query heads (num_kv_heads divides num_heads), a causal mask
    and/or an additive float mask broadcastable to [batch, heads, tokens,
    tokens]: out_proj(softmax(q k^T * scale + mask) v), q/k/v/out_proj
    nn.Linear submodules."""

    def __init__(self, embed_dim, num_heads, num_kv_heads=None,
                 causal=False, bias=True, device=None, dtype=None):
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if embed_dim % num_heads or num_heads % num_kv_heads:
            raise ValueError("embed_dim %d, num_heads %d, num_kv_heads %d: "
                             "heads must divide embed_dim and num_kv_heads "
                             "num_heads" % (embed_dim, num_heads,
                                            num_kv_heads))
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.num_kv_heads, self.causal = num_kv_heads, causal
        self.head_dim = embed_dim // num_heads
        kv = num_kv_heads * self.head_dim
        kw = {"bias": bias, "device": device, "dtype": dtype}
        self.q_proj = tnn.Linear(embed_dim, embed_dim, **kw)
        self.k_proj = tnn.Linear(embed_dim, kv, **kw)
        self.v_proj = tnn.Linear(embed_dim, kv, **kw)
        self.out_proj = tnn.Linear(embed_dim, embed_dim, **kw)

    def forward(self, x, mask=None):
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise TypeError("Attention takes [batch, tokens, %d]; the input "
                            "is %s" % (self.embed_dim, list(x.shape)))
        b, n, d = x.shape
        layers = ("q_proj", "k_proj", "v_proj", "out_proj")
        params = []
        for name in layers:
            layer = getattr(self, name)
            params.append(("%s.weight" % name, layer.weight))
            if layer.bias is not None:
                params.append(("%s.bias" % name, layer.bias))
        self._same_dtype(x, params + [("the mask", mask)])
        dt = _dtype(x, "the input")
        mask_shape = None if mask is None else tuple(mask.shape)
        h, hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim

        def build():
            g = Graph("attention")
            v = g.reshape(g.input([b, n, d], dt), [b * n, d])
            lin = []
            for name in layers:
                layer = getattr(self, name)
                w = g.input(list(layer.weight.shape), dt)
                bias = g.input([layer.out_features], dt) \
                    if layer.bias is not None else None
                lin.append((w, bias))
            m = g.input(list(mask_shape), dt) if mask is not None else None

            def heads(t, count):
                return g.transpose(g.reshape(t, [b, n, count, hd]),
                                   [0, 2, 1, 3])

            q = heads(g.linear(v, *lin[0]), h)
            k = heads(g.linear(v, *lin[1]), hkv)
            vv = heads(g.linear(v, *lin[2]), hkv)
            operands = [q, k, vv] + ([m] if m is not None else [])
            a = g.op("fuse.attention", operands,
                     "causal" if self.causal else "")
            a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [b * n, d])
            g.output(g.reshape(g.linear(a, *lin[3]), [b, n, d]))
            return g

        op = self._op(((b, n, d), dt, mask_shape), build)
        args = [x] + [p for _, p in params]
        return op(*args, mask) if mask is not None else op(*args)


_CONV_ACTS = {"relu": "relu", "relu6": "relu6", "silu": "silu",
              "hardswish": "hardswish", "gelu": "gelu", None: None}


class ConvBNAct(_Compiled):
    """nn.Conv2d + nn.BatchNorm2d (+ an activation) in one fusec op, NCHW,
    as submodules `conv` and `bn` (their state dicts load across). In
    training mode batch norm takes the batch's statistics and updates
    running_mean, running_var and num_batches_tracked as nn.BatchNorm2d
    does; in eval mode it uses the running statistics. With sync=True the
    training statistics span process_group's ranks (fusec.distributed): the
    convolution is one fusec op and the synchronised batch norm with its
    activation two more, with the all-reduce between them."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, bias=False,
                 activation="relu", eps=1e-5, momentum=0.1, device=None,
                 dtype=None, sync=False, process_group=None):
        super().__init__()
        self.sync, self.process_group = sync, process_group
        if activation not in _CONV_ACTS:
            raise ValueError("activation %r: one of %s" % (
                activation, ", ".join(str(a) for a in _CONV_ACTS)))
        kw = {"device": device, "dtype": dtype}
        self.conv = tnn.Conv2d(in_channels, out_channels, kernel_size,
                               stride=stride, padding=padding,
                               dilation=dilation, groups=groups, bias=bias,
                               **kw)
        self.bn = tnn.BatchNorm2d(out_channels, eps=eps, momentum=momentum,
                                  **kw)
        self.activation = activation

    @classmethod
    def from_modules(cls, conv, bn, activation="relu"):
        """A ConvBNAct holding these two modules (their parameters and
        buffers, shared)."""
        if not isinstance(conv, tnn.Conv2d) or \
                not isinstance(bn, tnn.BatchNorm2d):
            raise TypeError("from_modules takes an nn.Conv2d and an "
                            "nn.BatchNorm2d")
        if isinstance(conv.padding, str) or conv.padding_mode != "zeros":
            raise TypeError("ConvBNAct takes numeric zero padding, not %r"
                            % (conv.padding,))
        if not bn.affine or not bn.track_running_stats:
            raise TypeError("ConvBNAct needs an affine BatchNorm2d that "
                            "tracks running statistics")
        m = cls.__new__(cls)
        _Compiled.__init__(m)
        m.conv, m.bn, m.activation = conv, bn, activation
        m.sync, m.process_group = False, None
        m.train(bn.training)
        if activation not in _CONV_ACTS:
            raise ValueError("activation %r: one of %s" % (
                activation, ", ".join(str(a) for a in _CONV_ACTS)))
        return m

    def forward(self, x):
        conv, bn = self.conv, self.bn
        if x.dim() != 4 or x.shape[1] != conv.in_channels:
            raise TypeError("ConvBNAct takes [N, %d, H, W]; the input is %s"
                            % (conv.in_channels, list(x.shape)))
        params = [("conv.weight", conv.weight)] + \
            ([("conv.bias", conv.bias)] if conv.bias is not None else [])
        self._same_dtype(x, params)
        dt = _dtype(x, "the input")
        stats = _dtype(bn.running_mean, "bn.running_mean")
        training = self.training
        momentum = bn.momentum
        shape = tuple(x.shape)
        pad = conv.padding
        attributes = ("strides = array<i64: %d, %d>, padding = array<i64: "
                      "%d, %d>, dilation = array<i64: %d, %d>, groups = %d, "
                      "layout = #fuse.layout<nchw>" % (
                          conv.stride + pad + conv.dilation + (conv.groups,)))
        if training and self.sync:
            return self._synchronised(x, params, dt, attributes)

        def build():
            g = Graph("conv_bn_act")
            v = g.input(list(shape), dt)
            w = g.input(list(conv.weight.shape), dt)
            cb = g.input([conv.out_channels], dt) \
                if conv.bias is not None else None
            rm, rv, gamma, beta = (g.input([conv.out_channels], stats)
                                   for _ in range(4))
            y = g.op("fuse.conv2d", [v, w] + ([cb] if cb is not None else []),
                     attributes)
            if training:
                operands = [y, rm, rv, gamma, beta]
                bn_attrs = "epsilon = %s, layout = #fuse.layout<nchw>" % (
                    _f64(bn.eps))
                if momentum is None:  # a cumulative average over batches
                    operands.append(g.input([1], stats))
                    bn_attrs += ", cumulative"
                else:
                    bn_attrs += ", momentum = %s" % _f64(momentum)
                outs = g.op_results("fuse.batch_norm_train", operands,
                                    bn_attrs)
                y, new_mean, new_var = outs[0], outs[3], outs[4]
            else:
                y = g.op("fuse.batch_norm", [y, rm, rv, gamma, beta],
                         "epsilon = %s, layout = #fuse.layout<nchw>"
                         % _f64(bn.eps))
            act = _CONV_ACTS[self.activation]
            if act == "gelu":
                y = g.gelu(y)
            elif act is not None:
                y = getattr(g, act)(y)
            if training:
                g.output(y, new_mean, new_var)
            else:
                g.output(y)
            return g

        op = self._op((shape, dt, stats, training, momentum), build)
        args = [x] + [p for _, p in params] + [
            bn.running_mean, bn.running_var, bn.weight, bn.bias]
        if not training:
            return op(*args)
        # Autograd keeps the op's inputs for its backward, and the running
        # statistics change below: it gets copies.
        args[-4:-2] = [bn.running_mean.clone(), bn.running_var.clone()]
        bn.num_batches_tracked.add_(1)
        if momentum is None:
            args.append(bn.num_batches_tracked.to(
                bn.running_mean.dtype).reshape(1))
        y, new_mean, new_var = op(*args)
        with torch.no_grad():
            bn.running_mean.copy_(new_mean)
            bn.running_var.copy_(new_var)
        return y

    def _synchronised(self, x, params, dt, attributes):
        from . import distributed

        def build():
            g = Graph("conv")
            ins = [g.input(list(x.shape), dt)] + [
                g.input(list(p.shape), dt) for _, p in params]
            g.output(g.op("fuse.conv2d", ins, attributes))
            return g

        y = self._op((tuple(x.shape), dt, "conv"), build)(
            x, *[p for _, p in params])
        return distributed.batch_norm(
            self.bn, y, _CONV_ACTS[self.activation],
            distributed._group_id(self.process_group))


class ConvBNReLU(ConvBNAct):
    """ConvBNAct with a ReLU."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("activation", "relu")
        super().__init__(*args, **kwargs)


_ACT_MODULES = {tnn.ReLU: "relu", tnn.ReLU6: "relu6", tnn.SiLU: "silu",
                tnn.Hardswish: "hardswish"}


def fuse_modules(model):
    """Replaces each nn.Conv2d, nn.BatchNorm2d (and activation) run of an
    nn.Sequential inside `model` by a ConvBNAct holding the same modules
    (the activation's slot becomes nn.Identity, so that indices and the
    other keys stay; the pair's keys move under the ConvBNAct's `conv` and
    `bn`). Returns `model`, changed in place."""
    for module in list(model.modules()):
        if not isinstance(module, tnn.Sequential):
            continue
        names = list(module._modules)
        i = 0
        while i + 1 < len(names):
            conv = module._modules[names[i]]
            bn = module._modules[names[i + 1]]
            if isinstance(conv, tnn.Conv2d) and \
                    isinstance(bn, tnn.BatchNorm2d) and \
                    not isinstance(conv.padding, str) and \
                    conv.padding_mode == "zeros" and bn.affine and \
                    bn.track_running_stats:
                act = None
                if i + 2 < len(names):
                    act = _ACT_MODULES.get(type(module._modules[names[i + 2]]))
                fused = ConvBNAct.from_modules(conv, bn, act)
                module._modules[names[i]] = fused
                module._modules[names[i + 1]] = tnn.Identity()
                if act is not None:
                    module._modules[names[i + 2]] = tnn.Identity()
                i += 3 if act is not None else 2
            else:
                i += 1
    return model


def _f64(value):
    from . import _f64 as f
    return f(value)
