// fuse.matmul: every transpose flag, batch axes broadcast.
// RUN: fusec-gradcheck %s --func=plain | FileCheck %s --check-prefix=PLAIN
// RUN: fusec-gradcheck %s --func=tl | FileCheck %s --check-prefix=TL
// RUN: fusec-gradcheck %s --func=tr | FileCheck %s --check-prefix=TR
// RUN: fusec-gradcheck %s --func=tl_tr | FileCheck %s --check-prefix=TL-TR
// RUN: fusec-gradcheck %s --func=batch | FileCheck %s --check-prefix=BATCH
// RUN: fusec-gradcheck %s --func=bcast | FileCheck %s --check-prefix=BCAST
// RUN: fusec-gradcheck %s --func=bcast_one | FileCheck %s --check-prefix=BCAST-ONE
// RUN: fusec-gradcheck %s --func=bcast_tl | FileCheck %s --check-prefix=BCAST-TL

// PLAIN: @plain: PASS
func.func @plain(%a: tensor<5x3xf32>, %b: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b : tensor<5x3xf32>, tensor<3x4xf32>
  return %y : tensor<5x4xf32>
}

// TL: @tl: PASS
func.func @tl(%a: tensor<3x5xf32>, %b: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs} : tensor<3x5xf32>, tensor<3x4xf32>
  return %y : tensor<5x4xf32>
}

// TR: @tr: PASS
func.func @tr(%a: tensor<5x3xf32>, %b: tensor<4x3xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_rhs} : tensor<5x3xf32>, tensor<4x3xf32>
  return %y : tensor<5x4xf32>
}

// TL-TR: @tl_tr: PASS
func.func @tl_tr(%a: tensor<3x5xf32>, %b: tensor<4x3xf32>) -> tensor<5x4xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<3x5xf32>, tensor<4x3xf32>
  return %y : tensor<5x4xf32>
}

// BATCH: @batch: PASS
func.func @batch(%a: tensor<2x5x3xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x5x4xf32> {
  %y = fuse.matmul %a, %b : tensor<2x5x3xf32>, tensor<2x3x4xf32>
  return %y : tensor<2x5x4xf32>
}

// BCAST: @bcast: PASS
func.func @bcast(%a: tensor<2x3x5x4xf32>, %b: tensor<3x4x6xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.matmul %a, %b : tensor<2x3x5x4xf32>, tensor<3x4x6xf32>
  return %y : tensor<2x3x5x6xf32>
}

// BCAST-ONE: @bcast_one: PASS
func.func @bcast_one(%a: tensor<2x1x5x4xf32>, %b: tensor<3x6x4xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.matmul %a, %b {transpose_rhs} : tensor<2x1x5x4xf32>, tensor<3x6x4xf32>
  return %y : tensor<2x3x5x6xf32>
}

// BCAST-TL: @bcast_tl: PASS
func.func @bcast_tl(%a: tensor<3x4x5xf32>, %b: tensor<2x1x4x6xf32>) -> tensor<2x3x5x6xf32> {
  %y = fuse.matmul %a, %b {transpose_lhs} : tensor<3x4x5xf32>, tensor<2x1x4x6xf32>
  return %y : tensor<2x3x5x6xf32>
}
