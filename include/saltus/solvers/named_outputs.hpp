#pragma once
// A problem's named outputs y = h(t, x, p) (Problem::set_outputs) along a computed trajectory,
// with their sensitivities dy/dp = h_x S + h_p where the run has forward sensitivities S.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

#include <string>
#include <vector>

namespace saltus {

struct OutputTrajectory {
  std::vector<std::string> names;  ///< n_y
  std::vector<std::string> units;  ///< n_y SI units ("" when none applies)
  Eigen::MatrixXd values;          ///< y at the output times, n_out x n_y
  /// dy/dp at each output time, n_y x n_p; empty unless the solution has sensitivities.
  std::vector<Eigen::MatrixXd> sensitivities;
  bool empty() const { return names.empty(); }
};

/// Whether output_trajectory differentiates the outputs too. It costs n_p forward-AD
/// evaluations of the outputs per output time (for a Maggi mechanism each one a position and an
/// acceleration analysis), often more than the run itself, so it is asked for.
enum class OutputSensitivities { Skip, Compute };

/// Evaluates the named outputs at every output time of `solution` (computed at parameters p),
/// and with OutputSensitivities::Compute their sensitivities (the solution must then have
/// forward sensitivities; InputError otherwise). Empty if the problem has no outputs or the
/// solution no trajectory. A model error while evaluating (a mechanism that cannot be assembled
/// there) is thrown as saltus::Error naming the time.
OutputTrajectory output_trajectory(const Problem& problem, const Solution& solution, const Eigen::VectorXd& p,
                                   OutputSensitivities sensitivities = OutputSensitivities::Skip);

}  // namespace saltus
