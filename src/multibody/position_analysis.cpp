#include "position_analysis.hpp"

#include <Eigen/LU>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace saltus::multibody::detail {

int Partition::slot(int k) const {
  const auto it = std::find(independent.begin(), independent.end(), k);
  return it == independent.end() ? -1 : static_cast<int>(it - independent.begin());
}

namespace {

std::string describe_coordinates(const Model& model, const std::vector<int>& indices) {
  const std::vector<std::string> names = model.coordinate_names();
  std::string s;
  for (int k : indices) s += (s.empty() ? "" : ", ") + names[static_cast<size_t>(k)];
  return s;
}

}  // namespace

Partition choose_partition(const Model& model, const Eigen::VectorXd& p) {
  Partition part;
  part.n = model.n_coordinates();
  const int m = model.n_constraints();
  const int f = part.n - m;
  if (f < 1) {
    throw InputError(fmt::format("model '{}': {} constraints on {} coordinates leave no degree of "
                                 "freedom",
                                 model.name, m, part.n));
  }
  if (!model.independent.empty()) {
    part.independent = model.independent;
    std::sort(part.independent.begin(), part.independent.end());
    if (static_cast<int>(part.independent.size()) != f) {
      throw InputError(fmt::format(
          "model '{}': {} independent coordinates given ({}), but the model has {} degrees of "
          "freedom ({} coordinates, {} constraints)",
          model.name, part.independent.size(), describe_coordinates(model, part.independent), f,
          part.n, m));
    }
    return part;
  }
  // The pivot columns of a fully pivoted LU of Phi_q are the best-conditioned dependent set.
  MotionState<double> st{model.t0, model.initial_positions(), Eigen::VectorXd::Zero(part.n)};
  const ConstraintSet<double> c = constraints<double>(model, st, p);
  Eigen::FullPivLU<Eigen::MatrixXd> lu(c.jac);
  std::vector<bool> dependent(static_cast<size_t>(part.n), false);
  for (int i = 0; i < lu.rank(); ++i) dependent[static_cast<size_t>(lu.permutationQ().indices()[i])] = true;
  for (int k = 0; k < part.n; ++k) {
    if (!dependent[static_cast<size_t>(k)]) part.independent.push_back(k);
  }
  if (part.f() != f) {
    throw ModelError(fmt::format("model '{}': the constraint Jacobian at the initial guess has rank {} "
                                 "< {} constraints (redundant constraints or a singular "
                                 "configuration)",
                                 model.name, lu.rank(), m));
  }
  return part;
}

Eigen::VectorXd solve_positions(const Model& model, const Partition& part, double t,
                                const Eigen::VectorXd& u, const Eigen::VectorXd& p,
                                const Eigen::VectorXd& guess, const FormulationSettings& settings) {
  Eigen::VectorXd q = guess;
  double residual_norm = 0.0;
  for (int it = 0; it <= settings.newton_iterations; ++it) {
    MotionState<double> st{t, q, Eigen::VectorXd::Zero(part.n)};
    const ConstraintSet<double> c = constraints<double>(model, st, p);
    Eigen::VectorXd residual(c.phi.size() + part.f());
    residual << c.phi, select(part, q) - u;
    residual_norm = residual.cwiseAbs().maxCoeff();
    if (!std::isfinite(residual_norm)) break;
    const double scale = 1.0 + q.cwiseAbs().maxCoeff();
    if (residual_norm <= settings.newton_tolerance * scale * scale) return q;
    Eigen::PartialPivLU<Eigen::MatrixXd> lu(augmented_jacobian(part, c.jac));
    if (!(lu.rcond() > 1e-13)) break;
    q -= lu.solve(residual);
  }
  throw ModelError(fmt::format(
      "the mechanism '{}' cannot be assembled at t = {:.17g} with independent coordinates ({}) = "
      "({}): Newton's method stopped at constraint residual {:.3e} (a position the linkage "
      "cannot reach, or a singular configuration)",
      model.name, t, describe_coordinates(model, part.independent),
      fmt::join(std::vector<double>(u.data(), u.data() + u.size()), ", "), residual_norm));
}

}  // namespace saltus::multibody::detail
