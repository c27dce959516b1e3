// The forward/backward pair's shape and attributes (Autodiff.h), on a graph
// whose results are arguments: no rule is involved.
// RUN: fusec-opt %s -fusec-autodiff 2>&1 | FileCheck %s
// RUN: fusec-opt %s -fusec-autodiff="wrt=1" 2>&1 | FileCheck %s --check-prefix=WRT

// CHECK: remark: @f: the forward saves 0 tensors (0 bytes) for the backward
// CHECK: func.func @f_forward(%[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<3xf32>) -> (tensor<4xf32>, tensor<3xf32>, tensor<4xf32>)
// CHECK-SAME: fusec.backward = "f_backward", fusec.num_results = 3 : i64
// CHECK-NEXT: return %[[X]], %[[Y]], %[[X]]
// CHECK: func.func @f_backward(%[[G0:.+]]: tensor<4xf32>, %[[G1:.+]]: tensor<3xf32>, %[[G2:.+]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<3xf32>)
// CHECK-SAME: fusec.forward = "f_forward", fusec.forward_args = array<i64>, fusec.forward_results = array<i64>, fusec.grad_results = array<i64: 0, 1, 2>, fusec.num_saved = 0 : i64, fusec.wrt = array<i64: 0, 1>
// CHECK-NEXT: %[[SUM:.+]] = fuse.add %[[G0]], %[[G2]]
// CHECK-NEXT: return %[[SUM]], %[[G1]]
// CHECK-NOT: func.func @f(

// WRT: func.func @f_backward(%[[G1:.+]]: tensor<3xf32>) -> tensor<3xf32>
// WRT-SAME: fusec.grad_results = array<i64: 1>
// WRT-SAME: fusec.wrt = array<i64: 1>
// WRT-NEXT: return %[[G1]]
func.func @f(%x: tensor<4xf32>, %y: tensor<3xf32>) -> (tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) {
  return %x, %y, %x : tensor<4xf32>, tensor<3xf32>, tensor<4xf32>
}
