#!/usr/bin/env bash
# Mechanical edits of issue 24 item 3 (KernelBuilder by composition) in the
# files of lib/Conversion/FuseToGPU that the kb branch does not own, so that
# they can be re-applied on top of other branches' changes. Idempotent: run
# it again and nothing changes. Delete it once merged.
#  - .cpp: calls of the epilogue and of the view reads go through the
#    KernelBuilder members `epilogue` and `views`; the file says
#    `using namespace mlir; using namespace mlir::fuse;` and, where it
#    names it, `using fusec::TargetDescription;` (the headers no longer do).
#  - .h: names from mlir, mlir::fuse and llvm are qualified (no
#    `using namespace` in headers).
set -euo pipefail
cd "$(dirname "$0")/../lib/Conversion/FuseToGPU"

owned=" KernelBuilder.h KernelBuilder.cpp Builders.h Builders.cpp
  EpilogueEvaluator.h EpilogueEvaluator.cpp ViewReader.h ViewReader.cpp
  Elementwise.cpp DirectConv.cpp RowReduction.cpp PoolResample.cpp Gather.cpp
  AttentionDirect.cpp GemmSimt.cpp GemmEpilogue.cpp MmaSync.h MmaSync.cpp
  Wgmma.h Wgmma.cpp "
files=()
for f in *.cpp *.h; do
  [[ " $(echo $owned) " == *" $f "* ]] || files+=("$f")
done

for f in "${files[@]}"; do
  case "$f" in
  *.cpp)
    perl -0pi -e '
      s/(?<![\w.>:])(storeResults|storeVectorResults|evalChannel|channelOperands|loadFullInputs|fullInputs|evalAt)\(/epilogue.$1(/g;
      s/(?<![\w.>:])(storedCoords|readThroughViews|viewSource|loadThroughViews|canLoadVectorThroughViews|loadVectorThroughViews|loadRopeAngles)\(/views.$1(/g;
      unless (/^using namespace mlir;$/m) {
        s/^(using namespace )/using namespace mlir;\nusing namespace mlir::fuse;\n$1/m
          or s/\A(.*^#include [^\n]*\n)/$1\nusing namespace mlir;\nusing namespace mlir::fuse;\n/ms;
      }
      s/^(using namespace mlir::fuse;\n)/$1using fusec::TargetDescription;\n/m
        if /\bTargetDescription\b/ && !/^using fusec::TargetDescription;$/m;' "$f"
    ;;
  *.h)
    before=$(mktemp)
    cp "$f" "$before"
    perl -pi -e '
      next if /^\s*(#|\/\/)/;
      chomp;
      my ($code, $comment) = /^(.*?)(\/\/.*)?$/;
      $comment //= "";
      my $q = qr/(?<![\w:.])(?<!->)/;
      $code =~ s/$q(gpu|arith|math|memref|scf|vector|NVVM|LLVM|nvgpu)::/mlir::$1::/g;
      $code =~ s/$q(SmallVector|ArrayRef|MutableArrayRef|function_ref|StringRef|DenseMap|DenseSet|SetVector|MaybeAlign|Twine|isa|cast|dyn_cast|dyn_cast_or_null)\b/llvm::$1/g;
      $code =~ s/$q(Value|ValueRange|Type|TypeRange|Operation|MLIRContext|Location|Block|Region|LogicalResult|FailureOr|IRMapping|ImplicitLocOpBuilder|OpBuilder|VectorType|MemRefType|RankedTensorType|ShapedType|IntegerType|FloatType|IndexType|Attribute|BlockArgument|OpResult|IntegerAttr|FloatAttr|DenseI64ArrayAttr|DenseI32ArrayAttr|ModuleOp|success|failure|succeeded|failed)\b/mlir::$1/g;
      $code =~ s/$q(Layout|GeluApproximation|[A-Z]\w*Op|[A-Z]\w*Attr)\b/mlir::fuse::$1/g;
      $_ = $code . $comment . "\n";
    ' "$f"
    # Reflow the lines that changed, and only those.
    lines=$(diff --unchanged-line-format= --old-line-format= \
              --new-line-format='--lines=%dn:%dn ' "$before" "$f" || true)
    rm -f "$before"
    [[ -z "$lines" ]] || clang-format -i $lines "$f"
    ;;
  esac
done
