"""Synchronised batch norm (fusec.distributed): the statistics merge against
NumPy, the module against nn.BatchNorm at world size 1 (the all-reduce an
identity), two gloo ranks with uneven batches against one process with the
global batch, and DDP around torch.compile(backend="fusec"). Everything runs
on CPU tensors through the reference interpreter; the CUDA test needs a GPU
and skips without. Skipped as a whole without PyTorch.

    python3 -m unittest discover -s python/tests -p test_distributed.py -v
"""

import copy
import os
import tempfile
import unittest

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    np = torch = None

if torch is not None:
    import fusec.distributed as fd
    import fusec.nn as fnn


def _close(test, a, b, tol):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    err = (a - b).norm() / max(b.norm().item(), 1e-12)
    test.assertLess(err.item(), tol, "relative error %.3g" % err)


def _bn(channels, seed=0, cls=None):
    bn = (cls or nn.BatchNorm2d)(channels)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        bn.weight.copy_(torch.rand(channels, generator=gen) + 0.5)
        bn.bias.copy_(torch.rand(channels, generator=gen) - 0.5)
        bn.running_mean.copy_(torch.randn(channels, generator=gen))
    return bn


_ACTS = {None: lambda t: t, "relu": F.relu, "silu": F.silu,
         "gelu": F.gelu} if torch is not None else {}


@unittest.skipUnless(torch is not None, "needs PyTorch")
class MergeTest(unittest.TestCase):
    def test_uneven_counts_match_numpy(self):
        # Three ranks hold 5, 1 and 12 samples of 4 channels whose mean is
        # far from zero. Each rank's stats plan sums about the common shift;
        # the apply plan merges the added sums, as after an all-reduce.
        rng = np.random.default_rng(0)
        parts = [rng.normal(1000.0, 0.5, size=(n, 4, 3, 2))
                 for n in (5, 1, 12)]
        shift = torch.tensor([999.0, 1000.5, 0.0, 1000.0])
        s1 = s2 = count = 0
        for p in parts:
            x = torch.from_numpy(p).float()
            a, b = fd._run("stats", x, None, 1e-5, x, shift)
            s1, s2, count = s1 + a, s2 + b, count + x.numel() // 4
        whole = torch.from_numpy(np.concatenate(parts)).float()
        packed = torch.cat([s1, s2, torch.tensor([float(count)])])
        ones, zeros = torch.ones(4), torch.zeros(4)
        y, saved = fd._run("apply", whole, None, 1e-5, whole, packed, shift,
                           ones, zeros, ones)
        want = np.concatenate(parts)
        np.testing.assert_allclose(saved[2].double().numpy(),
                                   want.mean(axis=(0, 2, 3)), rtol=1e-6)
        self.assertEqual(saved[4].tolist(), [float(count)] * 4)
        # Channel 2 is not shifted: E[x^2] - E[x]^2 at 1000 loses f32's
        # digits; the shifted channels keep them.
        shifted = [0, 1, 3]
        var = want.var(axis=(0, 2, 3), ddof=1)
        np.testing.assert_allclose(saved[5].double().numpy()[shifted],
                                   var[shifted], rtol=1e-3)
        normalised = (want - want.mean(axis=(0, 2, 3))[:, None, None]) / \
            np.sqrt(want.var(axis=(0, 2, 3)) + 1e-5)[:, None, None]
        np.testing.assert_allclose(y.double().numpy()[:, shifted],
                                   normalised[:, shifted], atol=2e-3)


