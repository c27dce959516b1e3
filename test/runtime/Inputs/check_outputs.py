"""Checks fusec-runner's results for the hand-written test artifacts.

    check_outputs.py scale_add DIR      result0 == 2 * x + y, result1 == y
    check_outputs.py half_to_bf16 DIR   result0 == bf16(3 * float32(x))

DIR holds input<i>.npy and result<i>.npy as fusec-runner --output-dir wrote
them. The expected values are computed exactly as the kernels compute them,
so the comparison is exact.
"""

import sys

import numpy as np


def load(directory, name):
    return np.load(f"{directory}/{name}.npy")


def round_to_bf16(x):
    """float32 -> nearest bfloat16 (ties to even), as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)


def main():
    graph, directory = sys.argv[1], sys.argv[2]
    if graph == "scale_add":
        x, y = load(directory, "input0"), load(directory, "input1")
        r0, r1 = load(directory, "result0"), load(directory, "result1")
        assert x.dtype == y.dtype == r0.dtype == r1.dtype == np.float32
        assert r0.shape == r1.shape == (3, 37), r0.shape
        np.testing.assert_array_equal(r0, (x + x) + y)
        np.testing.assert_array_equal(r1, y)
    elif graph == "half_to_bf16":
        x, r0 = load(directory, "input0"), load(directory, "result0")
        assert x.dtype == np.float16 and r0.dtype == np.float32
        assert r0.shape == (5, 7), r0.shape
        expected = round_to_bf16(x.astype(np.float32) * np.float32(3))
        np.testing.assert_array_equal(r0, expected)
    else:
        sys.exit(f"unknown graph {graph}")
    print(f"{graph}: ok")


if __name__ == "__main__":
    main()
