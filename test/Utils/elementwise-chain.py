"""Prints a graph of one chain of N elementwise ops (relu, sigmoid, tanh and
adds of the input), which fusion puts into one kernel.

    elementwise-chain.py N
"""
import sys

n = int(sys.argv[1])
ty = "tensor<8x16xf32>"
ops = ["relu", "sigmoid", "tanh"]
print(f"func.func @chain(%x: {ty}) -> {ty} {{")
print(f"  %v0 = fuse.relu %x : {ty}")
for i in range(1, n):
    if i % 2:
        print(f"  %v{i} = fuse.{ops[i % 3]} %v{i - 1} : {ty}")
    else:
        print(f"  %v{i} = fuse.add %v{i - 1}, %x : {ty}, {ty}")
print(f"  return %v{n - 1} : {ty}")
print("}")
