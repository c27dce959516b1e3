"""Declared shape buckets for the torch.compile backend.

fusec compiles for static shapes. A dimension that dynamo hands over with a
declared range (`torch._dynamo.mark_dynamic(x, 0, min=2, max=64)`) is
compiled once per bucket instead of once per size: a call of size v runs
the graph compiled for the bucket's size b >= v (the next power of two, or
the range's maximum), its inputs padded to b rows by repeating their last
row and its results cut back to v rows.

That is exact only where every row is computed on its own: the graph must
not mix rows (a softmax over them, a sum across them, batch norm's batch
statistics) or use their count as a value. `plan` proves that on a trace
with the size symbolic, op by op, or says why not; the backend then
compiles once per size, as for an undeclared dynamic size.

Padding repeats a real row, so a padded row computes what a real one does
(no division by zero on rows of zeros), and its results, cut away, send no
gradient back."""

import operator

import torch

aten = torch.ops.aten

POLICIES = ("pow2", "range", "off")


class Refused(Exception):
    """Why the graph's dynamic size cannot be bucketed."""


def _expr(size):
    return _expr_of(size) if isinstance(size, torch.SymInt) else None


def _expr_of(size):
    """A SymInt's expression, with the sizes its shape environment has found
    equal replaced (x and y both marked dynamic, then added)."""
    node = size.node
    return node.shape_env.replace(node.expr)


def _symbols(value):
    """The free symbols of a SymInt or of a tensor's sizes."""
    if isinstance(value, torch.SymInt):
        return set(_expr_of(value).free_symbols)
    if isinstance(value, torch.Tensor):
        out = set()
        for d in value.shape:
            if isinstance(d, torch.SymInt):
                out |= _expr_of(d).free_symbols
        return out
    return set()


def _name(target):
    packet = getattr(target, "overloadpacket", None)
    return getattr(packet, "__name__", None) or getattr(
        target, "__name__", str(target))


# ---- Which ops keep rows apart -----------------------------------------------
#
# A value carries rows when it depends on the padded inputs or on their
# count. Its sizes then hold the count in exactly one dimension, as k
# entries per row (`_rows`). The rules below accept an op on such values only
# where each of its results' rows is computed from the same row of its
# operands; anything else refuses the graph.

def _rows(value, symbol, what):
    """(dimension, entries per row) of the rows in a tensor's sizes, or
    None if they are not there."""
    dims = [d for d, n in enumerate(value.shape) if isinstance(n, torch.SymInt)
            and symbol in _expr_of(n).free_symbols]
    if not dims:
        return None
    import sympy
    k = sympy.simplify(_expr_of(value.shape[dims[0]]) / symbol)
    if len(dims) > 1:
        raise Refused("%s (%s) spreads the rows over several dimensions"
                      % (what, list(value.shape)))
    if not k.is_Integer or k <= 0:
        raise Refused("%s (%s) does not hold whole rows"
                      % (what, list(value.shape)))
    return dims[0], int(k)


# Views, copies and index permutations: they move rows, never mix them
# (views that merge dimensions are checked in `_check`, with the rows' layout).
_MOVES = {
    aten.clone.default, aten._to_copy.default, aten.alias.default,
    aten.alias_copy.default, aten.detach.default, aten.detach_copy.default,
    aten.lift_fresh_copy.default, aten.copy.default,
    aten.expand.default, aten.expand_copy.default,
    aten.unsqueeze.default, aten.unsqueeze_copy.default, aten.squeeze.dim,
    aten.squeeze.dims, aten.squeeze_copy.dim, aten.squeeze_copy.dims,
    aten.permute.default, aten.permute_copy.default, aten.transpose.int,
    aten.transpose_copy.int, aten.t.default, aten.t_copy.default,
    aten.stack.default,
    # A reduction over the rows leaves none in its result: refused there.
    aten.sum.dim_IntList, aten.mean.dim, aten.amax.default,
    aten.amin.default, aten.var.correction, aten.var_mean.correction,
    aten.std.correction, aten.max.dim, aten.min.dim, aten.logsumexp.default,
    # New tensors sized by the count (`_FROM_COUNT`).
    aten.empty.memory_format, aten.zeros.default, aten.ones.default,
    aten.full.default, aten.new_empty.default, aten.new_zeros.default,
    aten.new_ones.default, aten.new_full.default,
}

