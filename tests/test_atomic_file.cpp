// Output files appear whole or not at all (AtomicFile): a temporary file renamed over the
// target. A symbolic link is written through and stays a link; a pipe or device is written into
// and stays what it was (renaming over them replaced them: as root, --json /dev/null replaced
// /dev/null with a regular file; found by an outside reader).
#include <saltus/core/error.hpp>
#include <saltus/io/atomic_file.hpp>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "support/cli_runner.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_through(const fs::path& path, const std::string& text) {
  saltus::AtomicFile file(path);
  file.stream() << text;
  file.commit();
}

TEST(AtomicFile, AppearsWholeOrNotAtAll) {
  const fs::path dir = saltus::test::temp_dir("atomic_whole");
  fs::create_directories(dir);
  write_through(dir / "a.json", "{}\n");
  EXPECT_EQ(read_all(dir / "a.json"), "{}\n");
  {
    saltus::AtomicFile abandoned(dir / "b.json");
    abandoned.stream() << "half";
  }
  EXPECT_FALSE(fs::exists(dir / "b.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
}

TEST(AtomicFile, ASymbolicLinkIsWrittenThroughAndStaysALink) {
  const fs::path dir = saltus::test::temp_dir("atomic_link");
  fs::create_directories(dir);
  fs::create_symlink("target.json", dir / "link.json");
  write_through(dir / "link.json", "through\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.json")));
  EXPECT_EQ(read_all(dir / "target.json"), "through\n");
}

TEST(AtomicFile, APipeIsWrittenIntoAndStaysAPipe) {
  const fs::path dir = saltus::test::temp_dir("atomic_pipe");
  fs::create_directories(dir);
  const fs::path pipe = dir / "pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_all(pipe); });
  saltus::require_writable(pipe);  // must not open the pipe (that would wait for a reader)
  write_through(pipe, "streamed\n");
  struct stat info {};
  const bool still_a_pipe = ::stat(pipe.c_str(), &info) == 0 && S_ISFIFO(info.st_mode);
  if (!still_a_pipe) {
    reader.detach();  // it waits on the replaced pipe for ever
    FAIL() << "the pipe was replaced";
  }
  reader.join();
  EXPECT_EQ(received, "streamed\n");
}

// An open descriptor (/dev/fd/N) is written through the descriptor itself: its text lands at
// the descriptor's position, between what the process wrote there before and after. Reopening
// /proc/self/fd/N gave the text its own position: written after "before " and then overwritten
// by " after" (the report on a redirected stdout overwrote the JSON of --json /dev/stdout).
TEST(AtomicFile, AnOpenDescriptorIsWrittenAtItsOwnPosition) {
  const fs::path dir = saltus::test::temp_dir("atomic_descriptor");
  fs::create_directories(dir);
  const fs::path file = dir / "shared.txt";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "before ", 7), 7);
  EXPECT_EQ(saltus::open_descriptor("/dev/fd/" + std::to_string(fd)), fd);
  EXPECT_EQ(saltus::open_descriptor("/dev/stdout"), 1);
  EXPECT_FALSE(saltus::open_descriptor(file).has_value());
  write_through("/dev/fd/" + std::to_string(fd), "{\"json\": 1}");
  ASSERT_EQ(::write(fd, " after", 6), 6);
  ::close(fd);
  EXPECT_EQ(read_all(file), "before {\"json\": 1} after");
  {
    const int again = ::open(file.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(again, 0);
    {
      saltus::AtomicFile abandoned("/dev/fd/" + std::to_string(again));
      abandoned.stream() << "half";
    }
    ::close(again);
  }
  EXPECT_EQ(read_all(file), "");  // text never committed is never written
  // A descriptor open for reading only is refused before anything is written to it (it passed
  // the checks and failed only at the write, after the run).
  const int reading = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(reading, 0);
  const std::string path = "/dev/fd/" + std::to_string(reading);
  EXPECT_THROW(saltus::require_writable(path), saltus::InputError);
  EXPECT_THROW(saltus::AtomicFile{path}, saltus::InputError);
  ::close(reading);
}

TEST(AtomicFile, ALoopOfLinksIsRefused) {
  const fs::path dir = saltus::test::temp_dir("atomic_loop");
  fs::create_directories(dir);
  fs::create_symlink("b.json", dir / "a.json");
  fs::create_symlink("a.json", dir / "b.json");
  EXPECT_THROW(write_through(dir / "a.json", "x\n"), saltus::InputError);
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "a.json")));  // not replaced by a file
}

TEST(AtomicFile, AFolderThatCannotBeWrittenIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into any folder";
  const fs::path dir = saltus::test::temp_dir("atomic_readonly");
  fs::create_directories(dir);
  std::ofstream(dir / "x.json") << "old\n";
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  try {
    saltus::AtomicFile file(dir / "x.json");
    ADD_FAILURE() << "no error";
  } catch (const saltus::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its folder '" + dir.string() + "' is not writable"), std::string::npos)
        << e.what();
  }
  fs::permissions(dir, fs::perms::owner_all);
}

}  // namespace
