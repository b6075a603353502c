#include "idas_session.hpp"

#include "block_dense_solver.hpp"

#include <saltus/core/error.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "klu_newton_solver.hpp"
#include "nvector_view.hpp"
#include "dense_kernels.hpp"
#include "serial_vector_kernels.hpp"

namespace saltus::detail {

std::string ida_flag_name(int flag) {
  char* name = IDAGetReturnFlagName(flag);
  std::string text = name ? name : "unknown";
  free(name);
  return text;
}

void check_ida(int flag, const char* call) {
  if (flag < 0) throw SolverError(fmt::format("{} failed: {}", call, ida_flag_name(flag)));
}

namespace {
/// Krylov dimension of the backward problem's matrix-free GMRES (SUNDIALS' default: 5). Without
/// a preconditioner, the vehicle's stiff tyre modes need more than 5 directions at some steps,
/// and each shortfall costs IDAS a failed step: over its first second in ggl, 2532 backward steps
/// at 5, 2319 at 10 and at 20 (adjoint 24.0 s -> 21.1 s); the chain of 64 rods converges within
/// 5 and runs the same. A direction costs one vector of the backward state.
constexpr int kBackwardKrylovDimension = 10;

void check_alloc(const void* ptr, const char* what) {
  if (!ptr) throw SolverError(fmt::format("SUNDIALS could not allocate {}", what));
}

/// IDAS' messages go to the run's SolverMessageScope instead of stderr.
void forward_message(int error_code, const char*, const char* function, char* message, void*) {
  report_solver_message(error_code, function ? function : "IDAS", message);
}

N_Vector* zero_vectors(int count, N_Vector like, const char* what) {
  N_Vector* v = N_VCloneVectorArray(count, like);
  check_alloc(v, what);
  for (int k = 0; k < count; ++k) N_VConst(0.0, v[k]);
  return v;
}

}  // namespace

IdasSession::IdasSession(int n, int nq, int ns, const std::vector<bool>& differential, const Options& options,
                         const IdasCallbacks& cb, void* user_data, const std::vector<double>& atol_state,
                         const std::vector<double>& parameter_scales, long checkpoint_steps,
                         const std::vector<double>& atol_quadrature, bool suppress_algebraic,
                         int sparse_nonzeros)
    : nq_(nq), ns_(ns), sparse_(sparse_nonzeros > 0), roots_fn_(cb.roots), tf_(options.tf) {
  check_ida(SUNContext_Create(nullptr, &ctx_), "SUNContext_Create");
  y_ = N_VNew_Serial(n, ctx_);
  check_alloc(y_, "the state vector");
  use_compiled_vector_kernels(y_);
  N_VConst(0.0, y_);
  yp_ = N_VClone(y_);
  check_alloc(yp_, "the state derivative vector");
  N_VConst(0.0, yp_);
  atol_ = N_VClone(y_);
  id_ = N_VClone(y_);
  check_alloc(atol_, "the tolerance vector");
  check_alloc(id_, "the differential-state marks");
  for (int i = 0; i < n; ++i) {
    NV_Ith_S(atol_, i) = atol_state[static_cast<size_t>(i)];
    NV_Ith_S(id_, i) = differential[static_cast<size_t>(i)] ? 1.0 : 0.0;
  }
  mem_ = IDACreate(ctx_);
  check_alloc(mem_, "IDAS memory");
  check_ida(IDASetErrHandlerFn(mem_, forward_message, nullptr), "IDASetErrHandlerFn");
  check_ida(IDAInit(mem_, cb.residual, options.t0, y_, yp_), "IDAInit");
  check_ida(IDASetUserData(mem_, user_data), "IDASetUserData");
  check_ida(IDASVtolerances(mem_, options.rtol, atol_), "IDASVtolerances");
  check_ida(IDASetId(mem_, id_), "IDASetId");
  if (suppress_algebraic) check_ida(IDASetSuppressAlg(mem_, SUNTRUE), "IDASetSuppressAlg");
  check_ida(IDASetMaxNumSteps(mem_, options.max_steps), "IDASetMaxNumSteps");
  max_steps_ = options.max_steps;
  check_ida(IDASetStopTime(mem_, options.tf), "IDASetStopTime");
  if (sparse_) {
    A_ = SUNSparseMatrix(n, n, sparse_nonzeros, CSC_MAT, ctx_);
    check_alloc(A_, "the sparse Jacobian matrix");
    LS_ = make_klu_newton_solver(ctx_);
    check_alloc(LS_, "the KLU linear solver");
  } else {
    A_ = compiled_dense_matrix(n, ctx_);
    check_alloc(A_, "the Jacobian matrix");
    LS_ = compiled_dense_solver(y_, A_, ctx_);
    check_alloc(LS_, "the dense linear solver");
  }
  check_ida(IDASetLinearSolver(mem_, LS_, A_), "IDASetLinearSolver");
  if (cb.jacobian) check_ida(IDASetJacFn(mem_, cb.jacobian), "IDASetJacFn");
  // The recording starts with the first step (advance): IDAS's IDAAdjFree crashes on a
  // recording that IDASolveF never ran (a run stopped by an error before its first step).
  checkpoint_steps_ = checkpoint_steps;
  recording_ = checkpoint_steps > 0;

  const double cost_atol = options.cost_atol < 0.0 ? options.atol : options.cost_atol;
  if (nq > 0) {
    q_ = N_VNew_Serial(nq, ctx_);
    check_alloc(q_, "the quadrature vector");
    use_compiled_vector_kernels(q_);
    N_VConst(0.0, q_);
    check_ida(IDAQuadInit(mem_, cb.quadrature, q_), "IDAQuadInit");
    if (atol_quadrature.empty()) {
      check_ida(IDAQuadSStolerances(mem_, options.rtol, cost_atol), "IDAQuadSStolerances");
    } else {
      check_ida(pass_as_vector(q_, atol_quadrature,
                               [&](N_Vector qatol) { return IDAQuadSVtolerances(mem_, options.rtol, qatol); }),
                "IDAQuadSVtolerances");
    }
    check_ida(IDASetQuadErrCon(mem_, options.cost_error_control ? SUNTRUE : SUNFALSE), "IDASetQuadErrCon");
  }
  if (ns > 0) {
    yS_ = zero_vectors(ns, y_, "the sensitivity vectors");
    ypS_ = zero_vectors(ns, y_, "the sensitivity derivative vectors");
    ism_ = options.corrector == SensitivityCorrector::Staggered ? IDA_STAGGERED : IDA_SIMULTANEOUS;
    check_ida(IDASensInit(mem_, ns, ism_, cb.sensitivity, yS_, ypS_), "IDASensInit");
    pbar_ = parameter_scales;
    check_ida(IDASetSensParams(mem_, nullptr, pbar_.data(), nullptr), "IDASetSensParams");
    check_ida(IDASensEEtolerances(mem_), "IDASensEEtolerances");
    check_ida(IDASetSensErrCon(mem_, options.sensitivity_error_control ? SUNTRUE : SUNFALSE),
              "IDASetSensErrCon");
    // A new Newton matrix whenever c_j changes: IDAS otherwise keeps it while c_j stays within
    // 25 % and scales the correction by 2 / (1 + c_j / c_j,old), which the sensitivities'
    // corrector can fail to converge with (a residual whose rate coefficient reads an algebraic
    // state, (1 + z^2) y' + ... = 0, took 123,246 steps at order 1 instead of 566). With a matrix
    // that is always current, the forward runs of every DAE example take 15-35 % fewer steps and
    // less time (docs/benchmarks.md, "The sensitivities' Newton matrix at every c_j").
    check_ida(IDASetDeltaCjLSetup(mem_, 0.0), "IDASetDeltaCjLSetup");
    if (nq > 0) {
      qS_ = zero_vectors(ns, q_, "the quadrature sensitivity vectors");
      check_ida(IDAQuadSensInit(mem_, cb.quadrature_sensitivity, qS_), "IDAQuadSensInit");
      check_ida(IDAQuadSensEEtolerances(mem_), "IDAQuadSensEEtolerances");
      check_ida(IDASetQuadSensErrCon(mem_, options.cost_error_control ? SUNTRUE : SUNFALSE),
                "IDASetQuadSensErrCon");
    }
  }
}

IdasSession::~IdasSession() {
  if (LSB_) SUNLinSolFree(LSB_);
  if (AB_) SUNMatDestroy(AB_);
  if (qB_) N_VDestroy(qB_);
  if (ypB_) N_VDestroy(ypB_);
  if (yB_) N_VDestroy(yB_);
  if (qS_) N_VDestroyVectorArray(qS_, ns_);
  if (ypS_) N_VDestroyVectorArray(ypS_, ns_);
  if (yS_) N_VDestroyVectorArray(yS_, ns_);
  if (mem_) IDAFree(&mem_);
  if (interpolated_) N_VDestroy(interpolated_);  // the header only: N_VMake_Serial owns no data
  if (LS_) SUNLinSolFree(LS_);
  if (A_) SUNMatDestroy(A_);
  if (q_) N_VDestroy(q_);
  if (id_) N_VDestroy(id_);
  if (atol_) N_VDestroy(atol_);
  if (yp_) N_VDestroy(yp_);
  if (y_) N_VDestroy(y_);
  if (ctx_) SUNContext_Free(&ctx_);
}

void IdasSession::start(double t) {
  check_ida(IDAReInit(mem_, t, y_, yp_), "IDAReInit");
  stretches_.start(t);
  check_ida(IDASetStopTime(mem_, tf_), "IDASetStopTime");
  if (nq_ > 0) check_ida(IDAQuadReInit(mem_, q_), "IDAQuadReInit");
  if (ns_ > 0) {
    check_ida(IDASensReInit(mem_, ism_, yS_, ypS_), "IDASensReInit");
    if (nq_ > 0) check_ida(IDAQuadSensReInit(mem_, qS_), "IDAQuadSensReInit");
  }
}

void IdasSession::set_initial_step(double h) { check_ida(IDASetInitStep(mem_, h), "IDASetInitStep"); }

double IdasSession::last_step() const {
  sunrealtype h = 0.0;
  check_ida(IDAGetLastStep(mem_, &h), "IDAGetLastStep");
  return h;
}

void IdasSession::set_roots(const std::vector<int>& directions) {
  const int nr = static_cast<int>(directions.size());
  n_roots_ = nr;
  check_ida(IDARootInit(mem_, nr, nr > 0 ? roots_fn_ : nullptr), "IDARootInit");
  if (nr > 0) {
    std::vector<int> dirs = directions;
    check_ida(IDASetRootDirection(mem_, dirs.data()), "IDASetRootDirection");
    // Guards at zero right after a restart are masked until they move away: expected.
    check_ida(IDASetNoInactiveRootWarn(mem_), "IDASetNoInactiveRootWarn");
  }
}

void IdasSession::set_state_atol(const std::vector<double>& atol, double rtol) {
  for (size_t i = 0; i < atol.size(); ++i) NV_Ith_S(atol_, static_cast<sunindextype>(i)) = atol[i];
  check_ida(IDASVtolerances(mem_, rtol, atol_), "IDASVtolerances");
}

void IdasSession::set_sensitivity_atol(const std::vector<double>& atol, double rtol) {
  if (ns_ == 0) return;  // no parameter to differentiate: no sensitivities, nothing to set
  N_Vector* atol_s = N_VCloneVectorArray(ns_, y_);
  check_alloc(atol_s, "the sensitivity tolerances");
  for (int k = 0; k < ns_; ++k) {
    for (size_t i = 0; i < atol.size(); ++i) {
      NV_Ith_S(atol_s[k], static_cast<sunindextype>(i)) = atol[i] / std::abs(pbar_[static_cast<size_t>(k)]);
    }
  }
  const int flag = IDASensSVtolerances(mem_, rtol, atol_s);
  N_VDestroyVectorArray(atol_s, ns_);
  check_ida(flag, "IDASensSVtolerances");
}

int IdasSession::advance(double tout, double& t) {
  if (!recording_) return IDASolve(mem_, tout, &t, y_, yp_, IDA_NORMAL);
  if (!adjoint_initialized_) {
    // Hermite interpolation between stored steps; the segment contains no event, so the data
    // are smooth.
    check_ida(IDAAdjInit(mem_, checkpoint_steps_, IDA_HERMITE), "IDAAdjInit");
    adjoint_initialized_ = true;
  }
  // One step per IDASolveF call (the step limit 1; the steps are those of one long call), each
  // step's end noted for the backward pass (stretches_); Options::max_steps still counts the
  // steps towards tout.
  check_ida(IDASetMaxNumSteps(mem_, 1), "IDASetMaxNumSteps");
  int ncheck = 0;
  int flag = IDA_TOO_MUCH_WORK;
  for (long taken = 0; flag == IDA_TOO_MUCH_WORK && taken < max_steps_; ++taken) {
    flag = IDASolveF(mem_, tout, &t, y_, yp_, IDA_NORMAL, &ncheck);
    note_step_end();
  }
  checkpoints_ = ncheck;
  return flag;
}

void IdasSession::note_step_end() {
  sunrealtype tn = 0.0;
  check_ida(IDAGetCurrentTime(mem_, &tn), "IDAGetCurrentTime");
  stretches_.add_step_end(tn);
}

void IdasSession::start_backward(int nB, int nqB, const IdasBackwardSettings& settings, double tB0,
                                 const Eigen::VectorXd& yB0, const Eigen::VectorXd& ypB0) {
  if (yB_) throw std::logic_error("IdasSession::start_backward: one backward problem per session");
  check_ida(IDACreateB(mem_, &which_), "IDACreateB");
  yB_ = N_VNew_Serial(nB, ctx_);
  check_alloc(yB_, "the adjoint vector");
  use_compiled_vector_kernels(yB_);
  ypB_ = N_VClone(yB_);
  check_alloc(ypB_, "the adjoint derivative vector");
  view(yB_) = yB0;
  view(ypB_) = ypB0;
  check_ida(IDAInitB(mem_, which_, settings.residual, tB0, yB_, ypB_), "IDAInitB");
  backward_time_ = tB0;
  check_ida(IDASetUserDataB(mem_, which_, settings.user_data), "IDASetUserDataB");
  check_ida(pass_as_vector(yB_, settings.state_atol,
                           [&](N_Vector atol) { return IDASVtolerancesB(mem_, which_, settings.rtol, atol); }),
            "IDASVtolerancesB");
  check_ida(IDASetMaxNumStepsB(mem_, which_, settings.max_steps), "IDASetMaxNumStepsB");
  if (!settings.differential.empty()) {
    check_ida(pass_as_vector(yB_, settings.differential, [&](N_Vector id) { return IDASetIdB(mem_, which_, id); }),
              "IDASetIdB");
    check_ida(IDASetSuppressAlgB(mem_, which_, SUNTRUE), "IDASetSuppressAlgB");
  }
  krylov_backward_ = settings.jacobian_times != nullptr;
  if (krylov_backward_) {
    LSB_ = SUNLinSol_SPGMR(yB_, SUN_PREC_NONE, kBackwardKrylovDimension, ctx_);
    check_alloc(LSB_, "the adjoint linear solver");
    check_ida(IDASetLinearSolverB(mem_, which_, LSB_, nullptr), "IDASetLinearSolverB");
    check_ida(IDASetJacTimesB(mem_, which_, nullptr, settings.jacobian_times), "IDASetJacTimesB");
  } else {
    AB_ = compiled_dense_matrix(nB, ctx_);
    check_alloc(AB_, "the adjoint Jacobian");
    LSB_ = settings.blocks > 1 ? block_dense_solver(nB, settings.block, settings.blocks, ctx_)
                               : compiled_dense_solver(yB_, AB_, ctx_);
    check_alloc(LSB_, "the adjoint linear solver");
    check_ida(IDASetLinearSolverB(mem_, which_, LSB_, AB_), "IDASetLinearSolverB");
    if (settings.jacobian) check_ida(IDASetJacFnB(mem_, which_, settings.jacobian), "IDASetJacFnB");
  }
  if (nqB > 0) {
    qB_ = N_VNew_Serial(nqB, ctx_);
    check_alloc(qB_, "the adjoint quadratures");
    use_compiled_vector_kernels(qB_);
    N_VConst(0.0, qB_);
    check_ida(IDAQuadInitB(mem_, which_, settings.quadrature, qB_), "IDAQuadInitB");
    check_ida(pass_as_vector(qB_, settings.quadrature_atol,
                             [&](N_Vector qatol) { return IDAQuadSVtolerancesB(mem_, which_, settings.rtol, qatol); }),
              "IDAQuadSVtolerancesB");
    check_ida(IDASetQuadErrConB(mem_, which_, settings.quadrature_error_control ? SUNTRUE : SUNFALSE),
              "IDASetQuadErrConB");
  }
}

int IdasSession::integrate_backward(double t_out, Eigen::VectorXd& yB, Eigen::VectorXd& qB) {
  const int flag = integrate_in_stretches(
      stretches_.backward(backward_time_, t_out),
      [&](double h) { check_ida(IDASetMaxStepB(mem_, which_, h), "IDASetMaxStepB"); },
      [&](double until) { return IDASolveB(mem_, until, IDA_NORMAL); });
  if (flag < 0) return flag;
  backward_time_ = t_out;
  double t = 0.0;
  check_ida(IDAGetB(mem_, which_, &t, yB_, ypB_), "IDAGetB");
  yB = view(yB_);
  if (qB_) {
    check_ida(IDAGetQuadB(mem_, which_, &t, qB_), "IDAGetQuadB");
    qB = view(qB_);
  } else {
    qB.resize(0);
  }
  return flag;
}

bool IdasSession::backward_stop(double& t, Eigen::VectorXd& x) {
  void* memB = IDAGetAdjIDABmem(mem_, which_);
  if (memB == nullptr || IDAGetCurrentTime(memB, &t) != IDA_SUCCESS) return false;
  N_Vector y = N_VClone(y_), yp = N_VClone(y_);
  const bool found = y != nullptr && yp != nullptr && IDAGetAdjY(mem_, t, y, yp) == IDA_SUCCESS;
  if (found) x = view(y);
  if (y != nullptr) N_VDestroy(y);
  if (yp != nullptr) N_VDestroy(yp);
  return found;
}

void IdasSession::add_backward_stats(SolverStats& s) const {
  void* mem = IDAGetAdjIDABmem(mem_, which_);
  if (!mem) return;
  s.integrator = "IDAS";
  long v = 0;
  if (IDAGetNumSteps(mem, &v) == IDA_SUCCESS) s.steps += v;
  if (IDAGetNumResEvals(mem, &v) == IDA_SUCCESS) s.rhs_evals += v;
  if (IDAGetNumJacEvals(mem, &v) == IDA_SUCCESS) s.jacobian_evals += v;
  if (IDAGetNumErrTestFails(mem, &v) == IDA_SUCCESS) s.error_test_failures += v;
  if (IDAGetNumNonlinSolvIters(mem, &v) == IDA_SUCCESS) s.nonlinear_iterations += v;
  if (IDAGetNumNonlinSolvConvFails(mem, &v) == IDA_SUCCESS) s.nonlinear_failures += v;
  if (krylov_backward_) {
    s.linear_solver = "GMRES (matrix-free)";
    if (IDAGetNumLinIters(mem, &v) == IDA_SUCCESS) s.linear_iterations += v;
  }
  s.segments += 1;
}

bool IdasSession::interpolate(double t, int k, Eigen::VectorXd& out) {
  const auto n = static_cast<Eigen::Index>(N_VGetLength(y_));
  if (out.size() != n) out.resize(n);  // once per caller's vector
  if (!interpolated_) {
    interpolated_ = N_VMake_Serial(n, out.data(), ctx_);
    if (!interpolated_) return false;
    use_compiled_vector_kernels(interpolated_);
  }
  // Outside the last step IDAGetDky would report IDA_BAD_T through the error handler.
  long steps = 0;
  double tn = 0.0, hu = 0.0;
  if (IDAGetNumSteps(mem_, &steps) != IDA_SUCCESS || steps == 0) return false;
  if (IDAGetCurrentTime(mem_, &tn) != IDA_SUCCESS || IDAGetLastStep(mem_, &hu) != IDA_SUCCESS) return false;
  const double fuzz = 100.0 * std::numeric_limits<double>::epsilon() * (std::abs(tn) + std::abs(hu));
  if (!(t >= tn - hu - fuzz && t <= tn + fuzz)) return false;
  N_VSetArrayPointer(out.data(), interpolated_);
  return IDAGetDky(mem_, t, k, interpolated_) == IDA_SUCCESS;
}

bool IdasSession::interpolate_head(double t, Eigen::Index n, Eigen::VectorXd& x, Eigen::VectorXd& xdot) {
  if (!interpolate(t, 0, interpolated_y_) || !interpolate(t, 1, interpolated_yp_)) return false;
  x = interpolated_y_.head(n);
  xdot = interpolated_yp_.head(n);
  return true;
}

std::vector<int> IdasSession::root_info() {
  std::vector<int> info(static_cast<size_t>(n_roots_), 0);
  if (n_roots_ > 0) check_ida(IDAGetRootInfo(mem_, info.data()), "IDAGetRootInfo");
  return info;
}

void IdasSession::load_sensitivities(double t) {
  if (ns_ == 0) return;
  check_ida(IDAGetSensDky(mem_, t, 0, yS_), "IDAGetSensDky");
}

void IdasSession::load_quadratures(double t) { check_ida(IDAGetQuadDky(mem_, t, 0, q_), "IDAGetQuadDky"); }

void IdasSession::load_quadrature_sensitivities(double t) {
  if (ns_ == 0 || nq_ == 0) return;
  check_ida(IDAGetQuadSensDky(mem_, t, 0, qS_), "IDAGetQuadSensDky");
}

long IdasSession::steps() const {
  long n = 0;
  check_ida(IDAGetNumSteps(mem_, &n), "IDAGetNumSteps");
  return n;
}

void IdasSession::add_stats(SolverStats& s) const {
  s.integrator = "IDAS";
  if (sparse_) s.linear_solver = "KLU (sparse Newton matrix)";
  long v = 0;
  check_ida(IDAGetNumSteps(mem_, &v), "IDAGetNumSteps");
  s.steps += v;
  check_ida(IDAGetNumResEvals(mem_, &v), "IDAGetNumResEvals");
  s.rhs_evals += v;
  check_ida(IDAGetNumJacEvals(mem_, &v), "IDAGetNumJacEvals");
  s.jacobian_evals += v;
  check_ida(IDAGetNumGEvals(mem_, &v), "IDAGetNumGEvals");
  s.root_evals += v;
  check_ida(IDAGetNumErrTestFails(mem_, &v), "IDAGetNumErrTestFails");
  s.error_test_failures += v;
  check_ida(IDAGetNumNonlinSolvIters(mem_, &v), "IDAGetNumNonlinSolvIters");
  s.nonlinear_iterations += v;
  check_ida(IDAGetNumNonlinSolvConvFails(mem_, &v), "IDAGetNumNonlinSolvConvFails");
  s.nonlinear_failures += v;
  if (ns_ > 0) {
    check_ida(IDAGetSensNumResEvals(mem_, &v), "IDAGetSensNumResEvals");
    s.sensitivity_rhs_evals += v;
  }
  s.segments += 1;
}

}  // namespace saltus::detail
