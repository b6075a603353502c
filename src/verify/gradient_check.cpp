#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <algorithm>
#include <cmath>

namespace saltus {

namespace {

/// `difference` relative to max(|b|, floor); absolute where that is 0.
double relative_to(double difference, double b, double floor) {
  const double scale = std::max(std::abs(b), floor);
  return scale == 0.0 ? difference : difference / scale;
}

}  // namespace

double relative_difference(double a, double b, double floor) { return relative_to(std::abs(a - b), b, floor); }

namespace {

double entry_noise(const GradientEstimate& estimate, int c, int k) {
  return estimate.noise.size() > 0 ? estimate.noise(c, k) : 0.0;
}

}  // namespace

GradientCheck compare_gradients(const Problem& problem,
                                const std::vector<GradientEstimate>& estimates,
                                double floor_fraction) {
  GradientCheck check;
  for (const auto& e : estimates) check.methods.push_back(e.method);
  check.max_relative_error.assign(estimates.size(), 0.0);
  check.unchecked_entries.assign(estimates.size(), 0);
  if (estimates.empty()) return check;
  const Eigen::MatrixXd& ref = estimates.front().cost_gradient;
  const auto params = problem.parameter_names();
  const auto costs = problem.cost_names();
  for (int c = 0; c < ref.rows() && ref.cols() > 0; ++c) {
    const double row_scale = ref.row(c).cwiseAbs().maxCoeff();
    // A cost whose gradient is zero in exact arithmetic has entries of rounding size only; their
    // ratios are no disagreement.
    const double cost_size = estimates.front().costs.size() > c ? std::abs(estimates.front().costs[c]) : 0.0;
    const double rounding = kGradientRoundingFloor * std::max(1.0, cost_size);
    for (int k = 0; k < ref.cols(); ++k) {
      GradientCheckEntry entry;
      entry.cost = costs[static_cast<size_t>(c)];
      entry.parameter = params[static_cast<size_t>(k)];
      for (size_t m = 0; m < estimates.size(); ++m) {
        const double v = estimates[m].cost_gradient(c, k);
        const double floor =
            std::max({std::max({floor_fraction, estimates[0].noise_fraction, estimates[m].noise_fraction}) * row_scale,
                      rounding, entry_noise(estimates[0], c, k), entry_noise(estimates[m], c, k)});
        // A difference within the estimates' own noise of the entry is no disagreement.
        const double noise = std::max(entry_noise(estimates[0], c, k), entry_noise(estimates[m], c, k));
        const double difference = std::abs(v - ref(c, k));
        const double beyond_noise = difference > noise ? difference - noise : (difference <= noise ? 0.0 : difference);
        const double err = m == 0 ? 0.0 : relative_to(beyond_noise, ref(c, k), floor);
        entry.values.push_back(v);
        entry.relative_errors.push_back(err);
        entry.relative_differences.push_back(m == 0 ? 0.0 : relative_to(difference, ref(c, k), floor));
        entry.within_noise.push_back(m > 0 && difference > 0.0 && difference <= noise);
        // Measured against the entry's size, or for an entry near zero the row's (a zero entry
        // within a noise small beside the row's largest is checked absolutely, and agrees).
        const double size = std::max({std::abs(ref(c, k)), kUncheckedRowFraction * row_scale, rounding});
        // (Equal values agree, whatever the noise: an entry that is zero in every method, a ball
        // at rest whatever its parameters, was marked unchecked with advice that changed nothing.)
        const bool unchecked = m > 0 && difference > 0.0 && difference <= noise &&
                               noise > kUncheckedNoiseFraction * size && noise > rounding;
        entry.unchecked.push_back(unchecked);
        if (unchecked) ++check.unchecked_entries[m];
        check.max_relative_error[m] = std::max(check.max_relative_error[m],
                                               std::isnan(err) ? INFINITY : err);
      }
      check.entries.push_back(std::move(entry));
    }
  }
  return check;
}

GradientCheck check_gradient(const Problem& problem, const Eigen::VectorXd& p,
                             const Options& options) {
  return compare_gradients(problem, {forward_estimate(forward_sensitivity(problem, p, options)),
                                     complex_step(problem, p, options),
                                     central_differences(problem, p, options)});
}

}  // namespace saltus
