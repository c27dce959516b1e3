//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// Format reference: numpy/lib/format.py. An image is the magic "\x93NUMPY",
// a version (major, minor), a little-endian header length (2 bytes for
// version 1, 4 bytes for versions 2 and 3), a Python dict literal padded with
// spaces and ending in '\n', then the raw array data.
//
//===----------------------------------------------------------------------===//

#include "fusec/Support/Npy.h"

#include "fusec/Support/Float16.h"

#include <cassert>
#include <cctype>
#include <cstring>
#include <limits>

using namespace fusec;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// Reads a little-endian unsigned integer of `n` bytes (independent of the
/// host byte order).
uint64_t readLE(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void appendLE(std::string &out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool hostIsLittleEndian() {
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

/// A tiny recursive-descent reader for the dict literal NumPy writes. It
/// accepts exactly the value forms the format uses: strings, True/False and
/// tuples of integers.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &header) : text(header) {}

  bool parse(std::string &descr, bool &fortranOrder,
             std::vector<int64_t> &shape, std::string &error) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("header is not a Python dict literal", error);
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key in the header dict", error);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after key '" + key + "' in the header",
                    error);
      skipSpace();
      if (key == "descr") {
        if (!parseString(descr))
          return fail("unsupported dtype: 'descr' is not a simple type "
                      "string (structured arrays are not supported)",
                      error);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(fortranOrder))
          return fail("'fortran_order' must be True or False", error);
        haveOrder = true;
      } else if (key == "shape") {
        if (!parseShape(shape, error))
          return false;
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "' in the header", error);
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}' in the header dict", error);
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the header dict", error);
    if (!haveDescr || !haveOrder || !haveShape)
      return fail("header misses one of 'descr', 'fortran_order', 'shape'",
                  error);
    return true;
  }

private:
  const std::string &text;
  size_t pos = 0;

  static bool fail(const std::string &message, std::string &error) {
    error = "malformed .npy header: " + message;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }

  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }

  bool parseBool(bool &out) {
    if (consumeWord("True")) {
      out = true;
      return true;
    }
    if (consumeWord("False")) {
      out = false;
      return true;
    }
    return false;
  }

  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    shape.clear();
    if (!consume('('))
      return fail("'shape' must be a tuple", error);
    while (true) {
      skipSpace();
      if (consume(')'))
        return true;
      if (pos >= text.size() ||
          !std::isdigit(static_cast<unsigned char>(text[pos])))
        return fail("'shape' must be a tuple of non-negative integers", error);
      int64_t dim = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        int digit = text[pos++] - '0';
        if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return fail("dimension in 'shape' is too large", error);
        dim = dim * 10 + digit;
      }
      consume('L'); // Python 2 long literal, found in old files.
      shape.push_back(dim);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return true;
      return fail("expected ',' or ')' in 'shape'", error);
    }
  }
};

/// Maps a descr string to a dtype, or explains why it is not supported.
bool parseDescr(const std::string &descr, NpyDType &dtype, size_t &itemSize,
                std::string &error) {
  if (descr.size() == 3 && descr[1] == 'f') {
    char order = descr[0];
    bool little = order == '<' || (order == '=' && hostIsLittleEndian());
    if (order == '>' || (order == '=' && !hostIsLittleEndian())) {
      error = "big-endian dtype '" + descr +
              "' is not supported; convert with arr.astype('<" +
              descr.substr(1) + "')";
      return false;
    }
    if (little) {
      switch (descr[2]) {
      case '2':
        dtype = NpyDType::F16;
        itemSize = 2;
        return true;
      case '4':
        dtype = NpyDType::F32;
        itemSize = 4;
        return true;
      case '8':
        dtype = NpyDType::F64;
        itemSize = 8;
        return true;
      default:
        break;
      }
    }
  }
  error =
      "unsupported dtype '" + descr + "'; expected float16, float32 or float64";
  return false;
}

} // namespace

