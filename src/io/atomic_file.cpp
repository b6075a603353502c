#include <saltus/io/atomic_file.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace saltus {

namespace {

std::filesystem::path temporary_for(const std::filesystem::path& path) {
  return path.parent_path() / fmt::format(".{}.saltus-tmp-{}", path.filename().string(), ::getpid());
}

std::string reason() { return errno != 0 ? std::strerror(errno) : "unknown error"; }

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)), temporary_(temporary_for(path_)) {
  errno = 0;
  out_.open(temporary_);
  if (!out_) throw InputError(fmt::format("cannot write '{}': {}", path_.string(), reason()));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void AtomicFile::commit() {
  errno = 0;
  out_.flush();
  out_.close();
  if (!out_) throw InputError(fmt::format("error while writing '{}': {}", path_.string(), reason()));
  std::error_code ec;
  std::filesystem::rename(temporary_, path_, ec);
  if (ec) throw InputError(fmt::format("cannot write '{}': {}", path_.string(), ec.message()));
  committed_ = true;
}

void require_writable(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path folder = path.parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError(fmt::format("cannot create the folder '{}': {}", folder.string(), ec.message()));
  if (std::filesystem::is_directory(path)) throw InputError(fmt::format("'{}' is a folder", path.string()));
  AtomicFile probe(path);  // removed again by its destructor
}

}  // namespace saltus
