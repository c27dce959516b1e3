"""fusec from PyTorch (docs/PyTorch.md): custom ops with autograd
(fusec.torch.op), the torch.compile backend and fusec.nn. On CPU tensors
everything runs on fusec's reference interpreter, so CI checks the numerics
without a GPU; the CUDA tests need a GPU and skip without. Skipped as a
whole without PyTorch.

    python3 -m unittest discover -s python/tests -p test_torch.py -v
"""

import copy
import io
import unittest
from contextlib import redirect_stdout

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

import fusec

if torch is not None:
    import fusec.torch as ft


def _gpu():
    return torch is not None and torch.cuda.is_available()


def _mlp_graph(dtype="f32", rows=6, width=10, hidden=24):
    g = fusec.Graph("mlp")
    x = g.input([rows, width], dtype)
    w1 = g.input([hidden, width], dtype)
    b1 = g.input([hidden], dtype)
    w2 = g.input([width, hidden], dtype)
    h = g.gelu(g.linear(x, w1, b1))
    g.output(g.add(g.linear(h, w2), x))
    return g


def _mlp_eager(x, w1, b1, w2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2) + x


def _mlp_args(dtype=None, device="cpu", grad=True, rows=6, width=10,
              hidden=24):
    dtype = dtype or torch.float32
    gen = torch.Generator().manual_seed(0)
    shapes = [(rows, width), (hidden, width), (hidden,), (width, hidden)]
    out = []
    for s in shapes:
        t = (torch.randn(s, generator=gen) / 3).to(dtype).to(device)
        out.append(t.requires_grad_(grad))
    return out


def _close(test, a, b, tol, floor=1e-30):
    """||a - b|| / ||b|| < tol; `floor` bounds the denominator from below
    for gradients that are zero up to rounding (a key bias's)."""
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    err = (a - b).norm() / max(b.norm(), floor)
    test.assertLess(err.item(), tol, "relative error %.3g" % err.item())


