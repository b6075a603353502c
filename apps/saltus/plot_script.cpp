#include "plot_script.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace saltus::cli {

namespace {

std::string script_path() {
  if (const char* env = std::getenv("SALTUS_PLOT_SCRIPT"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const std::filesystem::path beside = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "saltus-plot";
  if (!ec && std::filesystem::exists(beside, ec)) return beside.string();
  return SALTUS_SOURCE_PLOT_SCRIPT;
}

std::string python_path() {
  if (const char* env = std::getenv("SALTUS_PYTHON"); env != nullptr && *env != '\0') return env;
  return SALTUS_PLOT_PYTHON;
}

}  // namespace

ScriptRun run_plot_script(const std::vector<std::string>& arguments) {
  ScriptRun run;
  std::vector<std::string> words = {python_path(), script_path()};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    run.output = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    run.output = fmt::format("cannot run {}: {}", words[0], std::strerror(spawned));
    return run;
  }
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    run.output.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return run;
}

}  // namespace saltus::cli
