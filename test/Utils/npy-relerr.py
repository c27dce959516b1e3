"""Compares .npy files pairwise: fails unless ||a - b|| / ||b|| <= tol.

usage: npy-relerr.py TOL A1 B1 [A2 B2 ...]
"""
import sys

import numpy as np

tol = float(sys.argv[1])
pairs = sys.argv[2:]
worst = 0.0
for a_path, b_path in zip(pairs[0::2], pairs[1::2]):
    a = np.load(a_path).astype(np.float64)
    b = np.load(b_path).astype(np.float64)
    if a.shape != b.shape:
        sys.exit(f"{a_path}: shape {a.shape} != {b_path}: {b.shape}")
    if np.isnan(a).any() or np.isnan(b).any():
        sys.exit(f"{a_path} or {b_path} holds NaN")
    norm = np.linalg.norm(b)
    err = np.linalg.norm(a - b) / (norm if norm else 1.0)
    worst = max(worst, err)
    if err > tol:
        sys.exit(f"{a_path} vs {b_path}: relative error {err:.3e} > {tol:.1e}")
print(f"max relative error {worst:.3e}")
