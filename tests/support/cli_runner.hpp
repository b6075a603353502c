#pragma once
// The `saltus` command run in-process for tests: its exit status and what it printed.
#include <cli.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace saltus::test {

struct Outcome {
  int status;
  std::string out, err;
};

/// Runs `saltus args...` and returns its status, stdout and stderr.
inline Outcome saltus_cmd(std::vector<std::string> args) {
  args.insert(args.begin(), "saltus");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = saltus::cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A fresh (removed if present) folder under the system's temporary directory.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("saltus_test_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

/// Writes `text` as `file` into a fresh temp_dir(name) and returns the file's path.
inline std::string write_temp_file(const std::string& name, const std::string& file, const std::string& text) {
  const std::filesystem::path dir = temp_dir(name);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / file).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace saltus::test
