#include "segment_driver.hpp"

#include <cmath>

namespace saltus::detail {

void drive_segments(SegmentIntegrator& run, const std::vector<double>& grid, double t0) {
  size_t next = 0;
  double t = t0;
  if (grid.front() <= t0) {
    run.record_output(t, false);
    next = 1;
  }
  run.begin_segment(t);
  while (next < grid.size()) {
    const double tout = grid[next];
    if (at_output_time(t, tout)) {
      run.record_output(t, false);  // an event fell on this output time: the state after it
      ++next;
      continue;
    }
    if (run.advance(tout, t) == Reached::Roots) {
      if (run.apply_roots(t)) {
        run.begin_segment(t);
      } else if (at_output_time(t, tout)) {
        run.record_output(t, true);  // a noise root on the output time: the integrator holds it
        ++next;
      }
      continue;
    }
    run.record_output(t, true);
    ++next;
  }
  run.finish(t);
}

bool time_event_due(const Problem& problem, int k, double t, In<double> p) {
  const double r = problem.event(k).guard.real(t, Eigen::VectorXd::Zero(problem.n_states()), p);
  return r >= 0.0 && r <= 1e-12 * std::max(1.0, std::abs(t));
}

}  // namespace saltus::detail
