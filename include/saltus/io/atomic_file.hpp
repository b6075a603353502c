#pragma once
// Output files that appear whole or not at all: the text goes to a temporary file next to the
// target (same folder, so the final rename is atomic on POSIX file systems) and is renamed over
// the target by commit(). A file that is never committed (an exception, an interrupt) is
// removed, so a reader never sees half a result. A symbolic link is written through (its target
// is replaced, the link stays; a loop of links is refused); a device, pipe or socket
// (/dev/null) is written into directly, appended; an open descriptor of the process
// (/dev/stdout, /dev/fd/N) is written through that descriptor itself, at commit, so that the
// text shares its file position with whatever else the process writes there (a report on
// stdout redirected to a file no longer overwrites it).
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace saltus {

class AtomicFile {
 public:
  /// Opens the temporary file for `path`; throws InputError naming `path` if it cannot.
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return descriptor_ ? static_cast<std::ostream&>(held_) : out_; }
  /// Flushes, closes and renames the temporary file onto the target (a device or pipe: flushes
  /// and closes; an open descriptor: writes the text through it); throws InputError on a write
  /// or rename failure (the temporary file is removed).
  void commit();

 private:
  std::filesystem::path path_;       ///< as given, for messages
  std::filesystem::path target_;     ///< where the text lands (a link's target)
  std::filesystem::path temporary_;  ///< written first (the target itself when direct_)
  std::ofstream out_;
  std::optional<int> descriptor_;  ///< the process's descriptor `path` names, if it names one
  std::ostringstream held_;        ///< the text for descriptor_, written at commit
  bool direct_ = false;  ///< the target is a device, pipe or socket: written into, not replaced
  bool committed_ = false;
};

/// The process's own open descriptor that `path` names (/dev/stdout: 1; /dev/fd/N, /proc/self/fd/N:
/// N, through links), or nothing.
std::optional<int> open_descriptor(const std::filesystem::path& path);

/// Throws InputError naming `path` unless a file can be created there (its folder is created
/// if missing). Used before a run so that an unwritable output fails before the work.
void require_writable(const std::filesystem::path& path);

}  // namespace saltus
