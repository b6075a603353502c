// The public entry points of simulation and forward sensitivity.
#include <saltus/solvers/simulate.hpp>

#include "hybrid_run.hpp"

namespace saltus {

Solution simulate(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  return detail::HybridRun(problem, p, options, detail::RunKind::Simulation).run();
}

Solution simulate(const Problem& problem) {
  return simulate(problem, problem.nominal_parameters(), problem.options());
}

Solution forward_sensitivity(const Problem& problem, const Eigen::VectorXd& p,
                             const Options& options) {
  return detail::HybridRun(problem, p, options, detail::RunKind::ForwardSensitivity).run();
}

Solution forward_sensitivity(const Problem& problem) {
  return forward_sensitivity(problem, problem.nominal_parameters(), problem.options());
}

void check_start(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  detail::HybridRun(problem, p, options, detail::RunKind::Simulation).check_start();
}

}  // namespace saltus
