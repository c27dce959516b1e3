//===- TuningDB.h - The autotuner's database --------------------*- C++ -*-===//
//
// What `fusec tune` measured: for a kernel (by signature), a target chip, a
// GPU and a fusec build, the configuration (family and tile) that ran
// fastest, checked against the reference first. Compilation looks kernels
// up in it (fusec-tile-kernels' `tuning-db`) and falls back on the
// heuristic for what it lacks. A JSON file (docs/Tuning.md): unreadable
// files and entries, and entries of another fusec build, are ignored with
// a warning, never trusted.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TUNING_TUNINGDB_H
#define FUSEC_TUNING_TUNINGDB_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir::fuse {
class KernelOp;
} // namespace mlir::fuse

namespace fusec::tuning {

/// The largest database read (docs/Tuning.md): 64 MiB, some 120,000
/// entries as `fusec tune` writes them. A larger file is ignored with a
/// warning.
constexpr uint64_t kMaxDatabaseBytes = 64 << 20;
/// Malformed entries warned about one by one; the rest are counted in one
/// more warning.
constexpr int64_t kMaxEntryWarnings = 10;

/// "0.1.0+<commit>[-dirty]": the build entries are keyed by.
std::string version();

/// fusec's per-user cache directory: $XDG_CACHE_HOME/fusec, else
/// ~/.cache/fusec; "" without a home directory.
std::string userCacheDir();

/// The database used when none is named: $FUSEC_TUNING_DB, else
/// $XDG_CACHE_HOME/fusec/tuning.json, else ~/.cache/fusec/tuning.json.
/// "none" (here or as a --tuning-db) disables it.
std::string defaultPath();

/// A kernel's identity for the database: a hash of its body (the ops, types
/// and attributes, not its name) and of the options that shape its code
/// (the chip, the f32 math mode).
std::string kernelSignature(mlir::fuse::KernelOp kernel, llvm::StringRef chip,
                            llvm::StringRef fp32Math);

struct Entry {
  std::string kernel, chip, gpu, fusec;
  /// What the kernel computes and where it came from, for people.
  std::string description;
  /// The family and its tile parameters (#fuse.tile's names: bm, bn, bk,
  /// tm, tn, warps_m, warps_n, stages, warps_k).
  std::string family;
  std::map<std::string, int64_t> tile;
  /// The measured median times, in ms: this configuration and the
  /// heuristic's.
  double ms = 0, heuristicMs = 0;
};

class Database {
public:
  /// Reads `path`; a missing file is an empty database. What cannot be
  /// trusted (a file that is not a regular file of at most
  /// kMaxDatabaseBytes, not the format, malformed entries, entries of
  /// another fusec build) is left out with a line in `warnings`: one per
  /// malformed entry up to kMaxEntryWarnings, then one for the rest. Time
  /// and memory are linear in the file's size.
  static Database load(llvm::StringRef path,
                       std::vector<std::string> &warnings);

  /// The entry for `kernel` on `chip` of this fusec build: for `gpu` when
  /// it is known, else for any GPU.
  const Entry *lookup(llvm::StringRef kernel, llvm::StringRef chip,
                      llvm::StringRef gpu) const;
  /// Adds `entry`, replacing the one with the same kernel, chip and GPU.
  void record(Entry entry);
  /// Writes the database to `path` atomically (a temporary file renamed
  /// over it), creating its directory; false with `error` on failure.
  bool save(llvm::StringRef path, std::string &error) const;

  /// The entries of this build, in the order they were first recorded.
  const std::vector<Entry> &entries() const { return recorded; }

  /// Entries of other fusec builds, kept as they were when saving.
  std::vector<std::string> foreign;

private:
  std::vector<Entry> recorded;
  /// "kernel\0chip\0gpu" -> its entry in `recorded`; with the GPU left
  /// empty, the first entry of the kernel and chip.
  llvm::StringMap<size_t> index, anyGpu;
};

} // namespace fusec::tuning

#endif // FUSEC_TUNING_TUNINGDB_H
