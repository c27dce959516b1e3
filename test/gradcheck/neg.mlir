// fuse.neg.
// RUN: fusec-gradcheck %s --func=f | FileCheck %s --check-prefix=F

// F: @f: PASS
func.func @f(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = fuse.neg %x : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
