#pragma once
// Simulation in complex arithmetic, for complex-step differentiation through events.
//
// The complex state is integrated by CVODES as the real system (Re x, Im x); the imaginary
// parts are weighted by `imaginary_scale` in the error test so that they are integrated to the
// same relative accuracy as the real parts. Events are located on the real part and applied at
// a complex event time (theory/hybrid-ode.md section 8):
//   dt_c = -r(t_r, x(t_r)) / r-dot-,  x_c = x + f- dt_c,  x_c+ = phi(t_r + dt_c, x_c, p),
//   x+(t_r) = x_c+ - f+(t_r + dt_c, x_c+) dt_c,   z+ = z + (g- - g+) dt_c,
// so Im(psi(p + i h e_k))/h reproduces the sensitivity jump (H1) and the cost jump exactly.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

#include <vector>

namespace saltus {

struct ComplexSolution {
  Eigen::VectorXcd costs;          ///< psi_j, n_c
  Eigen::VectorXcd final_state;    ///< x(tf), n_x
  std::vector<Complex> event_times;///< complex event times t_r + dt_c, in order
  std::vector<int> event_ids;      ///< index into Problem::events() of each event
  SolverStats stats;
};

/// Simulates `problem` with complex parameters p (n_p). `imaginary_scale` is the size of the
/// imaginary perturbation (the complex step h); it sets the absolute tolerance of the imaginary
/// parts to atol * imaginary_scale.
ComplexSolution simulate_complex(const Problem& problem, const VectorX<Complex>& p,
                                 const Options& options, double imaginary_scale);

}  // namespace saltus
