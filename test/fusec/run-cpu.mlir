// fusec run --device=cpu: seeded random inputs, .npy inputs and outputs.
// RUN: rm -rf %t && mkdir -p %t
// RUN: fusec run --device=cpu %s --device=cpu --seed=7 --output-dir=%t/a | FileCheck %s
// RUN: fusec run --device=cpu %s --seed=7 --output-dir=%t/b
// RUN: diff %t/a/result0.npy %t/b/result0.npy
// RUN: fusec run --device=cpu %s --seed=8 --output-dir=%t/c
// RUN: not diff -q %t/a/input0.npy %t/c/input0.npy
// Feeding the saved inputs back gives the same result.
// RUN: fusec run --device=cpu %s --input=%t/a/input0.npy --input=%t/a/input1.npy --input=%t/a/input2.npy --output-dir=%t/d | FileCheck %s --check-prefix=NPY
// RUN: diff %t/a/result0.npy %t/d/result0.npy
// RUN: diff %t/a/result1.npy %t/d/result1.npy

// CHECK: @two_outputs on cpu (reference), random inputs, seed 7
// CHECK-NEXT: result0 tensor<2x5x3xf16> mean {{.+}} min {{.+}} max {{.+}} rms
// CHECK-NEXT: result1 tensor<2x5x3xf16>
// CHECK-NEXT: wrote 5 .npy files to {{.+}}a
// NPY: inputs from .npy files

func.func @two_outputs(%x: tensor<2x5x3xf16>, %var: tensor<3xf16>, %s: tensor<3xf16>)
    -> (tensor<2x5x3xf16>, tensor<2x5x3xf16>) {
  // %var is drawn positive: it feeds a batch-norm variance.
  %0 = fuse.batch_norm %x, %s, %var, %s, %s : tensor<2x5x3xf16>, tensor<3xf16>
  %1 = fuse.gelu %0 : tensor<2x5x3xf16>
  %2 = fuse.sigmoid %x : tensor<2x5x3xf16>
  return %1, %2 : tensor<2x5x3xf16>, tensor<2x5x3xf16>
}
