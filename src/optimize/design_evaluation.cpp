#include "design_evaluation.hpp"

#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <limits>

namespace saltus::optimize_detail {

DesignEvaluator::DesignEvaluator(const Problem& problem, const OptimizeOptions& options)
    : problem_(problem), options_(options), nominal_(problem.nominal_parameters()) {
  for (const DesignVariable& v : options.vary) varied_.push_back(problem.parameter_index(v.name));
}

Eigen::VectorXd DesignEvaluator::parameters_at(const Eigen::VectorXd& x) const {
  Eigen::VectorXd p = nominal_;
  for (size_t i = 0; i < varied_.size(); ++i) p[varied_[i]] = x[static_cast<Eigen::Index>(i)];
  return p;
}

const DesignEvaluation& DesignEvaluator::at(const Eigen::VectorXd& x) {
  if (has_last_ && last_.x == x) return last_;
  DesignEvaluation e;
  e.x = x;
  const Eigen::VectorXd p = parameters_at(x);
  try {
    const Solution s = options_.method == GradientMethod::Adjoint ? adjoint(problem_, p, options_.run)
                                                                  : forward_sensitivity(problem_, p, options_.run);
    e.costs = s.costs;
    e.gradients.resize(problem_.n_costs(), static_cast<Eigen::Index>(varied_.size()));
    for (size_t i = 0; i < varied_.size(); ++i) {
      e.gradients.col(static_cast<Eigen::Index>(i)) = s.cost_gradient.col(varied_[i]);
    }
    for (const EventRecord& r : s.events) e.event_names.push_back(r.name);
    if (!e.costs.allFinite() || !e.gradients.allFinite()) {
      throw SolverError("a cost or its gradient is not finite");
    }
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& error) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    e.failed = true;
    e.failure = error.what();
    e.costs = Eigen::VectorXd::Constant(problem_.n_costs(), nan);
    e.gradients = Eigen::MatrixXd::Constant(problem_.n_costs(), static_cast<Eigen::Index>(varied_.size()), nan);
    e.event_names.clear();
  }
  last_ = std::move(e);
  has_last_ = true;
  return last_;
}

}  // namespace saltus::optimize_detail