# What may get rows from the count alone, without an operand that carries
# them: tensors whose rows are all alike, so that a padded row holds what a
# real one does. Not arange, nor a slice of a table up to the count
# (pe[:n]): their rows differ by index, and a padded row may hold what no
# real one does (an infinity whose cut-away gradient, times zero, is NaN;
# an index past a table's end).
_FROM_COUNT = {
    aten.empty.memory_format, aten.zeros.default, aten.ones.default,
    aten.full.default, aten.new_empty.default, aten.new_zeros.default,
    aten.new_ones.default, aten.new_full.default, aten.expand.default,
    aten.expand_copy.default,
}

_VIEWS = {aten.view.default, aten.view_copy.default,
          aten._unsafe_view.default, aten.reshape.default}

# Ops with a `dim` argument that must not be the rows'.
_NOT_ALONG_ROWS = {
    aten._softmax.default, aten._log_softmax.default, aten.softmax.int,
    aten.log_softmax.int, aten.slice.Tensor, aten.slice_copy.Tensor,
    aten.select.int, aten.select_copy.int, aten.narrow.default,
    aten.split.Tensor, aten.split_copy.Tensor, aten.split_with_sizes.default,
    aten.split_with_sizes_copy.default, aten.unbind.int,
    aten.unbind_copy.int, aten.cat.default,
}

# Per-sample ops on [N, ...] values: rows must be N, the other operands
# must carry none.
_PER_SAMPLE = {
    aten.convolution.default, aten._native_batch_norm_legit_no_training.default,
    aten.native_group_norm.default,
    aten.max_pool2d_with_indices.default, aten.max_pool2d.default,
    aten.avg_pool2d.default, aten.adaptive_avg_pool2d.default,
    aten._adaptive_avg_pool2d.default, aten.upsample_nearest2d.default,
    aten.upsample_nearest2d.vec, aten.upsample_bilinear2d.default,
    aten.upsample_bilinear2d.vec,
}

_ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_cudnn_attention.default,
    aten.scaled_dot_product_attention.default,
}

_BATCH_NORMS = {
    aten.native_batch_norm.default,
    aten._native_batch_norm_legit_functional.default,
    aten._native_batch_norm_legit.default, aten._native_batch_norm_legit.no_stats,
}

# Where a size derived from the row count may be an argument: the sizes of
# views and of new tensors (positions).
_SIZE_ARGUMENTS = {
    aten.view.default: (1,), aten.view_copy.default: (1,),
    aten._unsafe_view.default: (1,), aten.reshape.default: (1,),
    aten.expand.default: (1,), aten.expand_copy.default: (1,),
    aten.empty.memory_format: (0,), aten.zeros.default: (0,),
    aten.ones.default: (0,), aten.full.default: (0,),
    aten.new_empty.default: (1,), aten.new_zeros.default: (1,),
    aten.new_ones.default: (1,), aten.new_full.default: (1,),
    aten.slice.Tensor: (3,),  # a whole slice's end (`_whole`)
    aten.native_group_norm.default: (3,),  # N
}

_SCALARS = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)

_ASSERTS = ("_assert_scalar", "sym_constrain_range", "_assert_async")


def _prod(sizes):
    out = 1
    for n in sizes:
        out *= n
    return out


def _arg(node, name):
    """The argument `name` of an ATen op's call (its default if not
    given)."""
    for i, a in enumerate(node.target._schema.arguments):
        if a.name == name:
            if i < len(node.args):
                return node.args[i]
            if name in node.kwargs:
                return node.kwargs[name]
            return a.default_value if a.has_default_value() else None
    raise KeyError(name)


def _whole(node):
    """Whether a slice takes its whole dimension."""
    start, end, step = (_arg(node, n) for n in ("start", "end", "step"))
    size = node.args[0].meta["val"].shape[_arg(node, "dim")]
    if isinstance(end, torch.fx.Node):
        end = end.meta.get("val")
    whole_end = end is None or (isinstance(end, int) and end >= 2 ** 62) or \
        (isinstance(end, torch.SymInt) and isinstance(size, torch.SymInt) and
         _expr_of(end) == _expr_of(size))
    return start in (None, 0) and step in (None, 1) and whole_end


