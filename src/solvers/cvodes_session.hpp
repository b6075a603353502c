#pragma once
// RAII ownership of one CVODES integrator with a dense direct linear solver, and the checks
// that turn CVODES return flags into saltus::Error. The SUNDIALS types stay in src/solvers.
#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <Eigen/Core>

#include <string>
#include <vector>

#include <saltus/core/options.hpp>
#include <saltus/solvers/solution.hpp>

#include "backward_step_bounds.hpp"
#include "nvector_view.hpp"

namespace saltus::detail {

/// The CVODES name of a return flag ("CV_TOO_MUCH_WORK", ...).
std::string flag_name(int flag);

/// Throws SolverError "<call> failed: <flag name>" if flag < 0.
void check_cvode(int flag, const char* call);

/// Settings and callbacks of a backward (adjoint) problem on a recorded session.
struct BackwardSettings {
  double rtol = 1e-8;
  std::vector<double> state_atol; ///< per adjoint state (size nB)
  std::vector<double> quadrature_atol; ///< per gradient quadrature
  bool quadrature_error_control = true;
  long max_steps = 500000;
  CVRhsFnB rhs = nullptr;
  CVLsJacFnB jacobian = nullptr;
  /// The backward Jacobian's products: with it, a session whose forward pass runs GMRES runs
  /// the backward problem with GMRES too.
  CVLsJacTimesVecFnB jacobian_times = nullptr;
  CVQuadRhsFnB quadrature = nullptr;
  void* user_data = nullptr;
  /// With the dense LU and more than one block: the backward matrix is `blocks` equal diagonal
  /// blocks of order `block` (one adjoint per cost), factored one block for all
  /// (block_dense_solver.hpp). 0: the dense LU of the whole matrix.
  int block = 0;
  int blocks = 0;
};

/// What one recorded session stored for the backward pass.
struct CheckpointUsage {
  long checkpoints = 0;    ///< CVODES check points
  long stored_bytes = 0;   ///< heap bytes of the whole session (held_bytes())
  long spacing = 0;        ///< forward steps between its check points (0: not recording)
};

struct CvodesCallbacks {
  CVRhsFn rhs = nullptr;
  CVLsJacFn jacobian = nullptr;
  /// f_x v: with it the session may take the matrix-free Krylov solver (uses_krylov).
  CVLsJacTimesVecFn jacobian_times = nullptr;
  CVRootFn roots = nullptr;
  CVQuadRhsFn quadrature = nullptr;
  CVSensRhsFn sensitivity = nullptr;
  CVQuadSensRhsFn quadrature_sensitivity = nullptr;
};

/// Whether a forward session of n states with ns forward sensitivities takes matrix-free GMRES
/// (Options::linear_solver; Automatic: from krylov_min_states states on, or with sensitivities
/// from krylov_min_states_with_sensitivities).
bool uses_krylov(const Options& options, int n, int ns);
/// Whether CVODES's corrector takes fixed-point iteration (no linear solver) for an n-state
/// problem with these options (NonlinearSolver; Automatic: with an automatic linear solver from
/// Options::krylov_min_states states on, with forward sensitivities or not).
bool uses_fixed_point(const Options& options, int n);

/// One CVODES instance for a state of size n, with optional quadratures (nq) and forward
/// sensitivities (ns parameters). Segments are started with start(); the root functions are
/// (re)installed with set_roots() whenever the watched set changes.
class CvodesSession {
 public:
  /// advance() of a recording session returns this (not a CVODES flag) when it stopped short
  /// of tout at a check point, so that the caller can keep its memory budget; call it again.
  static constexpr int kPaused = 1000;

