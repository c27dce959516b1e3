//===- TuningDBTest.cpp - Unit tests for the tuning database --------------===//
//
// The database is trusted only as far as it checks out: these tests feed it
// missing, corrupt, foreign and stale files and check what survives, then
// round-trip what `fusec tune` records.
//
//===----------------------------------------------------------------------===//

#include "fusec/Tuning/TuningDB.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using fusec::tuning::Database;
using fusec::tuning::Entry;

namespace {

class TuningDBTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("fusec-tuning-test", dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string path(llvm::StringRef name) const {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  std::string write(llvm::StringRef name, llvm::StringRef text) const {
    std::string p = path(name);
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    EXPECT_FALSE(ec);
    os << text;
    return p;
  }
  /// An entry of this build, as `fusec tune` writes one.
  static std::string entryJson(llvm::StringRef kernel, llvm::StringRef gpu,
                               int64_t bn,
                               llvm::StringRef fusec = llvm::StringRef()) {
    std::string version = fusec.empty() ? fusec::tuning::version() : fusec.str();
    return ("{\"kernel\":\"" + kernel + "\",\"chip\":\"sm_90a\",\"gpu\":\"" +
            gpu + "\",\"fusec\":\"" + version +
            "\",\"family\":\"gemm_wgmma\",\"tile\":{\"bm\":128,\"bn\":" +
            std::to_string(bn) + ",\"bk\":64,\"stages\":4},\"ms\":1.5,"
            "\"heuristic_ms\":1.75}")
        .str();
  }
  static std::string database(llvm::ArrayRef<std::string> entries) {
    std::string text = "{\"format\":\"fusec-tuning\",\"version\":1,"
                       "\"entries\":[";
    for (size_t i = 0; i < entries.size(); ++i)
      text += (i ? "," : "") + entries[i];
    return text + "]}";
  }

  /// `file` is laid out as llvm::json prints a tree with an indent of 2
  /// (save writes an entry at a time, without building the tree).
  static void expectJsonLayout(const std::string &file) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    ASSERT_TRUE(!!buffer);
    llvm::StringRef text = (*buffer)->getBuffer();
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
    ASSERT_TRUE(!!value) << llvm::toString(value.takeError());
    EXPECT_EQ(text.str(), llvm::formatv("{0:2}", *value).str() + "\n");
  }

  llvm::SmallString<128> dir;
};

TEST_F(TuningDBTest, MissingFileIsEmptyAndQuiet) {
  std::vector<std::string> warnings;
  Database db = Database::load(path("absent.json"), warnings);
  EXPECT_TRUE(db.entries().empty());
  EXPECT_TRUE(warnings.empty());
  db = Database::load("none", warnings);
  EXPECT_TRUE(db.entries().empty());
  EXPECT_TRUE(warnings.empty());
}

TEST_F(TuningDBTest, CorruptFileIsIgnoredWithAWarning) {
  for (llvm::StringRef text :
       {llvm::StringRef("{\"format\":\"fusec-tuning\",\"version\":1,\"entr"),
        llvm::StringRef(""), llvm::StringRef("\x00\x01\x02", 3)}) {
    std::vector<std::string> warnings;
    Database db = Database::load(write("db.json", text), warnings);
    EXPECT_TRUE(db.entries().empty());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("not valid JSON"), std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find("db.json"), std::string::npos);
  }
}

TEST_F(TuningDBTest, OtherFormatsAreIgnoredWithAWarning) {
  for (llvm::StringRef text :
       {"[]", "{\"format\":\"fusec-tuning\",\"version\":2,\"entries\":[]}",
        "{\"format\":\"something-else\",\"version\":1,\"entries\":[]}",
        "{\"format\":\"fusec-tuning\",\"version\":1}"}) {
    std::vector<std::string> warnings;
    Database db = Database::load(write("db.json", text), warnings);
    EXPECT_TRUE(db.entries().empty());
    ASSERT_EQ(warnings.size(), 1u) << text.str();
    EXPECT_NE(warnings[0].find("not a fusec tuning database of version 1"),
              std::string::npos)
        << warnings[0];
  }
}

