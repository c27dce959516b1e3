//===- SafeRead.h - Reading untrusted files and JSON ------------*- C++ -*-===//
//
// The compiler side's reads of files that anyone may have put in its way (the
// tuning database, kernel cache entries) and of the JSON in them: a read
// never blocks, never runs past a bound, and never recurses without one.
// (The runtime, which has no LLVM dependency, has its own readFile.)
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_SUPPORT_SAFEREAD_H
#define FUSEC_SUPPORT_SAFEREAD_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fusec {

/// Reads the file at `path` whole, following links. Refuses, without
/// blocking or reading anything, what is not a regular file (a FIFO, a
/// device such as /dev/zero, a directory, a socket) and a file of more than
/// `maxBytes` bytes: the checks are made on the opened descriptor, so the
/// path cannot be swapped between check and read. Errors say what is wrong
/// but not the path, which the caller names; a missing file fails with
/// std::errc::no_such_file_or_directory (llvm::errorToErrorCode).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readRegularFile(const llvm::Twine &path, uint64_t maxBytes);

/// Takes a readRegularFile or mapRegularFile error: true when the file does
/// not exist (which callers often take as "none"); `why` gets its message.
bool isMissingFile(llvm::Error error, std::string &why);

/// readRegularFile without a size bound, mapped where large: for data files
/// (.npy inputs) that may be big but must be files.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
mapRegularFile(const llvm::Twine &path);

/// The most bytes of graph text fusec reads (graphs are text: a fused chain
/// of 8000 ops is about 1 MB).
constexpr uint64_t kMaxGraphTextBytes = uint64_t(256) << 20;

/// Reads text that may come through a pipe: "-" is standard input, and a
/// FIFO or a character device is read until its end, but refused once it
/// passes `maxBytes` (/dev/zero has none); a regular file is refused at once
/// when it is larger.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readBoundedText(const llvm::Twine &path, uint64_t maxBytes);

/// The deepest nesting of arrays and objects parseJSON accepts. fusec's own
/// JSON nests 4 levels; llvm::json::parse recurses once per level, so an
/// unbounded depth (100,000 '[') overflows the stack.
constexpr unsigned kMaxJSONDepth = 64;

/// llvm::json::parse, refusing text nested deeper than kMaxJSONDepth before
/// the parser sees it, with an error in llvm::json::ParseError's form
/// ("[LINE:COLUMN, byte=OFFSET]: MESSAGE").
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

/// The check parseJSON makes before parsing, in linear time and constant
/// space: an error when arrays and objects nest deeper than kMaxJSONDepth.
llvm::Error checkJSONDepth(llvm::StringRef text);

/// "[LINE:COLUMN, byte=OFFSET]": byte `offset` of `text` as
/// llvm::json::ParseError writes a position (lines from 1, columns from 0).
std::string jsonPosition(llvm::StringRef text, size_t offset);

} // namespace fusec

#endif // FUSEC_SUPPORT_SAFEREAD_H
