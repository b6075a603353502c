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
                const std::vector<double>& atol_quadrature = {});
  ~CvodesSession();
  CvodesSession(const CvodesSession&) = delete;
  CvodesSession& operator=(const CvodesSession&) = delete;

  /// Starts (or restarts) integration at t from the current contents of y(), yS(k); the
  /// quadratures and their sensitivities restart from zero.
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
};

}  // namespace saltus::detail