TEST_F(TuningDBTest, MalformedEntriesAreDroppedOneByOne) {
  std::string good = entryJson("k0", "NVIDIA H100", 128);
  std::string noKernel = good;
  noKernel.replace(noKernel.find("\"kernel\":\"k0\","), 14, "");
  std::string badKey = entryJson("k1", "NVIDIA H100", 128);
  badKey.replace(badKey.find("\"stages\""), 8, "\"depth\"");
  std::string huge = entryJson("k2", "NVIDIA H100", 1 << 20);
  std::string noBk = entryJson("k3", "NVIDIA H100", 64);
  noBk.replace(noBk.find(",\"bk\":64"), 8, "");
  std::vector<std::string> warnings;
  Database db = Database::load(
      write("db.json", database({noKernel, good, "17", badKey, huge, noBk})),
      warnings);
  ASSERT_EQ(db.entries().size(), 1u);
  EXPECT_EQ(db.entries()[0].kernel, "k0");
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[0].find("entries[0] ignored: no 'kernel'"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("entries[2] ignored: not an object"),
            std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[2].find("entries[3] ignored: tile parameter 'depth'"),
            std::string::npos)
      << warnings[2];
  EXPECT_NE(warnings[3].find("entries[4] ignored: tile parameter 'bn'"),
            std::string::npos)
      << warnings[3];
  EXPECT_NE(warnings[4].find("entries[5] ignored: the tile has no 'bk'"),
            std::string::npos)
      << warnings[4];
}

TEST_F(TuningDBTest, DeepNestingIsRefusedNotAStackOverflow) {
  // 100,000 '[' overflowed the stack in llvm::json::parse.
  for (const std::string &text :
       {std::string(100000, '['),
        "{\"format\":\"fusec-tuning\",\"version\":1,\"entries\":[" +
            std::string(100000, '{')}) {
    std::vector<std::string> warnings;
    Database db = Database::load(write("deep.json", text), warnings);
    EXPECT_TRUE(db.entries().empty());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("deep.json': not valid JSON ("),
              std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find("]: arrays and objects nested deeper than 64 "
                               "levels); ignoring it"),
              std::string::npos)
        << warnings[0];
  }
}

TEST_F(TuningDBTest, NonRegularAndHugeFilesAreRefusedUnread) {
  // A FIFO blocked forever and a link to /dev/zero was read until the
  // process was killed: end the test rather than hang.
  ::alarm(60);
  ASSERT_FALSE(llvm::sys::fs::create_link("/dev/zero", path("zero.json")));
  ASSERT_EQ(::mkfifo(path("fifo.json").c_str(), 0600), 0);
  std::string sparse = path("huge.json");
  {
    int fd;
    ASSERT_FALSE(llvm::sys::fs::openFileForWrite(sparse, fd));
    ASSERT_FALSE(
        llvm::sys::fs::resize_file(fd, fusec::tuning::kMaxDatabaseBytes + 1));
    ::close(fd);
  }
  for (auto [name, why] :
       {std::pair{"zero.json", "it is a character device, not a regular file"},
        {"fifo.json", "it is a FIFO, not a regular file"},
        {"huge.json", "it holds 67108865 bytes, over the limit of 67108864"},
        {"", "it is a directory, not a regular file"}}) {
    std::vector<std::string> warnings;
    Database db = Database::load(path(name), warnings);
    EXPECT_TRUE(db.entries().empty());
    ASSERT_EQ(warnings.size(), 1u) << name;
    EXPECT_EQ(warnings[0], "tuning database '" + path(name) +
                               "': cannot read it (" + why + "); ignoring it");
  }
  ::alarm(0);
}

