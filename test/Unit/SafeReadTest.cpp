//===- SafeReadTest.cpp - Reading files and JSON fusec does not trust -----===//
//
// readRegularFile refuses what is not a regular file (a link to /dev/zero, a
// FIFO, a directory) without blocking, and a file over its bound without
// reading it; parseJSON refuses nesting that would overflow the stack.
//
//===----------------------------------------------------------------------===//

#include "fusec/Support/SafeRead.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace fusec;

namespace {

class SafeRead : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("fusec-saferead", dir));
    // A read that blocks (a FIFO) would hang the suite: end it instead.
    ::alarm(60);
  }
  void TearDown() override {
    ::alarm(0);
    llvm::sys::fs::remove_directories(dir);
  }
  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  /// The error readRegularFile gives for `file`, or "" when it reads it.
  static std::string refusal(const std::string &file, uint64_t max = 1 << 20) {
    auto buffer = readRegularFile(file, max);
    return buffer ? "" : llvm::toString(buffer.takeError());
  }

  llvm::SmallString<128> dir;
};

TEST_F(SafeRead, ReadsARegularFileAndALinkToOne) {
  std::string file = path("a.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec);
    os << "{\"x\": 1}";
  }
  ASSERT_FALSE(llvm::sys::fs::create_link(file, path("link.json")));
  for (const std::string &p : {file, path("link.json")}) {
    auto buffer = readRegularFile(p, 8);
    ASSERT_TRUE(!!buffer) << llvm::toString(buffer.takeError());
    EXPECT_EQ((*buffer)->getBuffer(), "{\"x\": 1}");
  }
  // One byte over the bound: refused without being read.
  EXPECT_EQ(refusal(file, 7), "it holds 8 bytes, over the limit of 7");
}

TEST_F(SafeRead, AMissingFileSaysSo) {
  auto buffer = readRegularFile(path("absent"), 100);
  ASSERT_FALSE(!!buffer);
  EXPECT_EQ(llvm::errorToErrorCode(buffer.takeError()),
            std::errc::no_such_file_or_directory);
}

TEST_F(SafeRead, RefusesWhatIsNotARegularFileWithoutBlocking) {
  ASSERT_FALSE(llvm::sys::fs::create_link("/dev/zero", path("zero")));
  EXPECT_EQ(refusal(path("zero")),
            "it is a character device, not a regular file");
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(refusal(path("fifo")), "it is a FIFO, not a regular file");
  EXPECT_EQ(refusal(dir.str().str()), "it is a directory, not a regular file");
}

TEST_F(SafeRead, RefusesAHugeSparseFileWithoutReadingIt) {
  std::string file = path("sparse");
  int fd;
  ASSERT_FALSE(llvm::sys::fs::openFileForWrite(file, fd));
  ASSERT_FALSE(llvm::sys::fs::resize_file(fd, uint64_t(1) << 40));
  ::close(fd);
  EXPECT_EQ(refusal(file, 1 << 20),
            "it holds 1099511627776 bytes, over the limit of 1048576");
}

TEST(SafeReadJSON, RefusesDeepNestingBeforeParsing) {
  std::string ok =
      std::string(kMaxJSONDepth, '[') + std::string(kMaxJSONDepth, ']');
  EXPECT_TRUE(!!parseJSON(ok));
  // 100,000 levels overflowed the stack in llvm::json::parse.
  for (size_t levels : {size_t(kMaxJSONDepth) + 1, size_t(100000)}) {
    auto value = parseJSON(std::string(levels, '['));
    ASSERT_FALSE(!!value);
    EXPECT_EQ(llvm::toString(value.takeError()),
              "[1:64, byte=64]: arrays and objects nested deeper than 64 "
              "levels");
  }
  auto value = parseJSON("{\"a\":\n  " + std::string(100, '{'));
  ASSERT_FALSE(!!value);
  EXPECT_EQ(llvm::toString(value.takeError()),
            "[2:65, byte=71]: arrays and objects nested deeper than 64 "
            "levels");
  // Brackets in strings (with escaped quotes) are not nesting.
  std::string quoted = "[\"\\\"" + std::string(1000, '[') + "\"]";
  auto text = parseJSON(quoted);
  ASSERT_TRUE(!!text) << llvm::toString(text.takeError());
  EXPECT_EQ(text->getAsArray()->size(), 1u);
}

} // namespace
