#include "cvodes_session.hpp"

#include "block_dense_solver.hpp"
#include "dense_kernels.hpp"
#include "serial_vector_kernels.hpp"

#include <saltus/core/error.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sundials_footprint.hpp"

namespace saltus::detail {

std::string flag_name(int flag) {
  char* name = CVodeGetReturnFlagName(flag);
  std::string text = name ? name : "unknown";
  free(name);
  return text;
}

void check_cvode(int flag, const char* call) {
  if (flag < 0) throw SolverError(fmt::format("{} failed: {}", call, flag_name(flag)));
}

namespace {
void check_alloc(const void* ptr, const char* what) {
  if (!ptr) throw SolverError(fmt::format("SUNDIALS could not allocate {}", what));
}

/// Lets CVODES combine its vector operations (the sensitivities' linear sums and norms over
/// every parameter at once) in one pass over memory instead of one call per vector; clones
/// (the sensitivity vectors, the history arrays) inherit it.
void enable_fused_operations(N_Vector v) {
  if (N_VEnableFusedOps_Serial(v, SUNTRUE) != 0) throw SolverError("SUNDIALS could not enable fused vector operations");
}

/// CVODES' messages go to the run's SolverMessageScope instead of stderr.
void forward_message(int error_code, const char*, const char* function, char* message, void*) {
  report_solver_message(error_code, function ? function : "CVODES", message);
}

}  // namespace

bool uses_krylov(const Options& options, int n, int ns) {
  switch (options.linear_solver) {
    case LinearSolver::Dense:
      return false;
    case LinearSolver::Krylov:
      return true;
    case LinearSolver::Automatic:
      break;
    case LinearSolver::Sparse:
      throw InputError(
          "linear solver 'sparse' is for IDAS runs (--integrator idas, or a DAE); CVODES takes dense, krylov or auto");
  }
  return n >= (ns > 0 ? options.krylov_min_states_with_sensitivities : options.krylov_min_states);
}

bool uses_fixed_point(const Options& options, int n) {
  switch (options.nonlinear_solver) {
    case NonlinearSolver::Newton:
      return false;
    case NonlinearSolver::FixedPoint:
      return true;
    case NonlinearSolver::Automatic:
      break;
  }
  return options.linear_solver == LinearSolver::Automatic && n >= options.krylov_min_states;
}

CvodesSession::CvodesSession(int n, int nq, int ns, const Options& options,
                             const CvodesCallbacks& cb, void* user_data,
                             const std::vector<double>& atol_state,
                             const std::vector<double>& parameter_scales,
                             const std::vector<double>& atol_quadrature,
                             long checkpoint_steps)
    : n_(n),
      nq_(nq),
      ns_(ns),
      roots_fn_(cb.roots),
      tf_(options.tf),
      checkpoint_steps_(checkpoint_steps),
      max_steps_(options.max_steps),
      quadrature_checkpoints_(nq > 0 && options.cost_error_control),
      vector_quadrature_atol_(nq > 0 && !atol_quadrature.empty()) {
  check_cvode(SUNContext_Create(nullptr, &ctx_), "SUNContext_Create");
  y_ = N_VNew_Serial(n, ctx_);
  check_alloc(y_, "the state vector");
  enable_fused_operations(y_);
  use_compiled_vector_kernels(y_);
  N_VConst(0.0, y_);
  atol_ = N_VClone(y_);
  for (int i = 0; i < n; ++i) NV_Ith_S(atol_, i) = atol_state[static_cast<size_t>(i)];
  lmm_ = options.method == LinearMultistep::BDF ? CV_BDF : CV_ADAMS;
  mem_ = CVodeCreate(lmm_, ctx_);
  check_alloc(mem_, "CVODES memory");
  check_cvode(CVodeSetErrHandlerFn(mem_, forward_message, nullptr), "CVodeSetErrHandlerFn");
  check_cvode(CVodeInit(mem_, cb.rhs, options.t0, y_), "CVodeInit");
  check_cvode(CVodeSetUserData(mem_, user_data), "CVodeSetUserData");
  check_cvode(CVodeSVtolerances(mem_, options.rtol, atol_), "CVodeSVtolerances");
  check_cvode(CVodeSetMaxNumSteps(mem_, options.max_steps), "CVodeSetMaxNumSteps");
  check_cvode(CVodeSetStopTime(mem_, options.tf), "CVodeSetStopTime");
  krylov_ = cb.jacobian_times != nullptr && uses_krylov(options, n, ns);
  fixed_point_ = uses_fixed_point(options, n);
  if (fixed_point_) {
    // Functional iteration (no Anderson acceleration: on the chain of rods it took as many
    // steps and more time): one right-hand side per iteration, no Jacobian and no linear solve.
    NLS_ = SUNNonlinSol_FixedPoint(y_, 0, ctx_);
    check_alloc(NLS_, "the fixed-point nonlinear solver");
    check_cvode(CVodeSetNonlinearSolver(mem_, NLS_), "CVodeSetNonlinearSolver");
  } else if (krylov_) {
    // GMRES with SUNDIALS' default Krylov dimension (5) and no preconditioner: each iteration
    // one product f_x v by forward AD.
    LS_ = SUNLinSol_SPGMR(y_, SUN_PREC_NONE, 0, ctx_);
    check_alloc(LS_, "the GMRES linear solver");
    check_cvode(CVodeSetLinearSolver(mem_, LS_, nullptr), "CVodeSetLinearSolver");
    check_cvode(CVodeSetJacTimes(mem_, nullptr, cb.jacobian_times), "CVodeSetJacTimes");
  } else {
    A_ = compiled_dense_matrix(n, ctx_);
    check_alloc(A_, "the Jacobian matrix");
    LS_ = compiled_dense_solver(y_, A_, ctx_);
    check_alloc(LS_, "the dense linear solver");
    check_cvode(CVodeSetLinearSolver(mem_, LS_, A_), "CVodeSetLinearSolver");
    if (cb.jacobian) check_cvode(CVodeSetJacFn(mem_, cb.jacobian), "CVodeSetJacFn");
  }
  if (checkpoint_steps > 0) {
    // Hermite interpolation between stored steps: the adjoint needs y only, and the segment
    // never contains an event, so the cubic Hermite data are smooth.
    check_cvode(CVodeAdjInit(mem_, checkpoint_steps, CV_HERMITE), "CVodeAdjInit");
    recording_ = true;
    // Counted from the start: CVodeF allocates the Hermite buffer and the first check point
    // on its first call.
    checkpoint_bytes_ = footprint::checkpoint(n, quadrature_checkpoints_ ? nq : 0, 1,
                                              lmm_ == CV_BDF, true);
  }

  const double cost_atol = options.cost_atol < 0.0 ? options.atol : options.cost_atol;
  if (nq > 0) {
    q_ = N_VNew_Serial(nq, ctx_);
    check_alloc(q_, "the quadrature vector");
    use_compiled_vector_kernels(q_);
    N_VConst(0.0, q_);
    check_cvode(CVodeQuadInit(mem_, cb.quadrature, q_), "CVodeQuadInit");
    if (atol_quadrature.empty()) {
      check_cvode(CVodeQuadSStolerances(mem_, options.rtol, cost_atol), "CVodeQuadSStolerances");
    } else {
      check_cvode(pass_as_vector(q_, atol_quadrature,
                                 [&](N_Vector qatol) { return CVodeQuadSVtolerances(mem_, options.rtol, qatol); }),
                  "CVodeQuadSVtolerances");
    }
    check_cvode(CVodeSetQuadErrCon(mem_, options.cost_error_control ? SUNTRUE : SUNFALSE),
                "CVodeSetQuadErrCon");
  }
  if (ns > 0) {
    yS_ = N_VCloneVectorArray(ns, y_);
    check_alloc(yS_, "the sensitivity vectors");
    for (int k = 0; k < ns; ++k) N_VConst(0.0, yS_[k]);
    ism_ = options.corrector == SensitivityCorrector::Staggered ? CV_STAGGERED
                                                                          : CV_SIMULTANEOUS;
    check_cvode(CVodeSensInit(mem_, ns, ism_, cb.sensitivity, yS_), "CVodeSensInit");
    if (fixed_point_) {
      // The sensitivities' corrector iterates the same way (the simultaneous corrector iterates
      // the state and the sensitivities together: ns + 1 vectors).
      const bool simultaneous = ism_ == CV_SIMULTANEOUS;
      NLS_sens_ = SUNNonlinSol_FixedPointSens(simultaneous ? ns + 1 : ns, y_, 0, ctx_);
      check_alloc(NLS_sens_, "the sensitivities' fixed-point nonlinear solver");
      check_cvode(simultaneous ? CVodeSetNonlinearSolverSensSim(mem_, NLS_sens_)
                               : CVodeSetNonlinearSolverSensStg(mem_, NLS_sens_),
                  "CVodeSetNonlinearSolverSens");
    }
    pbar_ = parameter_scales;
    check_cvode(CVodeSetSensParams(mem_, nullptr, pbar_.data(), nullptr), "CVodeSetSensParams");
    check_cvode(CVodeSensEEtolerances(mem_), "CVodeSensEEtolerances");
    check_cvode(
        CVodeSetSensErrCon(mem_, options.sensitivity_error_control ? SUNTRUE : SUNFALSE),
        "CVodeSetSensErrCon");
    if (nq > 0) {
      qS_ = N_VCloneVectorArray(ns, q_);
      check_alloc(qS_, "the quadrature sensitivity vectors");
      for (int k = 0; k < ns; ++k) N_VConst(0.0, qS_[k]);
      check_cvode(CVodeQuadSensInit(mem_, cb.quadrature_sensitivity, qS_), "CVodeQuadSensInit");
      check_cvode(CVodeQuadSensEEtolerances(mem_), "CVodeQuadSensEEtolerances");
      // The cost sensitivities take part in the error test only with the sensitivities: CVODES's
      // first-step estimate (cvYddNorm, SUNDIALS 6.4 to 7.5) evaluates them at sensitivities it
      // forms only when those are in the error test, and otherwise passes its uninitialised or
      // stale work vectors: a forward run's steps and gradient changed from one run to the next
      // in one process (fivebar_floor: 2,847 to 3,002 steps).
      const bool quadrature_errcon = options.cost_error_control && options.sensitivity_error_control;
      check_cvode(CVodeSetQuadSensErrCon(mem_, quadrature_errcon ? SUNTRUE : SUNFALSE), "CVodeSetQuadSensErrCon");
    }
  }
}

void CvodesSession::set_sensitivity_atol(const std::vector<double>& atol_state, double rtol) {
  if (ns_ == 0) return;  // no parameter to differentiate: no sensitivities, nothing to set
  N_Vector* atol = N_VCloneVectorArray(ns_, y_);
  check_alloc(atol, "the sensitivity tolerances");
  for (int k = 0; k < ns_; ++k) {
    for (int i = 0; i < n_; ++i) {
      NV_Ith_S(atol[k], i) = atol_state[static_cast<size_t>(i)] / std::abs(pbar_[static_cast<size_t>(k)]);
    }
  }
  const int flag = CVodeSensSVtolerances(mem_, rtol, atol);
  N_VDestroyVectorArray(atol, ns_);
  check_cvode(flag, "CVodeSensSVtolerances");
  if (qS_ != nullptr) {
    // The cost quadratures' sensitivities likewise: the floor of the state tolerances in cost
    // units per unit of p_k.
    const double floor = *std::max_element(atol_state.begin(), atol_state.end());
    std::vector<double> atol_q(static_cast<size_t>(ns_));
    for (int k = 0; k < ns_; ++k) atol_q[static_cast<size_t>(k)] = floor / std::abs(pbar_[static_cast<size_t>(k)]);
    check_cvode(CVodeQuadSensSStolerances(mem_, rtol, atol_q.data()), "CVodeQuadSensSStolerances");
  }
}

CvodesSession::~CvodesSession() {
  if (LSB_) SUNLinSolFree(LSB_);
  if (AB_) SUNMatDestroy(AB_);
  if (qB_) N_VDestroy(qB_);
  if (yB_) N_VDestroy(yB_);
  if (qS_) N_VDestroyVectorArray(qS_, ns_);
  if (yS_) N_VDestroyVectorArray(yS_, ns_);
  // SUNDIALS 6's CVodeAdjFree leaves cv_adjMallocDone set, so CVodeFree would free the adjoint
  // memory a second time through a null pointer. A fresh minimal adjoint memory gives it
  // something valid to free (later releases reset the flag; this is harmless there). Should
  // that allocation fail, the integrator is leaked rather than freed into a crash.
  if (mem_ && adjoint_freed_ && CVodeAdjInit(mem_, 1, CV_HERMITE) != CV_SUCCESS) mem_ = nullptr;
  if (mem_) CVodeFree(&mem_);
  if (NLS_sens_) SUNNonlinSolFree(NLS_sens_);
  if (NLSB_) SUNNonlinSolFree(NLSB_);
  if (NLS_) SUNNonlinSolFree(NLS_);
  if (LS_) SUNLinSolFree(LS_);
  if (A_) SUNMatDestroy(A_);
  if (q_) N_VDestroy(q_);
  if (atol_) N_VDestroy(atol_);
  if (interpolated_) N_VDestroy(interpolated_);  // the header only: N_VMake_Serial owns no data
  if (y_) N_VDestroy(y_);
  if (ctx_) SUNContext_Free(&ctx_);
}

void CvodesSession::start(double t) {
  // The first segment was initialised by CVodeInit with the same vector; later ones restart.
  check_cvode(CVodeReInit(mem_, t, y_), "CVodeReInit");
  stretches_.start(t);
  check_cvode(CVodeSetStopTime(mem_, tf_), "CVodeSetStopTime");
  if (nq_ > 0) check_cvode(CVodeQuadReInit(mem_, q_), "CVodeQuadReInit");
  if (ns_ > 0) {
    check_cvode(CVodeSensReInit(mem_, ism_, yS_), "CVodeSensReInit");
    if (nq_ > 0) check_cvode(CVodeQuadSensReInit(mem_, qS_), "CVodeQuadSensReInit");
  }
}

void CvodesSession::set_roots(const std::vector<int>& directions) {
  const int nr = static_cast<int>(directions.size());
  n_roots_ = nr;
  check_cvode(CVodeRootInit(mem_, nr, nr > 0 ? roots_fn_ : nullptr), "CVodeRootInit");
  if (nr > 0) {
    std::vector<int> dirs = directions;
    check_cvode(CVodeSetRootDirection(mem_, dirs.data()), "CVodeSetRootDirection");
    // Guards sitting exactly at zero after a restart are masked by CVODES until they move
    // away; no warning is wanted for that expected situation.
    check_cvode(CVodeSetNoInactiveRootWarn(mem_), "CVodeSetNoInactiveRootWarn");
  }
}

int CvodesSession::advance(double tout, double& t) {
  if (!recording_) return CVode(mem_, tout, y_, &t, CV_NORMAL);
  // CVODES has no hook between steps: CVodeF takes one step per call (the step limit 1, and
  // CV_TOO_MUCH_WORK; CVodeF takes one CVode step per iteration, so the steps are those of one
  // long call). Each step's end goes to the backward pass's stretches (stretches_); the call
  // returns kPaused at the next check point at the latest, so that the caller may free memory
  // before it. Options::max_steps still counts the steps towards tout.
  const long before = steps();
  const long to_checkpoint = checkpoint_steps_ - before % checkpoint_steps_;
  const long allowed = std::min(to_checkpoint, max_steps_ - steps_since_output_);
  check_cvode(CVodeSetMaxNumSteps(mem_, 1), "CVodeSetMaxNumSteps");
  int ncheck = 0;
  int flag = CV_TOO_MUCH_WORK;
  for (long taken = 0; flag == CV_TOO_MUCH_WORK && taken < allowed;) {
    flag = CVodeF(mem_, tout, y_, &t, CV_NORMAL, &ncheck);
    const long now = steps() - before;
    if (now > taken) note_step_end();
    taken = now;
  }
  steps_since_output_ += steps() - before;
  if (ncheck > checkpoints_) {
    // Their orders are read when the segment ends (measure_checkpoints); until then each counts
    // as the largest.
    checkpoint_bytes_ += (ncheck - checkpoints_) * footprint::largest_checkpoint(
                                                        n_, quadrature_checkpoints_ ? nq_ : 0,
                                                        lmm_ == CV_BDF);
    checkpoints_ = ncheck;
  }
  if (flag == CV_TOO_MUCH_WORK && steps_since_output_ < max_steps_) return kPaused;
  steps_since_output_ = 0;
  return flag;
}

long CvodesSession::steps() const {
  long n = 0;
  check_cvode(CVodeGetNumSteps(mem_, &n), "CVodeGetNumSteps");
  return n;
}

double CvodesSession::last_step() const {
  sunrealtype h = 0.0;
  check_cvode(CVodeGetLastStep(mem_, &h), "CVodeGetLastStep");
  return h;
}

double CvodesSession::initial_step() const {
  sunrealtype h = 0.0;
  check_cvode(CVodeGetActualInitStep(mem_, &h), "CVodeGetActualInitStep");
  return h;
}

void CvodesSession::set_initial_step(double h) {
  check_cvode(CVodeSetInitStep(mem_, h), "CVodeSetInitStep");
}

void CvodesSession::stop_recording() {
  if (!recording_) return;
  CVodeAdjFree(mem_);
  adjoint_freed_ = true;
  recording_ = false;
  checkpoints_ = 0;
  checkpoint_bytes_ = 0;
  steps_since_output_ = 0;
  check_cvode(CVodeSetMaxNumSteps(mem_, max_steps_), "CVodeSetMaxNumSteps");
}

void CvodesSession::measure_checkpoints() {
  if (!recording_ || steps() == 0) return;  // no CVodeF call yet: nothing is allocated to read
  std::vector<CVadjCheckPointRec> list(static_cast<size_t>(checkpoints_ + 1));
  check_cvode(CVodeGetAdjCheckPointsInfo(mem_, list.data()), "CVodeGetAdjCheckPointsInfo");
  checkpoint_bytes_ = 0;
  for (const CVadjCheckPointRec& ck : list) {
    // Only the first check point has step count 0 (the others are taken after steps).
    checkpoint_bytes_ += footprint::checkpoint(n_, quadrature_checkpoints_ ? nq_ : 0, ck.order,
                                               lmm_ == CV_BDF, ck.nstep == 0);
  }
}

bool CvodesSession::interpolate(double t, Eigen::VectorXd& x) {
  if (x.size() != n_) x.resize(n_);  // once per caller's vector
  if (!interpolated_) {
    interpolated_ = N_VMake_Serial(n_, x.data(), ctx_);
    if (!interpolated_) return false;
    use_compiled_vector_kernels(interpolated_);
  }
  // Outside the last step CVodeGetDky would report CV_BAD_T through the error handler.
  long steps = 0;
  double tn = 0.0, hu = 0.0;
  if (CVodeGetNumSteps(mem_, &steps) != CV_SUCCESS || steps == 0) return false;
  if (CVodeGetCurrentTime(mem_, &tn) != CV_SUCCESS || CVodeGetLastStep(mem_, &hu) != CV_SUCCESS) return false;
  const double fuzz = 100.0 * std::numeric_limits<double>::epsilon() * (std::abs(tn) + std::abs(hu));
  if (!(t >= tn - hu - fuzz && t <= tn + fuzz)) return false;
  N_VSetArrayPointer(x.data(), interpolated_);
  return CVodeGetDky(mem_, t, 0, interpolated_) == CV_SUCCESS;
}

std::vector<int> CvodesSession::root_info() {
  std::vector<int> info(static_cast<size_t>(n_roots_), 0);
  if (n_roots_ > 0) check_cvode(CVodeGetRootInfo(mem_, info.data()), "CVodeGetRootInfo");
  return info;
}

void CvodesSession::load_sensitivities(double t) {
  if (ns_ == 0) return;  // a problem without parameters has nothing to load
  check_cvode(CVodeGetSensDky(mem_, t, 0, yS_), "CVodeGetSensDky");
}

void CvodesSession::load_quadratures(double t) {
  check_cvode(CVodeGetQuadDky(mem_, t, 0, q_), "CVodeGetQuadDky");
}

void CvodesSession::load_quadrature_sensitivities(double t) {
  if (ns_ == 0 || nq_ == 0) return;
  check_cvode(CVodeGetQuadSensDky(mem_, t, 0, qS_), "CVodeGetQuadSensDky");
}

namespace {
/// Adds the counters every CVODES integrator has (forward or backward) to `s`.
void add_integrator_counters(void* mem, SolverStats& s) {
  long v = 0;
  if (CVodeGetNumSteps(mem, &v) == CV_SUCCESS) s.steps += v;
  if (CVodeGetNumRhsEvals(mem, &v) == CV_SUCCESS) s.rhs_evals += v;
  if (CVodeGetNumJacEvals(mem, &v) == CV_SUCCESS) s.jacobian_evals += v;
  if (CVodeGetNumGEvals(mem, &v) == CV_SUCCESS) s.root_evals += v;
  if (CVodeGetNumErrTestFails(mem, &v) == CV_SUCCESS) s.error_test_failures += v;
  if (CVodeGetNumNonlinSolvIters(mem, &v) == CV_SUCCESS) s.nonlinear_iterations += v;
  if (CVodeGetNumNonlinSolvConvFails(mem, &v) == CV_SUCCESS) s.nonlinear_failures += v;
  s.segments += 1;
}
}  // namespace

void CvodesSession::add_stats(SolverStats& s) const {
  add_integrator_counters(mem_, s);
  long v = 0;
  if (fixed_point_) {
    s.linear_solver = "none (fixed-point iteration)";
  } else if (krylov_) {
    s.linear_solver = "GMRES (matrix-free)";
    if (CVodeGetNumLinIters(mem_, &v) == CV_SUCCESS) s.linear_iterations += v;
  }
  if (ns_ > 0 && CVodeGetSensNumRhsEvals(mem_, &v) == CV_SUCCESS) s.sensitivity_rhs_evals += v;
}

namespace {

/// A session's own objects (this object, its context, y, atol, the Jacobian and linear solver
/// it gives CVODES) and its CVODES integrator with quadratures, without adjoint memory.
long session_base_bytes(int n, int nq, bool bdf, bool vector_quadrature_atol, bool krylov, bool fixed_point) {
  using namespace footprint;
  const long linear_solver = fixed_point ? 0 : krylov ? gmres_solver(n) : dense_matrix(n) + dense_solver(n);
  long bytes = heap_block(sizeof(CvodesSession)) + context() + 2 * nvector(n) + linear_solver +
               integrator(n, bdf, true, fixed_point ? Corrector::FixedPoint : krylov ? Corrector::KrylovNewton
                                                                                     : Corrector::DenseNewton);
  if (nq > 0) bytes += nvector(nq) + quadratures(nq, bdf, vector_quadrature_atol);
  return bytes;
}

/// CVODES' backward problem plus the vectors, matrix and solver the session gives it.
/// `block`: the order of the backward matrix's diagonal blocks (BackwardSettings), 0 for none.
long backward_problem_bytes(int nB, int nqB, bool bdf, footprint::Corrector corrector, int block) {
  using namespace footprint;
  const long solver = block > 0 && nB / block > 1 ? block_dense_solver_bytes(block) : dense_solver(nB);
  // The fixed-point solver is the integrator's (backward_problem counts it); no linear solver.
  const long linear_solver = corrector == Corrector::FixedPoint    ? 0
                             : corrector == Corrector::KrylovNewton ? gmres_solver(nB)
                                                                    : dense_matrix(nB) + solver;
  return backward_problem(nB, nqB, bdf, corrector) + nvector(nB) + linear_solver + (nqB > 0 ? nvector(nqB) : 0);
}

/// The backward problem's corrector: fixed-point iteration where the forward one iterates so
/// (start_backward), else Newton with GMRES or the dense LU.
footprint::Corrector backward_corrector(bool fixed_point, bool krylov) {
  return fixed_point ? footprint::Corrector::FixedPoint
                     : krylov ? footprint::Corrector::KrylovNewton : footprint::Corrector::DenseNewton;
}

bool bdf(const Options& options) { return options.method == LinearMultistep::BDF; }

/// Quadratures that take part in the step control are stored in the check points too.
int checkpointed_quadratures(int nq, const Options& options) {
  return options.cost_error_control ? nq : 0;
}

}  // namespace

long CvodesSession::held_bytes() const {
  const bool bdf = lmm_ == CV_BDF;
  long bytes =
      session_base_bytes(n_, nq_, bdf, vector_quadrature_atol_, krylov_, fixed_point_) + footprint::roots(n_roots_);
  if (recording_) {
    bytes += footprint::hermite_adjoint_memory(n_, checkpoint_steps_) + checkpoint_bytes_;
  }
  if (which_ >= 0) {
    bytes += backward_problem_bytes(nB_, nqB_, bdf, backward_corrector(fixed_point_, krylov_backward_), blockB_);
  }
  return bytes;
}

CheckpointUsage CvodesSession::checkpoint_usage() const {
  return {recording_ ? checkpoints_ + 1 : 0, held_bytes(), recording_ ? checkpoint_steps_ : 0};
}

long CvodesSession::plain_bytes(int n, int nq, const Options& options) {
  // No forward sensitivities: the sessions of an adjoint's forward pass.
  return session_base_bytes(n, nq, bdf(options), false, uses_krylov(options, n, 0), uses_fixed_point(options, n));
}

long CvodesSession::recording_bytes(int n, int nq, const Options& options, long checkpoint_steps) {
  return plain_bytes(n, nq, options) + footprint::hermite_adjoint_memory(n, checkpoint_steps) +
         footprint::checkpoint(n, checkpointed_quadratures(nq, options), 1, bdf(options), true);
}

long CvodesSession::checkpoint_bytes(int n, int nq, const Options& options) {
  return footprint::largest_checkpoint(n, checkpointed_quadratures(nq, options), bdf(options));
}

long CvodesSession::backward_bytes(int nB, int nqB, const Options& options, int n) {
  // The adjoint stacks one block of n per cost (AdjointSweep::settings).
  return backward_problem_bytes(nB, nqB, bdf(options),
                               backward_corrector(uses_fixed_point(options, n), uses_krylov(options, n, 0)), n);
}

void CvodesSession::start_backward(int nB, int nqB, const BackwardSettings& s, double tB0,
                                   const Eigen::VectorXd& yB0) {
  check_cvode(CVodeCreateB(mem_, lmm_, &which_), "CVodeCreateB");
  nB_ = nB;
  nqB_ = nqB;
  yB_ = N_VNew_Serial(nB, ctx_);
  check_alloc(yB_, "the adjoint vector");
  use_compiled_vector_kernels(yB_);
  view(yB_) = yB0;
  check_cvode(CVodeInitB(mem_, which_, s.rhs, tB0, yB_), "CVodeInitB");
  backward_time_ = tB0;
  check_cvode(CVodeSetErrHandlerFn(CVodeGetAdjCVodeBmem(mem_, which_), forward_message, nullptr),
              "CVodeSetErrHandlerFn (backward)");
  check_cvode(pass_as_vector(yB_, s.state_atol,
                             [&](N_Vector atol) { return CVodeSVtolerancesB(mem_, which_, s.rtol, atol); }),
              "CVodeSVtolerancesB");
  check_cvode(CVodeSetUserDataB(mem_, which_, s.user_data), "CVodeSetUserDataB");
  check_cvode(CVodeSetMaxNumStepsB(mem_, which_, s.max_steps), "CVodeSetMaxNumStepsB");
  // Where the forward problem is non-stiff enough for fixed-point iteration, so is the backward
  // one (lambda' = -f_x^T lambda - g_x^T has f_x's eigenvalues): one reverse sweep per
  // iteration and no GMRES products. The 16-rod chain's adjoint 0.087 -> 0.081 s with equal
  // accuracy (docs/benchmarks.md, "The Maggi adjoint's R^T (M R) as dense products; the
  // backward pass iterates as the forward one").
  krylov_backward_ = !fixed_point_ && krylov_ && s.jacobian_times != nullptr;
  if (fixed_point_) {
    NLSB_ = SUNNonlinSol_FixedPoint(yB_, 0, ctx_);
    check_alloc(NLSB_, "the adjoint's fixed-point nonlinear solver");
    check_cvode(CVodeSetNonlinearSolverB(mem_, which_, NLSB_), "CVodeSetNonlinearSolverB");
  } else if (krylov_backward_) {
    // lambda' = -f_x^T lambda - g_x^T is as well conditioned as the forward problem.
    LSB_ = SUNLinSol_SPGMR(yB_, SUN_PREC_NONE, 0, ctx_);
    check_alloc(LSB_, "the adjoint GMRES linear solver");
    check_cvode(CVodeSetLinearSolverB(mem_, which_, LSB_, nullptr), "CVodeSetLinearSolverB");
    check_cvode(CVodeSetJacTimesB(mem_, which_, nullptr, s.jacobian_times), "CVodeSetJacTimesB");
  } else {
    AB_ = compiled_dense_matrix(nB, ctx_);
    check_alloc(AB_, "the adjoint Jacobian matrix");
    LSB_ = s.blocks > 1 ? block_dense_solver(nB, s.block, s.blocks, ctx_) : compiled_dense_solver(yB_, AB_, ctx_);
    blockB_ = s.blocks > 1 ? s.block : 0;
    check_alloc(LSB_, "the adjoint linear solver");
    check_cvode(CVodeSetLinearSolverB(mem_, which_, LSB_, AB_), "CVodeSetLinearSolverB");
    if (s.jacobian) check_cvode(CVodeSetJacFnB(mem_, which_, s.jacobian), "CVodeSetJacFnB");
  }
  if (nqB > 0) {
    qB_ = N_VNew_Serial(nqB, ctx_);
    check_alloc(qB_, "the gradient quadrature vector");
    use_compiled_vector_kernels(qB_);
    N_VConst(0.0, qB_);
    check_cvode(CVodeQuadInitB(mem_, which_, s.quadrature, qB_), "CVodeQuadInitB");
    check_cvode(pass_as_vector(qB_, s.quadrature_atol,
                               [&](N_Vector qatol) { return CVodeQuadSVtolerancesB(mem_, which_, s.rtol, qatol); }),
                "CVodeQuadSVtolerancesB");
    check_cvode(CVodeSetQuadErrConB(mem_, which_, s.quadrature_error_control ? SUNTRUE : SUNFALSE),
                "CVodeSetQuadErrConB");
  }
}

void CvodesSession::note_step_end() {
  sunrealtype tn = 0.0;
  check_cvode(CVodeGetCurrentTime(mem_, &tn), "CVodeGetCurrentTime");
  stretches_.add_step_end(tn);
}

int CvodesSession::integrate_backward(double t_out, Eigen::VectorXd& yB, Eigen::VectorXd& qB) {
  const int flag = integrate_in_stretches(
      stretches_.backward(backward_time_, t_out),
      [&](double h) { check_cvode(CVodeSetMaxStepB(mem_, which_, h), "CVodeSetMaxStepB"); },
      [&](double until) { return CVodeB(mem_, until, CV_NORMAL); });
  if (flag < 0) return flag;
  backward_time_ = t_out;
  double t = 0.0;
  check_cvode(CVodeGetB(mem_, which_, &t, yB_), "CVodeGetB");
  yB = view(yB_);
  if (qB_) {
    check_cvode(CVodeGetQuadB(mem_, which_, &t, qB_), "CVodeGetQuadB");
    qB = view(qB_);
  }
  return flag;
}

bool CvodesSession::backward_stop(double& t, Eigen::VectorXd& x) {
  void* memB = CVodeGetAdjCVodeBmem(mem_, which_);
  if (memB == nullptr || CVodeGetCurrentTime(memB, &t) != CV_SUCCESS) return false;
  N_Vector y = N_VClone(y_);
  if (y == nullptr) return false;
  const bool found = CVodeGetAdjY(mem_, t, y) == CV_SUCCESS;
  if (found) x = view(y);
  N_VDestroy(y);
  return found;
}

void CvodesSession::add_backward_stats(SolverStats& s) const {
  void* memB = CVodeGetAdjCVodeBmem(mem_, which_);
  if (!memB) return;
  add_integrator_counters(memB, s);
  s.linear_solver = fixed_point_ ? "none (fixed-point iteration)" : krylov_backward_ ? "GMRES (matrix-free)" : "dense";
  long v = 0;
  if (krylov_backward_ && CVodeGetNumLinIters(memB, &v) == CV_SUCCESS) s.linear_iterations += v;
}

}  // namespace saltus::detail