def _why_not(node, row_dim):
    """None if `node`, some of whose operands carry rows, computes each row
    of its results from the same row of its operands; else why not.
    row_dim(x): the rows' dimension in operand x, None if it has none."""
    target, args = node.target, node.args
    name = _name(target)
    tags = getattr(target, "tags", ())
    if target is operator.getitem:
        return None
    if target in _ATTENTION:
        if _arg(node, "dropout_p"):
            return "attention with dropout draws random numbers"
        dims = {row_dim(a) for a in args if isinstance(a, torch.fx.Node)
                and isinstance(a.meta.get("val"), torch.Tensor)} - {None}
        ndim = args[0].meta["val"].dim()
        if len(dims) != 1 or dims.pop() >= ndim - 2:
            return "attention mixes the rows (tokens or features)"
        return None
    if target in _BATCH_NORMS:
        # Running statistics (inference) treat samples on their own.
        if target is aten._native_batch_norm_legit.no_stats or \
                _arg(node, "training") is not False:
            return "batch norm takes statistics over the rows"
        if row_dim(args[0]) != 0 or any(
                row_dim(a) is not None for a in args[1:5]
                if isinstance(a, torch.fx.Node)):
            return "batch norm takes rows only as its batch dimension"
        return None
    if torch.Tag.nondeterministic_seeded in tags:
        return "%s draws random numbers, which depend on the row count" % name
    if torch.Tag.pointwise in tags or target in _MOVES:
        return None
    if target in _VIEWS:
        return None  # checked with the rows' layout in `_check`
    if target in _NOT_ALONG_ROWS:
        dim = _arg(node, "dim")
        first = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
        d = row_dim(first)
        ndim = first.meta["val"].dim()
        if target is aten.slice.Tensor and _whole(node):
            return None  # x[:, 0] slices every row
        if d is not None and (not isinstance(dim, int) or
                              dim % max(ndim, 1) == d):
            return "%s works along the rows' dimension" % name
        if target is aten.cat.default and any(
                row_dim(a) not in (None, d) for a in args[0]):
            return "cat joins values with rows in different dimensions"
        return None
    if target in (aten.mm.default, aten.addmm.default, aten.bmm.default,
                  aten.baddbmm.default):
        a, b = (args[1], args[2]) if target in (
            aten.addmm.default, aten.baddbmm.default) else (args[0], args[1])
        da, db = row_dim(a), row_dim(b)
        batched = target in (aten.bmm.default, aten.baddbmm.default)
        ok = {(0, None), (None, 1)} if not batched else \
            {(0, None), (None, 0), (0, 0), (1, None), (None, 2)}
        if (da, db) not in ok:
            return "%s contracts over the rows" % name
        return None
    if target is aten.embedding.default:
        if row_dim(args[0]) is not None:
            return "embedding's table carries rows"
        if _arg(node, "scale_grad_by_freq"):
            # Padded rows repeat an index, which would count it again.
            return "embedding scales its gradient by how often each index " \
                "occurs"
        return None
    if target is aten.native_layer_norm.default:
        x = args[0].meta["val"]
        if row_dim(args[0]) >= x.dim() - len(args[1]) or any(
                row_dim(a) is not None for a in args[2:4]
                if isinstance(a, torch.fx.Node)):
            return "layer_norm normalizes over the rows"
        return None
    if target is aten.constant_pad_nd.default:
        x = args[0].meta["val"]
        if row_dim(args[0]) >= x.dim() - len(args[1]) // 2:
            return "constant_pad_nd pads the rows' dimension"
        return None
    if target in _PER_SAMPLE:
        if row_dim(args[0]) != 0 or any(
                row_dim(a) is not None for a in args[1:]
                if isinstance(a, torch.fx.Node)):
            return "%s takes rows only as its batch dimension" % name
        return None
    return "%s is not known to keep rows apart" % name


# ---- The plan ----------------------------------------------------------------

