// Adjoint memory benchmark (issue: bounded adjoint memory). Each row is one adjoint run in a
// child process of its own, so that its maximum resident set size (getrusage) is its own:
//   elastic ball    ball1d with e = 1 and no drag: one segment per bounce (0.903 s), so the
//                   recordings multiply with the horizon; up to ~10^6 integrator steps.
//   oscillator      x'' = -k x - d x' (k = 1, d = 0): one segment of up to ~5 10^6 steps (at
//                   the default budget the longest is recorded without check points and
//                   recomputed with sqrt-optimal ones).
//   fivebar_floor   examples/fivebar_floor.yaml (elastic, e = 1) to t = 25, 100, 200, 1000.
// Columns: horizon, events, forward integrator steps, the bytes of all recordings together
// (what the adjoint would hold without a budget), the peak it held (bounded by the budget), the
// process's maximum RSS, the segments recomputed, wall and CPU time of the adjoint; with
// --agreement also the largest relative difference (entries below 1e-6 of their cost's largest
// compared at that floor) from forward sensitivities, with the events of that run (a chaotic
// system may take another event sequence there), and from the adjoint without a budget where
// segments were recomputed (both measured after the row's RSS).
// Usage: build/bench/saltus_adjoint_memory [path/to/examples] [--budget MiB] [--agreement]
//                                          [--only ball|oscillator|fivebar]
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include "timing.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

namespace {

using namespace saltus;

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// One row, measured in the child and sent to the parent through a pipe (plain data).
struct Row {
  double horizon = 0.0;
  long events = 0;
  long steps = 0;
  long recorded_bytes = 0;
  long peak_bytes = 0;
  long max_rss_bytes = 0;
  long recomputed = 0;
  double seconds = 0.0;
  double cpu_seconds = 0.0;
  double vs_forward = -1.0;    // < 0: not measured
  long forward_events = 0;
  double vs_unlimited = -1.0;  // < 0: not measured
  bool ok = false;
};

double largest_relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double worst = 0.0;
  for (Eigen::Index c = 0; c < b.rows(); ++c) {
    const double floor = 1e-6 * b.row(c).cwiseAbs().maxCoeff();
    for (Eigen::Index k = 0; k < b.cols(); ++k) {
      worst = std::max(worst, relative_difference(a(c, k), b(c, k), floor));
    }
  }
  return worst;
}

Row measure(const Problem& pb, double horizon, long budget, bool agreement) {
  Options o = pb.options();
  set_horizon(o, horizon);
  o.adjoint_memory_budget = budget;
  Row row;
  row.horizon = horizon;
  Solution s;
  const double cpu_before = cpu_seconds();
  row.seconds = bench::seconds([&] { s = adjoint(pb, pb.nominal_parameters(), o); });
  row.cpu_seconds = cpu_seconds() - cpu_before;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  row.max_rss_bytes = usage.ru_maxrss * 1024L;  // Linux reports kilobytes
  row.events = static_cast<long>(s.events.size());
  row.steps = s.stats.steps;
  row.recorded_bytes = s.adjoint.stored_bytes;
  row.peak_bytes = s.adjoint.peak_stored_bytes;
  row.recomputed = s.adjoint.recomputed_segments;
  if (agreement) {
    const Solution forward = forward_sensitivity(pb, pb.nominal_parameters(), o);
    row.vs_forward = largest_relative_difference(s.cost_gradient, forward.cost_gradient);
    row.forward_events = static_cast<long>(forward.events.size());
    if (row.recomputed > 0) {
      Options unlimited = o;
      unlimited.adjoint_memory_budget = 1L << 50;
      row.vs_unlimited = largest_relative_difference(
          s.cost_gradient, adjoint(pb, pb.nominal_parameters(), unlimited).cost_gradient);
    }
  }
  row.ok = true;
  return row;
}

