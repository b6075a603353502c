#include <saltus/io/atomic_file.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

namespace saltus {

namespace {

std::filesystem::path temporary_for(const std::filesystem::path& path) {
  return path.parent_path() / fmt::format(".{}.saltus-tmp-{}", path.filename().string(), ::getpid());
}

std::string reason() { return errno != 0 ? std::strerror(errno) : "unknown error"; }

/// The path a symbolic link at `path` points to (relative targets taken from its folder; a
/// dangling link's too), or nothing where `path` is no link.
std::optional<std::filesystem::path> next_link(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) return std::nullopt;
  const std::filesystem::path next = std::filesystem::read_symlink(path, ec);
  if (ec) return std::nullopt;
  return next.is_absolute() ? next : path.parent_path() / next;
}

/// Links the kernel follows before it gives up (ELOOP).
constexpr int kMaxLinks = 40;

/// The file a write to `path` lands in: a symbolic link's target (the link stays a link), else
/// `path` itself. A loop of links is refused as the kernel refuses it (ELOOP).
std::filesystem::path write_target(const std::filesystem::path& path) {
  std::filesystem::path target = path;
  for (int hop = 0; hop < kMaxLinks; ++hop) {
    const std::optional<std::filesystem::path> next = next_link(target);
    if (!next) return target;
    target = *next;
  }
  throw InputError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(ELOOP)));
}

/// Whether `path` is something other than a regular file or a folder that a write goes into
/// as it is: a device (/dev/null), a pipe, a socket. Renaming a file over it replaced it (as
/// root, /dev/null itself).
bool is_special_file(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  return !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
         !std::filesystem::is_directory(status);
}

/// Throws InputError naming `path` unless descriptor `fd` is open for writing (one opened
/// read-only passed access(2) on its file and failed only at the write, after the run).
void require_writable_descriptor(const std::filesystem::path& path, int fd) {
  errno = 0;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) throw InputError(fmt::format("cannot write '{}': {}", path.string(), reason()));
  if ((flags & O_ACCMODE) == O_RDONLY) {
    throw InputError(fmt::format("cannot write '{}': descriptor {} is open for reading only", path.string(), fd));
  }
}

/// Writes all of `text` to descriptor `fd` (write(2) may take part of it, or be interrupted).
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<int> open_descriptor(const std::filesystem::path& path) {
  std::optional<std::filesystem::path> target = path;
  for (int hop = 0; target && hop < kMaxLinks; ++hop, target = next_link(*target)) {
    const std::string text = target->string();
    for (const char* folder : {"/proc/self/fd/", "/dev/fd/", "/proc/thread-self/fd/"}) {
      if (!text.starts_with(folder)) continue;
      const std::string number = text.substr(std::strlen(folder));
      if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
      }
      return std::stoi(number);
    }
  }
  return std::nullopt;
}

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  descriptor_ = open_descriptor(path_);
  if (descriptor_) {
    // Written through the descriptor itself at commit: a second open of /proc/self/fd/N would
    // have its own file position, and text the process writes to N (the report on a redirected
    // stdout) would overwrite it.
    require_writable_descriptor(path_, *descriptor_);
    direct_ = true;
    target_ = temporary_ = path_;
    return;
  }
  // status() follows links as the kernel does.
  direct_ = is_special_file(path_);
  const std::filesystem::path target = direct_ ? path_ : write_target(path_);
  temporary_ = direct_ ? target : temporary_for(target);
  target_ = target;
  errno = 0;
  out_.open(temporary_, direct_ ? std::ios::out | std::ios::app : std::ios::out);
  if (out_) return;
  const int error = errno;
  const std::string why = reason();
  const std::filesystem::path folder = target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
  if (!direct_ && (error == EACCES || error == EROFS) && ::access(folder.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("cannot write '{}': its folder '{}' is not writable (the file is written beside "
                                 "itself first and then renamed, so that it appears whole)",
                                 path_.string(), folder.string()));
  }
  throw InputError(fmt::format("cannot write '{}': {}", path_.string(), why));
}

AtomicFile::~AtomicFile() {
  if (committed_ || descriptor_) return;  // a descriptor's text not committed is dropped unwritten
  out_.close();
  if (direct_) return;  // a device or pipe is no file of Saltus's to remove
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void AtomicFile::commit() {
  if (descriptor_) {
    // What the process wrote there before (a report on stdout) goes first, in its order.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    errno = 0;
    if (!write_all(*descriptor_, held_.str())) {
      throw InputError(fmt::format("error while writing '{}': {}", path_.string(), reason()));
    }
    committed_ = true;
    return;
  }
  // A write that failed before (a full device: the buffer's write(2) at some <<) left its reason
  // in errno; the stream then did nothing more, and the flush below sets none.
  const bool failed_before = !out_;
  const int earlier = errno;
  errno = 0;
  out_.flush();
  out_.close();
  if (!out_) {
    if (errno == 0 && failed_before) errno = earlier;  // the flush's own reason first
    throw InputError(fmt::format("error while writing '{}': {}", path_.string(), reason()));
  }
  if (direct_) {
    committed_ = true;
    return;
  }
  std::error_code ec;
  std::filesystem::rename(temporary_, target_, ec);
  if (ec) throw InputError(fmt::format("cannot write '{}': {}", path_.string(), ec.message()));
  committed_ = true;
}

void require_writable(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path folder = path.parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError(fmt::format("cannot create the folder '{}': {}", folder.string(), ec.message()));
  if (std::filesystem::is_directory(path)) throw InputError(fmt::format("'{}' is a folder", path.string()));
  if (const std::optional<int> fd = open_descriptor(path)) {
    require_writable_descriptor(path, *fd);
    return;
  }
  if (is_special_file(path)) {
    // Opening a pipe to probe it would block: ask whether it may be written instead.
    if (::access(path.c_str(), W_OK) != 0) {
      throw InputError(fmt::format("cannot write '{}': {}", path.string(), reason()));
    }
    return;
  }
  AtomicFile probe(path);  // removed again by its destructor
}

}  // namespace saltus
