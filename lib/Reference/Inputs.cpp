//===- Inputs.cpp - The inputs a graph is checked on ----------------------===//

#include "fusec/Reference/Inputs.h"

#include "Fuse/FuseOps.h"
#include "fusec/Reference/Interpreter.h"
#include "fusec/Support/Npy.h"
#include "fusec/Support/SafeRead.h"
#include "fusec/Support/Summary.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <random>

using namespace mlir;
using namespace fusec;

bool ref::isVariance(Value value) {
  return llvm::any_of(value.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto bn = dyn_cast<fuse::BatchNormOp>(user))
      return use.get() == bn.getVariance();
    if (auto coeffs = dyn_cast<fuse::BatchNormCoefficientsOp>(user))
      return use.get() == coeffs.getVariance();
    // In training graphs: the running variance, the count a cumulative
    // average divides by, and the inverse std (or, in the evaluation form,
    // the variance) a batch-norm backward reads.
    if (auto bn = dyn_cast<fuse::BatchNormTrainOp>(user))
      return use.get() == bn.getRunningVar() ||
             use.get() == bn.getBatchesTracked();
    if (auto grad = dyn_cast<fuse::BatchNormGradOp>(user))
      return use.get() == grad.getInvstd();
    if (auto kernel = dyn_cast<fuse::KernelOp>(user))
      return isVariance(kernel.getBody().getArgument(use.getOperandNumber()));
    return false;
  });
}

std::vector<ref::Tensor> ref::randomInputs(func::FuncOp func, uint64_t seed) {
  std::vector<Tensor> inputs;
  std::mt19937_64 rng(seed);
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    Tensor t(
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end()));
    bool positive = isVariance(arg);
    std::uniform_real_distribution<double> dist(positive ? 0.5 : -1.0,
                                                positive ? 2.0 : 1.0);
    for (double &v : t.data)
      v = dist(rng);
    inputs.push_back(castTo(t, *getDType(type.getElementType())));
  }
  return inputs;
}

llvm::Expected<std::vector<ref::Tensor>>
ref::loadInputs(func::FuncOp func, llvm::ArrayRef<std::string> files) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(message);
  };
  unsigned numArgs = func.getNumArguments();
  if (files.size() != numArgs)
    return error(llvm::formatv("@{0} takes {1} arguments but {2} --input "
                               "files were given",
                               func.getSymName(), numArgs, files.size()));
  std::vector<Tensor> inputs;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<RankedTensorType>(func.getArgument(i).getType());
    DType dtype = *getDType(type.getElementType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    const std::string &path = files[i];
    // A file, mapped: a FIFO or /dev/zero would be read without bound.
    auto mapped = mapRegularFile(path);
    if (!mapped)
      return error("cannot open input file '" + path +
                   "': " + llvm::toString(mapped.takeError()));
    std::unique_ptr<llvm::MemoryBuffer> buffer = std::move(*mapped);
    // The shape is checked before anything is allocated for the data.
    NpyHeader header;
    std::string why;
    if (!parseNpyHeader(buffer->getBufferStart(), buffer->getBufferSize(),
                        header, why))
      return error(path + ": " + why);
    if (header.shape != shape)
      return error(llvm::formatv("{0}: shape {1} does not match argument "
                                 "#{2} of @{3}, which is {4}",
                                 path, formatShape(header.shape), i,
                                 func.getSymName(), formatShape(shape)));
    Tensor t(shape);
    readNpyValues(buffer->getBufferStart(), header, 0, header.count,
                  t.data.data());
    inputs.push_back(castTo(t, dtype));
  }
  return inputs;
}

llvm::Error ref::saveTensors(llvm::StringRef dir,
                             llvm::ArrayRef<NamedTensor> tensors) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError("cannot create directory '" + dir +
                                   "': " + ec.message());
  std::vector<std::unique_ptr<llvm::ToolOutputFile>> outputs;
  for (const NamedTensor &t : tensors) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, t.file);
    std::string error;
    auto out = openOutputFile(path, &error);
    if (!out)
      return llvm::createStringError(error);
    NpyArray array{t.tensor->shape, t.tensor->data};
    out->os() << writeNpy(array, t.dtype == DType::F16 ? NpyDType::F16
                                                       : NpyDType::F32);
    out->os().flush();
    if (out->os().has_error())
      return llvm::createStringError("cannot write '" + path + "'");
    outputs.push_back(std::move(out));
  }
  // Only now: a failure leaves no file behind.
  for (auto &out : outputs)
    out->keep();
  return llvm::Error::success();
}
