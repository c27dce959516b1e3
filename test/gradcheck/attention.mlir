// fuse.attention: fuse.attention_grad from the operands, the output and the
// row log-sum-exp the forward returns (prepareForGradient asks for it).
// Plain (Dv != D, a given scale), causal with more queries than keys and
// fewer, grouped-query heads (dK/dV summed over the group), and an additive
// mask broadcast over batch and heads: without it (--wrt) and with its
// gradient (dS summed over the axes it was broadcast along), causal and
// grouped too.
// RUN: fusec-gradcheck %s --func=plain | FileCheck %s --check-prefix=PLAIN
// RUN: fusec-gradcheck %s --func=causal_tall | FileCheck %s --check-prefix=TALL
// RUN: fusec-gradcheck %s --func=causal_wide | FileCheck %s --check-prefix=WIDE
// RUN: fusec-gradcheck %s --func=gqa | FileCheck %s --check-prefix=GQA
// RUN: fusec-gradcheck %s --func=masked --wrt=0,1,2 | FileCheck %s --check-prefix=MASK
// RUN: fusec-gradcheck %s --func=masked | FileCheck %s --check-prefix=MASKGRAD
// RUN: fusec-gradcheck %s --func=masked_causal_gqa | FileCheck %s --check-prefix=MASKCG
// RUN: fusec-opt %s -fusec-autodiff="func=plain" | FileCheck %s --check-prefix=IR
// RUN: fusec-opt %s -fusec-autodiff="func=masked" | FileCheck %s --check-prefix=IRMASK
// RUN: fusec-opt %s -fusec-autodiff="func=masked" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: fusec-opt %s -fusec-autodiff="func=masked wrt=0,1,2" | FileCheck %s --check-prefix=IRNOMASK
// RUN: fusec-opt %s -fusec-autodiff="func=causal_tall deterministic=true" | FileCheck %s --check-prefix=DET

// PLAIN: @plain: PASS
func.func @plain(%q: tensor<2x1x3x4xf32>, %k: tensor<2x1x5x4xf32>, %v: tensor<2x1x5x3xf32>) -> tensor<2x1x3x3xf32> {
  %o = fuse.attention %q, %k, %v {scale = 0.5 : f64} : tensor<2x1x3x4xf32>, tensor<2x1x5x4xf32>, tensor<2x1x5x3xf32>
  %r = fuse.mul %o, %o : tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>
  return %r : tensor<2x1x3x3xf32>
}

// TALL: @causal_tall: PASS
func.func @causal_tall(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x5x4xf32> {
  %o = fuse.attention %q, %k, %v {causal} : tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
  %r = fuse.tanh %o : tensor<1x2x5x4xf32>
  return %r : tensor<1x2x5x4xf32>
}

// WIDE: @causal_wide: PASS
func.func @causal_wide(%q: tensor<1x1x3x2xf32>, %k: tensor<1x1x6x2xf32>, %v: tensor<1x1x6x5xf32>) -> tensor<1x1x3x5xf32> {
  %o = fuse.attention %q, %k, %v {causal} : tensor<1x1x3x2xf32>, tensor<1x1x6x2xf32>, tensor<1x1x6x5xf32>
  %r = fuse.mul %o, %o : tensor<1x1x3x5xf32>, tensor<1x1x3x5xf32>
  return %r : tensor<1x1x3x5xf32>
}

// GQA: @gqa: PASS
func.func @gqa(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x4x3x4xf32> {
  %o = fuse.attention %q, %k, %v : tensor<1x4x3x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  %r = fuse.tanh %o : tensor<1x4x3x4xf32>
  return %r : tensor<1x4x3x4xf32>
}

// MASK: @masked: PASS (3 arguments
// MASKGRAD: @masked: PASS (4 arguments
func.func @masked(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x5x4xf32>, %v: tensor<2x2x5x4xf32>, %m: tensor<3x5xf32>) -> tensor<2x2x3x4xf32> {
  %o = fuse.attention %q, %k, %v, %m : tensor<2x2x3x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>, tensor<3x5xf32>
  %r = fuse.mul %o, %o : tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>
  return %r : tensor<2x2x3x4xf32>
}

// MASKCG: @masked_causal_gqa: PASS (4 arguments
func.func @masked_causal_gqa(%q: tensor<2x4x5x4xf32>, %k: tensor<2x2x6x4xf32>, %v: tensor<2x2x6x3xf32>, %m: tensor<2x1x5x6xf32>) -> tensor<2x4x5x3xf32> {
  %o = fuse.attention %q, %k, %v, %m {causal} : tensor<2x4x5x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x3xf32>, tensor<2x1x5x6xf32>
  %r = fuse.tanh %o : tensor<2x4x5x3xf32>
  return %r : tensor<2x4x5x3xf32>
}

// The mask's gradient: attention_grad's dS, summed over the batch and heads
// it was broadcast along; without one wanted, no dS.
// IRMASK-LABEL: func.func @masked_backward
// IRMASK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DS:.*]] = fuse.attention_grad {{.+}} {return_score_grad}
// IRMASK: %[[SUM:.*]] = fuse.reduce_sum %[[DS]] {axes = array<i64: 0, 1>} : tensor<2x2x3x5xf32>
// IRMASK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]] :
// REMARK: remark: the mask's gradient stores the scores' gradient 'tensor<2x2x3x5xf32>' (240 bytes) before summing it to the mask's shape
// IRNOMASK-LABEL: func.func @masked_backward
// IRNOMASK-NOT: return_score_grad
// IRNOMASK: return

// The forward returns the log-sum-exp and saves it beside the output.
// IR-LABEL: func.func @plain_forward
// IR: %[[O:.*]], %[[LSE:.*]] = fuse.attention %{{.*}} {return_lse, scale = 5.000000e-01 : f64}
// IR: return %{{.*}}, %[[O]], %[[LSE]] : tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<2x1x3xf32>
// IR-LABEL: func.func @plain_backward
// IR: fuse.attention_grad %arg0, %arg1, %arg2, %arg3, %{{.*}}, %arg4 {scale = 5.000000e-01 : f64} : tensor<2x1x3x4xf32>, tensor<2x1x5x4xf32>, tensor<2x1x5x3xf32>, tensor<2x1x3x3xf32>, tensor<2x1x3xf32>

// deterministic=true asks the rule for the ordered dQ.
// DET-LABEL: func.func @causal_tall_backward
// DET: fuse.attention_grad {{.+}} {causal, deterministic} :