bool fusec::parseNpyHeader(const char *bytes, size_t size, NpyHeader &out,
                           std::string &error) {
  const auto *p = reinterpret_cast<const unsigned char *>(bytes);
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    error = "not a .npy file (missing the \\x93NUMPY magic)";
    return false;
  }
  const int major = p[6], minor = p[7];
  size_t lenBytes;
  if (major == 1) {
    lenBytes = 2;
  } else if (major == 2 || major == 3) {
    lenBytes = 4;
  } else {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor) + "; expected 1.0, 2.0 or 3.0";
    return false;
  }
  const size_t headerStart = kMagicLen + 2 + lenBytes;
  if (size < headerStart) {
    error = "truncated .npy header";
    return false;
  }
  const uint64_t headerLen = readLE(p + kMagicLen + 2, lenBytes);
  if (headerLen > size - headerStart) {
    error = "truncated .npy header: it declares " + std::to_string(headerLen) +
            " bytes but only " + std::to_string(size - headerStart) + " follow";
    return false;
  }
  const std::string header(bytes + headerStart, headerLen);

  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header).parse(descr, fortranOrder, shape, error))
    return false;
  if (fortranOrder) {
    error = "Fortran-ordered arrays are not supported; save with "
            "np.ascontiguousarray";
    return false;
  }
  NpyDType dtype;
  size_t itemSize;
  if (!parseDescr(descr, dtype, itemSize, error))
    return false;

  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / itemSize /
                                static_cast<uint64_t>(dim)) {
      error = "array shape is too large";
      return false;
    }
    count *= static_cast<uint64_t>(dim);
  }
  const size_t dataStart = headerStart + headerLen;
  const uint64_t expected = count * itemSize;
  const uint64_t found = size - dataStart;
  if (found < expected) {
    error = "truncated data: expected " + std::to_string(expected) +
            " bytes, found " + std::to_string(found);
    return false;
  }
  if (found > expected) {
    error = "unexpected trailing data: expected " + std::to_string(expected) +
            " bytes, found " + std::to_string(found);
    return false;
  }
  out.shape = std::move(shape);
  out.dtype = dtype;
  out.count = count;
  out.dataOffset = dataStart;
  return true;
}

void fusec::readNpyValues(const char *bytes, const NpyHeader &header,
                          uint64_t first, uint64_t count, double *out) {
  const size_t itemSize = header.dtype == NpyDType::F16   ? 2
                          : header.dtype == NpyDType::F32 ? 4
                                                          : 8;
  const auto *data = reinterpret_cast<const unsigned char *>(bytes) +
                     header.dataOffset + first * itemSize;
  for (uint64_t i = 0; i < count; ++i) {
    const unsigned char *elt = data + i * itemSize;
    switch (header.dtype) {
    case NpyDType::F16:
      out[i] = halfBitsToDouble(static_cast<uint16_t>(readLE(elt, 2)));
      break;
    case NpyDType::F32: {
      uint32_t bits = static_cast<uint32_t>(readLE(elt, 4));
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      out[i] = f;
      break;
    }
    case NpyDType::F64: {
      uint64_t bits = readLE(elt, 8);
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      out[i] = d;
      break;
    }
    }
  }
}

bool fusec::parseNpy(const std::string &bytes, NpyArray &out,
                     std::string &error) {
  NpyHeader header;
  if (!parseNpyHeader(bytes.data(), bytes.size(), header, error))
    return false;
  out.shape = std::move(header.shape);
  out.data.resize(header.count);
  readNpyValues(bytes.data(), header, 0, header.count, out.data.data());
  return true;
}

std::string fusec::npyHeader(const std::vector<int64_t> &shape,
                             NpyDType dtype) {
  const char *descr = dtype == NpyDType::F16   ? "<f2"
                      : dtype == NpyDType::F32 ? "<f4"
                                               : "<f8";
  // Python's repr of a tuple: (), (5,) or (2, 3).
  std::string tuple = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      tuple += ", ";
    tuple += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    tuple += ",";
  tuple += ")";

  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + tuple + ", }";
  // Pad with spaces so that the data starts 64-byte aligned, as NumPy does;
  // the header always ends in '\n'. Version 1.0 holds a header of up to
  // 65535 bytes; a longer one (a shape of thousands of axes) takes 2.0, whose
  // length field has 4 bytes, as NumPy does.
  auto paddedSize = [&](size_t lenBytes) {
    size_t total = kMagicLen + 2 + lenBytes + header.size() + 1;
    return (total + 63) / 64 * 64 - (kMagicLen + 2 + lenBytes);
  };
  size_t lenBytes = paddedSize(2) <= 0xffff ? 2 : 4;
  header.append(paddedSize(lenBytes) - header.size() - 1, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicLen);
  out.push_back(lenBytes == 2 ? '\x01' : '\x02');
  out.push_back('\x00');
  appendLE(out, header.size(), lenBytes);
  out += header;
  return out;
}

std::string fusec::writeNpy(const NpyArray &array, NpyDType dtype) {
  uint64_t count = 1;
  for (int64_t dim : array.shape) {
    assert(dim >= 0 && "negative dimension");
    count *= static_cast<uint64_t>(dim);
  }
  assert(count == array.data.size() && "shape does not match the data size");

  std::string out = npyHeader(array.shape, dtype);
  const size_t itemSize = dtype == NpyDType::F16   ? 2
                          : dtype == NpyDType::F32 ? 4
                                                   : 8;
  out.reserve(out.size() + count * itemSize);
  for (double v : array.data) {
    switch (dtype) {
    case NpyDType::F16:
      appendLE(out, doubleToHalfBits(v), 2);
      break;
    case NpyDType::F32: {
      // IEEE conversion: round to nearest even, overflow to inf.
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      appendLE(out, bits, 4);
      break;
    }
    case NpyDType::F64: {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      appendLE(out, bits, 8);
      break;
    }
    }
  }
  return out;
}
