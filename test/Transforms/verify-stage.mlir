// Each stage's contract, checked at its boundary.
// RUN: fusec-opt %s --fusec-verify-stage=stage=kernels -split-input-file -verify-diagnostics
// RUN: fusec-opt %s --fusec-pipeline-tiled 2>/dev/null | fusec-opt --fusec-verify-stage=stage=tiled | FileCheck %s
// RUN: not fusec-opt %s --fusec-verify-stage=stage=lowered 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// CHECK: gpu.module @ok_kernels
// UNKNOWN: error: fusec-verify-stage: unknown stage 'lowered'; expected kernels or tiled
func.func @ok(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = fuse.kernel "k0_relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = fuse.relu %a : tensor<4xf32>
    fuse.yield %1 : tensor<4xf32>
  }
  %2 = fuse.reshape %0 : tensor<4xf32> to tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}

// -----

func.func @stray(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.tanh' op is outside every fuse.kernel after kernel formation}}
  %0 = fuse.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
