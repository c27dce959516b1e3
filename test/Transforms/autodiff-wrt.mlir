// fusec-autodiff with wrt= naming an argument no gradient reaches.
// RUN: fusec-opt %s -fusec-autodiff="wrt=1" -verify-diagnostics
// RUN: not fusec-opt %s -fusec-autodiff="wrt=0,7" 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: fusec-autodiff: argument #7 does not exist; @f has 2

func.func @f(%x: tensor<4xf32>,
             // expected-error @below {{fusec-autodiff: argument #1 of @f reaches no differentiable result}}
             %y: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
