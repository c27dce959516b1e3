//===- FuseDialect.td - The fuse graph dialect -------------*- tablegen -*-===//

#ifndef FUSE_DIALECT_TD
#define FUSE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Fuse_Dialect : Dialect {
  let name = "fuse";
  let cppNamespace = "::mlir::fuse";
  let summary = "Graphs of deep-learning operators with tensor semantics";
  let description = [{
    The `fuse` dialect describes a graph of deep-learning operators: one
    `func.func` per graph, whose arguments are the activations and weights and
    whose results are the graph outputs. Every value is a statically shaped
    tensor of `f32`, `f16` or `bf16`; there is no mutation and no control
    flow. Operators verify shapes, dtypes and layouts, and infer their result
    types where the result follows from the operands, so a hand-written graph
    stays short and a wrong one fails with a located error.

    Layouts. 4-D activations are `nchw` or `nhwc` (`#fuse.layout<...>`,
    default `nhwc`). Convolution filters follow the activation layout: `nchw`
    pairs with OIHW filters `[Co, Ci/groups, Kh, Kw]`, `nhwc` with OHWI
    filters `[Co, Kh, Kw, Ci/groups]` (cuDNN's and PyTorch's channels-last
    weight layout).

    Numerics. The semantics of every op are those of the CPU reference
    interpreter (`lib/Reference`): float64 arithmetic with no intermediate
    rounding; only `fuse.cast` and the graph's inputs and outputs round to
    their element type.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Fuse_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fuse_Dialect, mnemonic, traits>;

#endif // FUSE_DIALECT_TD
