"""Tests of fusec.tune (the autotuner through the C API). Tuning times
kernels on a GPU, so on a CPU-only machine these check what comes before
the GPU: the argument checks, an invalid graph, the database's warnings
through the progress callback, an exception raised in a callback, and the
no-GPU error. The tuning itself runs where the runtime finds a GPU and is
skipped elsewhere.

    python3 -m unittest discover -s python/tests -p 'test_tune.py' -v
"""

import ctypes
import json
import os
import tempfile
import unittest
import warnings

import fusec
from fusec import _capi

LINEAR = """func.func @ffn(%x: tensor<128x256xf16>, %w: tensor<256x256xf16>)
    -> tensor<128x256xf16> {
  %y = fuse.linear %x, %w : tensor<128x256xf16>, tensor<256x256xf16>
  return %y : tensor<128x256xf16>
}
"""


def _gpu():
    count = ctypes.c_int()
    return _capi.runtime.fusec_device_count(ctypes.byref(count)) == 0 and \
        count.value > 0


class TuneTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.dir.name, "tuning.json")

    def tearDown(self):
        self.dir.cleanup()

    def status(self, *args, **kwargs):
        with self.assertRaises(fusec.Error) as caught:
            fusec.tune(*args, **kwargs)
        return caught.exception.status, str(caught.exception)

    def test_argument_types(self):
        with self.assertRaisesRegex(TypeError, "fusec.Graph or MLIR text"):
            fusec.tune(42, tuning_db=self.db)
        with self.assertRaisesRegex(TypeError, "progress must be callable"):
            fusec.tune(LINEAR, tuning_db=self.db, progress="print")
        with self.assertRaisesRegex(TypeError, "repeat must be an int"):
            fusec.tune(LINEAR, tuning_db=self.db, repeat=-1)
        with self.assertRaisesRegex(TypeError, "device must be an int"):
            fusec.tune(LINEAR, tuning_db=self.db, device=True)

    def test_invalid_arguments(self):
        # Checked before a GPU is looked for: the same on any machine.
        for options, message in (
                (dict(repeat=0), "repeat) must be at least 1"),
                (dict(fp32_math="fp64"), "fp32 math must be ieee or tf32"),
                (dict(tuning_db="none"), "writes a tuning database"),
                (dict(arch="sm_10"), "sm_10")):
            options.setdefault("tuning_db", self.db)
            status, text = self.status(LINEAR, **options)
            self.assertEqual(status, "invalid_argument", text)
            self.assertIn(message, text)
            self.assertTrue(text.startswith("<graph>: error: "), text)
        self.assertFalse(os.path.exists(self.db))

    def test_invalid_graph(self):
        status, text = self.status(LINEAR.replace("%w :", "%v :"),
                                   tuning_db=self.db, name="ffn.mlir")
        self.assertEqual(status, "invalid_graph")
        self.assertRegex(text, r"^ffn\.mlir:3:\d+: error: use of undeclared")
        status, text = self.status(LINEAR, tuning_db=self.db, entry="main")
        self.assertEqual(status, "invalid_graph")
        self.assertIn("no function @main", text)

    def test_database_warning_through_the_callback(self):
        # The database is read before the GPU is looked for, so its
        # warnings come through the C callback on any machine.
        with open(self.db, "w") as f:
            f.write("{")
        lines = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fusec.tune(LINEAR, tuning_db=self.db, progress=lines.append)
            except fusec.Error as e:
                self.assertEqual(e.status, "no_device")
                self.assertFalse(_gpu())
        texts = [str(w.message) for w in caught
                 if issubclass(w.category, RuntimeWarning)]
        self.assertTrue(any("not valid JSON" in t for t in texts), texts)
        self.assertTrue(all(isinstance(l, str) for l in lines))

    def test_callback_exception_is_raised(self):
        # An exception in a callback cannot cross the C API: it is raised
        # when tune returns (a warning made an error here).
        with open(self.db, "w") as f:
            f.write("{")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with self.assertRaisesRegex(RuntimeWarning, "not valid JSON"):
                fusec.tune(LINEAR, tuning_db=self.db)

    @unittest.skipIf(_gpu(), "a GPU is there")
    def test_no_gpu(self):
        lines = []
        status, text = self.status(LINEAR, tuning_db=self.db,
                                   progress=lines.append)
        self.assertEqual(status, "no_device")
        self.assertIn("fusec tune measures on a GPU", text)
        self.assertEqual(lines, [])
        self.assertFalse(os.path.exists(self.db))

    @unittest.skipUnless(_gpu(), "needs a GPU")
    def test_tune_on_gpu(self):
        lines = []
        entries = fusec.tune(LINEAR, tuning_db=self.db, repeat=2,
                             progress=lines.append)
        self.assertRegex(lines[0], r"^tuning @ffn on .* 1 kernels; "
                                   r"database ")
        self.assertRegex(lines[1], r"^\[1/1\] k0_linear \(linear ")
        self.assertRegex(lines[-1], r"^wrote %d entries to " % len(entries))
        with open(self.db) as f:
            db = json.load(f)
        self.assertEqual(len(db["entries"]), len(entries))
        for e in entries:
            self.assertEqual(e["kernel"], "k0_linear")
            self.assertTrue(e["tile"].startswith("#fuse.tile<"))
            self.assertGreater(e["heuristic_ms"], 0)
            self.assertGreater(e["tuned_ms"], 0)
        # A compilation takes the entry.
        kernel = fusec.compile(LINEAR, tuning_db=self.db, cache=False)
        if entries:
            self.assertIn("tuning database", kernel.artifact)


if __name__ == "__main__":
    unittest.main()
