//===- TuningDB.cpp - The autotuner's database ----------------------------===//

#include "fusec/Tuning/TuningDB.h"

#include "fusec/Version.inc"

#include "Fuse/FuseOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

using namespace fusec::tuning;
namespace json = llvm::json;

/// The file format, and its version.
static constexpr llvm::StringLiteral kFormat = "fusec-tuning";
static constexpr int64_t kFormatVersion = 1;

/// #fuse.tile's parameters, in order.
static constexpr llvm::StringLiteral kTileKeys[] = {
    "bm", "bn", "bk", "tm", "tn", "warps_m", "warps_n", "stages", "warps_k"};

std::string fusec::tuning::version() { return FUSEC_VERSION; }

std::string fusec::tuning::userCacheDir() {
  llvm::SmallString<256> dir;
  if (std::optional<std::string> cache =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      cache && !cache->empty()) {
    dir = *cache;
  } else if (llvm::sys::path::home_directory(dir)) {
    llvm::sys::path::append(dir, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(dir, "fusec");
  return std::string(dir);
}

std::string fusec::tuning::defaultPath() {
  if (std::optional<std::string> path =
          llvm::sys::Process::GetEnv("FUSEC_TUNING_DB"))
    return *path;
  std::string dir = userCacheDir();
  if (dir.empty())
    return "none";
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "tuning.json");
  return std::string(path);
}

std::string fusec::tuning::kernelSignature(mlir::fuse::KernelOp kernel,
                                           llvm::StringRef chip,
                                           llvm::StringRef fp32Math) {
  // The body in generic form, locations and the kernel's name left out:
  // two kernels computing the same thing on the same shapes share a
  // signature.
  std::string text;
  llvm::raw_string_ostream os(text);
  os << chip << "\n" << fp32Math << "\n";
  // Values are numbered within the kernel alone (a local scope), so that
  // what surrounds it, lowered or not, leaves the signature as it is.
  mlir::OpPrintingFlags flags;
  flags.printGenericOpForm().elideLargeElementsAttrs(16).useLocalScope();
  mlir::AsmState state(kernel, flags);
  for (mlir::Type type : kernel.getInputs().getTypes())
    os << type << "\n";
  for (mlir::Operation &op : kernel.getBody().front()) {
    op.print(os, state);
    os << "\n";
  }
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()),
                              text.size()));
  return llvm::toHex(llvm::ArrayRef<uint8_t>(hash).take_front(16),
                     /*LowerCase=*/true);
}

/// The entry `value` holds, or why not.
static std::optional<Entry> parseEntry(const json::Value &value,
                                       std::string &why) {
  const json::Object *object = value.getAsObject();
  if (!object) {
    why = "not an object";
    return std::nullopt;
  }
  Entry entry;
  for (auto [key, field] :
       {std::pair{"kernel", &entry.kernel}, {"chip", &entry.chip},
        {"gpu", &entry.gpu}, {"fusec", &entry.fusec},
        {"family", &entry.family}}) {
    std::optional<llvm::StringRef> text = object->getString(key);
    if (!text || text->empty()) {
      why = std::string("no '") + key + "'";
      return std::nullopt;
    }
    *field = text->str();
  }
  if (std::optional<llvm::StringRef> d = object->getString("description"))
    entry.description = d->str();
  const json::Object *tile = object->getObject("tile");
  if (!tile) {
    why = "no 'tile'";
    return std::nullopt;
  }
  for (const auto &[key, v] : *tile) {
    std::optional<int64_t> n = v.getAsInteger();
    if (!llvm::is_contained(kTileKeys, key.str()) || !n || *n < 0 ||
        *n > 4096) {
      why = "tile parameter '" + key.str() + "' is not one of #fuse.tile's "
            "with a value in [0, 4096]";
      return std::nullopt;
    }
    entry.tile[key.str()] = *n;
  }
  for (llvm::StringRef key : {"bm", "bn", "bk"})
    if (!entry.tile.count(key.str())) {
      why = "the tile has no '" + key.str() + "'";
      return std::nullopt;
    }
  entry.ms = object->getNumber("ms").value_or(0);
  entry.heuristicMs = object->getNumber("heuristic_ms").value_or(0);
  return entry;
}

