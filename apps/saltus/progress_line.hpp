#pragma once
// The command's progress line: on stderr when it is a terminal, for runs longer than about two
// seconds, rewritten in place at most ten times a second (method, phase, simulated time,
// events so far); erased before the report. `--quiet` turns it off.
#include <saltus/core/options.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace saltus::cli {

class ProgressLine {
 public:
  /// Shows nothing unless `enabled` (the command passes !--quiet and isatty(stderr)).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// The method now running ("forward sensitivity", "central differences", ...).
  void set_method(std::string method) { method_ = std::move(method); }
  /// The callback for Options::on_progress (empty when not enabled).
  std::function<void(const RunProgress&)> callback();
  /// Erases the line, if one is shown.
  void clear();

 private:
  void show(const RunProgress& progress);

  bool enabled_;
  bool shown_ = false;
  std::string method_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace saltus::cli
