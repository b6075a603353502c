#include <saltus/solvers/named_outputs.hpp>

#include <saltus/core/error.hpp>
#include <saltus/derivatives/tangent.hpp>

#include <fmt/format.h>

namespace saltus {

OutputTrajectory output_trajectory(const Problem& problem, const Solution& solution, const Eigen::VectorXd& p,
                                   OutputSensitivities sensitivities) {
  OutputTrajectory out;
  const NamedOutputs& h = problem.outputs();
  if (h.size() == 0 || solution.times.empty()) return out;
  const bool with_sensitivities = sensitivities == OutputSensitivities::Compute;
  if (with_sensitivities && solution.sensitivities.size() != solution.times.size()) {
    throw InputError("output sensitivities need a run with forward sensitivities (method forward or all)");
  }
  out.names = h.names;
  out.units = h.units;
  const auto n_out = static_cast<Eigen::Index>(solution.times.size());
  const Eigen::Index n_y = h.size(), n_p = p.size();
  out.values.resize(n_out, n_y);
  Eigen::VectorXd y(n_y), tangent(n_y), dp(n_p);
  TangentWorkspace ws;
  for (Eigen::Index i = 0; i < n_out; ++i) {
    const double t = solution.times[static_cast<size_t>(i)];
    const Eigen::VectorXd x = solution.states.row(i).transpose();
    try {
      output_values(problem, t, x, p, y);
      out.values.row(i) = y.transpose();
      if (!with_sensitivities) continue;
      const Eigen::MatrixXd& S = solution.sensitivities[static_cast<size_t>(i)];
      Eigen::MatrixXd dy(n_y, n_p);
      for (Eigen::Index k = 0; k < n_p; ++k) {
        dp = Eigen::VectorXd::Unit(n_p, k);
        output_tangent(problem, t, x, p, 0.0, S.col(k), dp, tangent, ws);
        dy.col(k) = tangent;
      }
      out.sensitivities.push_back(std::move(dy));
    } catch (const Error& e) {
      throw Error(fmt::format("named outputs of '{}' at t = {:.9g}: {}", problem.name(), t, e.what()));
    }
  }
  return out;
}

}  // namespace saltus
