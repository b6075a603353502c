#pragma once
// Bookkeeping shared by the real and the complex hybrid runs: the output grid, the watched
// guards of a mode, the Zeno guard, and the absolute-tolerance vector.
#include <saltus/core/problem.hpp>

#include <string>
#include <vector>

namespace saltus::detail {

/// Output times: options.output_times (tf appended if missing) or n_outputs uniform points.
std::vector<double> output_grid(const Options& options);

/// Events watched in `mode`, in declaration order, and their CVODES direction flags.
struct WatchedEvents {
  std::vector<int> events;
  std::vector<int> directions;
};
WatchedEvents watched_events(const Problem& problem, int mode);

/// Absolute tolerance per state.
std::vector<double> state_atol(const Options& options, int n_states);

/// Parameter scales for the sensitivity error weights (pbar).
std::vector<double> parameter_scales(const Options& options, const Eigen::VectorXd& p);

/// Stops runs whose events pile up without time advancing.
class CascadeGuard {
 public:
  explicit CascadeGuard(const Options& options) : options_(options) {}
  /// Records an event at t; throws ZenoError past the cascade or total limits.
  void record(double t, const std::string& event_name);

 private:
  const Options& options_;
  double last_time_ = 0.0;
  int cascade_ = 0;
  long total_ = 0;
};

/// True if two event times are closer than the cascade window.
bool same_instant(double a, double b, const Options& options);

/// "x = (h=1, v=-2)" for messages.
std::string describe_state(const Problem& problem, const Eigen::VectorXd& x);

}  // namespace saltus::detail