class Plan:
    """How calls are padded to their bucket and cut back. rows: {input:
    the dimension of its rows}; scalars: the inputs that are the row count;
    outputs: per result, (dimension, outer, k) of its rows (that dimension
    holds outer x rows x k entries, row-major), or None for a result
    without rows."""

    def __init__(self, label, lower, upper, rows, scalars, outputs, policy):
        self.label, self.lower, self.upper = label, lower, upper
        self.rows, self.scalars = rows, scalars
        self.outputs, self.policy = outputs, policy

    def bucket(self, v):
        if v < 1:
            return v
        if self.policy == "range":
            return max(self.upper, v)
        b = 1 << (v - 1).bit_length()
        return max(min(b, self.upper), v)

    def describe(self, v, b):
        return "%s = %d runs as %d (declared %d..%d, %s)" % (
            self.label, v, b, self.lower, self.upper,
            "one bucket" if self.policy == "range" else
            "power-of-two buckets")

    def size(self, args):
        """The call's row count."""
        if self.scalars:
            return int(args[self.scalars[0]])
        i, d = next(iter(self.rows.items()))
        return int(args[i].shape[d])

    def pad(self, args, v, b):
        """The call's arguments with b rows."""
        args = list(args)
        for i in self.scalars:
            args[i] = b
        if b > v:
            for i, d in self.rows.items():
                x = args[i]
                # The last row again: a padded row computes what a real one
                # does. The copy keeps x's autograd history.
                shape = list(x.shape)
                shape[d] = b - v
                args[i] = torch.cat([x, x.narrow(d, v - 1, 1).expand(shape)],
                                    d)
        return args

    def cut(self, out, v, b):
        """The results of a padded call, with v rows."""
        if b == v:
            return out
        single = not isinstance(out, (tuple, list))
        values = [out] if single else list(out)
        for i, rows in enumerate(self.outputs):
            if rows is not None:
                d, o, k = rows
                x = values[i]
                if o == 1:
                    x = x.narrow(d, 0, v * k)
                else:
                    x = x.unflatten(d, (o, b, k)).narrow(d + 1, 0,
                                                         v).flatten(d, d + 2)
                # Dense, as the unpadded call's would be (a caller may view
                # it).
                values[i] = x if d == 0 and o == 1 else x.contiguous()
        if single:
            return values[0]
        return type(out)(values) if isinstance(out, tuple) else values


def plan(gm, example_inputs, policy):
    """The Plan for a dynamo graph with symbolic sizes, or raises Refused
    saying why its calls must be compiled size by size."""
    for n in gm.graph.nodes:
        # An autograd.Function (a higher-order op): the trace sees its
        # forward only, not the backward that may mix rows.
        if n.op == "call_module" or isinstance(
                n.target, torch._ops.HigherOrderOperator):
            raise Refused("%s is not traced through (an autograd.Function "
                          "or a module call)" % n.name)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    metas = [n.meta.get("example_value") for n in placeholders]
    if len(metas) != len(example_inputs) or any(
            isinstance(x, (torch.Tensor, torch.SymInt)) and m is None
            for x, m in zip(example_inputs, metas)):
        raise Refused("dynamo gave no symbolic sizes")
    symbols = set()
    for m in metas:
        symbols |= _symbols(m)
    if len(symbols) != 1:
        raise Refused("%d sizes are dynamic; buckets take one"
                      % len(symbols))
    (symbol,) = symbols
    m0 = next(m for m in metas if _symbols(m))
    node = m0.node if isinstance(m0, torch.SymInt) else next(
        d.node for d in m0.shape if isinstance(d, torch.SymInt))
    rng = node.shape_env.var_to_range.get(symbol)
    from torch.utils._sympy.numbers import int_oo
    if rng is None or rng.upper == int_oo or not rng.upper.is_Integer:
        raise Refused("no declared maximum (torch._dynamo.mark_dynamic(x, "
                      "dim, min=..., max=...))")
    lower, upper = max(int(rng.lower), 0), int(rng.upper)
    rows, scalars = {}, []
    for i, m in enumerate(metas):
        if isinstance(m, torch.SymInt) and _symbols(m):
            if _expr(m) != symbol:
                raise Refused("input %d is %s, not the row count"
                              % (i, _expr(m)))
            scalars.append(i)
        elif isinstance(m, torch.Tensor) and _symbols(m):
            where = _rows(m, symbol, "input %d" % i)
            if where is None or where[1] != 1:
                raise Refused("input %d (%s) is not sized by the row count "
                              "in one dimension" % (i, list(m.shape)))
            rows[i] = where[0]
    if not rows:
        raise Refused("no input tensor has the dynamic size")
    traced, fakes = _symbolic_trace(gm, example_inputs, rows, scalars)
    outputs = _check(traced, fakes, rows, scalars)
    i = next(iter(rows))
    arg = placeholders[i].meta.get("grapharg")
    source = getattr(arg, "source", None)
    label = "%s.shape[%d]" % (source.name if source is not None else
                              placeholders[i].target, rows[i])
    return Plan(label, lower, upper, rows, scalars, outputs, policy)


