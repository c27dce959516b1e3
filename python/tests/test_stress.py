"""Many threads at once through the Python module: compiling the same and
different graphs with one memory and one disk cache (everywhere), and
running them on the GPU, each thread on its own stream, some threads sharing
one Kernel (with PyTorch and a CUDA device; skipped without).

    python3 -m unittest discover -s python/tests -p 'test_stress.py' -v
"""

import tempfile
import threading
import unittest

import fusec

THREADS = 8
ROUNDS = 4


def _shared_graph():
    """softmax(a @ b) + c: a GEMM kernel and a row reduction."""
    return """func.func @shared(%a: tensor<37x19xf32>, %b: tensor<19x45xf32>, %c: tensor<37x45xf32>) -> tensor<37x45xf32> {
  %0 = fuse.matmul %a, %b : tensor<37x19xf32>, tensor<19x45xf32>
  %1 = fuse.softmax %0 : tensor<37x45xf32>
  %2 = fuse.add %1, %c : tensor<37x45xf32>, tensor<37x45xf32>
  return %2 : tensor<37x45xf32>
}
"""


def _own_graph(t):
    """relu(x * y + x) on a shape only thread `t` uses."""
    ty = "tensor<%dx61xf32>" % (t + 3)
    return f"""func.func @own{t}(%x: {ty}, %y: {ty}) -> {ty} {{
  %0 = fuse.mul %x, %y : {ty}, {ty}
  %1 = fuse.add %0, %x : {ty}, {ty}
  %2 = fuse.relu %1 : {ty}
  return %2 : {ty}
}}
"""


def _gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def _in_threads(work):
    """Runs work(t) on THREADS threads at once; re-raises the first
    failure."""
    errors = []
    start = threading.Barrier(THREADS)

    def body(t):
        try:
            start.wait()
            work(t)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((t, e))
    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        t, e = errors[0]
        raise AssertionError("thread %d of %d failed: %r (%d failed)"
                             % (t, THREADS, e, len(errors))) from e


class StressCPUTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.TemporaryDirectory()
        fusec.clear_memory_cache()

    def tearDown(self):
        self.cache.cleanup()

    def test_threads_compile_the_same_and_different_graphs(self):
        artifacts = {}
        sources = []
        lock = threading.Lock()

        def work(t):
            for r in range(ROUNDS):
                backend = ("ptx", "cuda")[(t + r) % 2]
                for key, text in ((("shared", backend), _shared_graph()),
                                  (("own%d" % t, backend), _own_graph(t))):
                    k = fusec.compile(text, arch="sm_90", backend=backend,
                                      cache_dir=self.cache.name)
                    with lock:
                        sources.append(k.source)
                        # One graph, one artifact, whoever compiled it.
                        self.assertEqual(artifacts.setdefault(key, k.artifact),
                                         k.artifact, key)
                if r == ROUNDS // 2 and t == 0:
                    # The disk cache must serve what the memory cache lost.
                    fusec.clear_memory_cache()

        _in_threads(work)
        self.assertEqual(len(artifacts), 2 + 2 * THREADS)
        self.assertIn("compiled", sources)
        self.assertIn("memory cache", sources)
        # Every artifact is the graph's own: the plan names its shapes.
        for (name, backend), artifact in artifacts.items():
            if name.startswith("own"):
                self.assertIn('"shape":[%d,61]' % (int(name[3:]) + 3),
                              artifact.replace(" ", ""))


@unittest.skipUnless(_gpu(), "needs PyTorch with a CUDA device")
class StressGPUTest(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.TemporaryDirectory()
        fusec.clear_memory_cache()

    def tearDown(self):
        self.cache.cleanup()

    def test_threads_compile_and_run_on_their_own_streams(self):
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        # One Kernel per backend that every thread calls at once.
        common = {b: fusec.compile(_shared_graph(), backend=b,
                                   cache_dir=self.cache.name)
                  for b in ("ptx", "cuda")}
        tol = fusec.tolerance("f32")

        def check(out, ref, what):
            err = ((out.double() - ref.double()).norm() /
                   ref.double().norm()).item()
            self.assertLessEqual(err, tol, what)

        def work(t):
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for r in range(ROUNDS * 4):
                    backend = ("ptx", "cuda")[(t + r) % 2]
                    a = torch.randn(37, 19, device="cuda")
                    b = torch.randn(19, 45, device="cuda")
                    c = torch.randn(37, 45, device="cuda")
                    ref = torch.softmax(a @ b, -1) + c
                    if r % 2:
                        k = common[backend]
                    else:
                        k = fusec.compile(_shared_graph(), backend=backend,
                                          cache_dir=self.cache.name)
                    out = torch.empty(37, 45, device="cuda")
                    out.fill_(float("nan"))
                    k(a, b, c, out=out)  # the fast path
                    check(out, ref, "shared, thread %d round %d" % (t, r))
                    check(k(a, b, c), ref, "shared (allocating), thread %d" % t)
                    x = torch.randn(t + 3, 61, device="cuda")
                    y = torch.randn(t + 3, 61, device="cuda")
                    own = fusec.compile(_own_graph(t), backend=backend,
                                        cache_dir=self.cache.name)
                    check(own(x, y), torch.relu(x * y + x),
                          "own graph, thread %d round %d" % (t, r))
            stream.synchronize()

        _in_threads(work)


if __name__ == "__main__":
    unittest.main()
