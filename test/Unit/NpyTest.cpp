//===- NpyTest.cpp - Unit tests for the .npy reader and writer ------------===//
//
// Hand-built .npy images follow the format as NumPy writes it:
//   "\x93NUMPY" <major> <minor> <header length: uint16 LE (v1) / uint32 LE
//   (v2, v3)> <Python dict literal, padded with spaces, ending in '\n', so that
//   the data starts at a multiple of 64> <raw little-endian data, C order>.
//
//===----------------------------------------------------------------------===//

#include "fusec/Support/Npy.h"
#include "fusec/Support/Summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

using fusec::NpyArray;
using fusec::NpyDType;
using fusec::parseNpy;
using fusec::writeNpy;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string le16(uint16_t v) {
  std::string s(2, '\0');
  s[0] = static_cast<char>(v & 0xff);
  s[1] = static_cast<char>(v >> 8);
  return s;
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string f32le(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return le32(bits);
}

std::string f64le(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return le64(bits);
}

const std::string kMagic("\x93NUMPY", 6);

/// A version-1.0 image: dict padded with spaces and a final '\n' so that
/// 10 + header length is a multiple of 64.
std::string npyV1(const std::string &dict, const std::string &payload) {
  size_t len = dict.size() + 1;
  size_t total = (10 + len + 63) / 64 * 64;
  std::string header = dict + std::string(total - 10 - len, ' ') + "\n";
  return kMagic + std::string("\x01\x00", 2) +
         le16(static_cast<uint16_t>(header.size())) + header + payload;
}

/// A version-2.0 / 3.0 image (uint32 header length, 12-byte preamble).
std::string npyV2(const std::string &dict, const std::string &payload,
                  char major = 2) {
  size_t len = dict.size() + 1;
  size_t total = (12 + len + 63) / 64 * 64;
  std::string header = dict + std::string(total - 12 - len, ' ') + "\n";
  return kMagic + std::string(1, major) + std::string(1, '\0') +
         le32(static_cast<uint32_t>(header.size())) + header + payload;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// parseNpy must fail with a non-empty message that mentions one of
/// `keywords` (case-insensitive).
::testing::AssertionResult
parseFails(const std::string &bytes,
           std::initializer_list<const char *> keywords) {
  NpyArray out;
  std::string error;
  if (parseNpy(bytes, out, error))
    return ::testing::AssertionFailure() << "parseNpy unexpectedly succeeded";
  if (error.empty())
    return ::testing::AssertionFailure() << "parseNpy failed with no message";
  std::string l = lower(error);
  for (const char *k : keywords)
    if (l.find(lower(k)) != std::string::npos)
      return ::testing::AssertionSuccess() << "error: " << error;
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  r << "error message \"" << error << "\" mentions none of:";
  for (const char *k : keywords)
    r << " '" << k << "'";
  return r;
}

bool sameValue(double got, double want) {
  if (std::isnan(want))
    return std::isnan(got);
  // Exact, including the sign of zero.
  return got == want && std::signbit(got) == std::signbit(want);
}

::testing::AssertionResult arrayEq(const NpyArray &got,
                                   const std::vector<int64_t> &shape,
                                   const std::vector<double> &data) {
  if (got.shape != shape) {
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << "shape mismatch: got (";
    for (int64_t d : got.shape)
      r << d << ",";
    r << ") want (";
    for (int64_t d : shape)
      r << d << ",";
    return r << ")";
  }
  if (got.data.size() != data.size())
    return ::testing::AssertionFailure()
           << "data size mismatch: got " << got.data.size() << ", want "
           << data.size();
  for (size_t i = 0; i < data.size(); ++i)
    if (!sameValue(got.data[i], data[i]))
      return ::testing::AssertionFailure()
             << "first mismatch at index " << i << ": got "
             << ::testing::PrintToString(got.data[i]) << ", want "
             << ::testing::PrintToString(data[i]);
  return ::testing::AssertionSuccess();
}

/// Parses `bytes`, expecting success.
NpyArray parseOk(const std::string &bytes) {
  NpyArray out;
  std::string error;
  EXPECT_TRUE(parseNpy(bytes, out, error)) << "error: " << error;
  return out;
}

NpyArray roundTrip(const NpyArray &in, NpyDType dt) {
  return parseOk(writeNpy(in, dt));
}

std::string noSpaces(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

struct HeaderInfo {
  bool ok = false;
  size_t headerLen = 0;
  std::string header; // the dict text, padding included
  std::string payload;
};

/// Splits a version-1.0 image as a NumPy reader would.
HeaderInfo splitV1(const std::string &img) {
  HeaderInfo h;
  if (img.size() < 10 || img.compare(0, 6, kMagic) != 0 || img[6] != 1 ||
      img[7] != 0)
    return h;
  h.headerLen = static_cast<unsigned char>(img[8]) |
                (static_cast<size_t>(static_cast<unsigned char>(img[9])) << 8);
  if (10 + h.headerLen > img.size())
    return h;
  h.header = img.substr(10, h.headerLen);
  h.payload = img.substr(10 + h.headerLen);
  h.ok = true;
  return h;
}

} // namespace

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

TEST(NpyRoundTrip, F32RoundsToFloatAndKeepsShape) {
  NpyArray a{{2, 3}, {0.5, -1.25, 3.0, 1e10, 1.0 / 3.0, -0.0}};
  // 1e10 = 2^10 * 9765625 and 9765625 < 2^24, so it is exact in f32.
  // 1/3 becomes float(1/3) = 11184811 / 2^25.
  EXPECT_TRUE(arrayEq(roundTrip(a, NpyDType::F32), {2, 3},
                      {0.5, -1.25, 3.0, 1e10, 11184811.0 / 33554432.0, -0.0}));
  NpyArray special{{3}, {kInf, -kInf, kNaN}};
  EXPECT_TRUE(
      arrayEq(roundTrip(special, NpyDType::F32), {3}, {kInf, -kInf, kNaN}));
}

TEST(NpyRoundTrip, F16RoundsToHalf) {
  // 1/3 -> 0.333251953125; 65519 -> 65504 (max finite); 65520 -> inf
  // (tie, rounds to even = overflow); 2^-24 is the smallest subnormal;
  // -0.0 keeps its sign.
  NpyArray a{{2, 4},
             {1.0, -2.0, 1.0 / 3.0, 65519.0, 65520.0, std::ldexp(1.0, -24),
              -0.0, kNaN}};
  EXPECT_TRUE(arrayEq(roundTrip(a, NpyDType::F16), {2, 4},
                      {1.0, -2.0, 0.333251953125, 65504.0, kInf,
                       std::ldexp(1.0, -24), -0.0, kNaN}));
}

TEST(NpyRoundTrip, F64IsExact) {
  NpyArray a{{2, 3},
             {0.1, 1e300, -5e-324, kInf, kNaN, -0.0}};
  EXPECT_TRUE(arrayEq(roundTrip(a, NpyDType::F64), {2, 3},
                      {0.1, 1e300, -5e-324, kInf, kNaN, -0.0}));
}

TEST(NpyRoundTrip, Rank0) {
  for (NpyDType dt : {NpyDType::F16, NpyDType::F32, NpyDType::F64}) {
    NpyArray a{{}, {42.5}};
    EXPECT_TRUE(arrayEq(roundTrip(a, dt), {}, {42.5}))
        << "dtype " << static_cast<int>(dt);
  }
}

TEST(NpyRoundTrip, ZeroSizedDimension) {
  for (NpyDType dt : {NpyDType::F16, NpyDType::F32, NpyDType::F64}) {
    NpyArray a{{2, 0, 3}, {}};
    std::string img = writeNpy(a, dt);
    HeaderInfo h = splitV1(img);
    ASSERT_TRUE(h.ok);
    EXPECT_TRUE(h.payload.empty());
    EXPECT_TRUE(arrayEq(parseOk(img), {2, 0, 3}, {}))
        << "dtype " << static_cast<int>(dt);
  }
  NpyArray b{{0}, {}};
  EXPECT_TRUE(arrayEq(roundTrip(b, NpyDType::F32), {0}, {}));
}

TEST(NpyRoundTrip, HigherRank) {
  NpyArray a{{1, 2, 1, 3, 1}, {1, 2, 3, 4, 5, 6}};
  for (NpyDType dt : {NpyDType::F16, NpyDType::F32, NpyDType::F64})
    EXPECT_TRUE(arrayEq(roundTrip(a, dt), {1, 2, 1, 3, 1}, {1, 2, 3, 4, 5, 6}))
        << "dtype " << static_cast<int>(dt);
}

TEST(NpyRoundTrip, ParseReplacesPreviousContents) {
  NpyArray out{{7, 7}, std::vector<double>(49, 9.0)};
  std::string error;
  ASSERT_TRUE(parseNpy(writeNpy(NpyArray{{2}, {1, 2}}, NpyDType::F64), out,
                       error))
      << error;
  EXPECT_TRUE(arrayEq(out, {2}, {1, 2}));
}

//===----------------------------------------------------------------------===//
// What writeNpy produces
//===----------------------------------------------------------------------===//

TEST(NpyWrite, HeaderIsV1AlignedAndNumPyStyle) {
  struct Case {
    std::vector<int64_t> shape;
    NpyDType dt;
    const char *descr;
    const char *shapeText; // with spaces removed
    size_t itemSize;
  };
  const Case cases[] = {
      {{2, 3}, NpyDType::F32, "'<f4'", "'shape':(2,3)", 4},
      {{5}, NpyDType::F16, "'<f2'", "'shape':(5,)", 2}, // 1-tuple needs ','
      {{}, NpyDType::F64, "'<f8'", "'shape':()", 8},
      {{2, 0, 3}, NpyDType::F32, "'<f4'", "'shape':(2,0,3)", 4},
      {{1, 2, 3, 4, 5, 6}, NpyDType::F64, "'<f8'", "'shape':(1,2,3,4,5,6)", 8},
  };
  for (const Case &c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    NpyArray a{c.shape, std::vector<double>(static_cast<size_t>(n), 1.0)};
    std::string img = writeNpy(a, c.dt);
    SCOPED_TRACE(c.shapeText);
    HeaderInfo h = splitV1(img);
    ASSERT_TRUE(h.ok) << "not a v1.0 image";
    // Data starts on a 64-byte boundary; the header ends with '\n'.
    EXPECT_EQ((10 + h.headerLen) % 64, 0u);
    ASSERT_FALSE(h.header.empty());
    EXPECT_EQ(h.header.back(), '\n');
    EXPECT_EQ(h.header.find('\n'), h.header.size() - 1);
    std::string dict = noSpaces(h.header);
    EXPECT_EQ(dict.front(), '{');
    EXPECT_NE(dict.find("'descr':" + std::string(c.descr)), std::string::npos)
        << h.header;
    EXPECT_NE(dict.find("'fortran_order':False"), std::string::npos)
        << h.header;
    EXPECT_NE(dict.find(c.shapeText), std::string::npos) << h.header;
    EXPECT_EQ(h.payload.size(), static_cast<size_t>(n) * c.itemSize);
    // And it parses back.
    NpyArray back = parseOk(img);
    EXPECT_EQ(back.shape, c.shape);
  }
}

// A header past 65535 bytes (rank 23000) once overflowed version 1.0's
// 2-byte length and wrote a corrupt file; it takes version 2.0 now.
TEST(NpyWrite, LongHeaderTakesVersion2) {
  NpyArray a{std::vector<int64_t>(23000, 1), {2.5}};
  std::string img = writeNpy(a, NpyDType::F32);
  ASSERT_GT(img.size(), 12u);
  EXPECT_EQ(img[6], '\x02');
  EXPECT_EQ(img[7], '\x00');
  uint32_t headerLen = 0;
  for (int i = 0; i < 4; ++i)
    headerLen |= uint32_t(static_cast<unsigned char>(img[8 + i])) << (8 * i);
  EXPECT_GT(headerLen, 0xffffu);
  EXPECT_EQ((12 + headerLen) % 64, 0u);
  EXPECT_EQ(img[12 + headerLen - 1], '\n');
  EXPECT_EQ(img.size(), 12 + headerLen + 4);
  NpyArray back = parseOk(img);
  EXPECT_EQ(back.shape, a.shape);
  EXPECT_EQ(back.data, a.data);
  // Just below the limit stays 1.0.
  EXPECT_EQ(writeNpy(NpyArray{std::vector<int64_t>(100, 1), {1}},
                     NpyDType::F32)[6],
            '\x01');
}

TEST(NpyWrite, PayloadBytesAreLittleEndian) {
  // f32: 1.0 = 0x3F800000, -2.5 = 0xC0200000.
  {
    HeaderInfo h = splitV1(writeNpy(NpyArray{{2}, {1.0, -2.5}}, NpyDType::F32));
    ASSERT_TRUE(h.ok);
    EXPECT_EQ(h.payload, std::string("\x00\x00\x80\x3F\x00\x00\x20\xC0", 8));
  }
  // f16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF, 1/3 -> 0x3555,
  // 2^-24 = 0x0001, inf = 0x7C00 (from 1e6).
  {
    HeaderInfo h = splitV1(writeNpy(
        NpyArray{{6},
                 {1.0, -2.0, 65504.0, 1.0 / 3.0, std::ldexp(1.0, -24), 1e6}},
        NpyDType::F16));
    ASSERT_TRUE(h.ok);
    EXPECT_EQ(h.payload,
              std::string("\x00\x3C\x00\xC0\xFF\x7B\x55\x35\x01\x00\x00\x7C",
                          12));
  }
  // f64: 1.0 = 0x3FF0000000000000.
  {
    HeaderInfo h = splitV1(writeNpy(NpyArray{{1}, {1.0}}, NpyDType::F64));
    ASSERT_TRUE(h.ok);
    EXPECT_EQ(h.payload, std::string("\x00\x00\x00\x00\x00\x00\xF0\x3F", 8));
  }
  // Row-major order: shape (2, 2) data [1, 2, 3, 4] is written in that order.
  {
    HeaderInfo h = splitV1(
        writeNpy(NpyArray{{2, 2}, {1.0, 2.0, 3.0, 4.0}}, NpyDType::F32));
    ASSERT_TRUE(h.ok);
    EXPECT_EQ(h.payload, f32le(1) + f32le(2) + f32le(3) + f32le(4));
  }
}

//===----------------------------------------------------------------------===//
// Parsing hand-built images
//===----------------------------------------------------------------------===//

TEST(NpyParse, HandBuiltV1F32AsNumPyWritesIt) {
  // The exact bytes np.save writes for np.arange(1, 7, dtype='<f4')
  // .reshape(2, 3): the 59-character dict + 58 spaces + '\n' = 118 = 0x76
  // bytes of header, so the data starts at 10 + 118 = 128.
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(dict.size(), 59u);
  std::string img = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                    std::string(58, ' ') + "\n";
  ASSERT_EQ(img.size(), 128u);
  for (float f : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f})
    img += f32le(f);
  EXPECT_TRUE(arrayEq(parseOk(img), {2, 3}, {1, 2, 3, 4, 5, 6}));
}

TEST(NpyParse, HandBuiltF16) {
  // 0x3C00 = 1, 0xC000 = -2, 0x3555 = 0.333251953125, 0x7BFF = 65504,
  // 0x0001 = 2^-24, 0x7C00 = inf, 0x8000 = -0.
  std::string payload;
  for (uint16_t b : {0x3C00, 0xC000, 0x3555, 0x7BFF, 0x0001, 0x7C00, 0x8000})
    payload += le16(b);
  std::string img = npyV1(
      "{'descr': '<f2', 'fortran_order': False, 'shape': (7,), }", payload);
  EXPECT_TRUE(arrayEq(parseOk(img), {7},
                      {1, -2, 0.333251953125, 65504, std::ldexp(1.0, -24),
                       kInf, -0.0}));
  // A NaN bit pattern parses as NaN.
  NpyArray nan = parseOk(npyV1(
      "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", le16(0x7E00)));
  ASSERT_EQ(nan.data.size(), 1u);
  EXPECT_TRUE(std::isnan(nan.data[0]));
}

TEST(NpyParse, HandBuiltF64AndRank0) {
  std::string img =
      npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1), }",
            f64le(0.1) + f64le(-1e300));
  EXPECT_TRUE(arrayEq(parseOk(img), {2, 1}, {0.1, -1e300}));
  // Rank 0: shape ().
  std::string scalar = npyV1(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", f64le(3.25));
  EXPECT_TRUE(arrayEq(parseOk(scalar), {}, {3.25}));
}

