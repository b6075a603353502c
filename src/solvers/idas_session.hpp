#pragma once
// RAII ownership of one IDAS integrator (dense LU, or KLU on a sparse matrix) for the residual form
// F(t, x, x-dot, p) = 0, with root finding, cost quadratures and staggered forward
// sensitivities: the DAE counterpart of cvodes_session.hpp. The SUNDIALS types stay in
// src/solvers.
#include <idas/idas.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunmatrix/sunmatrix_sparse.h>

#include <Eigen/Core>

#include <string>
#include <utility>
#include <vector>

#include <saltus/core/options.hpp>
#include <saltus/solvers/solution.hpp>

#include "backward_step_bounds.hpp"

namespace saltus::detail {

/// The IDAS name of a return flag ("IDA_TOO_MUCH_WORK", ...).
std::string ida_flag_name(int flag);

/// Throws SolverError "<call> failed: <flag name>" if flag < 0.
void check_ida(int flag, const char* call);

/// Settings and callbacks of a backward (adjoint) problem on a recording session.
struct IdasBackwardSettings {
  double rtol = 1e-8;
  std::vector<double> state_atol;       ///< per backward state (size nB)
  std::vector<double> quadrature_atol;  ///< per gradient quadrature
  /// If not empty (size nB): 1 for differential, 0 for algebraic components, which IDAS then
  /// leaves out of its error test (IDASetSuppressAlgB).
  std::vector<double> differential;
  bool quadrature_error_control = true;
  long max_steps = 500000;
  IDAResFnB residual = nullptr;
  IDALsJacFnB jacobian = nullptr;
  /// If set: matrix-free GMRES (no preconditioner) on the backward Newton systems, with these
  /// products, instead of the dense LU of `jacobian`'s matrix.
  IDALsJacTimesVecFnB jacobian_times = nullptr;
  IDAQuadRhsFnB quadrature = nullptr;
  void* user_data = nullptr;
  /// With the dense LU and more than one block: the backward matrix is `blocks` equal diagonal
  /// blocks of order `block` (one adjoint per cost), then gradient states with a diagonal block
  /// of their own, factored one block for all (block_dense_solver.hpp). 0: the dense LU of the
  /// whole matrix.
  int block = 0;
  int blocks = 0;
};

struct IdasCallbacks {
  IDAResFn residual = nullptr;
  IDALsJacFn jacobian = nullptr;
  IDARootFn roots = nullptr;
  IDAQuadRhsFn quadrature = nullptr;
  IDASensResFn sensitivity = nullptr;
  IDAQuadSensRhsFn quadrature_sensitivity = nullptr;
};

/// The first step of an IDAS segment after an event (docs/dae.md, "Restarts"). IDAS's own
/// estimate (about rtol |y| / |y'|, at most a thousandth of the way to the next output) can be
/// orders of magnitude below the motion's scale, and an index-3 corrector fails at such steps,
/// its Newton matrix's condition growing like h^-3 (a spatial rod pendulum's restart after its
/// impact failed or not with the output grid). So: IDAS's estimate first, as a large first step
/// fails the error test where the event changed the rates much; if the segment fails before its
/// first output and before reaching the step taken before the event, once more from the same
/// state with that step. DaeRun and ComplexDaeRun keep one each.
class RestartStep {
 public:
  /// At an event: the last step IDAS took before it.
  void after_event(double last_step) { before_event_ = last_step; }
  /// A segment starts at t: the first step to give IDAS (0: its own estimate).
  double start(double t) {
    start_ = t;
    at_start_ = true;
    return std::exchange(retry_, 0.0);
  }
  /// The segment returned at an output: the run's state is no longer the segment's start.
  void passed_output() {
    before_event_ = 0.0;
    at_start_ = false;
  }
  /// Whether the run's state is still the segment's start (no output since): the segment can be
  /// started again from it.
  bool at_start() const { return at_start_; }
  /// After a failure at t: whether to start the segment again at segment_start() (start() then
  /// gives the step taken before the event). Once per event.
  bool retry(double t) {
    if (!(before_event_ > 0.0 && t - start_ < before_event_)) return false;
    retry_ = std::exchange(before_event_, 0.0);
    return true;
  }
  double segment_start() const { return start_; }

