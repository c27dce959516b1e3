// The tiled stage admits launch plans and kernel modules only.
// RUN: fusec-opt %s --fusec-verify-stage=stage=tiled -split-input-file -verify-diagnostics

func.func @leftover(%x: memref<4xf32>, %y: memref<4xf32>) attributes {fusec.num_inputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op has no meaning in a launch plan}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return
}

// -----

func.func @fuse_left(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'fuse.relu' op remains after tiling}}
  %0 = fuse.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
