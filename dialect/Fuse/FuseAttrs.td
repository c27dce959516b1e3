//===- FuseAttrs.td - Attributes of the fuse dialect -------*- tablegen -*-===//

#ifndef FUSE_ATTRS_TD
#define FUSE_ATTRS_TD

include "FuseDialect.td"
include "mlir/IR/EnumAttr.td"

def Fuse_Layout : I32EnumAttr<"Layout", "layout of 4-D activations", [
    I32EnumAttrCase<"NCHW", 0, "nchw">,
    I32EnumAttrCase<"NHWC", 1, "nhwc">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_LayoutAttr : EnumAttr<Fuse_Dialect, Fuse_Layout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the normal CDF", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Tanh", 1, "tanh">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_GeluApproximationAttr
    : EnumAttr<Fuse_Dialect, Fuse_GeluApproximation, "gelu_approx"> {
  let assemblyFormat = "`<` $value `>`";
}

def Fuse_UpsampleMode : I32EnumAttr<"UpsampleMode", "interpolation mode", [
    I32EnumAttrCase<"Nearest", 0, "nearest">,
    I32EnumAttrCase<"Bilinear", 1, "bilinear">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::fuse";
}
def Fuse_UpsampleModeAttr
    : EnumAttr<Fuse_Dialect, Fuse_UpsampleMode, "upsample_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // FUSE_ATTRS_TD