 private:
  double start_ = 0.0;
  double before_event_ = 0.0;
  double retry_ = 0.0;
  bool at_start_ = false;
};

/// One IDAS instance for n states (`differential[i]`: state i has a derivative in F), nq
/// quadratures and ns sensitivity parameters. Segments start with start() from y(), yp(),
/// yS(k), ypS(k), q() and qS(k), which the caller makes consistent first. A session created
/// with checkpoint_steps > 0 records its forward steps (IDAAdjInit, Hermite interpolation) for
/// one backward problem. `atol_quadrature` (size nq), if given, replaces the cost tolerance per
/// quadrature. `suppress_algebraic` leaves the algebraic components out of the error test (index
/// 2: IDASetSuppressAlg). `sparse_nonzeros` > 0 makes the Newton matrix a compressed-column
/// sparse matrix of that many nonzeros solved by KLU (klu_newton_solver.hpp), whose Jacobian callback
/// writes the pattern and the values (and may reallocate the matrix for another pattern, which the
/// solver then analyses); 0 keeps the dense LU.
class IdasSession {
 public:
  IdasSession(int n, int nq, int ns, const std::vector<bool>& differential, const Options& options,
              const IdasCallbacks& callbacks, void* user_data, const std::vector<double>& atol_state,
              const std::vector<double>& parameter_scales, long checkpoint_steps = 0,
              const std::vector<double>& atol_quadrature = {}, bool suppress_algebraic = false,
              int sparse_nonzeros = 0);
  ~IdasSession();
  IdasSession(const IdasSession&) = delete;
  IdasSession& operator=(const IdasSession&) = delete;

  /// Starts (or restarts) integration at t from the current vectors.
  void start(double t);
  /// The first step of the integration just started (0: IDAS's own estimate); it stays set
  /// for later starts until set again.
  void set_initial_step(double h);
  /// The states' absolute tolerances from now on (IDASVtolerances, with the run's rtol).
  void set_state_atol(const std::vector<double>& atol, double rtol);
  /// Forward sensitivities: the absolute tolerance of component i of sensitivity k is
  /// atol[i] / pbar_k (IDAS's estimate takes the states' own), with the states' rtol.
  void set_sensitivity_atol(const std::vector<double>& atol, double rtol);
  /// The size of the last step taken (0 before any).
  double last_step() const;
  /// Watches `directions.size()` root functions with direction flags (+1, -1, 0).
  void set_roots(const std::vector<int>& directions);
  /// Advances towards tout; returns the IDAS flag (IDA_SUCCESS, IDA_TSTOP_RETURN,
  /// IDA_ROOT_RETURN or negative); t receives the time reached, y() and yp() the values there.
  int advance(double tout, double& t);
  /// Which roots fired at the last IDA_ROOT_RETURN (+1 rising, -1 falling, 0 none).
  std::vector<int> root_info();
  /// The state (k = 0) or its rate (k = 1) at t from IDAS' interpolant (IDAGetDky), valid
  /// within the last step taken; false outside it. `out` is sized to the state's length.
  /// Callable from the root function (GuardExcursions).
  bool interpolate(double t, int k, Eigen::VectorXd& out);
  /// The first n entries of the state and of its rate at t (interpolate), through the
  /// session's own scratch vectors.
  bool interpolate_head(double t, Eigen::Index n, Eigen::VectorXd& x, Eigen::VectorXd& xdot);
  /// Loads the sensitivities (yS) / quadratures (q) / quadrature sensitivities (qS) at the last
  /// return time.
  void load_sensitivities(double t);
  void load_quadratures(double t);
  void load_quadrature_sensitivities(double t);
  /// Adds this segment's counters to `stats` (call before start()).
  void add_stats(SolverStats& stats) const;

