//===- Status.h - Success or an actionable error message --------*- C++ -*-===//
//
// Every fallible runtime call returns a Status. A failed Status carries a
// code (mirrored by the C API's fusec_status) and a message that says what
// went wrong and what to do about it.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_RUNTIME_STATUS_H
#define FUSEC_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace fusec {
namespace runtime {

/// What kind of failure a Status reports. The values match fusec_status in
/// fusec_runtime.h.
enum class StatusCode {
  Ok = 0,
  /// A caller passed something wrong: counts, sizes, null pointers, options.
  InvalidArgument = 1,
  /// A file could not be read or written.
  IOError = 2,
  /// The artifact or its launch plan is malformed.
  InvalidArtifact = 3,
  /// libcuda.so.1 (the NVIDIA driver) cannot be loaded or is too old.
  NoDriver = 4,
  /// The driver is there but the requested device is not.
  NoDevice = 5,
  /// The device cannot run this artifact (compute capability, shared memory).
  UnsupportedDevice = 6,
  /// A CUDA driver call failed.
  DriverError = 7,
  /// NVRTC (which CUDA C artifacts need) cannot be loaded.
  NoCompiler = 8,
  /// NVRTC rejected a CUDA C artifact.
  CompileError = 9,
};

/// Success, or a failure with a code and a message. Cheap to return when ok.
class [[nodiscard]] Status {
public:
  Status() = default;

  static Status success() { return Status(); }
  static Status error(StatusCode code, std::string message) {
    return Status(code, std::move(message));
  }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  /// Empty when ok.
  const std::string &message() const { return message_; }

  /// The same failure with `context` in front ("context: message").
  Status withContext(const std::string &context) const {
    if (isOk())
      return *this;
    return Status(code_, context + ": " + message_);
  }

private:
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

/// Returns from the enclosing function if `expr` is a failed Status.
#define FUSEC_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    ::fusec::runtime::Status fusecStatus_ = (expr);                            \
    if (!fusecStatus_.isOk())                                                  \
      return fusecStatus_;                                                     \
  } while (false)

} // namespace runtime
} // namespace fusec

#endif // FUSEC_RUNTIME_STATUS_H
