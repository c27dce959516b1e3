//===- TuningDB.cpp - The autotuner's database ----------------------------===//

#include "fusec/Tuning/TuningDB.h"

#include "fusec/Support/SafeRead.h"
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

namespace {
/// A database's text, split to be parsed in parts: llvm::json's tree takes
/// some 80 bytes per byte of text (4.3 GB for a database of 54 MB), so the
/// root object is parsed with its "entries" arrays emptied, and each entry
/// alone as it is read. The split only finds where things are; json::parse
/// checks every part, and the separators between entries are checked by
/// parsing the text between them.
struct SplitText {
  /// The text with the body of every "entries" array of the root object
  /// cut out ("entries": [] is left).
  std::string root;
  /// Where each piece of `root` starts, in `root` and in the text.
  std::vector<std::pair<size_t, size_t>> pieces{{0, 0}};
  /// The elements of the root's last "entries" array (the one
  /// llvm::json::parse keeps: a later key replaces an earlier one), with
  /// their offsets in the text.
  std::vector<std::pair<llvm::StringRef, size_t>> entries;
  /// Where a '}' closes an "entries" array of entries, if one does: the
  /// emptied array reads "[}", which json::parse words differently.
  size_t misclosed = llvm::StringRef::npos;

  /// The offset in the text of `offset` in `root`.
  size_t textOffset(size_t offset) const {
    auto piece = llvm::upper_bound(
        pieces, offset, [](size_t o, auto p) { return o < p.first; });
    return std::prev(piece)->second + (offset - std::prev(piece)->first);
  }
};
} // namespace

static SplitText split(llvm::StringRef text) {
  SplitText s;
  size_t copied = 0; // the text before this is in s.root
  unsigned depth = 0;
  bool expectKey = false, rootIsObject = false;
  llvm::StringRef key;
  // Inside an "entries" array: where its body and the current element start.
  size_t body = llvm::StringRef::npos, element = 0;
  std::vector<std::pair<llvm::StringRef, size_t>> elements;
  auto endArray = [&](size_t end) {
    llvm::StringRef last = text.slice(element, end);
    if (!elements.empty() || !last.trim().empty())
      elements.push_back({last, element});
    s.root += text.slice(copied, body);
    s.pieces.push_back({s.root.size(), end});
    copied = end;
    s.entries = std::move(elements);
    elements.clear();
    body = llvm::StringRef::npos;
  };
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < e && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      if (depth == 1 && expectKey) {
        key = text.slice(i + 1, end);
        expectKey = false;
      }
      i = end;
    } else if (c == '{' || c == '[') {
      if (++depth == 1) {
        rootIsObject = c == '{';
        expectKey = rootIsObject;
      } else if (depth == 2 && c == '[' && rootIsObject && key == "entries") {
        body = element = i + 1;
      }
    } else if (c == '}' || c == ']') {
      if (depth == 2 && body != llvm::StringRef::npos) {
        if (c == '}' && !text.slice(body, i).trim().empty())
          s.misclosed = i;
        endArray(i);
      }
      if (depth)
        --depth;
    } else if (c == ',' && depth == 1) {
      expectKey = true;
    } else if (c == ',' && depth == 2 && body != llvm::StringRef::npos) {
      elements.push_back({text.slice(element, i), element});
      element = i + 1;
    }
  }
  if (body != llvm::StringRef::npos) // never closed: the root will not parse
    endArray(text.size());
  s.root += text.substr(copied);
  return s;
}

/// A llvm::json::ParseError of a part of `text`, with the position in
/// `text` that `at` maps the part's offsets to.
static std::pair<size_t, std::string>
relocate(llvm::Error error, llvm::StringRef text,
         llvm::function_ref<size_t(size_t)> at) {
  std::string message = llvm::toString(std::move(error));
  // "[LINE:COLUMN, byte=OFFSET]: WHAT"
  auto [position, what] = llvm::StringRef(message).split("]: ");
  size_t byte = position.rfind("byte="), offset;
  if (!position.starts_with("[") || byte == llvm::StringRef::npos ||
      position.drop_front(byte + 5).getAsInteger(10, offset) || what.empty())
    return {0, message};
  offset = at(offset);
  return {offset, fusec::jsonPosition(text, offset) + ": " + what.str()};
}