  // ---- adjoint (sessions created with checkpoint_steps > 0) ------------------------------
  /// Check points stored so far.
  /// Check points of the recording, the one at its start included (IDASolveF counts the
  /// others; CvodesSession counts them so too).
  long checkpoints() const { return adjoint_initialized_ ? checkpoints_ + 1 : 0; }
  /// Forward steps between the recording's check points (0 if it did not record).
  long checkpoint_spacing() const { return adjoint_initialized_ ? checkpoint_steps_ : 0; }
  /// Steps taken since the session started.
  long steps() const;
  /// Creates the backward problem of size nB with nqB quadratures, starting at tB0 from
  /// (yB0, ypB0), consistent, with zero quadratures. One backward problem per session.
  void start_backward(int nB, int nqB, const IdasBackwardSettings& settings, double tB0, const Eigen::VectorXd& yB0,
                      const Eigen::VectorXd& ypB0);
  /// Integrates the backward problem to t_out (>= the session's start time); yB and qB receive
  /// the adjoint state and the quadratures accumulated since tB0. Returns the IDAS flag. The
  /// backward steps are bounded by the recording's steps of the stretch they are in
  /// (backward_step_bounds.hpp).
  int integrate_backward(double t_out, Eigen::VectorXd& yB, Eigen::VectorXd& qB);
  /// Counters of the backward problem.
  void add_backward_stats(SolverStats& stats) const;
  /// Where a failed backward integration stopped: its time `t` and the forward state there `x`,
  /// interpolated from the recording (for the failure's diagnosis); false if SUNDIALS cannot say.
  bool backward_stop(double& t, Eigen::VectorXd& x);

  N_Vector y() { return y_; }
  N_Vector yp() { return yp_; }
  N_Vector yS(int k) { return yS_[k]; }
  N_Vector ypS(int k) { return ypS_[k]; }
  N_Vector q() { return q_; }
  N_Vector qS(int k) { return qS_[k]; }
  int ns() const { return ns_; }
  int nq() const { return nq_; }

 private:
  SUNContext ctx_ = nullptr;
  void* mem_ = nullptr;
  N_Vector y_ = nullptr;
  N_Vector yp_ = nullptr;
  N_Vector atol_ = nullptr;
  N_Vector interpolated_ = nullptr;  // a header over the caller's vector (interpolate), no data of its own
  Eigen::VectorXd interpolated_y_, interpolated_yp_;  // interpolate_head's
  N_Vector id_ = nullptr;
  N_Vector q_ = nullptr;
  N_Vector* yS_ = nullptr;
  N_Vector* ypS_ = nullptr;
  N_Vector* qS_ = nullptr;
  SUNMatrix A_ = nullptr;
  SUNLinearSolver LS_ = nullptr;
  int nq_, ns_;
  std::vector<double> pbar_;  ///< the sensitivities' parameter scales (IDASetSensParams)
  bool sparse_ = false;
  IDARootFn roots_fn_;
  double tf_;
  int ism_ = IDA_STAGGERED;
  int n_roots_ = 0;
  bool recording_ = false;
  long checkpoint_steps_ = 0;
  bool adjoint_initialized_ = false;  ///< IDAAdjInit ran (at the first advance of a recording)
  long checkpoints_ = 0;
  long max_steps_ = 0;  ///< Options::max_steps: per advance()
  // The recording's steps, grouped in stretches (the backward pass's step bounds,
  // backward_step_bounds.hpp).
  ForwardStretches stretches_;
  void note_step_end();
  // Backward problem.
  int which_ = -1;
  double backward_time_ = 0.0;  // where the backward problem stands
  N_Vector yB_ = nullptr;
  N_Vector ypB_ = nullptr;
  N_Vector qB_ = nullptr;
  SUNMatrix AB_ = nullptr;
  SUNLinearSolver LSB_ = nullptr;
  bool krylov_backward_ = false;  // the backward Newton systems take matrix-free GMRES
};

}  // namespace saltus::detail
