#pragma once
// The complex-step run of a problem on IDAS (docs/dae.md, "Complex step").
#include <saltus/solvers/complex_simulation.hpp>

namespace saltus::detail {

/// simulate_complex for runs on IDAS: the complex residual as the real DAE (Re F, Im F) = 0 in
/// (Re x, Im x), with the real-part iteration matrix in both diagonal blocks, and events at
/// complex event times as in the ODE run, with the state made consistent in complex arithmetic.
ComplexSolution simulate_complex_dae(const Problem& problem, const VectorX<Complex>& p, const Options& options,
                                     double imaginary_scale);

}  // namespace saltus::detail