  CvodesSession(int n, int nq, int ns, const Options& options, const CvodesCallbacks& callbacks,
                void* user_data, const std::vector<double>& atol_state,
                const std::vector<double>& parameter_scales,
                const std::vector<double>& atol_quadrature = {}, long checkpoint_steps = 0);
  ~CvodesSession();
  CvodesSession(const CvodesSession&) = delete;
  /// Absolute tolerances of the forward sensitivities: atol_state[i] / pbar_k for sensitivity k
  /// (replaces CVODES' estimated tolerances; Options::sensitivity_atol_from_states).
  void set_sensitivity_atol(const std::vector<double>& atol_state, double rtol);
  CvodesSession& operator=(const CvodesSession&) = delete;

  /// Starts (or restarts) integration at t from the current contents of y(), yS(k), q() and
  /// qS(k) (quadratures continue from the values the caller put there).
  void start(double t);
  /// Watches `directions.size()` root functions with CVODES direction flags (+1, -1, 0).
  void set_roots(const std::vector<int>& directions);
  /// Advances towards tout; returns the CVODES flag (CV_SUCCESS, CV_TSTOP_RETURN,
  /// CV_ROOT_RETURN, or negative), or kPaused. t receives the time reached.
  int advance(double tout, double& t);
  /// Steps taken since start().
  long steps() const;
  /// The size of the last step taken [s] (0 before the first).
  double last_step() const;
  /// The first step size after start() (after the first step), and a size to impose on the
  /// first step of the next start(): with it a recomputation repeats the steps of the first run.
  double initial_step() const;
  void set_initial_step(double h);
  /// Which roots fired at the last CV_ROOT_RETURN (+1 rising, -1 falling, 0 none).
  std::vector<int> root_info();
  /// The state at t from CVODES' interpolant (CVodeGetDky), valid within the last step taken;
  /// false where t lies outside it (or no step was taken yet). x is sized to n. Callable
  /// from the root function (GuardExcursions).
  bool interpolate(double t, Eigen::VectorXd& x);
  /// Loads the sensitivities / quadratures / quadrature sensitivities at the last return time.
  void load_sensitivities(double t);
  void load_quadratures(double t);
  void load_quadrature_sensitivities(double t);
  /// Adds this segment's CVODES counters to `stats` (call before start()).
  void add_stats(SolverStats& stats) const;

  /// Heap bytes this session holds: the SUNDIALS context, integrator, linear solver, vectors,
  /// and while recording the check points and the Hermite buffer, and the backward problem
  /// (sundials_footprint.hpp). Forward-sensitivity vectors are not counted.
  long held_bytes() const;

  // ---- adjoint (sessions created with checkpoint_steps > 0) ------------------------------
  /// Whether the session records check points (it was created with checkpoint_steps > 0 and
  /// stop_recording() was not called).
  bool recording() const { return recording_; }
  /// Frees the check points and the Hermite buffer and continues as a plain integrator: the
  /// steps stay those of the recording, the segment is recomputed for the backward pass.
  void stop_recording();
  /// Replaces the check-point estimate by their exact sizes (call when the segment has ended).
  void measure_checkpoints();
  /// Check points and the bytes of the session (before start_backward()).
  CheckpointUsage checkpoint_usage() const;
  /// held_bytes() of a new recording session of n states and nq quadratures with a Hermite
  /// buffer of checkpoint_steps + 1 points and its first check point.
  static long recording_bytes(int n, int nq, const Options& options, long checkpoint_steps);
  /// held_bytes() of a session that does not record (it only integrates).
  static long plain_bytes(int n, int nq, const Options& options);
  /// What one more check point may add.
  static long checkpoint_bytes(int n, int nq, const Options& options);
  /// What start_backward(nB, nqB, ...) adds to a session of n states (the backward problem
  /// takes GMRES when the forward one does).
  static long backward_bytes(int nB, int nqB, const Options& options, int n);
  /// Creates the backward problem of size nB with nqB quadratures, starting at tB0 from yB0
  /// with zero quadratures. One backward problem per session.
  void start_backward(int nB, int nqB, const BackwardSettings& settings, double tB0,
                      const Eigen::VectorXd& yB0);
  /// Integrates the backward problem to t_out (>= the session's start time); yB and qB receive
  /// the adjoint state and the quadratures accumulated since tB0. The backward steps are bounded
  /// by the recording's steps of the stretch they are in (backward_step_bounds.hpp): the
  /// backward problem's coefficients come from the forward solution, and a step over a short
  /// stretch the forward pass resolved (a compliant contact of a few ms) would not see it.
  int integrate_backward(double t_out, Eigen::VectorXd& yB, Eigen::VectorXd& qB);
  /// Steps, right-hand-side and Jacobian evaluations of the backward problem.
  void add_backward_stats(SolverStats& stats) const;
  /// Where a failed backward integration stopped: its time `t` and the forward state there `x`,
  /// interpolated from the recording (for the failure's diagnosis); false if SUNDIALS cannot say.
  bool backward_stop(double& t, Eigen::VectorXd& x);

