#pragma once
// One run of the sensitivity method at a design point x: the costs the optimizer needs and their
// gradients with respect to the varied parameters, the event sequence, or why the run failed.
#include <saltus/optimize/optimize.hpp>

#include <Eigen/Core>

#include <string>
#include <vector>

namespace saltus::optimize_detail {

struct DesignEvaluation {
  Eigen::VectorXd x;
  bool failed = false;
  std::string failure;
  Eigen::VectorXd costs;         ///< every cost of the problem, n_c
  Eigen::MatrixXd gradients;     ///< d psi_j / d x_i, n_c x n_x
  std::vector<std::string> event_names;
};

/// Maps design points to runs; remembers the last one, because NLopt asks for the objective and
/// each constraint at the same point separately.
class DesignEvaluator {
 public:
  DesignEvaluator(const Problem& problem, const OptimizeOptions& options);

  /// The run at x (cached if x is the last point). Failures of the run (Error, not Interrupted)
  /// are recorded in the result, not thrown.
  const DesignEvaluation& at(const Eigen::VectorXd& x);
  /// The full parameter vector at x.
  Eigen::VectorXd parameters_at(const Eigen::VectorXd& x) const;
  const std::vector<int>& varied() const { return varied_; }

 private:
  const Problem& problem_;
  const OptimizeOptions& options_;
  Eigen::VectorXd nominal_;
  std::vector<int> varied_;  ///< parameter index of each design variable
  DesignEvaluation last_;
  bool has_last_ = false;
};

}  // namespace saltus::optimize_detail