Database Database::load(llvm::StringRef path,
                        std::vector<std::string> &warnings) {
  Database db;
  if (path.empty() || path == "none" || !llvm::sys::fs::exists(path))
    return db;
  auto warn = [&](const llvm::Twine &what) {
    warnings.push_back(("tuning database '" + path + "': " + what).str());
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file) {
    warn("cannot read it (" + file.getError().message() + "); ignoring it");
    return db;
  }
  llvm::Expected<json::Value> root = json::parse((*file)->getBuffer());
  if (!root) {
    warn("not valid JSON (" + llvm::toString(root.takeError()) +
         "); ignoring it");
    return db;
  }
  const json::Object *object = root->getAsObject();
  const json::Array *entries = object ? object->getArray("entries") : nullptr;
  if (!object || object->getString("format") != kFormat ||
      object->getInteger("version") != kFormatVersion || !entries) {
    warn("not a fusec tuning database of version " +
         llvm::Twine(kFormatVersion) + "; ignoring it");
    return db;
  }
  std::string current = version();
  int64_t stale = 0;
  for (auto [i, value] : llvm::enumerate(*entries)) {
    std::string why;
    std::optional<Entry> entry = parseEntry(value, why);
    if (!entry) {
      warn("entries[" + llvm::Twine(i) + "] ignored: " + why);
      continue;
    }
    if (entry->fusec != current) {
      ++stale;
      std::string text;
      llvm::raw_string_ostream(text) << value;
      db.foreign.push_back(std::move(text));
      continue;
    }
    db.record(std::move(*entry));
  }
  if (stale)
    warn(llvm::Twine(stale) + " entries were tuned by another fusec build " +
         "and are ignored (this is " + current + "); run `fusec tune` again");
  return db;
}

const Entry *Database::lookup(llvm::StringRef kernel, llvm::StringRef chip,
                              llvm::StringRef gpu) const {
  for (const Entry &entry : entries)
    if (entry.kernel == kernel && entry.chip == chip &&
        (gpu.empty() || entry.gpu == gpu))
      return &entry;
  return nullptr;
}

void Database::record(Entry entry) {
  for (Entry &old : entries)
    if (old.kernel == entry.kernel && old.chip == entry.chip &&
        old.gpu == entry.gpu) {
      old = std::move(entry);
      return;
    }
  entries.push_back(std::move(entry));
}

bool Database::save(llvm::StringRef path, std::string &error) const {
  json::Array list;
  for (const std::string &text : foreign)
    if (llvm::Expected<json::Value> value = json::parse(text))
      list.push_back(std::move(*value));
    else
      llvm::consumeError(value.takeError());
  for (const Entry &entry : entries) {
    json::Object tile;
    for (const auto &[key, value] : entry.tile)
      tile[key] = value;
    list.push_back(json::Object{{"kernel", entry.kernel},
                                {"description", entry.description},
                                {"chip", entry.chip},
                                {"gpu", entry.gpu},
                                {"fusec", entry.fusec},
                                {"family", entry.family},
                                {"tile", std::move(tile)},
                                {"ms", entry.ms},
                                {"heuristic_ms", entry.heuristicMs}});
  }
  json::Object root{{"format", kFormat},
                    {"version", kFormatVersion},
                    {"entries", std::move(list)}};
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (!dir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      error = "cannot create '" + dir.str() + "': " + ec.message();
      return false;
    }
  // Written beside the database, then renamed over it: a reader sees the
  // old file or the new one, never half of one.
  llvm::SmallString<256> temp;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          path + ".tmp-%%%%%%", fd, temp)) {
    error = "cannot write beside '" + path.str() + "': " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
    os.close();
    if (os.has_error()) {
      error = "cannot write '" + temp.str().str() + "': " +
              os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    error = "cannot replace '" + path.str() + "': " + ec.message();
    llvm::sys::fs::remove(temp);
    return false;
  }
  return true;
}
