//===- SafeRead.cpp - Reading untrusted files and JSON --------------------===//

#include "fusec/Support/SafeRead.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Errno.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

using namespace fusec;

static const char *describe(llvm::sys::fs::file_type type) {
  using llvm::sys::fs::file_type;
  switch (type) {
  case file_type::directory_file:
    return "a directory";
  case file_type::fifo_file:
    return "a FIFO";
  case file_type::character_file:
    return "a character device";
  case file_type::block_file:
    return "a block device";
  case file_type::socket_file:
    return "a socket";
  default:
    return "not a regular file";
  }
}

/// Opens `name` without blocking and checks, on the descriptor, that it is
/// a regular file: O_NONBLOCK because opening a FIFO for reading blocks until
/// a writer comes, before there is a descriptor to check
/// (llvm::sys::fs::openFileForRead has no such flag); it changes nothing for
/// the regular files then read.
static llvm::Expected<int> openRegularFile(llvm::StringRef name,
                                           llvm::sys::fs::file_status &status) {
  int fd = llvm::sys::RetryAfterSignal(-1, ::open, name.data(),
                                       O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    std::error_code ec(errno, std::generic_category());
    return llvm::createStringError(ec, ec.message());
  }
  std::error_code ec = llvm::sys::fs::status(fd, status);
  if (!ec && status.type() == llvm::sys::fs::file_type::regular_file)
    return fd;
  ::close(fd);
  if (ec)
    return llvm::createStringError(ec, ec.message());
  return llvm::createStringError(
      std::make_error_code(std::errc::invalid_argument),
      llvm::Twine("it is ") + describe(status.type()) + ", not a regular file");
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
fusec::readRegularFile(const llvm::Twine &path, uint64_t maxBytes) {
  llvm::SmallString<256> storage;
  llvm::StringRef name = path.toNullTerminatedStringRef(storage);
  llvm::sys::fs::file_status status;
  llvm::Expected<int> fd = openRegularFile(name, status);
  if (!fd)
    return fd.takeError();
  llvm::scope_exit closeFd([&] { ::close(*fd); });
  if (status.getSize() > maxBytes)
    return llvm::createStringError(
        std::make_error_code(std::errc::file_too_large),
        llvm::formatv("it holds {0} bytes, over the limit of {1}",
                      status.getSize(), maxBytes));
  // Exactly the size checked, read rather than mapped (IsVolatile): a file
  // that grows is not read further, and one truncated meanwhile cannot fault
  // a mapping.
  return llvm::errorOrToExpected(llvm::MemoryBuffer::getOpenFile(
      *fd, name, status.getSize(), /*RequiresNullTerminator=*/true,
      /*IsVolatile=*/true));
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
fusec::mapRegularFile(const llvm::Twine &path) {
  llvm::SmallString<256> storage;
  llvm::StringRef name = path.toNullTerminatedStringRef(storage);
  llvm::sys::fs::file_status status;
  llvm::Expected<int> fd = openRegularFile(name, status);
  if (!fd)
    return fd.takeError();
  llvm::scope_exit closeFd([&] { ::close(*fd); });
  return llvm::errorOrToExpected(llvm::MemoryBuffer::getOpenFile(
      *fd, name, status.getSize(), /*RequiresNullTerminator=*/false));
}

bool fusec::isMissingFile(llvm::Error error, std::string &why) {
  bool missing = false;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase &e) {
    missing = e.convertToErrorCode() == std::errc::no_such_file_or_directory;
    why = e.message();
  });
  return missing;
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
fusec::readBoundedText(const llvm::Twine &path, uint64_t maxBytes) {
  llvm::SmallString<256> storage;
  llvm::StringRef name = path.toNullTerminatedStringRef(storage);
  bool stdIn = name == "-";
  // Blocking: a FIFO named on the command line is meant to be read.
  int fd = stdIn ? 0
                 : llvm::sys::RetryAfterSignal(-1, ::open, name.data(),
                                               O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::error_code ec(errno, std::generic_category());
    return llvm::createStringError(ec, ec.message());
  }
  llvm::scope_exit closeFd([fd, stdIn] {
    if (!stdIn)
      ::close(fd);
  });
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(fd, status))
    return llvm::createStringError(ec, ec.message());
  auto tooLarge = [&] {
    return llvm::createStringError(
        std::make_error_code(std::errc::file_too_large),
        llvm::formatv("it holds more than {0} bytes, the most fusec reads of "
                      "graph text",
                      maxBytes));
  };
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return llvm::createStringError(
        std::make_error_code(std::errc::is_a_directory), "it is a directory");
  if (status.type() == llvm::sys::fs::file_type::regular_file) {
    if (status.getSize() > maxBytes)
      return tooLarge();
    return llvm::errorOrToExpected(llvm::MemoryBuffer::getOpenFile(
        fd, stdIn ? "<stdin>" : name, status.getSize()));
  }
  // A stream: read to its end, one byte past the bound at most.
  std::string text;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::error_code ec(errno, std::generic_category());
      return llvm::createStringError(ec, ec.message());
    }
    if (n == 0)
      break;
    if (text.size() + n > maxBytes)
      return tooLarge();
    text.append(chunk, n);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(text, stdIn ? "<stdin>" : name);
}

std::string fusec::jsonPosition(llvm::StringRef text, size_t offset) {
  llvm::StringRef before = text.take_front(offset);
  size_t lineStart = before.rfind('\n') + 1; // npos + 1 == 0
  return llvm::formatv("[{0}:{1}, byte={2}]", before.count('\n') + 1,
                       offset - lineStart, offset)
      .str();
}

llvm::Error fusec::checkJSONDepth(llvm::StringRef text) {
  // The depth llvm::json::parse would reach, found without recursing: it
  // agrees with the parser's up to the first syntax error, where the parser
  // stops anyway.
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == ']' || c == '}') {
      if (depth)
        --depth;
    } else if ((c == '[' || c == '{') && ++depth > kMaxJSONDepth) {
      return llvm::createStringError(
          std::make_error_code(std::errc::invalid_argument),
          jsonPosition(text, i) +
              llvm::formatv(": arrays and objects nested deeper than {0} "
                            "levels",
                            kMaxJSONDepth));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Value> fusec::parseJSON(llvm::StringRef text) {
  if (llvm::Error error = checkJSONDepth(text))
    return std::move(error);
  return llvm::json::parse(text);
}