Database Database::load(llvm::StringRef path,
                        std::vector<std::string> &warnings) {
  Database db;
  if (path.empty() || path == "none")
    return db;
  auto warning = [&](const llvm::Twine &what) {
    return ("tuning database '" + path + "': " + what).str();
  };
  auto notJson = [&](const std::string &why) {
    warnings.push_back(warning("not valid JSON (" + why + "); ignoring it"));
    return Database();
  };
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> file =
      readRegularFile(path, kMaxDatabaseBytes);
  if (!file) {
    std::string why;
    if (!isMissingFile(file.takeError(), why))
      warnings.push_back(warning("cannot read it (" + why + "); ignoring it"));
    return db;
  }
  llvm::StringRef text = (*file)->getBuffer();
  if (llvm::Error error = checkJSONDepth(text))
    return notJson(llvm::toString(std::move(error)));
  auto notDatabase = [&] {
    warnings.push_back(warning("not a fusec tuning database of version " +
                               llvm::Twine(kFormatVersion) + "; ignoring it"));
    return Database();
  };
  // A database is an object: an array is not parsed (a large one would
  // make a large tree).
  if (text.ltrim().starts_with("["))
    return notDatabase();

  SplitText parts = split(text);
  std::optional<std::pair<size_t, std::string>> rootError;
  llvm::Expected<json::Value> root = json::parse(parts.root);
  if (!root)
    rootError = relocate(root.takeError(), text, [&](size_t offset) {
      return parts.textOffset(offset);
    });
  // json::ParseError positions are past the character at fault.
  if (rootError && parts.misclosed != llvm::StringRef::npos &&
      rootError->first == parts.misclosed + 1)
    rootError->second = fusec::jsonPosition(text, rootError->first) +
                        ": Expected , or ] after array element";
  // Errors are reported in the order of the text: the root's first when it
  // comes before the entries.
  if (rootError &&
      (parts.entries.empty() || rootError->first <= parts.entries[0].second))
    return notJson(rootError->second);
  json::Object *object = root ? root->getAsObject() : nullptr;
  json::Array *inTree = object ? object->getArray("entries") : nullptr;
  if (root && (!object || object->getString("format") != kFormat ||
               object->getInteger("version") != kFormatVersion || !inTree))
    return notDatabase();

  std::string current = version();
  int64_t stale = 0, malformed = 0;
  std::vector<std::string> entryWarnings;
  auto take = [&](size_t i, const json::Value &value) {
    std::string why;
    std::optional<Entry> entry = parseEntry(value, why);
    if (!entry) {
      // A few say what is wrong; the rest are counted, so that a database
      // of many bad entries does not bury the output.
      if (++malformed <= kMaxEntryWarnings)
        entryWarnings.push_back(
            warning("entries[" + llvm::Twine(i) + "] ignored: " + why));
    } else if (entry->fusec != current) {
      ++stale;
      std::string text;
      llvm::raw_string_ostream(text) << value;
      db.foreign.push_back(std::move(text));
    } else {
      db.record(std::move(*entry));
    }
  };
  // Entries under a key written with escapes ("entr\u0069es") stay in the
  // tree; when that key comes last, it is the one json::parse keeps.
  bool keptInTree = inTree && !inTree->empty();
  if (keptInTree)
    for (auto [i, value] : llvm::enumerate(*inTree))
      take(i, value);
  for (auto [i, part] : llvm::enumerate(parts.entries)) {
    // Parsed in brackets, as in the file, so that what is wrong around the
    // entry (two without a comma, a comma with none) reads as it would.
    auto [element, offset] = part;
    std::string wrapped = ("[" + element + "]").str();
    llvm::Expected<json::Value> list = json::parse(wrapped);
    if (!list)
      return notJson(relocate(list.takeError(), text, [&](size_t o) {
                       return offset + o - 1;
                     }).second);
    const json::Array &one = *list->getAsArray();
    if (one.empty())
      return notJson(fusec::jsonPosition(text, offset + element.size() + 1) +
                     ": Invalid JSON value");
    if (!keptInTree)
      take(i, one[0]);
  }
  if (rootError)
    return notJson(rootError->second);

  llvm::append_range(warnings, entryWarnings);
  if (malformed > kMaxEntryWarnings)
    warnings.push_back(warning("... and " +
                               llvm::Twine(malformed - kMaxEntryWarnings) +
                               " more malformed entries ignored (" +
                               llvm::Twine(malformed) + " in all)"));
  if (stale)
    warnings.push_back(warning(llvm::Twine(stale) +
                               " entries were tuned by another fusec " +
                               "build and are ignored (this is " + current +
                               "); run `fusec tune` again"));
  return db;
}

/// The key of the index: what one entry is recorded for.
static std::string indexKey(llvm::StringRef kernel, llvm::StringRef chip,
                            llvm::StringRef gpu) {
  return (kernel + llvm::Twine('\0') + chip + llvm::Twine('\0') + gpu).str();
}

const Entry *Database::lookup(llvm::StringRef kernel, llvm::StringRef chip,
                              llvm::StringRef gpu) const {
  const llvm::StringMap<size_t> &map = gpu.empty() ? anyGpu : index;
  auto it = map.find(indexKey(kernel, chip, gpu));
  return it == map.end() ? nullptr : &recorded[it->second];
}

void Database::record(Entry entry) {
  auto [it, inserted] = index.try_emplace(
      indexKey(entry.kernel, entry.chip, entry.gpu), recorded.size());
  if (!inserted) {
    recorded[it->second] = std::move(entry);
    return;
  }
  // The first entry of a kernel and chip answers lookups for any GPU.
  anyGpu.try_emplace(indexKey(entry.kernel, entry.chip, ""), recorded.size());
  recorded.push_back(std::move(entry));
}

/// Writes the database as llvm::json would print its whole tree with an
/// indent of 2 (keys sorted), an entry at a time: the tree of a large
/// database takes some 80 bytes of memory per byte of text.
static void writeDatabase(llvm::raw_ostream &os,
                          llvm::ArrayRef<std::string> foreign,
                          llvm::ArrayRef<Entry> entries) {
  json::OStream out(os, /*IndentSize=*/2);
  out.object([&] {
    out.attributeArray("entries", [&] {
      for (const std::string &text : foreign)
        if (llvm::Expected<json::Value> value = fusec::parseJSON(text))
          out.value(*value);
        else
          llvm::consumeError(value.takeError());
      for (const Entry &entry : entries)
        out.object([&] {
          out.attribute("chip", entry.chip);
          out.attribute("description", entry.description);
          out.attribute("family", entry.family);
          out.attribute("fusec", entry.fusec);
          out.attribute("gpu", entry.gpu);
          out.attribute("heuristic_ms", entry.heuristicMs);
          out.attribute("kernel", entry.kernel);
          out.attribute("ms", entry.ms);
          out.attributeObject("tile", [&] {
            for (const auto &[key, value] : entry.tile) // std::map: sorted
              out.attribute(key, value);
          });
        });
    });
    out.attribute("format", kFormat);
    out.attribute("version", kFormatVersion);
  });
}

bool Database::save(llvm::StringRef path, std::string &error) const {
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
    writeDatabase(os, foreign, recorded);
    os << "\n";
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
