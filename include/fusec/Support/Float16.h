//===- Float16.h - IEEE half and bfloat16 conversions -----------*- C++ -*-===//
//
// Conversions between double and the bit patterns of IEEE binary16 (half) and
// bfloat16. Rounding is to nearest, ties to even, done in one step from the
// double: going through float first would round twice and can be off by one
// ulp on ties. Subnormals are handled, overflow gives +-inf and NaN stays NaN
// (quiet, with the top of its payload kept). Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_FLOAT16_H
#define FUSEC_SUPPORT_FLOAT16_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fusec {
namespace detail {

inline uint64_t doubleBits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

inline double bitsToDouble(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

/// Rounds a double to a binary format with `expBits` exponent bits and
/// `mantBits` stored mantissa bits (both < 16 bits wide in total), returning
/// its bit pattern.
inline uint16_t doubleToSmallFloatBits(double v, int expBits, int mantBits) {
  const uint64_t bits = doubleBits(v);
  const uint16_t sign =
      static_cast<uint16_t>((bits >> 63) << (expBits + mantBits));
  const int dExp = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t dMant = bits & ((uint64_t(1) << 52) - 1);
  const uint16_t infBits =
      static_cast<uint16_t>(((1u << expBits) - 1) << mantBits);

  if (dExp == 0x7ff) {
    if (dMant == 0)
      return sign | infBits;
    // Keep the top payload bits and force the quiet bit so that the result
    // cannot collapse to infinity.
    uint16_t payload = static_cast<uint16_t>(dMant >> (52 - mantBits));
    payload |= static_cast<uint16_t>(1u << (mantBits - 1));
    return sign | infBits | payload;
  }

  const int bias = (1 << (expBits - 1)) - 1;
  const int emin = 1 - bias; // exponent of the smallest normal
  const int emax = bias;
  // Double subnormals are far below any target subnormal: they round to 0.
  if (dExp == 0)
    return sign;
  const int e = dExp - 1023;
  if (e > emax)
    return sign | infBits;

  // Significand with its implicit bit, value = sig * 2^(e - 52). Below emin
  // the target is subnormal and has fewer significant bits: shift further.
  const uint64_t sig = (uint64_t(1) << 52) | dMant;
  const int shift = (52 - mantBits) + (e < emin ? emin - e : 0);
  if (shift > 53) // below half the smallest subnormal
    return sign;
  uint64_t q = sig >> shift;
  const uint64_t rem = sig & ((uint64_t(1) << shift) - 1);
  const uint64_t half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    ++q;

  // For normals q includes the implicit bit, which adds one to the exponent
  // field; a carry out of the mantissa propagates into the exponent the same
  // way. For subnormals the exponent field is zero and q is the mantissa.
  const uint64_t expField = e < emin ? 0 : static_cast<uint64_t>(e - emin);
  const uint64_t result = (expField << mantBits) + q;
  if (result >= infBits)
    return sign | infBits;
  return sign | static_cast<uint16_t>(result);
}

} // namespace detail

/// double -> IEEE binary16 bits, round to nearest even.
inline uint16_t doubleToHalfBits(double v) {
  return detail::doubleToSmallFloatBits(v, /*expBits=*/5, /*mantBits=*/10);
}

/// IEEE binary16 bits -> double (exact).
inline double halfBitsToDouble(uint16_t h) {
  const bool negative = (h & 0x8000) != 0;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) {
    if (mant == 0)
      return negative ? -INFINITY : INFINITY;
    // Rebuild a double NaN that carries the same payload.
    uint64_t bits = (uint64_t(negative) << 63) | (uint64_t(0x7ff) << 52) |
                    (uint64_t(mant) << 42);
    return detail::bitsToDouble(bits);
  }
  double magnitude =
      exp == 0 ? std::ldexp(static_cast<double>(mant), -24)
               : std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  return negative ? -magnitude : magnitude;
}

/// double -> bfloat16 bits, round to nearest even.
inline uint16_t doubleToBF16Bits(double v) {
  return detail::doubleToSmallFloatBits(v, /*expBits=*/8, /*mantBits=*/7);
}

/// bfloat16 bits -> double (exact: bfloat16 is the top half of a float).
inline double bf16BitsToDouble(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return static_cast<double>(f);
}

/// The storage formats of fusec tensors.
enum class FloatFormat { F32, F16, BF16 };

inline size_t byteWidth(FloatFormat format) {
  return format == FloatFormat::F32 ? 4 : 2;
}

/// Rounds every value to `format` (to nearest, ties to even), leaving the
/// rounded value in `values`, and stores the encodings in `bytes`.
inline void encodeFloats(std::vector<double> &values, FloatFormat format,
                         std::vector<uint8_t> &bytes) {
  size_t width = byteWidth(format);
  bytes.assign(values.size() * width, 0);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *at = bytes.data() + i * width;
    if (format == FloatFormat::F32) {
      // The conversion rounds to nearest even (the default FP mode).
      float f = static_cast<float>(values[i]);
      std::memcpy(at, &f, 4);
      values[i] = f;
      continue;
    }
    bool half = format == FloatFormat::F16;
    uint16_t bits =
        half ? doubleToHalfBits(values[i]) : doubleToBF16Bits(values[i]);
    std::memcpy(at, &bits, 2);
    values[i] = half ? halfBitsToDouble(bits) : bf16BitsToDouble(bits);
  }
}

/// Decodes `count` elements of `format` from `bytes` into `values`.
inline void decodeFloats(const uint8_t *bytes, size_t count,
                         FloatFormat format, std::vector<double> &values) {
  values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (format == FloatFormat::F32) {
      float f;
      std::memcpy(&f, bytes + 4 * i, 4);
      values[i] = f;
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    values[i] = format == FloatFormat::F16 ? halfBitsToDouble(bits)
                                           : bf16BitsToDouble(bits);
  }
}

} // namespace fusec

#endif // FUSEC_SUPPORT_FLOAT16_H