TEST(NpyParse, HandBuiltZeroSized) {
  std::string img = npyV1(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }", "");
  EXPECT_TRUE(arrayEq(parseOk(img), {2, 0}, {}));
  std::string img1 = npyV1(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }", "");
  EXPECT_TRUE(arrayEq(parseOk(img1), {0}, {}));
}

TEST(NpyParse, Versions2And3) {
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string payload = f32le(1.5f) + f32le(-4.0f);
  EXPECT_TRUE(arrayEq(parseOk(npyV2(dict, payload, 2)), {2}, {1.5, -4}));
  EXPECT_TRUE(arrayEq(parseOk(npyV2(dict, payload, 3)), {2}, {1.5, -4}));
}

TEST(NpyParse, NativeByteOrderMarker) {
  // '=' means native order, which is little-endian on every host fusec runs
  // on.
  std::string img = npyV1(
      "{'descr': '=f8', 'fortran_order': False, 'shape': (1,), }", f64le(2.0));
  EXPECT_TRUE(arrayEq(parseOk(img), {1}, {2.0}));
}

TEST(NpyParse, AnyKeyOrderAndSpacing) {
  // Any valid Python dict literal is a valid header (other writers, e.g. cnpy
  // or hand-written tools, differ in key order and spacing).
  std::string img =
      npyV1("{'shape':(3,),'descr':'<f4','fortran_order':False}",
            f32le(1) + f32le(2) + f32le(3));
  EXPECT_TRUE(arrayEq(parseOk(img), {3}, {1, 2, 3}));
  std::string img2 = npyV1(
      "{'fortran_order': False, 'shape': (1, 2), 'descr': '<f8'}",
      f64le(7) + f64le(8));
  EXPECT_TRUE(arrayEq(parseOk(img2), {1, 2}, {7, 8}));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {
const std::string kF4x6 =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
std::string sixFloats() {
  std::string s;
  for (int i = 0; i < 6; ++i)
    s += f32le(static_cast<float>(i));
  return s;
}
} // namespace

TEST(NpyParseError, BadMagic) {
  std::string img = npyV1(kF4x6, sixFloats());
  std::string bad = img;
  bad[5] = 'Z'; // "\x93NUMPZ"
  EXPECT_TRUE(parseFails(bad, {"magic", "signature", "not a"}));
  std::string bad2 = img;
  bad2[0] = 'x';
  EXPECT_TRUE(parseFails(bad2, {"magic", "signature", "not a"}));
  EXPECT_TRUE(parseFails(std::string("PK\x03\x04 not an npy file at all"),
                         {"magic", "signature", "not a"}));
}

TEST(NpyParseError, TooShortForPreamble) {
  NpyArray out;
  std::string error;
  EXPECT_FALSE(parseNpy("", out, error));
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_FALSE(parseNpy(std::string("\x93NUMPY\x01", 7), out, error));
  EXPECT_FALSE(error.empty());
}

TEST(NpyParseError, TruncatedData) {
  // (2, 3) float32 needs 24 bytes; give it 20.
  std::string img = npyV1(kF4x6, sixFloats().substr(0, 20));
  EXPECT_TRUE(parseFails(img, {"truncat", "short", "size", "expected", "bytes",
                               "data", "end"}));
  // No data at all.
  EXPECT_TRUE(parseFails(npyV1(kF4x6, ""), {"truncat", "short", "size",
                                            "expected", "bytes", "data",
                                            "end"}));
}

TEST(NpyParseError, BigEndian) {
  std::string img = npyV1(
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
      sixFloats());
  EXPECT_TRUE(parseFails(img, {"endian", "big", ">f4", "byte order"}));
}

TEST(NpyParseError, UnsupportedDtype) {
  std::string img = npyV1(
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
      sixFloats());
  EXPECT_TRUE(parseFails(img, {"dtype", "descr", "i4", "type"}));
  std::string c8 = npyV1(
      "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }",
      sixFloats());
  EXPECT_TRUE(parseFails(c8, {"dtype", "descr", "c8", "type"}));
}

TEST(NpyParseError, FortranOrder) {
  std::string img = npyV1(
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
      sixFloats());
  EXPECT_TRUE(parseFails(img, {"fortran"}));
}

TEST(NpyParseError, MalformedShape) {
  EXPECT_TRUE(parseFails(
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
            sixFloats()),
      {"shape"}));
  EXPECT_TRUE(parseFails(
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }",
            sixFloats()),
      {"shape", "dimension", "negative"}));
  // Unterminated tuple.
  NpyArray out;
  std::string error;
  EXPECT_FALSE(parseNpy(
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", ""),
      out, error));
  EXPECT_FALSE(error.empty());
  // A list is not a tuple.
  error.clear();
  EXPECT_FALSE(parseNpy(
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }",
            sixFloats()),
      out, error));
  EXPECT_FALSE(error.empty());
  // Missing key.
  EXPECT_TRUE(parseFails(npyV1("{'descr': '<f4', 'fortran_order': False, }",
                               sixFloats()),
                         {"shape"}));
}