class _Block(torch.nn.Module if torch else object):
    """A pre-norm transformer block: layer norm, fused QKV, causal SDPA,
    output projection, residuals, a tanh-GeLU MLP."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.ln2 = torch.nn.LayerNorm(width)
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)

        def heads(t):
            return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v),
                                           is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class _ConvNet(torch.nn.Module if torch else object):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.c1(x)))
        x = self.pool(F.silu(self.c2(x)))
        return self.fc(x.mean((2, 3)))


def _two_bns():
    # Two batch norms: running statistics and batch counters that the
    # reduce-overhead forward writes back in batches.
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3, bias=False),
        torch.nn.BatchNorm2d(4), torch.nn.Conv2d(4, 2, 1))


@unittest.skipUnless(torch is not None, "needs PyTorch")
class CustomOpTest(unittest.TestCase):
    """fusec.torch.op on CPU tensors (the reference interpreter)."""

    @classmethod
    def setUpClass(cls):
        cls.op = ft.op(_mlp_graph(), arch="sm_90")

    def test_forward_and_backward_match_pytorch(self):
        args = _mlp_args()
        y = self.op(*args)
        ref = _mlp_eager(*args)
        _close(self, y, ref, 1e-6)
        gy = torch.randn_like(y)
        got = torch.autograd.grad(y, args, gy)
        want = torch.autograd.grad(ref, args, gy)
        for g, w in zip(got, want):
            _close(self, g, w, 1e-6)

    def test_results_take_in_place_ops(self):
        # A ReLU(inplace=True) after the op: its results are not views.
        args = _mlp_args()
        y = torch.relu_(self.op(*args))
        y.sum().backward()
        want = _mlp_args()
        torch.relu(_mlp_eager(*want)).sum().backward()
        _close(self, args[0].grad, want[0].grad, 1e-5)

    def test_no_grad_runs_the_inference_op(self):
        args = _mlp_args(grad=False)
        with torch.no_grad():
            _close(self, self.op(*args), _mlp_eager(*args), 1e-6)

    def test_opcheck(self):
        from torch.library import opcheck
        args = _mlp_args()
        op = self.op
        y = op.fwd_op(args)
        bwd = [a.detach() for a in args] + [t.detach() for t in y] + \
            [torch.randn_like(y[0])]
        for custom, inputs in ((op.infer_op, [a.detach() for a in args]),
                               (op.fwd_op, args), (op.bwd_op, bwd)):
            results = opcheck(custom, (inputs,))
            self.assertEqual(set(results.values()), {"SUCCESS"}, results)

    def test_many_arguments(self):
        # More tensors than a schema's 64 arguments (a whole network's
        # weights in one partition).
        g = fusec.Graph("sum70")
        xs = [g.input([3], "f32") for _ in range(70)]
        total = xs[0]
        for x in xs[1:]:
            total = g.add(total, x)
        g.output(total)
        op = ft.op(g, arch="sm_90")
        args = [torch.randn(3, requires_grad=True) for _ in range(70)]
        y = op(*args)
        _close(self, y, sum(args), 1e-6)
        y.sum().backward()
        self.assertTrue(all(torch.equal(a.grad, torch.ones(3))
                            for a in args))

    def test_same_graph_gives_the_same_op(self):
        self.assertIs(ft.op(_mlp_graph(), arch="sm_90"), self.op)
        self.assertTrue(hasattr(torch.ops.fusec, self.op.name))
        self.assertTrue(hasattr(torch.ops.fusec, self.op.name + "_bwd"))

    def test_wrong_arguments_name_the_argument(self):
        args = _mlp_args(grad=False)
        cases = [
            ((args[0].double(),) + tuple(args[1:]),
             "argument 0 is float64 [6, 10]; the graph takes float32 [6, 10]"),
            ((args[0], args[1][:, :5]) + tuple(args[2:]),
             "argument 1 is float32 [24, 5]; the graph takes float32 "
             "[24, 10]"),
            (tuple(args[:3]), "takes 4 tensors, 3 were given"),
            ((args[0], 1.0) + tuple(args[2:]), "argument 1 is a float"),
        ]
        for inputs, message in cases:
            with self.assertRaises(TypeError) as e:
                self.op(*inputs)
            self.assertIn(message, str(e.exception))

    def test_non_contiguous_inputs_are_copied(self):
        args = _mlp_args(grad=False)
        w1 = args[1].t().contiguous().t()  # the same values, column-major
        self.assertFalse(w1.is_contiguous())
        inputs = [args[0], w1, args[2], args[3]]
        _close(self, self.op(*inputs), _mlp_eager(*args), 1e-6)

    def test_under_torch_compile_without_graph_breaks(self):
        import torch._dynamo
        torch._dynamo.reset()
        args = _mlp_args()
        f = torch.compile(lambda *a: self.op(*a) * 2, fullgraph=True,
                          backend="aot_eager")
        y = f(*args)
        y.sum().backward()
        _close(self, y / 2, _mlp_eager(*args), 1e-6)
        self.assertEqual(args[1].grad.shape, args[1].shape)

    def test_bfloat16(self):
        op = ft.op(_mlp_graph("bf16"), arch="sm_90")
        args = _mlp_args(torch.bfloat16)
        y = op(*args)
        self.assertEqual(y.dtype, torch.bfloat16)
        ref = _mlp_eager(*[a.float() for a in args])
        _close(self, y, ref, 2e-2)
        grads = torch.autograd.grad(y, args, torch.ones_like(y))
        self.assertTrue(all(g.dtype == torch.bfloat16 for g in grads))

    def test_graph_without_gradient_rule(self):
        # The training compile fails with fusec's error, each time; the
        # inference op of the same graph works.
        g = fusec.Graph("sum_rows")
        x = g.input([4, 3], "f32")
        g.output(g.op("fuse.reduce_sum", [x], "axes = array<i64: 0>"))
        for _ in range(2):
            with self.assertRaises(fusec.Error) as e:
                ft.op(g, arch="sm_90")
            self.assertIn("has no gradient rule", str(e.exception))
        x = torch.randn(4, 3)
        _close(self, ft.op(g, train=False, arch="sm_90")(x), x.sum(0), 1e-6)

    def test_invalid_name(self):
        with self.assertRaises(ValueError):
            ft.op(_mlp_graph(), name="3d", arch="sm_90")


@unittest.skipUnless(torch is not None, "needs PyTorch")
class BackendTest(unittest.TestCase):
    """torch.compile(backend="fusec") on CPU tensors."""

    def setUp(self):
        import torch._dynamo
        torch._dynamo.reset()
        torch.manual_seed(0)

    def _compile(self, model, **options):
        options.setdefault("compile_options", {"arch": "sm_90"})
        return torch.compile(model, backend="fusec", options=options)

    def _trains_like_eager(self, m, x):
        """One step of `m` compiled against eager from the same state: the
        output, every parameter's gradient and every buffer (running
        statistics, num_batches_tracked)."""
        state = {k: v.clone() for k, v in m.state_dict().items()}
        ref = m(x)
        ref.square().sum().backward()
        want = [p.grad.clone() for p in m.parameters()]
        buffers = [b.clone() for b in m.buffers()]
        m.load_state_dict(state)
        m.zero_grad()
        y = self._compile(m)(x)
        y.square().sum().backward()
        _close(self, y, ref, 1e-5)
        for p, w in zip(m.parameters(), want):
            _close(self, p.grad, w, 1e-4)
        for b, w in zip(m.buffers(), buffers):
            _close(self, b.float(), w.float(), 1e-6)

    def test_transformer_block_trains_like_eager(self):
        m = _Block()
        x = torch.randn(2, 16, 32, requires_grad=True)
        ref = m(x)
        ref.square().sum().backward()
        want = [x.grad] + [p.grad for p in m.parameters()]
        want = [w.clone() for w in want]
        m.zero_grad()
        x.grad = None
        out = io.StringIO()
        with redirect_stdout(out):
            y = self._compile(m, report=True)(x)
        y.square().sum().backward()
        _close(self, y, ref, 1e-6)
        for g, w in zip([x.grad] + [p.grad for p in m.parameters()], want):
            _close(self, g, w, 1e-5)
        rep = ft.reports()[-1]
        self.assertTrue(rep.training)
        self.assertEqual(rep.taken, rep.ops)
        self.assertEqual(rep.flops_taken, rep.flops)
        self.assertIn("ATen ops: %d of %d taken (100%%)" % (rep.ops,
                                                             rep.ops),
                      out.getvalue())
        self.assertIn("fwd_k", out.getvalue())

    def test_detach_stops_the_gradient(self):
        # A detached value inside a partition still gives no gradient.
        def f(x, w):
            y = x * w
            return (y + y.detach() * 3).sum(dim=0)
        x, w = torch.randn(4, 5), torch.randn(5, requires_grad=True)
        f(x, w).sum().backward()
        want, w.grad = w.grad, None
        self._compile(f)(x, w).sum().backward()
        _close(self, w.grad, want, 1e-6)

    def test_no_grad_compiles_for_inference(self):
        m = _Block()
        x = torch.randn(2, 16, 32)
        with torch.no_grad():
            ref = m(x)
            y = self._compile(m)(x)
        _close(self, y, ref, 1e-6)
        self.assertFalse(ft.reports()[-1].training)

    def test_eval_convnet(self):
        m = _ConvNet().eval()
        with torch.no_grad():
            for p in m.bn.parameters():
                p.uniform_(0.5, 1.5)
            m.bn.running_mean.uniform_(-0.1, 0.1)
            m.bn.running_var.uniform_(0.5, 2)
        x = torch.randn(2, 3, 16, 16)
        with torch.no_grad():
            ref = m(x)
            y = self._compile(m)(x)
        _close(self, y, ref, 1e-6)
        rep = ft.reports()[-1]
        self.assertEqual(rep.taken, rep.ops, str(rep))

    def test_training_convnet(self):
        # Batch norm in training mode is fusec's, running statistics
        # included, and the spatial mean a global average pool: one
        # partition; only num_batches_tracked's int64 update is PyTorch's.
        m = _ConvNet().train()
        self._trains_like_eager(m, torch.randn(8, 3, 16, 16))
        self.assertEqual(int(m.bn.num_batches_tracked), 1)
        rep = ft.reports()[-1]
        self.assertNotIn("native_batch_norm", str(rep))
        self.assertNotIn("mean", str(rep))
        self.assertEqual(len(rep.kernels), 1, str(rep))
        self.assertEqual(rep.failed, [])

    def test_squeeze_excitation_in_nhwc(self):
        # Inside, NHWC: a [N, C, 1, 1] scale and a [C, 1, 1] bias broadcast
        # against NHWC values; training gradients and statistics as eager's.
        class SE(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.c = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
                self.bn = torch.nn.BatchNorm2d(16)
                self.fc1 = torch.nn.Conv2d(16, 4, 1)
                self.fc2 = torch.nn.Conv2d(4, 16, 1)
                self.bias = torch.nn.Parameter(torch.randn(16, 1, 1))

            def forward(self, x):
                y = F.relu(self.bn(self.c(x)))
                w = torch.sigmoid(self.fc2(F.relu(self.fc1(
                    y.mean((2, 3), keepdim=True)))))
                return (y * w + self.bias).mean((2, 3))

        self._trains_like_eager(SE().train(), torch.randn(4, 3, 10, 10))
        rep = ft.reports()[-1]
        self.assertTrue(rep.channels_last)
        self.assertEqual(len(rep.kernels), 1, str(rep))

    def test_channels_last_input(self):
        m = _ConvNet().eval()
        x = torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last)
        with torch.no_grad():
            _close(self, self._compile(m)(x), m(x), 1e-6)

    def test_unsupported_ops_fall_back_and_say_why(self):
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(10, 8)
                self.fc = torch.nn.Linear(8, 8)

            def forward(self, i):
                h = torch.relu(self.fc(self.emb(i)))
                return torch.cumsum(h, dim=0) + h.double().float()

        m = M()
        i = torch.tensor([1, 2, 3, 4])
        ref = m(i)
        y = self._compile(m)(i)
        _close(self, y, ref, 1e-6)
        text = str(ft.reports()[-1])
        self.assertIn("embedding x1: a tensor of int64", text)
        self.assertIn("cumsum x1: no rule for aten.cumsum.default", text)
        self.assertGreater(ft.reports()[-1].taken, 0)

    def test_a_partition_that_fails_to_compile_runs_in_pytorch(self):
        import fusec.torch as module
        real = module._partition_op

        def failing(*args, **kwargs):
            raise fusec.Error("<graph>:3:5: error: made to fail")
        module._partition_op = failing
        try:
            m = _Block()
            x = torch.randn(2, 16, 32)
            with torch.no_grad():
                _close(self, self._compile(m)(x), m(x), 1e-6)
        finally:
            module._partition_op = real
        rep = ft.reports()[-1]
        self.assertEqual(rep.taken, 0)
        self.assertIn("made to fail", str(rep))

    def test_dynamic_shapes_compile_once_per_shape(self):
        import torch._dynamo
        from torch._dynamo.utils import counters
        counters.clear()
        m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 8))
        f = torch.compile(m, backend="fusec", dynamic=True,
                          options={"compile_options": {"arch": "sm_90"}})
        before = len(ft.reports())
        with torch.no_grad():
            for rows in (3, 5, 3, 7, 5):
                x = torch.randn(rows, 8)
                _close(self, f(x), m(x), 1e-6)
        # One dynamo graph; one fusec compile per new shape (3, 5, 7).
        self.assertEqual(counters["stats"]["unique_graphs"], 1)
        self.assertEqual(len(ft.reports()) - before, 3)

    def _bucketed_calls(self, m, make, sizes, dim=0, high=64, train=True,
                        **options):
        """Calls `m` compiled, with `make(size)` marked dynamic in `dim`
        over [2, high], once per size; checks each output (and in training
        the input's and every parameter's gradient) against eager. Returns
        the new Reports."""
        import torch._dynamo
        f = self._compile(m, **options)
        before = len(ft.reports())
        for n in sizes:
            x = make(n)
            torch._dynamo.mark_dynamic(x, dim, min=2, max=high)
            if not train:
                with torch.no_grad():
                    _close(self, f(x), m(x), 1e-5)
                continue
            x.requires_grad_(x.is_floating_point())
            params = [p for p in m.parameters() if p.requires_grad]
            wrt = params + ([x] if x.requires_grad else [])
            y = f(x)
            g = torch.randn_like(y)
            got = torch.autograd.grad((y * g).sum(), wrt)
            ref_y = m(x)
            ref = torch.autograd.grad((ref_y * g).sum(), wrt)
            self.assertEqual(y.shape, ref_y.shape)
            # Cut back dense, as the unpadded call's (a caller may view it).
            self.assertEqual(y.is_contiguous(), ref_y.is_contiguous())
            _close(self, y, ref_y, 1e-5)
            for a, b in zip(got, ref):
                # floor: a bias before a softmax over the rows has a
                # gradient that is zero up to rounding.
                _close(self, a, b, 1e-4, floor=1e-2)
        return ft.reports()[before:]

    def test_shape_buckets_compile_once_per_bucket(self):
        # A transformer block with the batch declared dynamic over [2, 64]:
        # sizes 3, 4 share the bucket 4, 5 and 7 the bucket 8, 9 runs as
        # 16. The padded rows change no output or gradient.
        reps = self._bucketed_calls(_Block(), lambda n: torch.randn(n, 6, 32),
                                    (3, 4, 5, 7, 9))
        self.assertEqual(len(reps), 3)
        self.assertIn("L['x'].shape[0] = 3 runs as 4 (declared 2..64, "
                      "power-of-two buckets)", str(reps[0]))
        self.assertIn("= 9 runs as 16", str(reps[2]))

    def test_shape_buckets_rows_in_any_dimension(self):
        # Tokens [T, B] (sequence first), the batch dynamic in dimension 1;
        # an embedding, a linear layer, a softmax over features and the
        # per-row loss terms; in inference, a convnet in eval mode.
        class Tokens(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(20, 16)
                self.fc = torch.nn.Linear(16, 8)

            def forward(self, idx):
                return torch.log_softmax(self.fc(self.emb(idx)), -1)

        reps = self._bucketed_calls(
            Tokens(), lambda n: torch.randint(0, 20, (5, n)), (3, 4), dim=1)
        self.assertEqual(len(reps), 1)
        self.assertIn("L['idx'].shape[1] = 3 runs as 4", str(reps[0]))
        m = _ConvNet().eval()
        reps = self._bucketed_calls(m, lambda n: torch.randn(n, 3, 8, 8),
                                    (5, 7, 3, 9), high=12, train=False)
        # 8 (5, 7), 4 (3) and the declared maximum, 12 (9).
        self.assertEqual(len(reps), 3)
        self.assertIn("= 9 runs as 12 (declared 2..12", str(reps[2]))
        # "range": one compile for the declared range.
        reps = self._bucketed_calls(
            Tokens(), lambda n: torch.randint(0, 20, (5, n)), (3, 6, 2),
            dim=1, high=8, shape_buckets="range")
        self.assertEqual(len(reps), 1)
        self.assertIn("= 3 runs as 8 (declared 2..8, one bucket)",
                      str(reps[0]))

    def test_shape_buckets_refused_where_rows_mix(self):
        # Graphs whose rows are not computed on their own compile once per
        # size, and the report says why.
        import torch._dynamo

        class Fn(torch.nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fc, self.fn = torch.nn.Linear(8, 8), fn
                table = torch.rand(64, 8) + 0.5
                table[6] = 0  # row 6 only in a padded call
                self.register_buffer("table", table)

            def forward(self, x):
                return self.fn(self, x)

        class Center(torch.autograd.Function):
            # A backward that mixes rows the forward keeps apart.
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g - g.mean(0, keepdim=True)

        cases = [
            (lambda s, x: torch.softmax(s.fc(x), 0),
             "_softmax works along the rows' dimension"),
            (lambda s, x: s.fc(x - x.mean(0)), "mean reduces over them"),
            (lambda s, x: s.fc(x) * x.shape[0],
             "uses the row count as a value"),
            (lambda s, x: s.fc(x).cumsum(0), "cumsum is not known"),
            (lambda s, x: s.fc(x)[x[:, 0].argsort()],
             "sort is not known to keep rows apart"),
            (lambda s, x: s.fc(x)[1:], "does not hold whole rows"),
            # Rows that differ by their index: a padded row would not
            # repeat a real one (here it divides by zero: NaN gradients).
            (lambda s, x: s.fc(x) / (torch.arange(x.shape[0]) - 6.5)[:, None],
             "arange uses the row count as a value"),
            (lambda s, x: s.fc(x) / s.table[:x.shape[0]],
             "rows differ by their index"),
            (lambda s, x: Center.apply(s.fc(x)) + 1,
             "is not traced through (an autograd.Function"),
        ]
        for fn, words in cases:
            torch._dynamo.reset()
            reps = self._bucketed_calls(Fn(fn), lambda n: torch.randn(n, 8),
                                        (3, 5, 6))
            self.assertEqual(len(reps), 3)
            self.assertIn("shape buckets: not used: ", str(reps[0]))
            self.assertIn(words, str(reps[0]))
        # Padded rows repeat an index, which would count it again.
        torch._dynamo.reset()
        emb = torch.nn.Embedding(10, 4, scale_grad_by_freq=True)
        reps = self._bucketed_calls(emb, lambda n: torch.randint(0, 10, (n,)),
                                    (3, 5))
        self.assertIn("embedding scales its gradient", str(reps[0]))
        # Batch norm's batch statistics, in training.
        torch._dynamo.reset()
        reps = self._bucketed_calls(_ConvNet().train(),
                                    lambda n: torch.randn(n, 3, 8, 8),
                                    (3, 5), high=12)
        self.assertEqual(len(reps), 2)
        self.assertIn("batch norm takes statistics over the rows",
                      str(reps[0]))

    def test_shape_buckets_need_a_declared_maximum(self):
        import torch._dynamo
        m = torch.nn.Linear(8, 8)
        f = self._compile(m)
        before = len(ft.reports())
        with torch.no_grad():
            for n in (3, 5):
                x = torch.randn(n, 8)
                torch._dynamo.mark_dynamic(x, 0)
                _close(self, f(x), m(x), 1e-6)
        reps = ft.reports()[before:]
        self.assertEqual(len(reps), 2)
        self.assertIn("no declared maximum", str(reps[0]))
        # "off": once per size; an unknown policy is refused.
        torch._dynamo.reset()
        reps = self._bucketed_calls(m, lambda n: torch.randn(n, 8), (3, 5),
                                    shape_buckets="off")
        self.assertEqual(len(reps), 2)
        self.assertNotIn("shape buckets", str(reps[0]))
        torch._dynamo.reset()
        with self.assertRaises(Exception) as caught:
            self._compile(m, shape_buckets="pow3")(torch.randn(2, 8))
        self.assertIn("shape_buckets is 'pow3'; it takes 'pow2', 'range', "
                      "'off'", str(caught.exception))

    def test_rms_norm_and_class_token_are_taken(self):
        # A hand-written RMSNorm (x * rsqrt(mean(x^2) + eps) * w) becomes one
        # fuse.rms_norm; a class token expanded to the batch, copies
        # concatenated. Both in training, against eager.
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.token = torch.nn.Parameter(torch.randn(1, 1, 24))
                self.weight = torch.nn.Parameter(torch.rand(24) + 0.5)
                self.fc = torch.nn.Linear(24, 16)

            def forward(self, x):
                x = torch.cat([self.token.expand(x.shape[0], -1, -1), x], 1)
                y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
                return self.fc(y * self.weight)

        m = M()
        x = torch.randn(3, 7, 24, requires_grad=True)
        ref = m(x)
        ref.square().sum().backward()
        want = [x.grad.clone()] + [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        x.grad = None
        y = self._compile(m)(x)
        y.square().sum().backward()
        _close(self, y, ref, 1e-5)
        for g, w in zip([x.grad] + [p.grad for p in m.parameters()], want):
            _close(self, g, w, 1e-4)
        rep = ft.reports()[-1]
        self.assertEqual(rep.taken, rep.ops, str(rep))
        self.assertIn("rms_norm", str(rep))
        self.assertNotIn("rsqrt", str(rep))

    def test_a_wide_expand_is_left_with_the_reason(self):
        def f(x, w):
            return x.expand(300, 8) * w
        x, w = torch.randn(1, 8), torch.randn(300, 8)
        _close(self, self._compile(f)(x, w), f(x, w), 1e-6)
        self.assertIn("expand of an axis of 1 to 300",
                      str(ft.reports()[-1]))

    def test_write_into_an_input_another_input_views(self):
        # A buffer and a view of it both reach the graph, which writes into
        # the buffer: functionalized apart, the view would miss the write
        # (the output was 2.0 off). The graph stays whole with PyTorch.
        class Viewed(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
                self.register_buffer("buf", torch.arange(4.))

            def forward(self, x, v):
                self.buf.add_(1)
                return self.fc(x + self.buf).relu() + v.sum()

        torch.manual_seed(0)
        m = Viewed()
        eager = copy.deepcopy(m)
        x = torch.randn(6, 4)
        with torch.no_grad():
            y = self._compile(m)(x, m.buf[:2])
            ref = eager(x, eager.buf[:2])
        _close(self, y, ref, 1e-6)
        self.assertTrue(torch.equal(m.buf, eager.buf))
        self.assertIn("share memory and the graph writes into",
                      ft.reports()[-1].note)

    def test_write_backs_batch(self):
        # The writes at the end of a reduce-overhead forward: copies into
        # inputs become one _foreach_copy_ per pair of dtypes, counter
        # adds one _foreach_add_; an input written twice stays unbatched.
        from torch.fx.experimental.proxy_tensor import make_fx
        aten = torch.ops.aten

        def writes(p1, p2, p3, c1, c2, v1, v2, v3):
            p1.copy_(aten.copy(p1, v1))
            p2.copy_(v2)
            p3.copy_(v3)
            p3.copy_(v3 * 2)
            c1.copy_(c1 + 1)
            c2.copy_(c2 + 1)

        def inputs():
            g = torch.Generator().manual_seed(0)
            return [torch.zeros(4), torch.zeros(3), torch.zeros(2),
                    torch.tensor(5), torch.tensor(7),
                    torch.randn(4, generator=g), torch.randn(3, generator=g),
                    torch.randn(2, generator=g)]
        gm = make_fx(writes)(*inputs())
        ft._batch_write_backs(gm)
        self.assertEqual(gm.code.count("aten._foreach_copy_"), 1, gm.code)
        self.assertEqual(gm.code.count("aten._foreach_add_"), 1, gm.code)
        self.assertNotIn("aten.copy.default", gm.code)
        want, got = inputs(), inputs()
        writes(*want)
        gm(*got)
        for w, g in zip(want, got):
            self.assertTrue(torch.equal(w, g), (w, g))

    def test_write_backs_keep_reads_before_writes(self):
        # A buffer keeping another's old value (prev.copy_(cur) before
        # cur.add_(1)), directly and through a view, through AOTAutograd
        # as reduce-overhead runs it: the batched writes come last, so the
        # values read from written inputs must stay copies made before.
        from functorch.compile import aot_function, make_boxed_func
        codes = []

        def fw(gm, inputs):
            ft._batch_write_backs(gm)
            codes.append(gm.code)
            return make_boxed_func(gm)

        def f(x, cur, prev, prev_t, c1, c2):
            prev.copy_(cur)
            prev_t.copy_(cur.t())
            cur.add_(1)
            c1.add_(1)
            c2.add_(1)
            return x * 2

        def inputs():
            return [torch.randn(3), torch.arange(4.).reshape(2, 2),
                    torch.zeros(2, 2), torch.zeros(2, 2), torch.tensor(3),
                    torch.tensor(4)]
        want, got = inputs(), inputs()
        f(*want)
        aot_function(f, fw_compiler=fw, bw_compiler=make_boxed_func,
                     keep_inference_input_mutations=True)(*got)
        for w, g in zip(want[1:], got[1:]):
            self.assertTrue(torch.equal(w, g), (w, g, codes))
        self.assertIn("aten._foreach_add_", codes[0])

    def test_reduce_overhead_input_writes(self):
        # Writes into batch norm's buffers replay inside the captured
        # forward; a write into a plain input (cudagraph trees copy those
        # in) makes reduce-overhead trace again with every write outside
        # the graphs; so does a write into a buffer that another input
        # views (AOTAutograd merges the two, moving input positions). On
        # the CPU, with cudagraphify_impl replaced by a recorder of what it
        # would capture.
        import torch._dynamo
        import torch._inductor.cudagraph_trees as trees

        class Accumulating(torch.nn.Module):
            def __init__(self, write):
                super().__init__()
                self.bn = torch.nn.BatchNorm1d(4)
                self.fc = torch.nn.Linear(4, 3)
                self.register_buffer("total", torch.ones(4))
                self.write = write

            def forward(self, x, acc):
                if self.write == "input":
                    acc.add_(x.sum(0))
                elif self.write == "viewed buffer":
                    self.total.add_(x.sum(0))
                return self.fc(self.bn(x)) + acc.sum()

        captured = []

        def record(model, inputs, static_input_idxs, **kw):
            captured.append((kw["is_backward"], set(kw["mutated_input_idxs"]),
                             list(static_input_idxs), len(inputs)))
            return model
        from torch._dynamo.backends import cudagraphs as cg
        real = trees.cudagraphify_impl, cg.get_device_index
        trees.cudagraphify_impl = record
        cg.get_device_index = lambda gm: 0
        try:
            for write in ("buffers", "input", "viewed buffer"):
                torch.manual_seed(0)
                m = Accumulating(write).train()
                eager = copy.deepcopy(m)
                x = torch.randn(6, 4)
                if write == "viewed buffer":
                    acc, acc_eager = m.total[:4], eager.total[:4]
                else:
                    acc, acc_eager = torch.ones(4), torch.ones(4)
                captured.clear()

                def via_graphed(gm, inputs):
                    fused, _, _ = ft._compile_graph(
                        gm, inputs, {"compile_options": {"arch": "sm_90"}})
                    return ft._graphed(fused, inputs)
                torch._dynamo.reset()
                y = torch.compile(m, backend=via_graphed)(x, acc)
                y.square().sum().backward()
                ref = eager(x, acc_eager)
                ref.square().sum().backward()
                _close(self, y, ref, 1e-5)
                _close(self, acc, acc_eager, 1e-6)
                for b, w in zip(m.buffers(), eager.buffers()):
                    _close(self, b.float(), w.float(), 1e-6)
                for p, w in zip(m.parameters(), eager.parameters()):
                    _close(self, p.grad, w.grad, 1e-4)
                forward = [c for c in captured if not c[0]]
                self.assertEqual(len(forward), 1, captured)
                for _, _, static, n in captured:
                    self.assertTrue(all(0 <= i < n for i in static), captured)
                if write == "buffers":
                    # The three buffers, written inside the forward.
                    self.assertEqual(len(forward[0][1]), 3, captured)
                else:
                    # Traced again: no write left inside the forward.
                    self.assertEqual(forward[0][1], set(), captured)
        finally:
            trees.cudagraphify_impl, cg.get_device_index = real

    def test_reduce_overhead_dynamic_sizes(self):
        # A graph with a symbolic size is built per size; its size inputs
        # are constants there, so the captured graphs take only the
        # tensors (PyTorch 2.11's capture cannot read a size placeholder).
        # On the CPU, with cudagraphify_impl replaced by a recorder.
        import torch._dynamo
        import torch._inductor.cudagraph_trees as trees
        from torch._dynamo.backends import cudagraphs as cg
        captured = []

        def record(model, inputs, static_input_idxs, **kw):
            captured.append((kw["is_backward"],
                             [isinstance(x, torch.Tensor) for x in inputs]))
            return model

        def via_graphed(gm, example_inputs):
            def run(*args):
                fused, _, _ = ft._compile_graph(
                    gm, list(args), {"compile_options": {"arch": "sm_90"}})
                return ft._graphed(fused, list(args))(*args)
            return run
        real = trees.cudagraphify_impl, cg.get_device_index
        trees.cudagraphify_impl = record
        cg.get_device_index = lambda gm: 0
        try:
            m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                    torch.nn.Linear(16, 8))
            torch._dynamo.reset()
            f = torch.compile(m, backend=via_graphed, dynamic=True)
            for rows in (3, 5):
                x = torch.randn(rows, 8, requires_grad=True)
                y = f(x)
                y.square().sum().backward()
                ref_x = x.detach().clone().requires_grad_()
                ref = m(ref_x)
                ref.square().sum().backward()
                _close(self, y, ref, 1e-5)
                _close(self, x.grad, ref_x.grad, 1e-5)
            forward = [c for c in captured if not c[0]]
            self.assertEqual(len(forward), 2, captured)
            for _, tensors in forward:
                # Two layers' weights and biases, and x; not the size.
                self.assertEqual(tensors, [True] * 5, captured)

            # A graph left whole to PyTorch (a no_grad region over a
            # value with a gradient) is dynamo's own: each size builds
            # from it unchanged.
            class Region(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.l = torch.nn.Linear(8, 8)

                def forward(self, x):
                    y = self.l(x)
                    with torch.no_grad():
                        z = y * 2
                    return y + z + x.shape[0]

            m = Region()
            torch._dynamo.reset()
            f = torch.compile(m, backend=via_graphed, dynamic=True)
            for rows in (3, 5):
                x = torch.randn(rows, 8)
                _close(self, f(x), m(x), 1e-5)
        finally:
            trees.cudagraphify_impl, cg.get_device_index = real

    def test_grad_mode_switches_stay_with_pytorch(self):
        # torch.no_grad (or inference_mode) inside a training forward, and
        # enable_grad inside a call under no_grad: the ATen trace keeps no
        # grad mode, so the graph runs whole in PyTorch, and says why.
        import torch._dynamo

        class Region(torch.nn.Module):
            def __init__(self, mode):
                super().__init__()
                self.l, self.mode = torch.nn.Linear(8, 8), mode

            def forward(self, x):
                y = self.l(x)
                with self.mode():
                    z = (y * 2).exp()
                return y + z

        x = torch.randn(4, 8)
        for mode in (torch.no_grad, torch.inference_mode):
            torch.manual_seed(0)
            m = Region(mode)
            torch._dynamo.reset()
            self._trains_like_eager(m, x)
            self.assertIn("switches grad mode", str(ft.reports()[-1]))

        class Enabled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                with torch.enable_grad():
                    return self.l(x) * 2

        m = Enabled()
        torch._dynamo.reset()
        f = self._compile(m)
        with torch.no_grad():
            y = f(x)
        self.assertTrue(y.requires_grad)
        y.sum().backward()
        self.assertIsNotNone(m.l.weight.grad)

        class NotInference(torch.nn.Module):
            # inference_mode(False) turns grad mode on.
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                with torch.inference_mode(False):
                    return self.l(x) * 2

        torch._dynamo.reset()
        with torch.no_grad():
            y = self._compile(NotInference())(x)
        self.assertTrue(y.requires_grad)

    def test_grad_mode_regions_that_change_nothing_stay_taken(self):
        # A no_grad region over values that need no gradient (a rotary
        # table from a buffer, as in LLaMA-style models) changes no
        # gradient: the graph stays with fusec. One inside a checkpointed
        # body does change them: left whole to PyTorch.
        import torch._dynamo
        from torch.utils.checkpoint import checkpoint

        class Rotary(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)
                self.register_buffer("freq", torch.rand(8))

            def forward(self, x):
                with torch.no_grad():
                    table = (self.freq * 3).cos()
                return self.l(x) * table

        class Checkpointed(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def body(self, x):
                y = self.l(x)
                with torch.no_grad():
                    z = y * 3
                return y * z

            def forward(self, x):
                return checkpoint(self.body, x, use_reentrant=False)

        x = torch.randn(4, 8)
        for make, taken in ((Rotary, True), (Checkpointed, False)):
            torch.manual_seed(0)
            m = make()
            torch._dynamo.reset()
            self._trains_like_eager(m, x)
            rep = str(ft.reports()[-1])
            self.assertEqual("switches grad mode" not in rep, taken, rep)

    def test_results_sharing_memory_stay_views(self):
        # A result that views an input, or two results sharing memory: a
        # write through one reaches the other, as in eager.
        import torch._dynamo
        torch._dynamo.reset()
        x = torch.zeros(4, 8)
        out = self._compile(lambda t: t.view(-1))(x)
        out.add_(1)
        self.assertTrue(bool(x.eq(1).all()))

        class Two(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                y = self.l(x) * 2
                return y, y.view(-1)

        torch._dynamo.reset()
        with torch.no_grad():
            a, b = self._compile(Two())(torch.randn(4, 8))
        a.zero_()
        self.assertTrue(bool(b.eq(0).all()))
        self.assertIn("shares memory", str(ft.reports()[-1]))

        # Disjoint parts of one result (the k and v of a split, kept for a
        # cache) share memory but no element: the graph stays with fusec.
        class Split(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 24)

            def forward(self, x):
                q, k, v = self.l(x).view(4, 3, 8).permute(1, 0, 2).unbind(0)
                return q * 2, k, v

        torch._dynamo.reset()
        m = Split()
        x = torch.randn(4, 8)
        with torch.no_grad():
            got = self._compile(m)(x)
            want = m(x)
        for g, w in zip(got, want):
            _close(self, g, w, 1e-6)
        self.assertNotIn("shares memory", str(ft.reports()[-1]))

        # With dynamic sizes the offsets are symbols: no proof, so whole to
        # PyTorch (y[:n-4] and y[4:] are apart at 7 rows, not at 12); and
        # views of another element size overlap in bytes.
        class Halves(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                y = self.l(x)
                return y[:x.shape[0] - 4], y[4:]

        class Bytes(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                y = self.l(x).view(-1)
                return y[:4], y.view(torch.int16)[4:8]

        torch._dynamo.reset()
        f = torch.compile(Halves(), backend="fusec", dynamic=True,
                          options={"compile_options": {"arch": "sm_90"}})
        for rows, eager in ((7, False), (12, True)):
            with torch.no_grad():
                a, b = f(torch.randn(rows, 8))
            before = b.clone()
            a.fill_(7)
            self.assertEqual(not torch.equal(b, before), eager)
        torch._dynamo.reset()
        with torch.no_grad():
            a, b = self._compile(Bytes())(torch.randn(4, 8))
        before = b.clone()
        a.fill_(7)
        self.assertFalse(torch.equal(b, before))

    def test_copy_into_a_fresh_tensor_trains(self):
        # z.copy_(y) into a new tensor: functionalization's aten.copy has no
        # derivative; the gradient flows to y as in eager.
        class Copy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                z = torch.zeros(4, 8)
                z.copy_(self.l(x))
                return z * 2

        torch.manual_seed(0)
        self._trains_like_eager(Copy(), torch.randn(4, 8))

    def test_results_without_gradient_need_none(self):
        # In a training graph, a result that depends on no parameter (nor
        # on anything needing a gradient) does not require one, as in
        # eager: .numpy() works on it.
        class Stats(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = torch.nn.Linear(8, 8)

            def forward(self, x):
                return torch.relu(self.l(x)), torch.sigmoid(x) * 2 + 1

        m = Stats()
        x = torch.randn(4, 8)
        h, stats = self._compile(m)(x)
        self.assertTrue(h.requires_grad)
        self.assertFalse(stats.requires_grad)
        stats.numpy()
        h.sum().backward()
        got = m.l.weight.grad.clone()
        m.zero_grad()
        m(x)[0].sum().backward()
        _close(self, got, m.l.weight.grad, 1e-5)

    def test_numbers_with_half_tensors_compute_in_float32(self):
        # (1 - mask) * -1e9 in float16: PyTorch computes in float32 and
        # rounds once (-0 where the mask is 1, -inf where it is 0); a
        # -1e9 rounded to float16 first is -inf, and 0 * -inf is NaN.
        class Mask(torch.nn.Module):
            def forward(self, m, x):
                return torch.relu((1.0 - m) * -1e9) + x / 70000.0

        m = torch.tensor([[0., 1., 1., 0.]], dtype=torch.float16)
        x = torch.tensor([[1000., 2000., -500., 60000.]], dtype=torch.float16)
        with torch.no_grad():
            got = self._compile(Mask())(m, x)
            want = Mask()(m, x)
        self.assertFalse(bool(got.isnan().any()), got)
        _close(self, got.float(), want.float(), 1e-3)

    def test_float_arguments_are_read_per_call(self):
        # Dynamo passes a float argument it does not specialise as a 0-d
        # tensor that the graph reads with .item(): the trace makes it a
        # constant, so the graph is built per value, never replayed with
        # an old one.
        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 8)

            def forward(self, x, s):
                return self.fc(x) * s

        m = Scaled()
        f = self._compile(m)
        x = torch.randn(4, 8)
        with torch.no_grad():
            for s in (2.0, 3.0, 0.5, 3.0):
                _close(self, f(x, s), m(x, s), 1e-6)

    def test_graph_traces_through_aot_autograd(self):
        # mode="reduce-overhead" hands the rewritten graph to AOTAutograd
        # (then to cudagraph trees): fusec's ops, their constants and the
        # running-statistics write-backs must trace. Here with no-op
        # compilers, on the CPU; the forward's writes into buffers batched
        # as reduce-overhead batches them.
        import torch._dynamo
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd
        traced = []

        def nop(gm, inputs):
            traced.append(gm)
            return make_boxed_func(gm)

        def fw(gm, inputs):
            ft._batch_write_backs(gm)
            return nop(gm, inputs)

        def via_aot(gm, inputs):
            fused, _, _ = ft._compile_graph(
                gm, inputs, {"compile_options": {"arch": "sm_90"}})
            return aot_autograd(fw_compiler=fw, bw_compiler=nop,
                                keep_inference_input_mutations=True)(
                fused, inputs)

        for m, x in ((_Block(), torch.randn(2, 16, 32)),
                     (_ConvNet().train(), torch.randn(8, 3, 16, 16)),
                     (_two_bns().train(), torch.randn(4, 3, 9, 9))):
            x.requires_grad_()
            state = {k: v.clone() for k, v in m.state_dict().items()}
            ref = m(x)
            ref.square().sum().backward()
            want = [x.grad.clone()] + [p.grad.clone()
                                       for p in m.parameters()]
            buffers = [b.clone() for b in m.buffers()]
            m.load_state_dict(state)
            m.zero_grad()
            x.grad = None
            torch._dynamo.reset()
            y = torch.compile(m, backend=via_aot)(x)
            y.square().sum().backward()
            _close(self, y, ref, 1e-5)
            for g, w in zip([x.grad] + [p.grad for p in m.parameters()],
                            want):
                _close(self, g, w, 1e-4)
            for b, w in zip(m.buffers(), buffers):
                _close(self, b.float(), w.float(), 1e-6)
        code = "".join(g.code for g in traced)
        self.assertIn("torch.ops.fusec.", code)
        # Two batch norms: their four running statistics in one copy, the
        # two batch counters in one add.
        self.assertIn("torch.ops.aten._foreach_copy_", traced[-2].code)
        self.assertIn("torch.ops.aten._foreach_add_", traced[-2].code)
        self.assertNotIn("aten.copy", traced[-2].code.replace(
            "_foreach_copy_", ""))
        self.assertIn("_bwd.default", code)

    def test_modes_and_options_are_checked(self):
        import torch._dynamo
        m = torch.nn.Linear(4, 4)
        x = torch.randn(2, 4)
        for kwargs, words in (({"mode": "max-autotune"}, "fusec's modes"),
                              ({"options": {"cudagraph": True}},
                               "unknown option 'cudagraph'")):
            torch._dynamo.reset()
            with self.assertRaises(Exception) as caught:
                torch.compile(m, backend="fusec", **kwargs)(x)
            self.assertIn(words, str(caught.exception))

    def test_reduce_overhead_on_cpu_runs_uncaptured(self):
        m = _Block()
        x = torch.randn(2, 16, 32)
        with torch.no_grad():
            y = torch.compile(m, backend="fusec", mode="reduce-overhead")(x)
            _close(self, y, m(x), 1e-6)
        self.assertFalse(ft.reports()[-1].cudagraphs)

    def test_autocast_linear_reads_its_weight_in_place(self):
        # Autocast's trace casts the transposed weight, _to_copy(t(W)): the
        # partition casts W and its GEMM reads W's [out, in] layout, with
        # no kernel transposing the weight at every call.
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(32, 48, bias=False),
                                torch.nn.GELU(), torch.nn.Linear(48, 16))
        x = torch.randn(4, 32)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            ref = m(x)
            y = self._compile(m)(x)
        _close(self, y.float(), ref.float(), 3e-2)
        kernels = [k for _, _, names, _, _ in ft.reports()[-1].kernels
                   for k in names]
        self.assertEqual(sum("linear" in k for k in kernels), 2, kernels)
        self.assertFalse(any("transpose" in k for k in kernels), kernels)
        # The same in a training step: the gradients of both weights.
        xs = x.clone().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ref = m(xs)
        ref.float().square().sum().backward()
        want = [xs.grad.clone()] + [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        xs.grad = None
        torch._dynamo.reset()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = self._compile(m)(xs)
        y.float().square().sum().backward()
        self.assertTrue(ft.reports()[-1].training)
        for g, w in zip([xs.grad] + [p.grad for p in m.parameters()], want):
            _close(self, g, w, 3e-2)

    def test_autocast_bfloat16(self):
        m = _Block()
        x = torch.randn(2, 16, 32)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            ref = m(x)
            y = self._compile(m)(x)
        self.assertEqual(y.dtype, ref.dtype)
        _close(self, y.float(), ref.float(), 3e-2)
        self.assertGreater(ft.reports()[-1].taken, 0)


def _grads_match(test, module, reference, inputs, tol=1e-5, **kwargs):
    """module(*inputs) and reference(*inputs) agree, and so do the
    gradients of both the inputs and the parameters."""
    xs = [x.detach().clone().requires_grad_() for x in inputs]
    rs = [x.detach().clone().requires_grad_() for x in inputs]
    y = module(*xs, **kwargs)
    ref = reference(*rs, **kwargs)
    _close(test, y, ref, tol)
    gy = torch.randn_like(ref)
    y.backward(gy)
    ref.backward(gy)
    for x, r in zip(xs, rs):
        _close(test, x.grad, r.grad, tol)
    for (name, p), (_, q) in zip(module.named_parameters(),
                                 reference.named_parameters()):
        _close(test, p.grad, q.grad, tol, floor=1.0)


@unittest.skipUnless(torch is not None, "needs PyTorch")
class NNTest(unittest.TestCase):
    """fusec.nn against torch.nn, forward and backward, on CPU."""

    def setUp(self):
        torch.manual_seed(0)
        import fusec.nn
        self.nn = fusec.nn

    def _copy(self, module, reference):
        missing = module.load_state_dict(reference.state_dict())
        self.assertEqual((missing.missing_keys, missing.unexpected_keys),
                         ([], []))
        return module

    def test_layer_norm(self):
        ref = torch.nn.LayerNorm([3, 8])
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
            ref.bias.uniform_(-1, 1)
        m = self._copy(self.nn.LayerNorm([3, 8]), ref)
        _grads_match(self, m, ref, [torch.randn(2, 5, 3, 8)])
        plain = self.nn.LayerNorm(8, elementwise_affine=False)
        _grads_match(self, plain, torch.nn.LayerNorm(
            8, elementwise_affine=False), [torch.randn(4, 8)])

    def test_rms_norm(self):
        ref = torch.nn.RMSNorm(16, eps=1e-6)
        with torch.no_grad():
            ref.weight.uniform_(0.5, 1.5)
        m = self._copy(self.nn.RMSNorm(16, eps=1e-6), ref)
        _grads_match(self, m, ref, [torch.randn(3, 7, 16)])

    def test_mlp(self):
        class Ref(torch.nn.Module):
            def __init__(self, act):
                super().__init__()
                self.act = act
                if act == "swiglu":
                    self.gate = torch.nn.Linear(12, 20, bias=False)
                    self.up = torch.nn.Linear(12, 20, bias=False)
                    self.down = torch.nn.Linear(20, 12, bias=False)
                else:
                    self.fc1 = torch.nn.Linear(12, 20)
                    self.fc2 = torch.nn.Linear(20, 12)

            def forward(self, x):
                if self.act == "swiglu":
                    return self.down(F.silu(self.gate(x)) * self.up(x))
                f = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
                     "gelu_tanh": lambda h: F.gelu(h, approximate="tanh")}
                return self.fc2(f[self.act](self.fc1(x)))

        for act in ("gelu", "gelu_tanh", "relu", "silu", "swiglu"):
            ref = Ref(act)
            m = self._copy(self.nn.MLP(12, 20, activation=act,
                                       bias=act != "swiglu"), ref)
            _grads_match(self, m, ref, [torch.randn(2, 5, 12)])

    def test_attention(self):
        class Ref(torch.nn.Module):
            def __init__(self, d, h, hkv, causal):
                super().__init__()
                self.h, self.hkv, self.causal = h, hkv, causal
                self.q_proj = torch.nn.Linear(d, d)
                self.k_proj = torch.nn.Linear(d, d // h * hkv)
                self.v_proj = torch.nn.Linear(d, d // h * hkv)
                self.out_proj = torch.nn.Linear(d, d)

            def forward(self, x, mask=None):
                b, n, d = x.shape

                def heads(t, c):
                    return t.view(b, n, c, d // self.h).transpose(1, 2)

                a = F.scaled_dot_product_attention(
                    heads(self.q_proj(x), self.h),
                    heads(self.k_proj(x), self.hkv),
                    heads(self.v_proj(x), self.hkv), attn_mask=mask,
                    is_causal=self.causal, enable_gqa=True)
                return self.out_proj(a.transpose(1, 2).reshape(b, n, d))

        for h, hkv, causal in ((4, 4, False), (4, 2, True), (4, 1, False)):
            ref = Ref(32, h, hkv, causal)
            m = self._copy(self.nn.Attention(32, h, hkv, causal=causal), ref)
            _grads_match(self, m, ref, [torch.randn(2, 6, 32)])
        ref = Ref(32, 4, 2, False)
        m = self._copy(self.nn.Attention(32, 4, 2), ref)
        mask = torch.randn(6, 6)
        _grads_match(self, m, ref, [torch.randn(2, 6, 32)], mask=mask)

    def test_conv_bn_act_train_and_eval(self):
        for act, ref_act in (("relu", torch.nn.ReLU()),
                             ("silu", torch.nn.SiLU()), (None, None)):
            layers = [torch.nn.Conv2d(3, 6, 3, stride=2, padding=1,
                                      bias=False),
                      torch.nn.BatchNorm2d(6)]
            ref = torch.nn.Sequential(*layers + ([ref_act] if ref_act
                                                 else []))
            with torch.no_grad():
                ref[1].weight.uniform_(0.5, 1.5)
                ref[1].bias.uniform_(-0.5, 0.5)
            m = self.nn.ConvBNAct(3, 6, 3, stride=2, padding=1,
                                  activation=act)
            m.conv.load_state_dict(ref[0].state_dict())
            m.bn.load_state_dict(ref[1].state_dict())
            for step in range(2):  # running statistics move each step
                _grads_match(self, m, ref, [torch.randn(4, 3, 9, 9)],
                             tol=1e-5)
                for name in ("running_mean", "running_var",
                             "num_batches_tracked"):
                    _close(self, getattr(m.bn, name).float(),
                           getattr(ref[1], name).float(), 1e-6)
            m.eval()
            ref.eval()
            x = torch.randn(2, 3, 9, 9)
            with torch.no_grad():
                _close(self, m(x), ref(x), 1e-6)

    def test_fuse_modules(self):
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 1),
            torch.nn.BatchNorm2d(4), torch.nn.Flatten())
        model.eval()
        x = torch.randn(2, 3, 5, 5)
        with torch.no_grad():
            ref = model(x)
        fused = self.nn.fuse_modules(model)
        self.assertIsInstance(fused[0], self.nn.ConvBNAct)
        self.assertEqual(fused[0].activation, "relu")
        self.assertIsInstance(fused[3], self.nn.ConvBNAct)
        self.assertIsNone(fused[3].activation)
        with torch.no_grad():
            _close(self, fused(x), ref, 1e-6)

    def test_wrong_input_is_named(self):
        with self.assertRaises(TypeError) as e:
            self.nn.LayerNorm(8)(torch.randn(2, 7))
        self.assertIn("LayerNorm over [8]: the input is [2, 7]",
                      str(e.exception))
        with self.assertRaises(TypeError) as e:
            self.nn.MLP(8, 16)(torch.randn(2, 8, dtype=torch.float64))
        self.assertIn("is torch.float32 but the input is torch.float64",
                      str(e.exception))


@unittest.skipUnless(_gpu(), "needs PyTorch with a CUDA device")
class CudaTest(unittest.TestCase):
    """The same on the GPU: the compiled plans on PyTorch's stream."""

    def setUp(self):
        import torch._dynamo
        torch._dynamo.reset()
        torch.manual_seed(0)

    def test_transposes_match_permute(self):
        # Both of the gather family's transposes (a shared-memory tile, and
        # one thread per element where the tile would be mostly padding) on
        # odd shapes in each dtype: exact.
        import random
        rng = random.Random(0)
        cases = [((5, 3, 41, 37), (0, 2, 3, 1)), ((7, 97, 3, 3), (0, 2, 3, 1)),
                 ((3, 9, 13, 70), (0, 3, 1, 2)), ((2, 67, 45, 33), (0, 2, 3, 1)),
                 ((33, 130), (1, 0)), ((3, 5, 100), (2, 0, 1))]
        for _ in range(6):
            shape = tuple(rng.randint(1, 70) for _ in range(rng.randint(2, 4)))
            perm = list(range(len(shape)))
            rng.shuffle(perm)
            cases.append((shape, tuple(perm)))
        for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16"),
                            (torch.bfloat16, "bf16")):
            for shape, perm in cases:
                out = tuple(shape[p] for p in perm)
                ty = "tensor<%sx%s>" % ("x".join(map(str, shape)), name)
                text = ("func.func @t(%%x: %s) -> tensor<%sx%s> {\n"
                        "  %%y = fuse.transpose %%x {permutation = array<i64: "
                        "%s>} : %s\n  return %%y : tensor<%sx%s>\n}\n" % (
                            ty, "x".join(map(str, out)), name,
                            ", ".join(map(str, perm)), ty,
                            "x".join(map(str, out)), name))
                x = torch.randn(shape, device="cuda").to(dtype)
                y = ft.op(text, train=False)(x)
                self.assertTrue(torch.equal(y, x.permute(perm)),
                                "%s %s %s" % (name, shape, perm))

    def test_op_forward_backward_each_dtype(self):
        for dtype, name, tol in ((torch.float32, "f32", 1e-5),
                                 (torch.float16, "f16", 5e-3),
                                 (torch.bfloat16, "bf16", 2e-2)):
            op = ft.op(_mlp_graph(name, rows=37, width=24, hidden=56))
            args = _mlp_args(dtype, "cuda", rows=37, width=24, hidden=56)
            y = op(*args)
            gy = torch.randn_like(y)
            got = torch.autograd.grad(y, args, gy)
            cpu = [a.detach().cpu().double().requires_grad_() for a in args]
            ref = _mlp_eager(*cpu)
            want = torch.autograd.grad(ref, cpu, gy.cpu().double())
            _close(self, y, ref, tol)
            for g, w in zip(got, want):
                _close(self, g, w, tol)

    def test_opcheck_cuda(self):
        from torch.library import opcheck
        op = ft.op(_mlp_graph())
        args = _mlp_args(device="cuda")
        for custom, inputs in ((op.infer_op, [a.detach() for a in args]),
                               (op.fwd_op, args)):
            results = opcheck(custom, (list(inputs),))
            self.assertEqual(set(results.values()), {"SUCCESS"}, results)

    def test_cuda_graph_capture(self):
        op = ft.op(_mlp_graph())
        args = _mlp_args(device="cuda", grad=False)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            op(*args)  # loads the module outside the capture
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = op(*args)
        with torch.no_grad():
            args[0].copy_(torch.randn_like(args[0]))
        graph.replay()
        torch.cuda.synchronize()
        _close(self, y, _mlp_eager(*args), 1e-5)

    def test_reduce_overhead_replays_cuda_graphs(self):
        # Three training steps and an inference call, replayed from CUDA
        # graphs, against the same steps in eager mode.
        import torch._dynamo
        from torch._dynamo.utils import counters
        for make, shape in ((lambda: _Block(64, 4), (4, 128, 64)),
                            (_ConvNet, (8, 3, 16, 16)),
                            (_two_bns, (4, 3, 9, 9))):
            torch.manual_seed(0)
            m = make().cuda().train()
            eager = copy.deepcopy(m)
            xs = [torch.randn(shape, device="cuda") for _ in range(3)]
            torch._dynamo.reset()
            counters.clear()
            f = torch.compile(m, backend="fusec", mode="reduce-overhead")
            for module, fn in ((eager, eager), (m, f)):
                opt = torch.optim.SGD(module.parameters(), lr=0.1)
                for x in xs:
                    opt.zero_grad()
                    fn(x).square().mean().backward()
                    opt.step()
            for p, w in zip(m.parameters(), eager.parameters()):
                _close(self, p, w, 1e-4)
            for b, w in zip(m.buffers(), eager.buffers()):
                _close(self, b.float(), w.float(), 1e-4)
            self.assertTrue(ft.reports()[-1].cudagraphs)
            self.assertEqual(dict(counters["inductor"]).get(
                "cudagraph_skips", 0), 0, dict(counters["inductor"]))
            # Parameters are read in place, not copied in at each replay:
            # the inputs copied are the batch and the gradients flowing in.
            self.assertLess(
                counters["inductor"]["cudagraph_recorded_non_static_inputs"],
                len(list(m.parameters())), dict(counters["inductor"]))
            with torch.no_grad():
                m.eval()
                eager.eval()
                for x in xs:
                    _close(self, f(x).clone(), eager(x), 1e-4)

    def test_shape_buckets_reduce_overhead(self):
        # A batch declared dynamic over [2, 64], replayed from CUDA graphs:
        # 3 and 4 share the bucket 4, 5 and 7 the bucket 8, 9 runs as 16;
        # outputs and gradients match eager's at each size.
        import torch._dynamo
        m = _Block(64, 4).cuda()
        f = torch.compile(m, backend="fusec", mode="reduce-overhead")
        before = len(ft.reports())
        params = list(m.parameters())
        for n in (3, 4, 5, 7, 9, 3):
            x = torch.randn(n, 16, 64, device="cuda")
            torch._dynamo.mark_dynamic(x, 0, min=2, max=64)
            y = f(x)
            g = torch.randn_like(y)
            got = torch.autograd.grad((y * g).sum(), params)
            y = y.clone()  # the next replay may write over it
            ref_y = m(x)
            ref = torch.autograd.grad((ref_y * g).sum(), params)
            _close(self, y, ref_y, 1e-4)
            for a, b in zip(got, ref):
                _close(self, a, b, 1e-3, floor=1e-2)
        reps = ft.reports()[before:]
        self.assertEqual(len(reps), 3, [str(r) for r in reps])
        self.assertTrue(all(r.cudagraphs for r in reps))
        self.assertIn("= 9 runs as 16", str(reps[2]))

    def test_backend_block_trains_like_eager(self):
        m = _Block(64, 4).cuda()
        x = torch.randn(4, 128, 64, device="cuda", requires_grad=True)
        ref = m(x)
        ref.square().sum().backward()
        want = [w.clone() for w in [x.grad] +
                [p.grad for p in m.parameters()]]
        m.zero_grad()
        x.grad = None
        y = torch.compile(m, backend="fusec")(x)
        y.square().sum().backward()
        _close(self, y, ref, 1e-4)
        for g, w in zip([x.grad] + [p.grad for p in m.parameters()], want):
            _close(self, g, w, 1e-3)


if __name__ == "__main__":
    unittest.main()


