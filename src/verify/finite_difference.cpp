#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace saltus {

double central_difference_step(double value, double relative_step) {
  return value != 0.0 ? relative_step * std::abs(value) : relative_step;
}

double default_relative_step(double rtol) {
  return std::clamp(std::cbrt(rtol), 1e-8, 1e-2);
}

namespace {

bool same_event_sequence(const Solution& a, const Solution& b) {
  if (a.events.size() != b.events.size()) return false;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (a.events[i].event != b.events[i].event) return false;
  }
  return true;
}

}  // namespace

GradientEstimate central_differences(const Problem& problem, const Eigen::VectorXd& p,
                                     const Options& options, double relative_step) {
  if (!(relative_step > 0.0)) relative_step = default_relative_step(options.rtol);
  const Solution nominal = simulate(problem, p, options);
  const int np = problem.n_parameters();
  GradientEstimate est;
  est.method = "central differences";
  est.noise_fraction = options.rtol / relative_step + relative_step * relative_step;
  est.costs = nominal.costs;
  est.cost_gradient.resize(problem.n_costs(), np);
  est.final_sensitivity.resize(problem.n_states(), np);
  est.event_time_gradient.setConstant(static_cast<Eigen::Index>(nominal.events.size()), np,
                                      std::numeric_limits<double>::quiet_NaN());
  for (int k = 0; k < np; ++k) {
    const double h = central_difference_step(p[k], relative_step);
    Eigen::VectorXd plus = p, minus = p;
    plus[k] += h;
    minus[k] -= h;
    const Solution up = simulate(problem, plus, options);
    const Solution down = simulate(problem, minus, options);
    est.cost_gradient.col(k) = (up.costs - down.costs) / (2.0 * h);
    est.final_sensitivity.col(k) = (up.final_state - down.final_state) / (2.0 * h);
    const bool same = same_event_sequence(nominal, up) && same_event_sequence(nominal, down);
    est.event_sequence_changed.push_back(!same);
    if (same) {
      for (size_t e = 0; e < nominal.events.size(); ++e) {
        est.event_time_gradient(static_cast<Eigen::Index>(e), k) =
            (up.events[e].time - down.events[e].time) / (2.0 * h);
      }
    }
  }
  return est;
}

GradientEstimate forward_estimate(const Solution& s) {
  GradientEstimate est;
  est.method = "forward sensitivity";
  est.costs = s.costs;
  est.cost_gradient = s.cost_gradient;
  est.final_sensitivity = s.final_sensitivity;
  est.event_time_gradient.resize(static_cast<Eigen::Index>(s.events.size()),
                                 s.cost_gradient.cols());
  for (size_t e = 0; e < s.events.size(); ++e) {
    est.event_time_gradient.row(static_cast<Eigen::Index>(e)) = s.events[e].dtime_dp;
  }
  return est;
}

GradientEstimate adjoint_estimate(const Solution& s) {
  GradientEstimate est;
  est.method = "adjoint";
  est.costs = s.costs;
  est.cost_gradient = s.cost_gradient;
  return est;
}

}  // namespace saltus
