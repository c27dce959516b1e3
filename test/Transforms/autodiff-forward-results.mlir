// A value the backward needs that is also a result of the graph is read
// again where the caller holds it (fusec.forward_results), not saved: saving
// it would cost the forward a copy of the result.
// RUN: fusec-opt %s -fusec-autodiff 2>&1 | FileCheck %s
// RUN: fusec-gradcheck %s | FileCheck %s --check-prefix=FD

// FD: @g: PASS

// CHECK: remark: read result #0 of fuse.relu in the backward from the graph's result #1 (not saved)
// CHECK: remark: @g: the forward saves 0 tensors (0 bytes) for the backward; the backward reads 1 of its results again
// CHECK: func.func @g_forward({{.*}}) -> (tensor<3x5xf32>, tensor<3x5xf32>)
// CHECK-SAME: fusec.num_results = 2 : i64
// CHECK: return %{{.+}}, %{{.+}} : tensor<3x5xf32>, tensor<3x5xf32>
// CHECK: func.func @g_backward(%[[A:.+]]: tensor<3x4xf32>, %[[B:.+]]: tensor<4x5xf32>, %[[Y:.+]]: tensor<3x5xf32>, %[[DM:.+]]: tensor<3x5xf32>, %[[DY:.+]]: tensor<3x5xf32>)
// CHECK-SAME: fusec.forward_args = array<i64: 0, 1>, fusec.forward_results = array<i64: 1>, fusec.grad_results = array<i64: 0, 1>, fusec.num_saved = 0 : i64
// CHECK: fuse.activation_grad %[[DY]], %[[Y]] {activation = #fuse.activation<relu>}
func.func @g(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = fuse.matmul %a, %b : tensor<3x4xf32>, tensor<4x5xf32>
  %y = fuse.relu %m : tensor<3x5xf32>
  return %m, %y : tensor<3x5xf32>, tensor<3x5xf32>
}
