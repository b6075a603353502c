// Every command shown in README.md and docs/*.md runs as shown, and every model-file example in
// docs/ loads and runs: the documentation is checked like code.
#include <cli.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kSource(SALTUS_SOURCE_DIR);

/// The fenced code blocks of a Markdown file whose info string is `language`.
std::vector<std::string> code_blocks(const fs::path& file, const std::string& language) {
  std::ifstream in(file);
  std::vector<std::string> blocks;
  std::string line, block;
  bool inside = false, wanted = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (inside && wanted) blocks.push_back(block);
      wanted = !inside && line.substr(3) == language;
      inside = !inside;
      block.clear();
      continue;
    }
    if (inside) block += line + "\n";
  }
  return blocks;
}

/// Documented command lines: `build/apps/saltus/saltus ...` or `saltus ...` in sh blocks, with
/// their trailing comments removed.
std::vector<std::string> documented_commands(const fs::path& file) {
  std::vector<std::string> commands;
  for (const std::string& block : code_blocks(file, "sh")) {
    std::istringstream lines(block);
    std::string line;
    while (std::getline(lines, line)) {
      const std::string built = "build/apps/saltus/";
      if (line.rfind(built, 0) == 0) line.erase(0, built.size());
      if (line.rfind("saltus ", 0) != 0) continue;
      line.erase(0, 7);
      if (const auto comment = line.find('#'); comment != std::string::npos) line.erase(comment);
      line.erase(line.find_last_not_of(" \t") + 1);
      commands.push_back(line);
    }
  }
  return commands;
}

/// Runs one documented command in-process: paths of the source tree are made absolute, outputs
/// go to `out_dir`. Returns the exit status; `err` receives stderr.
int run_documented(const std::string& command, const fs::path& out_dir, std::string& err) {
  std::istringstream words(command);
  std::vector<std::string> args = {"saltus"};
  std::string word;
  bool output_next = false;
  while (words >> word) {
    if (output_next) {
      word = (out_dir / word).string();
    } else if (fs::exists(kSource / word) && word.find('/') != std::string::npos) {
      word = (kSource / word).string();
    }
    output_next = word == "--json" || word == "--out" || word == "--animate";
    args.push_back(word);
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, errors;
  const int status = saltus::cli::run(static_cast<int>(argv.size()), argv.data(), out, errors);
  err = errors.str();
  return status;
}

std::vector<fs::path> documentation() {
  std::vector<fs::path> files = {kSource / "README.md"};
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  return files;
}

TEST(DocumentedCommands, EveryCommandRunsAsShown) {
  const fs::path out_dir = fs::temp_directory_path() / "saltus_test_documented";
  fs::remove_all(out_dir);
  int count = 0;
  for (const fs::path& file : documentation()) {
    for (const std::string& command : documented_commands(file)) {
      std::string err;
      EXPECT_EQ(run_documented(command, out_dir, err), 0) << file.filename() << ": saltus " << command << "\n" << err;
      ++count;
    }
  }
  EXPECT_GE(count, 5) << "the README's commands were not found";
}

// The YAML examples of the docs (docs/model-files.md's complete example among them) are model
// files that run.
TEST(DocumentedCommands, EveryDocumentedModelFileRuns) {
  const fs::path dir = fs::temp_directory_path() / "saltus_test_documented_models";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A block may name a shipped URDF robot beside it (`urdf: arm.urdf`).
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(SALTUS_SOURCE_DIR) / "examples")) {
    if (e.path().extension() == ".urdf") fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  }
  int count = 0;
  for (const fs::path& file : documentation()) {
    for (const std::string& block : code_blocks(file, "yaml")) {
      const fs::path model = dir / (file.stem().string() + "_" + std::to_string(++count) + ".yaml");
      std::ofstream(model) << block;
      std::string err;
      EXPECT_EQ(run_documented("run " + model.string() + " --tend 0.5", dir, err), 0)
          << file.filename() << " example " << count << ":\n" << block << err;
    }
  }
  EXPECT_GE(count, 1) << "docs/model-files.md's complete example was not found";
}

}  // namespace
