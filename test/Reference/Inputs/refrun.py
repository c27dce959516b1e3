"""Runs one graph through the float64 reference interpreter (`fusec run
--device=cpu`) on given inputs and returns its results as float64 arrays.
Shared by the training-op tests of test/Reference."""

import os
import shutil
import subprocess

import numpy as np

NPY_DTYPE = {"f32": np.float32, "f16": np.float16, "bf16": np.float32}


def tensor_type(shape, dt="f32"):
    if len(shape) == 0:
        return "tensor<%s>" % dt
    return "tensor<%sx%s>" % ("x".join(str(s) for s in shape), dt)


def run_graph(fusec, workdir, name, mlir, inputs):
    """Writes `mlir` (one func) and `inputs` (arrays, saved as float32 or
    float16 if already float16) under workdir/name, runs fusec and returns
    (results, error): a list of float64 arrays, or None and fusec's
    message."""
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    graph = os.path.join(d, "graph.mlir")
    with open(graph, "w") as f:
        f.write(mlir)
    cmd = [fusec, "run", graph, "--device=cpu", "--output-dir=" + os.path.join(d, "out")]
    for i, a in enumerate(inputs):
        p = os.path.join(d, "in%d.npy" % i)
        a = np.asarray(a)
        np.save(p, a if a.dtype == np.float16 else a.astype(np.float32))
        cmd.append("--input=" + p)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    if proc.returncode != 0:
        return None, "fusec exited %d: %s" % (proc.returncode, proc.stderr.strip())
    results, i = [], 0
    while os.path.exists(os.path.join(d, "out", "result%d.npy" % i)):
        results.append(np.load(os.path.join(d, "out", "result%d.npy" % i)).astype(np.float64))
        i += 1
    return results, None