TEST(NpyParseError, MissingDescr) {
  EXPECT_TRUE(parseFails(
      npyV1("{'fortran_order': False, 'shape': (2, 3), }", sixFloats()),
      {"descr", "dtype"}));
}

TEST(NpyParseError, HeaderLengthBeyondFileEnd) {
  // Claims a 1000-byte header in a 128-byte file.
  std::string img = npyV1(kF4x6, "");
  ASSERT_EQ(img.size(), 128u);
  img[8] = static_cast<char>(1000 & 0xff);
  img[9] = static_cast<char>(1000 >> 8);
  EXPECT_TRUE(parseFails(img, {"header", "truncat", "length", "short", "end"}));
  // Same with a v2 header length of 2^31.
  std::string img2 = npyV2(kF4x6, "");
  img2.replace(8, 4, le32(0x80000000u));
  EXPECT_TRUE(
      parseFails(img2, {"header", "truncat", "length", "short", "end"}));
}

TEST(NpyParseError, UnknownVersion) {
  std::string img = npyV1(kF4x6, sixFloats());
  img[6] = 4;
  EXPECT_TRUE(parseFails(img, {"version"}));
}

TEST(NpyParseError, HugeShapeFailsInsteadOfAllocating) {
  // 10^12 float32 elements claimed, none present: must be reported as
  // truncated, not attempted as an allocation.
  EXPECT_TRUE(parseFails(
      npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': "
            "(1000000000000,), }",
            sixFloats()),
      {"truncat", "short", "size", "expected", "bytes", "data", "end",
       "large", "overflow"}));
  // An element count whose byte size overflows 64 bits.
  EXPECT_TRUE(parseFails(
      npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': "
            "(4294967296, 4294967296), }",
            sixFloats()),
      {"truncat", "short", "size", "expected", "bytes", "data", "end",
       "large", "overflow", "shape"}));
}