/// Runs `work` in a child process and returns its row (ok = false if the child failed).
Row in_child(const std::function<Row()>& work) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Row row;
    try {
      row = work();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "adjoint_memory: %s\n", e.what());
    }
    const ssize_t written = write(fds[1], &row, sizeof row);
    _exit(written == static_cast<ssize_t>(sizeof row) ? 0 : 1);
  }
  close(fds[1]);
  Row row;
  const ssize_t got = pid > 0 ? read(fds[0], &row, sizeof row) : -1;
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return got == static_cast<ssize_t>(sizeof row) ? row : Row{};
}

void print_header(const std::string& title, bool agreement) {
  fmt::print("\n{}\n{:>9} {:>7} {:>9} {:>13} {:>11} {:>11} {:>11} {:>8} {:>7}{}\n", title,
             "horizon", "events", "steps", "recorded MiB", "peak MiB", "max RSS MiB", "recomputed",
             "time s", "cpu s", agreement ? "  vs forward (its events)  vs no budget" : "");
}

void print_row(const Row& r) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (!r.ok) {
    fmt::print("{:>9g}  failed\n", r.horizon);
    return;
  }
  fmt::print("{:>9g} {:>7} {:>9} {:>13.1f} {:>11.1f} {:>11.1f} {:>11} {:>8.2f} {:>7.2f}",
             r.horizon, r.events, r.steps, r.recorded_bytes / kMiB, r.peak_bytes / kMiB,
             r.max_rss_bytes / kMiB, r.recomputed, r.seconds, r.cpu_seconds);
  if (r.vs_forward >= 0.0) fmt::print("  {:>11.1e} ({:>6})", r.vs_forward, r.forward_events);
  if (r.vs_unlimited >= 0.0) fmt::print("  {:>11.1e}", r.vs_unlimited);
  fmt::print("\n");
  std::fflush(stdout);
}

void table(const std::string& title, const Problem& pb, std::initializer_list<double> horizons,
           long budget, bool agreement) {
  print_header(title, agreement);
  for (double horizon : horizons) {
    print_row(in_child([&] { return measure(pb, horizon, budget, agreement); }));
  }
}

Problem elastic_ball() {
  Problem pb = examples::ball1d();
  pb.set_nominal("c", 0.0);
  pb.set_nominal("e", 1.0);
  pb.options().max_events = 1000000;
  return pb;
}

Problem oscillator() {
  Problem pb("oscillator");
  pb.set_states({"x", "v"});
  pb.add_parameter("k", 1.0);
  pb.add_parameter("d", 0.0);
  pb.set_initial_state([](const auto&, auto x0) { x0 << 1.0, 0.0; });
  pb.add_mode("free", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[0] * x[0] - p[1] * x[1];
  });
  pb.add_running_cost("x2", [](auto, const auto& x, const auto&, const auto&) {
    return x[0] * x[0];
  });
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace

int main(int argc, char** argv) {
  std::string examples = SALTUS_EXAMPLES_DIR;
  long budget = Options{}.adjoint_memory_budget;
  bool agreement = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--agreement") == 0) {
      agreement = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
      budget = std::atol(argv[++i]) << 20;
    } else {
      examples = argv[i];
    }
  }
  const auto wanted = [&](const char* name) { return only.empty() || only == name; };
  fmt::print("Adjoint memory within a budget of {} MiB (one child process per row)\n",
             budget >> 20);
  if (wanted("ball")) {
    table("elastic ball (ball1d, e = 1, c = 0): one segment per bounce", elastic_ball(),
          {1000.0, 10000.0, 22000.0}, budget, agreement);
  }
  if (wanted("oscillator")) {
    table("oscillator x'' = -k x - d x' (k = 1, d = 0): one segment", oscillator(),
          {1000.0, 20000.0, 100000.0}, budget, agreement);
  }
  if (wanted("fivebar")) {
    Problem fivebar =
        multibody::make_problem(multibody::load_model(examples + "/fivebar_floor.yaml"));
    fivebar.set_nominal("e", 1.0);
    table("fivebar_floor (e = 1, maggi, rtol 1e-10)", fivebar, {25.0, 100.0, 200.0, 1000.0},
          budget, agreement);
  }
  return 0;
}
