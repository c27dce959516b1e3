//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// Just enough of the .npy format (versions 1.0 to 3.0, little-endian, C order)
// to exchange float tensors with users and with NumPy/PyTorch test scripts.
// No LLVM dependency: the runtime uses it as well.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_NPY_H
#define FUSEC_SUPPORT_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusec {

/// Element types fusec reads and writes. bf16 has no NumPy dtype: fusec
/// writes bf16 tensors as float32 (every bf16 value is exact in float32).
enum class NpyDType { F16, F32, F64 };

struct NpyArray {
  std::vector<int64_t> shape;
  /// Values widened to double, row-major.
  std::vector<double> data;
};

/// Parses a .npy image. Accepts '<f2', '<f4', '<f8' (and '|'/'=' byte order
/// markers where they mean little-endian), C order only. On failure returns
/// false and sets `error` to a message that says what is wrong (without the
/// file name, which the caller adds).
bool parseNpy(const std::string &bytes, NpyArray &out, std::string &error);

/// Serialises `array` as a version 1.0 .npy image with the given dtype.
std::string writeNpy(const NpyArray &array, NpyDType dtype);

// Streaming: for arrays too large to hold as doubles (a 2^31-element input
// would take 16 GiB), a reader converts the data a piece at a time and a
// writer appends it after the header.

/// What a .npy header says, checked against the image's size.
struct NpyHeader {
  std::vector<int64_t> shape;
  NpyDType dtype = NpyDType::F32;
  uint64_t count = 0;
  /// Offset of the first element in the image.
  size_t dataOffset = 0;
};

/// parseNpy's checks, without reading the data: `bytes` is the whole image
/// (`size` bytes, e.g. a mapped file).
bool parseNpyHeader(const char *bytes, size_t size, NpyHeader &header,
                    std::string &error);

/// Elements [first, first + count) of the data after `header`, as doubles.
void readNpyValues(const char *bytes, const NpyHeader &header, uint64_t first,
                   uint64_t count, double *out);

/// The bytes of a .npy image before its data: an image is this followed by
/// the elements in little-endian `dtype`.
std::string npyHeader(const std::vector<int64_t> &shape, NpyDType dtype);

} // namespace fusec

#endif // FUSEC_SUPPORT_NPY_H