  N_Vector y() { return y_; }
  N_Vector yS(int k) { return yS_[k]; }
  N_Vector q() { return q_; }
  N_Vector qS(int k) { return qS_[k]; }
  int ns() const { return ns_; }
  /// Whether the Newton iterations solve with matrix-free GMRES rather than a dense LU.
  bool krylov() const { return krylov_; }
  int nq() const { return nq_; }

 private:
  SUNContext ctx_ = nullptr;
  void* mem_ = nullptr;
  N_Vector y_ = nullptr;
  N_Vector atol_ = nullptr;
  N_Vector interpolated_ = nullptr;  // a header over the caller's vector (interpolate), no data of its own
  N_Vector q_ = nullptr;
  N_Vector* yS_ = nullptr;
  N_Vector* qS_ = nullptr;
  SUNMatrix A_ = nullptr;
  SUNLinearSolver LS_ = nullptr;
  SUNNonlinearSolver NLS_ = nullptr;      // the fixed-point corrector, if taken
  SUNNonlinearSolver NLS_sens_ = nullptr;  // and the sensitivities'
  SUNNonlinearSolver NLSB_ = nullptr;      // the backward problem's, when the forward one iterates so
  int n_, nq_, ns_;
  std::vector<double> pbar_;  ///< parameter scales of the sensitivities
  CVRootFn roots_fn_;
  double tf_;
  int ism_ = CV_STAGGERED;
  int n_roots_ = 0;
  long checkpoint_steps_ = 0;
  int lmm_ = CV_BDF;
  long max_steps_ = 0;
  bool quadrature_checkpoints_ = false;  // quadratures in the step control: in check points too
  bool vector_quadrature_atol_ = false;
  // Recording (CVodeAdjInit).
  bool recording_ = false;
  bool krylov_ = false;      // Newton's solves would take GMRES (the backward pass does)
  bool fixed_point_ = false;  // the corrector is fixed-point iteration, no linear solver (backward too)
  bool krylov_backward_ = false;
  bool adjoint_freed_ = false;  // stop_recording() freed the adjoint memory
  long checkpoints_ = 0;        // CVODES' count, without the initial check point
  long checkpoint_bytes_ = 0;   // all check points, the initial one included
  long steps_since_output_ = 0; // steps of the current advance() over its pauses
  // The recording's steps, grouped in stretches: the backward pass takes no step longer than
  // the forward steps of the stretch it is in (backward_step_bounds.hpp).
  ForwardStretches stretches_;
  void note_step_end();
  // Backward problem.
  int which_ = -1;
  int nB_ = 0;
  int nqB_ = 0;
  N_Vector yB_ = nullptr;
  N_Vector qB_ = nullptr;
  double backward_time_ = 0.0;  // where the backward problem stands
  SUNMatrix AB_ = nullptr;
  SUNLinearSolver LSB_ = nullptr;
  int blockB_ = 0;  ///< the backward matrix's block order with block_dense_solver, else 0
};

}  // namespace saltus::detail