//===----------------------------------------------------------------------===//
// Streaming: the header alone, the data a piece at a time
//===----------------------------------------------------------------------===//

TEST(NpyStream, HeaderThenPiecesReadWhatParseReads) {
  NpyArray array{{3, 5}, {}};
  for (int i = 0; i < 15; ++i)
    array.data.push_back(0.25 * i - 1);
  for (NpyDType dtype : {NpyDType::F16, NpyDType::F32, NpyDType::F64}) {
    std::string image = writeNpy(array, dtype);
    fusec::NpyHeader header;
    std::string error;
    ASSERT_TRUE(
        fusec::parseNpyHeader(image.data(), image.size(), header, error))
        << error;
    EXPECT_EQ(header.shape, array.shape);
    EXPECT_EQ(header.dtype, dtype);
    EXPECT_EQ(header.count, 15u);
    EXPECT_EQ(header.dataOffset % 64, 0u);
    // Pieces of 4 read the same values as the whole parse.
    std::vector<double> pieces(15);
    for (uint64_t first = 0; first < 15; first += 4)
      fusec::readNpyValues(image.data(), header, first,
                           std::min<uint64_t>(4, 15 - first),
                           pieces.data() + first);
    NpyArray parsed;
    ASSERT_TRUE(parseNpy(image, parsed, error)) << error;
    EXPECT_EQ(pieces, parsed.data);
    // The writer's header is npyHeader's.
    EXPECT_EQ(image.substr(0, header.dataOffset),
              fusec::npyHeader(array.shape, dtype));
  }
  // The header checks the size of the whole image, as parseNpy does.
  std::string image = writeNpy(array, NpyDType::F32);
  fusec::NpyHeader header;
  std::string error;
  EXPECT_FALSE(
      fusec::parseNpyHeader(image.data(), image.size() - 1, header, error));
  EXPECT_EQ(error, "truncated data: expected 60 bytes, found 59");
}

TEST(SummaryAccumulator, PiecesGiveTheWholeSummary) {
  std::vector<double> values = {1.5, -2, kNaN, 4, kInf, 0.125, -7};
  fusec::TensorSummary whole = fusec::summarize(values);
  fusec::SummaryAccumulator pieces;
  pieces.add(values.data(), 3);
  pieces.add(values.data() + 3, 0);
  pieces.add(values.data() + 3, 4);
  fusec::TensorSummary sum = pieces.result();
  EXPECT_EQ(sum.mean, whole.mean);
  EXPECT_EQ(sum.min, -7);
  EXPECT_EQ(sum.max, 4);
  EXPECT_EQ(sum.rms, whole.rms);
  EXPECT_EQ(sum.nonFinite, 2);
}