def _symbolic_trace(gm, example_inputs, rows, scalars):
    """The graph at the ATen level with the row count a fresh symbol and
    every other size static."""
    from torch._dynamo.source import ConstantSource
    from torch._guards import tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic, ShapeEnv, StatelessSymbolicContext)
    with tracing(None):
        mode = FakeTensorMode(shape_env=ShapeEnv(),
                              allow_non_fake_inputs=False)
        fakes = list(example_inputs)
        count = None
        for i, x in enumerate(example_inputs):
            if not isinstance(x, torch.Tensor):
                continue
            if i not in rows:
                fakes[i] = mode.from_tensor(x, static_shapes=True)
            elif count is None:
                dynamic = [DimDynamic.DYNAMIC if d == rows[i] else
                           DimDynamic.STATIC for d in range(x.dim())]
                fakes[i] = mode.from_tensor(
                    x, source=ConstantSource("fusec_rows"),
                    symbolic_context=StatelessSymbolicContext(
                        dynamic_sizes=dynamic))
                count = fakes[i].shape[rows[i]]
            else:
                # The same symbol for every input's rows.
                shape = list(x.shape)
                shape[rows[i]] = count
                with mode:
                    fakes[i] = torch.empty(shape, dtype=x.dtype,
                                           device=x.device,
                                           requires_grad=x.requires_grad)
        counts = [fakes[i].shape[d] for i, d in rows.items()]
        symbols = {c.node.expr if isinstance(c, torch.SymInt) else None
                   for c in counts}
        if len(symbols) != 1 or None in symbols or \
                not next(iter(symbols)).is_Symbol:
            raise Refused("the example's row count (%s) is 0 or 1, which "
                          "PyTorch treats as static" % counts[0])
        for i in scalars:
            fakes[i] = counts[0]
        try:
            # Not functionalized: torch.func.functionalize fixes the size
            # to the example's at a linear layer with a bias.
            with mode:
                traced = make_fx(gm)(*fakes)
        except Exception as e:  # noqa: BLE001 - size by size then
            raise Refused("the symbolic trace failed: %s: %s"
                          % (type(e).__name__, str(e).splitlines()[0]
                             if str(e) else ""))
    return traced, fakes


