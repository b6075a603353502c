#pragma once
// The adjoint of a run on IDAS (docs/dae.md; theory/hybrid-dae.md section 3).
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

namespace saltus::detail {

/// Records every segment on IDAS (check points per segment), then integrates the adjoint DAE
/// d/dt(F_xdot^T lambda) = F_x^T lambda - g_x^T backwards segment by segment, with the
/// consistent terminal condition and the transposed event transfers between segments.
Solution dae_adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options);

}  // namespace saltus::detail
