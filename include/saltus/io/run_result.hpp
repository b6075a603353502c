#pragma once
// Everything one `saltus run` produced: the nominal solution (with forward sensitivities when
// that method ran) and the gradient of every method that ran, for reports and files.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/solution.hpp>
#include <saltus/verify/gradient.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace saltus {

struct RunResult {
  std::string method;                       ///< simulate | forward | adjoint | fd | complex-step | all
  Eigen::VectorXd parameters;               ///< p used, n_p
  /// The parameters held fixed (`--wrt` chose the others), name and value, in the model's order.
  std::vector<std::pair<std::string, double>> fixed_parameters;
  Solution solution;                        ///< nominal trajectory (forward sensitivities if run)
  /// One per method; estimates[0] is reported. Empty for a plain simulation (no gradient).
  std::vector<GradientEstimate> estimates;
  std::vector<double> seconds;              ///< wall time of each method
  double simulation_seconds = -1.0;         ///< wall time of a plain simulation (method simulate)
  std::optional<GradientCheck> check;       ///< agreement between methods (several methods)
  /// Adjoint runs: dpsi/dx0 (n_c x n_x) and what the backward pass stored and did.
  Eigen::MatrixXd initial_state_gradient;
  std::optional<AdjointStats> adjoint;
  /// The problem's named outputs along `solution` (with dy/dp when it has sensitivities).
  OutputTrajectory outputs;
};

}  // namespace saltus
