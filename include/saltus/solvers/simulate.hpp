#pragma once
// Simulation and forward (tangent-linear) sensitivities of a hybrid ODE, or of a hybrid DAE
// (a problem with residual modes, run by IDAS; docs/dae.md and dae_transfer.hpp).
//
// Each smooth segment is integrated by CVODES (BDF or Adams, dense direct linear solver);
// CVODES root finding locates events; the event's jump and mode switch are applied and the
// integrator restarts. Forward sensitivities S = dx/dp are integrated by CVODES (staggered
// corrector by default) with the right-hand side f_x S + f_p from forward-mode AD (or the
// mode's analytic Jacobians), and cross each event by the general jump (theory/hybrid-ode.md
// (H1)):
//     tau = -(r_x S- + r_p) / (r_t + r_x f-),
//     S+  = phi_x S- + phi_p + (phi_x f- + phi_t - f+) tau,
// and each cost's quadrature sensitivity by (g- - g+) tau.
//
// Events at one instant are applied one after another in the order the events were added to
// the problem; each one sees the state and mode the previous one left, and an event no longer
// watched in the mode reached is skipped.
//
// Throws InputError (bad parameters or options), ModelError (a model function returned NaN or
// Inf), SolverError (CVODES failure), ZenoError (an event cascade without time advancing, or a
// state that stays on a guard after its jump), GrazingError (forward sensitivity through an
// event whose guard does not cross: tau does not exist).
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

namespace saltus {

/// Simulates `problem` with parameters `p` (n_p) and the settings `options`.
Solution simulate(const Problem& problem, const Eigen::VectorXd& p, const Options& options);
/// As above with the problem's nominal parameters and default options.
Solution simulate(const Problem& problem);

/// Simulates and computes forward sensitivities with respect to every parameter.
Solution forward_sensitivity(const Problem& problem, const Eigen::VectorXd& p,
                             const Options& options);
Solution forward_sensitivity(const Problem& problem);

/// Whether runs of `problem` with `options` integrate on IDAS: Options::integrator, or
/// (Automatic) whether the problem has residual modes or algebraic states (docs/dae.md).
/// Throws InputError if CVODES is asked for a DAE.
bool runs_on_idas(const Problem& problem, const Options& options);

/// Throws the InputError a run of `problem` with `options` would throw for a combination of
/// integrator, linear solver and nonlinear solver it cannot take (CVODES or a Runge-Kutta
/// integrator for a DAE, the fixed-point corrector on IDAS or a Runge-Kutta integrator, the sparse
/// linear solver on CVODES), without integrating. Options whose every field is valid alone
/// (validate, core/options.hpp) may still fail here.
void check_run_options(const Problem& problem, const Options& options);

/// What a run checks before it integrates, without integrating: the initial state x0(p) is
/// finite, so are its rates, the running costs and the watched guards there, the initial mode
/// is in range, and x0 does not start on the guard of a watched event
/// (docs/events.md, "Starting on a guard"). Throws what the run would throw (InputError,
/// ModelError). `saltus check` uses it.
void check_start(const Problem& problem, const Eigen::VectorXd& p, const Options& options);

}  // namespace saltus
