#pragma once
// What a run returns: the trajectory at the output times, the event log, the costs, solver
// statistics and, for forward-sensitivity runs, S = dx/dp, tau = dt_e/dp and dpsi/dp; for
// adjoint runs dpsi/dp, dpsi/dx0 and what the backward pass stored.
#include <Eigen/Core>

#include <string>
#include <vector>

namespace saltus {

/// One applied event.
struct EventRecord {
  double time = 0.0;            ///< event time t_e [s]
  int event = -1;               ///< index into Problem::events()
  std::string name;             ///< event name
  int mode_before = 0;          ///< mode index before the event
  int mode_after = 0;           ///< mode index after the event
  Eigen::VectorXd state_before; ///< x(t_e-), n_x
  Eigen::VectorXd state_after;  ///< x(t_e+), n_x
  double guard_rate = 0.0;      ///< r-dot- = r_t + r_x f-, the crossing speed of the guard
  double guard_rate_scale = 0.0; ///< |r_t| + |r_x| |f-|, the scale the crossing speed is judged against
  bool grazing = false;         ///< r-dot- vanished: the guard touched zero without crossing
  /// The motion came to rest here (the event's resting variant, EventBuilder::rests_in):
  /// `accumulation_time` is where the event's firings accumulate (Aitken's extrapolation of the
  /// last three, or this time if the jump would have left the state on the guard).
  bool rest = false;
  double accumulation_time = 0.0;
  Eigen::RowVectorXd daccumulation_dp;    ///< forward runs: d(accumulation_time)/dp, 1 x n_p
  // Forward sensitivity runs only (empty otherwise):
  Eigen::RowVectorXd dtime_dp;            ///< tau = dt_e/dp, 1 x n_p
  Eigen::MatrixXd sensitivity_before;     ///< S(t_e-), n_x x n_p
  Eigen::MatrixXd sensitivity_after;      ///< S(t_e+), n_x x n_p
};

/// Integrator counters summed over every segment.
struct SolverStats {
  std::string integrator = "CVODES";  ///< "CVODES", "IDAS" or "dopri5"
  /// A discrete integrator (dopri5): its forward and adjoint sensitivities are the derivatives
  /// of the computed steps (docs/discrete-sensitivities.md), not of the exact solution.
  bool discrete = false;
  long steps = 0;
  long rhs_evals = 0;  ///< right-hand-side evaluations (CVODES) or residual evaluations (IDAS)
  long jacobian_evals = 0;
  long root_evals = 0;
  long error_test_failures = 0;
  long nonlinear_iterations = 0;
  long nonlinear_failures = 0;
  long sensitivity_rhs_evals = 0;
  int segments = 0;  ///< smooth pieces integrated (events + 1)
  /// The Newton iterations' linear solver: "dense" (LU), "GMRES (matrix-free)" (CVODES with
  /// Options::linear_solver Krylov; linear_iterations counts its iterations) or "KLU on the
  /// sparse Newton matrix (...)" (IDAS with Options::linear_solver Sparse: the last segment's
  /// size, nonzeros and tangents per evaluation).
  std::string linear_solver = "dense";
  long linear_iterations = 0;
};

/// What the adjoint stored and computed. Bytes are heap bytes as SUNDIALS and glibc allocate
/// them (integrators, vectors with their operation tables, matrices, check points, Hermite
/// buffers), not payload alone (docs/adjoint.md).
struct AdjointStats {
  /// Forward steps between check points: the widest spacing of the recordings the backward
  /// pass used (Options::checkpoint_steps if set and nothing was recomputed)
  long checkpoint_steps = 0;
  long checkpoints = 0;       ///< check points of the recordings the backward pass used
  /// Bytes of the recordings of all segments together, each counted once as the backward pass
  /// used it: what the adjoint would hold at once if it kept everything.
  long stored_bytes = 0;
  long memory_budget = 0;      ///< Options::adjoint_memory_budget [B]
  /// The most bytes held at once for the backward pass (recordings, snapshots and one backward
  /// problem): what the budget bounds.
  long peak_stored_bytes = 0;
  /// Segments recomputed from their snapshot (over the budget); for a discrete integrator, the
  /// steps recomputed from the stored step states.
  long recomputed_segments = 0;
  long tape_recordings = 0;   ///< reverse-mode recordings of the right-hand side
  SolverStats backward;       ///< CVODES counters of the backward integrations
};

struct Solution {
  std::vector<double> times;  ///< output times [s]
  Eigen::MatrixXd states;     ///< x at the output times, n_out x n_x (after an event at t)
  std::vector<int> modes;     ///< mode at each output time
  std::vector<EventRecord> events;
  Eigen::VectorXd costs;      ///< psi_j, n_c
  /// psi_j as if the horizon ended at each output time t: the running integral to t, the event
  /// terms of the firings up to t and the terminal part at (t, x(t)); n_out x n_c. Its last row
  /// is `costs` when the last output time is tf. (Real runs on CVODES and IDAS.)
  Eigen::MatrixXd cost_history;
  Eigen::VectorXd final_state;
  int final_mode = 0;

  // Forward sensitivity runs only (empty otherwise).
  std::vector<Eigen::MatrixXd> sensitivities;  ///< S = dx/dp at each output time, n_x x n_p
  Eigen::MatrixXd final_sensitivity;           ///< S(tf), n_x x n_p
  Eigen::MatrixXd cost_gradient;               ///< dpsi_j/dp_k, n_c x n_p

  // Adjoint runs only (empty otherwise); cost_gradient is filled too.
  Eigen::MatrixXd initial_state_gradient;      ///< dpsi_j/dx0_i = lambda_j(t0)^T, n_c x n_x
  AdjointStats adjoint;

  SolverStats stats;
  bool has_sensitivities() const { return cost_gradient.size() > 0; }
  bool has_adjoint() const { return initial_state_gradient.size() > 0; }
};

}  // namespace saltus