@unittest.skipUnless(torch is not None, "needs PyTorch")
class WorldSizeOneTest(unittest.TestCase):
    """No process group: the statistics are this batch's."""

    def test_matches_batch_norm(self):
        for act in (None, "relu", "silu", "gelu"):
            for shape, cls in (((3, 4, 5, 6), nn.BatchNorm2d),
                               ((7, 5), nn.BatchNorm1d)):
                with self.subTest(act=act, shape=shape):
                    ref = _bn(shape[1], cls=cls)
                    sync = fd.convert_sync_batchnorm(copy.deepcopy(ref))
                    self.assertIsInstance(sync, fd.SyncBatchNorm)
                    sync.activation = act
                    x = (torch.randn(*shape) * 2 + 3).requires_grad_()
                    x2 = x.detach().clone().requires_grad_()
                    want, got = _ACTS[act](ref(x)), sync(x2)
                    g = torch.randn_like(want)
                    (want * g).sum().backward()
                    (got * g).sum().backward()
                    _close(self, got, want, 1e-5)
                    _close(self, x2.grad, x.grad, 1e-4)
                    _close(self, sync.weight.grad, ref.weight.grad, 1e-4)
                    _close(self, sync.bias.grad, ref.bias.grad, 1e-4)
                    _close(self, sync.running_mean, ref.running_mean, 1e-6)
                    _close(self, sync.running_var, ref.running_var, 1e-6)
                    self.assertEqual(int(sync.num_batches_tracked), 1)

    def test_finite_differences(self):
        # Directional derivatives of a loss against the gradients, for the
        # input, weight and bias (float32: central differences, h = 1e-2).
        gen = torch.Generator().manual_seed(7)
        for act in (None, "silu"):
            with self.subTest(act=act):
                sync = fd.SyncBatchNorm(3, activation=act)
                with torch.no_grad():
                    sync.weight.copy_(torch.rand(3, generator=gen) + 0.5)
                    sync.bias.copy_(torch.rand(3, generator=gen) - 0.5)
                x = torch.randn(4, 3, 2, 3, generator=gen) * 2 + 1
                g = torch.randn(4, 3, 2, 3, generator=gen)
                params = [x, sync.weight, sync.bias]
                dirs = [torch.randn(p.shape, generator=gen) for p in params]

                def loss(shift):
                    with torch.no_grad():
                        for p, d in zip(params, dirs):
                            p.add_(d, alpha=shift)
                        value = (sync(x) * g).sum()
                        for p, d in zip(params, dirs):
                            p.sub_(d, alpha=shift)
                    return value

                x.requires_grad_()
                (sync(x) * g).sum().backward()
                analytic = sum((p.grad * d).sum() for p, d in
                               zip(params, dirs)).item()
                numeric = ((loss(1e-2) - loss(-1e-2)) / 2e-2).item()
                self.assertLess(abs(numeric - analytic),
                                2e-3 * max(abs(analytic), 1.0),
                                "%g against %g" % (numeric, analytic))

    def test_eval_and_cumulative_momentum(self):
        ref = _bn(4)
        ref.momentum = None
        sync = fd.convert_sync_batchnorm(copy.deepcopy(ref))
        for _ in range(3):
            x = torch.randn(6, 4, 3, 3)
            _close(self, sync(x), ref(x), 1e-5)
        _close(self, sync.running_var, ref.running_var, 1e-6)
        ref.eval()
        sync.eval()
        x = torch.randn(2, 4, 3, 3)
        _close(self, sync(x), ref(x), 1e-6)

    def test_empty_batch_and_one_value(self):
        sync = fd.convert_sync_batchnorm(_bn(4))
        before = sync.running_var.clone()
        x = torch.randn(0, 4, 3, 3, requires_grad=True)
        y = sync(x)
        self.assertEqual(y.shape, x.shape)
        y.sum().backward()
        self.assertEqual(x.grad.shape, x.shape)
        self.assertEqual(sync.weight.grad.abs().sum().item(), 0.0)
        self.assertTrue(torch.equal(sync.running_var, before))
        with self.assertRaisesRegex(ValueError, "more than 1 value per "
                                    "channel"):
            sync(torch.randn(1, 4, 1, 1))

    def test_opcheck(self):
        x = torch.randn(4, 3, 2, 5)
        w, b = torch.rand(3).requires_grad_(), torch.rand(3).requires_grad_()
        torch.library.opcheck(torch.ops.fusec.sync_batch_norm,
                              (x.requires_grad_(), w, b, torch.zeros(3),
                               1e-5, "relu", 0))

    def test_state_dict_keys_are_kept(self):
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                              nn.ReLU())
        keys = list(model.state_dict())
        fd.convert_sync_batchnorm(model)
        self.assertIsInstance(model[1], fd.SyncBatchNorm)
        self.assertEqual(list(model.state_dict()), keys)

    def test_conv_bn_relu_sync(self):
        # ConvBNReLU(sync=True) at world size 1 is ConvBNReLU.
        torch.manual_seed(0)
        ref = fnn.ConvBNReLU(3, 5, 3, padding=1)
        sync = fd.convert_sync_batchnorm(copy.deepcopy(ref))
        self.assertTrue(sync.sync)
        x = torch.randn(4, 3, 6, 6)
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        want, got = ref(x1), sync(x2)
        g = torch.randn_like(want)
        (want * g).sum().backward()
        (got * g).sum().backward()
        _close(self, got, want, 1e-5)
        _close(self, x2.grad, x1.grad, 1e-4)
        _close(self, sync.conv.weight.grad, ref.conv.weight.grad, 1e-4)
        _close(self, sync.bn.weight.grad, ref.bn.weight.grad, 1e-4)
        _close(self, sync.bn.running_var, ref.bn.running_var, 1e-6)

    def test_wrong_input_is_named(self):
        sync = fd.SyncBatchNorm(4)
        with self.assertRaisesRegex(TypeError, r"takes \[N, 4, \.\.\.\]"):
            sync(torch.randn(2, 3, 4, 4))
        with self.assertRaisesRegex(TypeError, "float64"):
            sync.double()(torch.randn(2, 4, 4, 4, dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, "activation 'tanh'"):
            fd.SyncBatchNorm(4, activation="tanh")

    def test_torch_compile_keeps_one_graph(self):
        import torch._dynamo
        torch._dynamo.reset()
        model = fd.convert_sync_batchnorm(_Net())
        ref = copy.deepcopy(model)
        x = torch.randn(6, 3, 8, 8)
        explained = torch._dynamo.explain(model)(x)
        self.assertEqual(explained.graph_break_count, 0)
        compiled = torch.compile(model, backend="fusec",
                                 options={"compile_options":
                                          {"arch": "sm_90"}})
        got, want = compiled(x), ref(x)
        got.square().sum().backward()
        want.square().sum().backward()
        _close(self, got, want, 1e-5)
        for p, q in zip(model.parameters(), ref.parameters()):
            _close(self, p.grad, q.grad, 1e-4)


class _Net(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.fc(h.mean(dim=(2, 3)))


class _Blocks(nn.Module if torch is not None else object):
    """Residual MLP blocks, for FSDP2 (one shard unit per block)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(12), nn.Linear(12, 24), nn.GELU(),
                          nn.Linear(24, 12)) for _ in range(2))
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def _train(model, x, steps, scale=1.0):
    """SGD steps on the sum of squares of model(x), times scale; returns
    the losses."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x).square().sum() * scale
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def _tokens():
    return torch.randn(sum(SIZES), 5, 12,
                       generator=torch.Generator().manual_seed(4))


# Two gloo ranks: rank r holds SIZES[r] samples of the global batch.
SIZES = (3, 5)


def _global_batch():
    gen = torch.Generator().manual_seed(1)
    return torch.randn(sum(SIZES), 3, 6, 6, generator=gen) * 2 + 1


def _rank(rank, world, init, out):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", init_method=init, rank=rank,
                            world_size=world)
    try:
        start = sum(SIZES[:rank])
        x = _global_batch()[start:start + SIZES[rank]]
        # 1. The module alone: gradients of this rank's share of the loss.
        bn = fd.convert_sync_batchnorm(_bn(3, seed=2))
        bn.activation = "relu"
        xr = x.clone().requires_grad_()
        y = bn(xr)
        (y * torch.arange(y.numel()).reshape(y.shape).sin()).sum() \
            .backward()
        result = {"y": y.detach(), "dx": xr.grad,
                  "dweight": bn.weight.grad, "dbias": bn.bias.grad,
                  "running_var": bn.running_var}
        # 2. DDP around the compiled model, two SGD steps.
        torch.manual_seed(3)
        model = fd.convert_sync_batchnorm(_Net())
        ddp = DDP(torch.compile(model, backend="fusec", options={
            "compile_options": {"arch": "sm_90"}}))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            # Each rank's loss is its share of the global batch's sum.
            loss = ddp(x).square().sum() * world
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        result["losses"] = torch.stack(losses)
        result["weights"] = [p.detach().clone() for p in model.parameters()]
        # 3. FSDP2 (a shard unit per block) around the compiled model, on an
        # even split of the batch.
        from torch.distributed.fsdp import fully_shard
        torch.manual_seed(5)
        blocks = _Blocks()
        for block in blocks.blocks:
            fully_shard(block)
        fully_shard(blocks)
        half = _tokens().shape[0] // world
        tokens = _tokens()[rank * half:(rank + 1) * half]
        compiled = torch.compile(blocks, backend="fusec", options={
            "compile_options": {"arch": "sm_90"}})
        result["fsdp_losses"] = _train(compiled, tokens, 2, world)
        result["fsdp_weights"] = [p.full_tensor().detach().clone()
                                  for p in blocks.parameters()]
        torch.save(result, out % rank)
    finally:
        dist.destroy_process_group()


def _rank_empty(rank, world, init, out):
    """Rank 0 holds no samples, rank 1 all 6."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init, rank=rank,
                            world_size=world)
    try:
        x = _global_batch()[:6] if rank else _global_batch()[:0]
        bn = fd.convert_sync_batchnorm(_bn(3, seed=2))
        xr = x.clone().requires_grad_()
        y = bn(xr)
        (y * torch.arange(y.numel()).reshape(y.shape).cos()).sum() \
            .backward()
        torch.save({"y": y.detach(), "dx": xr.grad, "dweight": bn.weight.grad,
                    "running_var": bn.running_var}, out % rank)
    finally:
        dist.destroy_process_group()


def _spawn(fn, world=2):
    """Runs fn(rank, world, init, out) in `world` processes; returns what
    each saved to out % rank."""
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        init = "file://" + os.path.join(tmp, "store")
        out = os.path.join(tmp, "rank%d.pt")
        mp.spawn(fn, args=(world, init, out), nprocs=world, join=True)
        return [torch.load(out % r) for r in range(world)]


@unittest.skipUnless(torch is not None and
                     torch.distributed.is_available(), "needs PyTorch")
class TwoRanksTest(unittest.TestCase):
    """Two processes over gloo with batches of 3 and 5 against one process
    with the batch of 8; DDP and FSDP2 around torch.compile(backend=
    "fusec")."""

    def test_uneven_batches_match_the_global_batch(self):
        ranks = _spawn(_rank)

        x = _global_batch()
        bn = _bn(3, seed=2)
        xg = x.clone().requires_grad_()
        y = F.relu(bn(xg))
        rows = [y[:SIZES[0]], y[SIZES[0]:]]
        sum((r * torch.arange(r.numel()).reshape(r.shape).sin()).sum()
            for r in rows).backward()
        _close(self, torch.cat([r["y"] for r in ranks]), y, 1e-5)
        _close(self, torch.cat([r["dx"] for r in ranks]), xg.grad, 1e-4)
        # The parameter gradients are each rank's; their sum is the global.
        _close(self, ranks[0]["dweight"] + ranks[1]["dweight"],
               bn.weight.grad, 1e-4)
        _close(self, ranks[0]["dbias"] + ranks[1]["dbias"], bn.bias.grad,
               1e-4)
        for r in ranks:
            _close(self, r["running_var"], bn.running_var, 1e-6)

        # DDP averages the gradients of the ranks' losses (each the global
        # loss's share times the world size): one process with the global
        # batch and the plain loss takes the same steps.
        torch.manual_seed(3)
        model = _Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(2):
            opt.zero_grad()
            loss = model(x).square().sum()
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        _close(self, ranks[0]["losses"] + ranks[1]["losses"],
               torch.stack(losses) * 2, 1e-5)
        for r in ranks:
            for p, q in zip(r["weights"], model.parameters()):
                _close(self, p, q, 1e-5)

        # FSDP2: the sharded parameters, gathered, are the one process's.
        torch.manual_seed(5)
        blocks = _Blocks()
        losses = _train(blocks, _tokens(), 2)
        _close(self, ranks[0]["fsdp_losses"] + ranks[1]["fsdp_losses"],
               losses * 2, 1e-5)
        for r in ranks:
            for p, q in zip(r["fsdp_weights"], blocks.parameters()):
                _close(self, p, q, 1e-5)

    def test_a_rank_without_samples(self):
        ranks = _spawn(_rank_empty)
        bn = _bn(3, seed=2)
        x = _global_batch()[:6].requires_grad_()
        y = bn(x)
        (y * torch.arange(y.numel()).reshape(y.shape).cos()).sum() \
            .backward()
        self.assertEqual(tuple(ranks[0]["y"].shape), (0, 3, 6, 6))
        _close(self, ranks[1]["y"], y, 1e-5)
        _close(self, ranks[1]["dx"], x.grad, 1e-4)
        _close(self, ranks[0]["dweight"] + ranks[1]["dweight"],
               bn.weight.grad, 1e-4)
        for r in ranks:
            _close(self, r["running_var"], bn.running_var, 1e-6)


@unittest.skipUnless(torch is not None and torch.cuda.is_available(),
                     "needs PyTorch with a CUDA device")
class CudaTest(unittest.TestCase):
    def test_each_dtype_matches_batch_norm(self):
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2),
                           (torch.float16, 5e-3)):
            for shape in ((5, 7, 9, 11), (33, 13)):
                with self.subTest(dtype=dtype, shape=shape):
                    cls = nn.BatchNorm2d if len(shape) == 4 else \
                        nn.BatchNorm1d
                    ref = _bn(shape[1], cls=cls).cuda()
                    sync = fd.convert_sync_batchnorm(copy.deepcopy(ref))
                    sync.activation = "relu"
                    x = (torch.randn(*shape, device="cuda") + 3).to(dtype)
                    x1 = x.float().requires_grad_()
                    x2 = x.detach().clone().requires_grad_()
                    want = F.relu(ref(x1))
                    with torch.autocast("cuda", dtype, enabled=False):
                        got = sync(x2)
                    self.assertEqual(got.dtype, dtype)
                    g = torch.randn_like(want)
                    (want * g).sum().backward()
                    (got.float() * g).sum().backward()
                    _close(self, got, want, tol)
                    _close(self, x2.grad, x1.grad, 4 * tol)
                    _close(self, sync.weight.grad, ref.weight.grad, 4 * tol)
                    _close(self, sync.running_var, ref.running_var, 1e-5)


if __name__ == "__main__":
    unittest.main()