TEST_F(TuningDBTest, ManyMalformedEntriesGiveBoundedWarnings) {
  std::string bad = entryJson("k", "NVIDIA H100", 1 << 20);
  std::vector<std::string> entries(100000, bad);
  entries[5] = entryJson("k5", "NVIDIA H100", 128);
  std::vector<std::string> warnings;
  Database db = Database::load(write("db.json", database(entries)), warnings);
  ASSERT_EQ(db.entries().size(), 1u);
  EXPECT_EQ(db.entries()[0].kernel, "k5");
  ASSERT_EQ(warnings.size(), 11u);
  EXPECT_NE(warnings[0].find("entries[0] ignored: tile parameter 'bn'"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[9].find("entries[10] ignored: "), std::string::npos)
      << warnings[9];
  EXPECT_NE(warnings[10].find("db.json': ... and 99989 more malformed entries "
                              "ignored (99999 in all)"),
            std::string::npos)
      << warnings[10];
}

TEST_F(TuningDBTest, ManyEntriesLoadInLinearTime) {
  // Recording each entry used to scan the ones before it: 200,000 entries
  // took minutes. They take a second or two now (more under sanitizers).
  std::vector<std::string> entries;
  for (int i = 0; i < 200000; ++i)
    entries.push_back(
        entryJson(llvm::formatv("{0:x32}", i).str(), "NVIDIA H100", 128));
  std::string file = write("db.json", database(entries));
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> warnings;
  Database db = Database::load(file, warnings);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(db.entries().size(), 200000u);
  EXPECT_EQ(
      db.lookup(llvm::formatv("{0:x32}", 199999).str(), "sm_90a", "")->gpu,
      "NVIDIA H100");
  EXPECT_LT(seconds, 30.0);
}

TEST_F(TuningDBTest, SyntaxErrorsAreReportedWhereJsonParseFindsThem) {
  // The entries are parsed one by one, but a syntax error anywhere still
  // refuses the whole file, at the position llvm::json::parse gives.
  std::string good = entryJson("k0", "NVIDIA H100", 128);
  std::string head = "{\"format\":\"fusec-tuning\",\"version\":1,";
  std::string entries = head + "\"entries\":[" + good;
  for (const std::string &text :
       {entries + "," + good + " " + good + "]}", entries + ",]}",
        entries + ",,]}", entries + ",{\"kernel\":\"k1\",}]}",
        entries + "]} trailing", entries + "],\"more\":[1 2]}",
        head + "\"broken\":tru,\"entries\":[" + good + "]}",
        entries + "," + good + ",\"\\x\"]}", entries + "}}", std::string("} "),
        // Cut short: the position is the end, the words differ.
        entries + ",\n" + good + "\n", entries + "," + good}) {
    std::vector<std::string> warnings;
    Database db = Database::load(write("db.json", text), warnings);
    EXPECT_TRUE(db.entries().empty()) << text;
    ASSERT_EQ(warnings.size(), 1u) << text;
    llvm::Expected<llvm::json::Value> whole = llvm::json::parse(text);
    ASSERT_FALSE(!!whole);
    std::string expected = llvm::toString(whole.takeError());
    if (expected.find("byte=" + std::to_string(text.size()) + "]") !=
        std::string::npos)
      expected = expected.substr(0, expected.find("]: ") + 1);
    EXPECT_NE(warnings[0].find("not valid JSON (" + expected),
              std::string::npos)
        << warnings[0] << "\nexpected " << expected;
  }
  // An array or an object nested in an entry is no separator.
  std::string nested = good;
  nested.insert(nested.size() - 1, ",\"notes\":[1,[2,\"],[\"]]");
  std::vector<std::string> warnings;
  Database db = Database::load(
      write("db.json", head + "\"entries\":[" + nested + "," +
                           entryJson("k1", "NVIDIA H100", 64) + "]}"),
      warnings);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_EQ(db.entries().size(), 2u);
}

TEST_F(TuningDBTest, StaleEntriesAreNotTrustedButKept) {
  std::vector<std::string> warnings;
  std::string file = write(
      "db.json", database({entryJson("old", "NVIDIA H100", 64, "0.0.1+abc"),
                           entryJson("new", "NVIDIA H100", 128)}));
  Database db = Database::load(file, warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 entries were tuned by another fusec build"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(db.lookup("old", "sm_90a", ""), nullptr);
  ASSERT_NE(db.lookup("new", "sm_90a", ""), nullptr);

  // Saving keeps what another build tuned, so that switching builds back
  // and forth loses nothing.
  std::string error;
  ASSERT_TRUE(db.save(file, error)) << error;
  expectJsonLayout(file);
  warnings.clear();
  Database again = Database::load(file, warnings);
  EXPECT_EQ(again.foreign.size(), 1u);
  EXPECT_EQ(again.entries().size(), 1u);
}

TEST_F(TuningDBTest, LookupPrefersTheGpuAndMatchesTheChip) {
  Database db;
  Entry h100;
  h100.kernel = "k";
  h100.chip = "sm_90a";
  h100.gpu = "NVIDIA H100 80GB HBM3";
  h100.fusec = fusec::tuning::version();
  h100.family = "gemm_wgmma";
  h100.tile = {{"bm", 128}, {"bn", 256}, {"bk", 64}};
  Entry h200 = h100;
  h200.gpu = "NVIDIA H200";
  h200.tile["bn"] = 128;
  db.record(h100);
  db.record(h200);
  ASSERT_NE(db.lookup("k", "sm_90a", "NVIDIA H200"), nullptr);
  EXPECT_EQ(db.lookup("k", "sm_90a", "NVIDIA H200")->tile.at("bn"), 128);
  EXPECT_EQ(db.lookup("k", "sm_90a", "NVIDIA H100 80GB HBM3")->tile.at("bn"),
            256);
  EXPECT_NE(db.lookup("k", "sm_90a", ""), nullptr);
  EXPECT_EQ(db.lookup("k", "sm_90a", "NVIDIA A100"), nullptr);
  EXPECT_EQ(db.lookup("k", "sm_80", ""), nullptr);
  EXPECT_EQ(db.lookup("other", "sm_90a", ""), nullptr);

  // Recording the same kernel, chip and GPU again replaces the entry.
  h200.tile["bn"] = 64;
  db.record(h200);
  EXPECT_EQ(db.entries().size(), 2u);
  EXPECT_EQ(db.lookup("k", "sm_90a", "NVIDIA H200")->tile.at("bn"), 64);
}

TEST_F(TuningDBTest, SaveRoundTripsAtomicallyIntoNewDirectories) {
  Database db;
  Entry entry;
  entry.kernel = "0123abcd";
  entry.chip = "sm_90a";
  entry.gpu = "NVIDIA H100";
  entry.fusec = fusec::tuning::version();
  entry.description = "linear 4096x4096x4096 bf16";
  entry.family = "attention_wgmma";
  entry.tile = {{"bm", 128}, {"bn", 64}, {"bk", 16}, {"warps_m", 0}};
  entry.ms = 0.25;
  entry.heuristicMs = 0.5;
  db.record(entry);
  std::string file = path("a/b/tuning.json");
  std::string error;
  ASSERT_TRUE(db.save(file, error)) << error;
  expectJsonLayout(file);

  std::vector<std::string> warnings;
  Database back = Database::load(file, warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(back.entries().size(), 1u);
  const Entry &got = back.entries()[0];
  EXPECT_EQ(got.kernel, entry.kernel);
  EXPECT_EQ(got.description, entry.description);
  EXPECT_EQ(got.family, entry.family);
  EXPECT_EQ(got.tile, entry.tile);
  EXPECT_DOUBLE_EQ(got.ms, 0.25);
  EXPECT_DOUBLE_EQ(got.heuristicMs, 0.5);

  // Nothing but the database is left in its directory.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(path("a/b"), ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(TuningDBTest, SaveReportsWhatItCannotWrite) {
  std::string blocker = write("file", "x");
  Database db;
  std::string error;
  EXPECT_FALSE(db.save(blocker + "/tuning.json", error));
  EXPECT_NE(error.find("cannot"), std::string::npos) << error;
}

TEST_F(TuningDBTest, DefaultPathFollowsTheEnvironment) {
  ::setenv("FUSEC_TUNING_DB", "/x/db.json", 1);
  EXPECT_EQ(fusec::tuning::defaultPath(), "/x/db.json");
  ::unsetenv("FUSEC_TUNING_DB");
  ::setenv("XDG_CACHE_HOME", "/cache", 1);
  EXPECT_EQ(fusec::tuning::defaultPath(), "/cache/fusec/tuning.json");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_NE(fusec::tuning::defaultPath().find(".cache/fusec/tuning.json"),
            std::string::npos);
}

TEST(TuningVersion, NamesTheReleaseAndTheCommit) {
  std::string v = fusec::tuning::version();
  EXPECT_EQ(v.rfind("0.1.0+", 0), 0u) << v;
  EXPECT_GT(v.size(), 6u);
}

} // namespace