def _writes_into_input(node):
    """Whether an in-place op writes into a graph input or a view of one."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.is_mutable:
        return False
    for i, arg in enumerate(schema.arguments):
        info = arg.alias_info
        if info is None or not info.is_write:
            continue
        base = node.args[i] if i < len(node.args) else \
            node.kwargs.get(arg.name)
        while isinstance(base, torch.fx.Node) and base.op == "call_function":
            if base.target is operator.getitem:  # a piece of a split
                base = base.args[0]
                continue
            s = getattr(base.target, "_schema", None)
            returns = s.returns if s is not None else ()
            if not returns or returns[0].alias_info is None:
                break  # a new tensor, not a view
            base = base.args[0]
        if isinstance(base, torch.fx.Node) and base.op == "placeholder":
            return True
    return False


def _check(traced, fakes, rows, scalars):
    """Proves that the traced graph computes every row on its own; returns
    each result's (dimension, outer, k) as in Plan. Raises Refused."""
    count = fakes[next(iter(rows))].shape[rows[next(iter(rows))]]
    symbol = count.node.expr
    # node -> (its rows' dimension, outer): that dimension is outer x rows
    # x k entries, row-major; (None, outer) for a tuple, None for a scalar.
    carries = {}
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    for i, d in rows.items():
        carries[placeholders[i]] = (d, 1)
    for i in scalars:
        carries[placeholders[i]] = None

    def row_dim(x):
        c = carries.get(x) if isinstance(x, torch.fx.Node) else None
        return c[0] if c is not None else None

    def outer(node, where):
        """The outer count of the rows' dimension of node's result."""
        if node.target in _VIEWS:
            # The entries before the rows stay as many: prefix sizes times
            # the outer count, before and after.
            x = node.args[0]
            d, o = carries[x]
            before = _prod(x.meta["val"].shape[:d]) * o
            after = _prod(node.meta["val"].shape[:where[0]])
            if before % after or where[1] % (before // after):
                raise Refused("%s mixes the rows' dimension with an outer "
                              "one" % node.name)
            return before // after
        operands = []
        for a in node.args:
            operands += a if isinstance(a, (list, tuple)) else [a]
        outs = {carries[a][1] for a in operands
                if isinstance(a, torch.fx.Node) and carries.get(a)}
        if len(outs) > 1:
            raise Refused("%s combines values whose rows are laid out "
                          "differently" % node.name)
        return outs.pop() if outs else 1

    for node in traced.graph.nodes:
        if node.op != "call_function":
            continue
        value = node.meta.get("val")
        carried = [a for a in node.all_input_nodes if a in carries]
        if not carried and symbol not in _symbols(value):
            continue
        name = _name(node.target)
        if any(s in name for s in _ASSERTS):
            carries[node] = None
            continue
        # A size derived from the row count: only as a size.
        for a in carried:
            if not isinstance(a.meta.get("val"), _SCALARS) or \
                    isinstance(value, _SCALARS):
                continue
            allowed = _SIZE_ARGUMENTS.get(node.target, ())
            used = [p for p, arg in enumerate(node.args)
                    if arg is a or (isinstance(arg, (list, tuple)) and
                                    a in arg)]
            if any(v is a for v in node.kwargs.values()) or \
                    any(p not in allowed for p in used):
                raise Refused("%s uses the row count as a value" % node.name)
        if isinstance(value, _SCALARS):
            carries[node] = None
            continue
        if _writes_into_input(node):
            raise Refused("%s writes into an input, which padding copies"
                          % node.name)
        if isinstance(value, torch.Tensor):
            where = _rows(value, symbol, "%s's result" % node.name)
            if where is None and (not node.users or 0 in value.shape):
                continue  # unused, or empty (batch norm's saved statistics)
            if where is None:
                raise Refused("%s's result (%s) has no rows: %s reduces "
                              "over them or picks some" % (
                                  node.name, list(value.shape), name))
            if all(isinstance(a.meta.get("val"), _SCALARS)
                   for a in carried) and node.target not in _FROM_COUNT:
                raise Refused("%s's rows differ by their index, so padded "
                              "rows would not repeat a real one" % name)
            carries[node] = (where[0], outer(node, where))
        elif value is None:
            raise Refused("%s (%s) has no value to check" % (node.name, name))
        else:
            # A tuple: its getitems are checked.
            carries[node] = (None, outer(node, (None, 1)))
        why = _why_not(node, row_dim)
        if why is not None:
            raise Refused(why)
    if symbol in count.node.shape_env.replacements:
        raise Refused("the graph fixes the row count (PyTorch specialized "
                      "it while tracing)")
    outputs = []
    output = next(n for n in traced.graph.nodes if n.op == "output")
    results = output.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else \
        [results]
    for i, r in enumerate(results):
        if not isinstance(r, torch.fx.Node) or r not in carries:
            outputs.append(None)
        elif r.op == "placeholder":
            raise Refused("result %d is an input" % i)
        elif not isinstance(r.meta.get("val"), torch.Tensor):
            raise Refused("result %d is derived from the row count" % i)
        else:
            d, c = _rows(r.meta["val"], symbol, "result %d" % i)
            o = carries[r][1]
            outputs.append((d, o, c // o))
    return outputs
