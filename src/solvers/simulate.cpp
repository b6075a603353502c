// The public entry points of simulation and forward sensitivity.
#include <saltus/solvers/simulate.hpp>

#include "cvodes_session.hpp"
#include "dae_run.hpp"
#include "hybrid_run.hpp"
#include "runge_kutta/discrete_run.hpp"

namespace saltus {

Solution simulate(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  if (detail::runs_discrete(problem, options)) {
    return detail::DiscreteRun(problem, p, options, detail::RunKind::Simulation).run();
  }
  if (detail::runs_on_idas(problem, options)) return detail::DaeRun(problem, p, options, detail::RunKind::Simulation).run();
  return detail::HybridRun(problem, p, options, detail::RunKind::Simulation).run();
}

Solution simulate(const Problem& problem) {
  return simulate(problem, problem.nominal_parameters(), problem.options());
}

Solution forward_sensitivity(const Problem& problem, const Eigen::VectorXd& p,
                             const Options& options) {
  if (detail::runs_discrete(problem, options)) {
    return detail::DiscreteRun(problem, p, options, detail::RunKind::ForwardSensitivity).run();
  }
  if (detail::runs_on_idas(problem, options)) return detail::DaeRun(problem, p, options, detail::RunKind::ForwardSensitivity).run();
  return detail::HybridRun(problem, p, options, detail::RunKind::ForwardSensitivity).run();
}

Solution forward_sensitivity(const Problem& problem) {
  return forward_sensitivity(problem, problem.nominal_parameters(), problem.options());
}

bool runs_on_idas(const Problem& problem, const Options& options) {
  return detail::integrates_on_idas(problem, options);
}

void check_run_options(const Problem& problem, const Options& options) {
  if (detail::runs_discrete(problem, options)) return;
  if (detail::runs_on_idas(problem, options)) return;
  detail::uses_krylov(options, problem.n_states(), 0);  // throws for the sparse solver
}

void check_start(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  if (detail::runs_discrete(problem, options)) {
    detail::DiscreteRun(problem, p, options, detail::RunKind::Simulation).check_start();
    return;
  }
  if (detail::runs_on_idas(problem, options)) {
    detail::DaeRun(problem, p, options, detail::RunKind::Simulation).check_start();
    return;
  }
  detail::HybridRun(problem, p, options, detail::RunKind::Simulation).check_start();
}

}  // namespace saltus
