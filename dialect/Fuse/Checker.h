//===- Checker.h - Shared checks of fuse ops' type inference -*- C++ -*-===//
//
// Private to the dialect: FuseOps.cpp and FuseTrainingOps.cpp check their
// operands with it, so both give the same located messages.
//
//===----------------------------------------------------------------------===//

#ifndef FUSE_CHECKER_H
#define FUSE_CHECKER_H

#include "Fuse/FuseOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::fuse::detail {
inline std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return s;
}

inline const char *layoutName(Layout layout) {
  return layout == Layout::NCHW ? "nchw" : "nhwc";
}

/// Checks the operands of one op during type inference. Errors go to the
/// op's location, prefixed like the verifier's own ("'fuse.x' op ..."); when
/// inference runs without a location it fails silently.
class Checker {
public:
  Checker(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Ts>
  LogicalResult fail(const Ts &...parts) {
    if (loc) {
      InFlightDiagnostic diag = emitError(*loc);
      diag << "'" << opName << "' op ";
      (diag << ... << parts);
    }
    return failure();
  }

  /// The static tensor type of operand `name`, or an error.
  FailureOr<RankedTensorType> tensor(Value value, StringRef name) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape() ||
        !isa<Float32Type, Float16Type, BFloat16Type>(type.getElementType())) {
      (void)fail("operand '", name,
                 "' must be a statically shaped tensor of f32, f16 or bf16, "
                 "found ",
                 value.getType());
      return failure();
    }
    // Before any shape arithmetic: an extent of 0 would divide by zero, and
    // a product past int64 would wrap.
    std::string problem = shapeProblem(type);
    if (!problem.empty()) {
      (void)fail("operand '", name, "' ", shapeStr(type.getShape()), " ",
                 problem);
      return failure();
    }
    return type;
  }

  /// The tensor type of `name` if it has rank `rank`.
  FailureOr<RankedTensorType> tensorOfRank(Value value, StringRef name,
                                           int64_t rank, StringRef what = "") {
    FailureOr<RankedTensorType> type = tensor(value, name);
    if (failed(type))
      return failure();
    if (type->getRank() != rank) {
      (void)fail("operand '", name, "' must have rank ", rank, what,
                 ", found rank ", type->getRank(), " (",
                 shapeStr(type->getShape()), ")");
      return failure();
    }
    return type;
  }

  LogicalResult sameElementType(RankedTensorType ref, StringRef refName,
                                RankedTensorType other, StringRef otherName) {
    if (ref.getElementType() == other.getElementType())
      return success();
    return fail("operand '", otherName, "' has element type ",
                other.getElementType(), " but '", refName, "' has ",
                ref.getElementType(), "; both must match");
  }

  LogicalResult hasShape(RankedTensorType type, StringRef name,
                         ArrayRef<int64_t> expected, StringRef why) {
    if (type.getShape() == expected)
      return success();
    return fail("operand '", name, "' must have shape ", shapeStr(expected),
                " (", why, "), found ", shapeStr(type.getShape()));
  }

  /// A 2-element attribute of positive values.
  LogicalResult positivePair(ArrayRef<int64_t> values, StringRef name) {
    if (values.size() != 2)
      return fail("attribute '", name, "' must have 2 values, found ",
                  values.size());
    if (values[0] < 1 || values[1] < 1)
      return fail("attribute '", name, "' must be positive, found ",
                  shapeStr(values));
    return success();
  }

  LogicalResult padding(ArrayRef<int64_t> values) {
    if (values.size() != 2 && values.size() != 4)
      return fail("attribute 'padding' must have 2 values [ph, pw] or 4 "
                  "values [top, bottom, left, right], found ",
                  values.size());
    if (llvm::any_of(values, [](int64_t v) { return v < 0; }))
      return fail("attribute 'padding' must be non-negative, found ",
                  shapeStr(values));
    return success();
  }

  /// Normalises a possibly negative `axis` attribute into [0, rank).
  FailureOr<int64_t> axis(int64_t axis, int64_t rank, StringRef name) {
    if (axis < -rank || axis >= rank) {
      (void)fail("attribute '", name, "' = ", axis,
                 " is out of range for rank ", rank, " (expected ", -rank,
                 " to ", rank - 1, ")");
      return failure();
    }
    return axis < 0 ? axis + rank : axis;
  }

  /// Operand 'input' of rank 1 or more and its `axis` attribute, normalised.
  FailureOr<std::pair<RankedTensorType, int64_t>> inputAndAxis(Value input,
                                                               int64_t axis) {
    auto in = tensor(input, "input");
    if (failed(in))
      return failure();
    if (in->getRank() < 1) {
      (void)fail("operand 'input' must have rank 1 or more, found rank 0");
      return failure();
    }
    auto normalised = this->axis(axis, in->getRank(), "axis");
    if (failed(normalised))
      return failure();
    return std::pair(*in, *normalised);
  }

  /// NumPy broadcast of `a` and `b`, which are named in the error.
  FailureOr<SmallVector<int64_t>> broadcast(ArrayRef<int64_t> a, StringRef an,
                                            ArrayRef<int64_t> b,
                                            StringRef bn) {
    size_t rank = std::max(a.size(), b.size());
    SmallVector<int64_t> result(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
      int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
      if (da != db && da != 1 && db != 1) {
        (void)fail("operands '", an, "' ", shapeStr(a), " and '", bn, "' ",
                   shapeStr(b), " are not broadcast-compatible: dimension ",
                   i, " from the right is ", da, " vs ", db);
        return failure();
      }
      result[rank - 1 - i] = da == 1 ? db : da;
    }
    return result;
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

inline void setResult(SmallVectorImpl<Type> &results, ArrayRef<int64_t> shape,
                      Type elementType) {
  results.push_back(RankedTensorType::get(shape, elementType));
}

/// The custom parser calls inferReturnTypes before the op exists: the
/// attributes are still in a dictionary and default-valued ones are missing.
/// Makes `adaptor` see them as the finished op will, and fails (with the
/// verifier's message at `loc`, if there is one) where a required attribute
/// is missing or of the wrong kind: the verifier has not run yet, and a
/// `split` without `axis` once crashed the parser.
template <typename OpTy>
LogicalResult completeAdaptor(MLIRContext *ctx,
                                     std::optional<Location> loc,
                                     typename OpTy::Adaptor &adaptor) {
  typename OpTy::Properties props = adaptor.getProperties();
  if (DictionaryAttr attrs = adaptor.getAttributes())
    (void)OpTy::setPropertiesFromAttr(
        props, attrs, [&] { return emitError(UnknownLoc::get(ctx)); });
  OpTy::populateDefaultProperties(OperationName(OpTy::getOperationName(), ctx),
                                  props);
  adaptor = typename OpTy::Adaptor(adaptor.getOperands(),
                                   adaptor.getAttributes(), props);
  // Without a location the caller wants no diagnostics.
  std::optional<ScopedDiagnosticHandler> quiet;
  if (!loc)
    quiet.emplace(ctx, [](Diagnostic &) { return success(); });
  return adaptor.verify(loc.value_or(UnknownLoc::get(ctx)));
}



/// Output extent of a sliding window; fails (reporting `what`) when the
/// window does not fit the padded input or its extents overflow int64.
inline FailureOr<int64_t> windowOutput(Checker &c, int64_t in, int64_t padLo,
                                       int64_t padHi,
                                       std::optional<int64_t> window,
                                       int64_t stride, StringRef what) {
  std::optional<int64_t> padded = llvm::checkedAdd(in, padLo);
  if (padded)
    padded = llvm::checkedAdd(*padded, padHi);
  if (!window || !padded) {
    (void)c.fail(what, " the window or the padded input extent overflows "
                       "int64 (input ",
                 in, ", padding ", padLo, " and ", padHi, ")");
    return failure();
  }
  int64_t span = *padded - *window;
  if (span < 0) {
    (void)c.fail(what, " window of extent ", *window,
                 " does not fit the padded input extent ", *padded);
    return failure();
  }
  return span / stride + 1;
}

/// The operands of an attention (and of its gradient): Q [B, Hq, Nq, D],
/// K [B, Hkv, Nk, D], V [B, Hkv, Nk, Dv], an additive mask broadcastable to
/// the scores. Returns the output's type [B, Hq, Nq, Dv].
FailureOr<RankedTensorType> checkAttention(Checker &c, Value query, Value key,
                                           Value value, Value mask);
/// An attention's `scale`, or 1 / sqrt(D) when absent.
double attentionScale(std::optional<APFloat> scale, RankedTensorType query);

} // namespace mlir::fuse::detail

#endif // FUSE_CHECKER_H
