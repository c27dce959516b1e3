// fusec parses, verifies and prints a graph; from a file, stdin or to -o.
// RUN: fusec %s | FileCheck %s --enable-var-scope
// RUN: fusec < %s | FileCheck %s --enable-var-scope
// RUN: rm -rf %t && mkdir -p %t && fusec %s -o %t/out.mlir && FileCheck %s --enable-var-scope < %t/out.mlir
// RUN: fusec %examples/resnet_block.mlir | FileCheck %s --check-prefix=RESNET
// RUN: fusec %examples/mobilenet_block.mlir | FileCheck %s --check-prefix=MOBILENET
// RUN: fusec %examples/transformer_block.mlir | FileCheck %s --check-prefix=TRANSFORMER

// CHECK-LABEL: func.func @conv_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x17x23x3xf32>, %[[W:.+]]: tensor<5x3x3x3xf32>)
// CHECK: %[[C:.+]] = fuse.conv2d %[[X]], %[[W]] {padding = array<i64: 1, 1>}
// CHECK: %[[R:.+]] = fuse.relu %[[C]] : tensor<1x17x23x5xf32>
// CHECK: return %[[R]]
func.func @conv_relu(%x: tensor<1x17x23x3xf32>, %w: tensor<5x3x3x3xf32>) -> tensor<1x17x23x5xf32> {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<1x17x23x3xf32>, tensor<5x3x3x3xf32>
  %1 = fuse.relu %0 : tensor<1x17x23x5xf32>
  return %1 : tensor<1x17x23x5xf32>
}

// RESNET-LABEL: func.func @resnet_block
// RESNET-COUNT-2: fuse.conv2d
// RESNET: fuse.add
// MOBILENET: fuse.conv2d {{.+}} {groups = 192 : i64, padding = array<i64: 1, 1>}
// TRANSFORMER: fuse.attention {{.+}} {causal}
