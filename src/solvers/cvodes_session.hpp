#pragma once
// RAII ownership of one CVODES integrator with a dense direct linear solver, and the checks
// that turn CVODES return flags into saltus::Error. The SUNDIALS types stay in src/solvers.
#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <Eigen/Core>

#include <string>
#include <vector>

#include <saltus/core/options.hpp>
#include <saltus/solvers/solution.hpp>

namespace saltus::detail {

/// The CVODES name of a return flag ("CV_TOO_MUCH_WORK", ...).
std::string flag_name(int flag);

/// Throws SolverError "<call> failed: <flag name>" if flag < 0.
void check_cvode(int flag, const char* call);

inline Eigen::Map<Eigen::VectorXd> view(N_Vector v) {
  return {N_VGetArrayPointer(v), static_cast<Eigen::Index>(N_VGetLength(v))};
}

/// Settings and callbacks of a backward (adjoint) problem on a recorded session.
struct BackwardSettings {
  double rtol = 1e-8;
  double atol = 1e-10;            ///< adjoint states
  std::vector<double> quadrature_atol; ///< per gradient quadrature
  bool quadrature_error_control = true;
  long max_steps = 500000;
  CVRhsFnB rhs = nullptr;
  CVLsJacFnB jacobian = nullptr;
  CVQuadRhsFnB quadrature = nullptr;
  void* user_data = nullptr;
};

/// What one recorded session stored for the backward pass.
struct CheckpointUsage {
  long checkpoints = 0;    ///< CVODES check points
  long stored_bytes = 0;   ///< check points plus the interpolation data of one interval
};

struct CvodesCallbacks {
  CVRhsFn rhs = nullptr;
  CVLsJacFn jacobian = nullptr;
  CVRootFn roots = nullptr;
  CVQuadRhsFn quadrature = nullptr;
  CVSensRhsFn sensitivity = nullptr;
  CVQuadSensRhsFn quadrature_sensitivity = nullptr;
};

/// One CVODES instance for a state of size n, with optional quadratures (nq) and forward
/// sensitivities (ns parameters). Segments are started with start(); the root functions are
/// (re)installed with set_roots() whenever the watched set changes.
class CvodesSession {
 public:
  CvodesSession(int n, int nq, int ns, const Options& options, const CvodesCallbacks& callbacks,
                void* user_data, const std::vector<double>& atol_state,
                const std::vector<double>& parameter_scales,
                const std::vector<double>& atol_quadrature = {}, long checkpoint_steps = 0);
  ~CvodesSession();
  CvodesSession(const CvodesSession&) = delete;
  CvodesSession& operator=(const CvodesSession&) = delete;

  /// Starts (or restarts) integration at t from the current contents of y(), yS(k), q() and
  /// qS(k) (quadratures continue from the values the caller put there).
  void start(double t);
  /// Watches `directions.size()` root functions with CVODES direction flags (+1, -1, 0).
  void set_roots(const std::vector<int>& directions);
  /// Advances towards tout; returns the CVODES flag (CV_SUCCESS, CV_TSTOP_RETURN,
  /// CV_ROOT_RETURN, or negative). t receives the time reached.
  int advance(double tout, double& t);
  /// Which roots fired at the last CV_ROOT_RETURN (+1 rising, -1 falling, 0 none).
  std::vector<int> root_info();
  /// Loads the sensitivities / quadratures / quadrature sensitivities at the last return time.
  void load_sensitivities(double t);
  void load_quadratures(double t);
  void load_quadrature_sensitivities(double t);
  /// Adds this segment's CVODES counters to `stats` (call before start()).
  void add_stats(SolverStats& stats) const;

  // ---- adjoint (sessions created with checkpoint_steps > 0) ------------------------------
  /// Check points and interpolation memory held for the backward pass.
  CheckpointUsage checkpoint_usage() const;
  /// Creates the backward problem of size nB with nqB quadratures, starting at tB0 from yB0
  /// with zero quadratures. One backward problem per session.
  void start_backward(int nB, int nqB, const BackwardSettings& settings, double tB0,
                      const Eigen::VectorXd& yB0);
  /// Integrates the backward problem to t_out (>= the session's start time); yB and qB receive
  /// the adjoint state and the quadratures accumulated since tB0.
  int integrate_backward(double t_out, Eigen::VectorXd& yB, Eigen::VectorXd& qB);
  /// Steps, right-hand-side and Jacobian evaluations of the backward problem.
  void add_backward_stats(SolverStats& stats) const;

  N_Vector y() { return y_; }
  N_Vector yS(int k) { return yS_[k]; }
  N_Vector q() { return q_; }
  N_Vector qS(int k) { return qS_[k]; }
  int ns() const { return ns_; }
  int nq() const { return nq_; }

 private:
  SUNContext ctx_ = nullptr;
  void* mem_ = nullptr;
  N_Vector y_ = nullptr;
  N_Vector atol_ = nullptr;
  N_Vector q_ = nullptr;
  N_Vector* yS_ = nullptr;
  N_Vector* qS_ = nullptr;
  SUNMatrix A_ = nullptr;
  SUNLinearSolver LS_ = nullptr;
  int n_, nq_, ns_;
  CVRootFn roots_fn_;
  double tf_;
  int ism_ = CV_STAGGERED;
  int n_roots_ = 0;
  long checkpoint_steps_ = 0;
  int lmm_ = CV_BDF;
  long checkpoints_ = 0;
  // Backward problem.
  int which_ = -1;
  N_Vector yB_ = nullptr;
  N_Vector qB_ = nullptr;
  SUNMatrix AB_ = nullptr;
  SUNLinearSolver LSB_ = nullptr;
};

}  // namespace saltus::detail
