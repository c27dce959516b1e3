//===- FuseInterfaces.td - Interfaces of fuse ops ----------*- tablegen -*-===//

#ifndef FUSE_INTERFACES_TD
#define FUSE_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Fuse_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::fuse";
  let description = [{
    An op's gradient rule, kept beside the op: `fusec-autodiff` walks a
    graph backwards and asks each op to add its operands' gradients, built
    from its results' gradients, to a `GradientBuilder` (FuseGradient.h).
    An op without this interface cannot be differentiated; the pass says so
    at the op.
  }];
  let methods = [
    InterfaceMethod<[{
        Adds the gradient of each differentiable operand that `gb` asks for
        (`gb.wanted(operand)`), built at `gb.builder()` in the backward
        function from `gb.gradient(result)` and `gb.forward(value)`. A
        result no gradient reaches has a null gradient; the rule treats it
        as zero. Fails with an error at the op when it cannot build one.
      }], "::mlir::LogicalResult", "buildGradient",
      (ins "::mlir::fuse::GradientBuilder &":$gb)>,
    InterfaceMethod<[{
        Whether result `index` carries a gradient (the statistics a batch
        norm also returns do not).
      }], "bool", "isDifferentiableResult", (ins "unsigned":$index), [{}],
      [{ return true; }]>,
    InterfaceMethod<[{
        Whether operand `index` has a gradient (running statistics, which
        are buffers, do not).
      }], "bool", "isDifferentiableOperand", (ins "unsigned":$index), [{}],
      [{ return true; }]>,
    InterfaceMethod<[{
        Called before anything is differentiated: rewrites the op into the
        form whose results its rule reads (an attention that also returns
        its row log-sum-exp), replacing its uses, and returns the op to
        differentiate (itself by default).
      }], "::mlir::Operation *", "prepareForGradient", (ins), [{}],
      [{ return $_op; }]>,
  ];
}

#endif // FUSE_INTERFACES_TD
