#pragma once
// One run of a hybrid ODE by a Runge-Kutta pair with error control (Options::integrator dopri5,
// explicit, sdirk, diagonally implicit, or rosenbrock, linearly implicit), written so that its steps can be differentiated exactly: simulation, the discrete
// tangent-linear model (forward sensitivities of the computed numbers), or the forward pass of
// the discrete adjoint (discrete_adjoint.hpp), which keeps the step log.
//
// The computed trajectory is a chain of step maps x_{n+1} = Phi(t_n, h_n, x_n, p) in the mode of
// the step, with t_{n+1} = t_n + h_n. Differentiated, the step sizes are frozen as the controller
// chose them except where a condition fixes them (docs/discrete-sensitivities.md):
//   - a step cut at an event: h solves r(t_n + h, Phi(t_n, h, x_n, p), p) = 0 (its root is
//     located on the step map itself, so the event state is a step end), and so
//     dh = -(r_t dt_e' + r_x dx' + r_p dp) / (r_t + r_x Phi_h), with the primes the step's
//     tangent at fixed h;
//   - the last step: h = t_f - t_n, so dh = -dt_n;
//   - every other step: dh = 0.
// Times after an event move with it (dt_n = dt_e). Events then map x- to x+ by their jumps at the
// event time; the point costs add c(t_e, x-, p). The running costs are integrated by the same
// stages (stages.hpp). Outputs between step ends come from the pair's continuous
// extension, and their sensitivities from its tangent.
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/solution.hpp>

#include <optional>
#include <vector>

#include "../run_book.hpp"
#include "../run_support.hpp"
#include "../guard_rate.hpp"
#include "../segment_driver.hpp"
#include "stages.hpp"
#include "tableau.hpp"

namespace saltus::detail {

/// How the size of a step is fixed when the computation is differentiated.
enum class StepKind {
  Frozen,    ///< as the controller chose it
  Final,     ///< t_f - t_n
  EventCut,  ///< the root of the guard of `root_event` on the step map
};

/// One step of a discrete run, as its differentiation needs it.
struct DiscreteStep {
  double t = 0.0;  ///< t_n [s]
  double h = 0.0;  ///< h_n [s]
  int mode = 0;
  StepKind kind = StepKind::Frozen;
  int root_event = -1;  ///< EventCut: the event whose guard fixes h
  /// EventCut: the entries of Solution::events applied at t_n + h, [events_begin, events_end).
  size_t events_begin = 0, events_end = 0;
};

/// The steps of a run and, for adjoint recordings, the states x_n at the starts of every
/// `stride`-th step (the others empty): the stride doubles whenever the states stored plus one
/// block of `stride` recomputed ones would exceed Options::adjoint_memory_budget.
struct StepLog {
  std::vector<DiscreteStep> steps;
  std::vector<Eigen::VectorXd> states;
  size_t stride = 1;
  long stored = 0;  ///< states held
  /// Stores x_n for the step just logged, thinning to keep within `budget` bytes.
  void store(const Eigen::VectorXd& x, long budget);
  /// Bytes of one stored state, with its step's record.
  static long state_bytes(long n_x);
};

/// Whether event k (or the resting variant applied in its place) is the one whose guard cut
/// `step` (its time is the step's end), whichever order the events at that instant are applied in.
bool event_cut_the_step(const Problem& problem, const DiscreteStep& step, int k);

class DiscreteRun : private SegmentIntegrator {
 public:
  DiscreteRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options, RunKind kind);
  /// x0, the initial mode and the start off the guards (as HybridRun::check_start).
  void check_start();
  Solution run();
  /// The steps taken (after run()); with states for an AdjointRecording run.
  const StepLog& log() const { return log_; }
  const RungeKuttaTableau& tableau() const { return tab_; }

 private:
  // The segment loop's steps (segment_driver.hpp).
  void begin_segment(double t) override;
  Reached advance(double tout, double& t) override;
  void record_output(double t, bool integrated) override;
  bool apply_roots(double t) override;
  void finish(double t) override;
  /// After a last step that ended at an event at t_f: S and the cost integrals' tangents at t_f
  /// held fixed (see the definition).
  void hold_final_time(double t);

  /// Takes one accepted step from (t_, x_), cut at the first event in it. Returns whether an
  /// event cut it.
  bool take_step();
  /// The first step size of a segment (Hairer and Wanner's starting step).
  double initial_step();
  /// Evaluates the stages of the step h from (t_, x_) into cur_ (all stages, or the map's
  /// only) and its end into x_next_, q_increment_. False if a slope or cost is not finite or
  /// an implicit stage is not solved (the step must shrink).
  bool try_step(double h, bool all_stages);
  /// Factors the Newton matrix I - h a_ii J(t_, x_) of implicit stages for step h.
  void prepare_newton(double h);
  /// The weighted RMS norm of the embedded error estimate of cur_ for step h.
  double error_norm(double h);
  /// The step size at which the watched guard i crosses zero inside (0, h_crossed].
  double locate_root(size_t i, double h_crossed);
  /// Whether guard i crossed in its enabled direction from sign `start` to `value`.
  bool crossed(size_t i, double value) const;
  /// Whether guard i, not crossed at the step's end (value g at t, x), reaches zero there: within
  /// its time resolution of zero, coming from its start's side and moving on across. Two events
  /// at one instant (a state event at a time event's time) fire together.
  bool reaches_zero(size_t i, double g, double t, In<double> x);
  /// Makes the step h of cur_ the run's: its tangent (forward runs), its log entry, the new state.
  void commit(double h, StepKind kind, int root_event);
  void tangent_step(double h, StepKind kind, int root_event);
  /// stage_tangents of a Rosenbrock step: the step evaluated in Dual numbers.
  void rosenbrock_tangents(double h, double dt, double dh, In<double> dx, In<double> dp, Eigen::MatrixXd& dK,
                           Eigen::MatrixXd& dG, Eigen::VectorXd& dx_next, Eigen::VectorXd& dq);
  /// LU factors of I - h a_ii f_x(T_i, Y_i) at the implicit stages of cur_ (their tangents and
  /// transposes solve with the exact Jacobian at the solved stage).
  void factor_stage_jacobians(double h);
  /// The tangent of the step h of cur_ from (dt, dx, dp) with step change dh: writes the stage
  /// slopes' tangents (map stages) and the ends' tangents.
  void stage_tangents(double h, double dt, double dh, In<double> dx, In<double> dp, Eigen::MatrixXd& dK,
                      Eigen::MatrixXd& dG, Eigen::VectorXd& dx_next, Eigen::VectorXd& dq);
  /// The state (and costs) at t inside the last committed step, by the continuous extension.
  void interpolate(double t, Eigen::VectorXd& x, Eigen::VectorXd& q, Eigen::MatrixXd* S);
  /// The same by the cubic Hermite interpolant of x, q and their rates at the step's ends.
  void interpolate_hermite(double t, Eigen::VectorXd& x, Eigen::VectorXd& q, Eigen::MatrixXd* S);
  void apply_event(int k, double t, const std::optional<Accumulation>& rest);
  /// Whether watched guard i, exactly at zero at t after another event's jump there, moves into
  /// its crossing (its direction's way; not a time event, nor one that may start on its guard).
  bool lands_into_crossing(size_t i, double t, const GuardRate& rate) const;
  /// event_cut_the_step for the last step.
  bool cut_the_step(int k) const;
  /// S at the fixed output time t where the last step ended at an event: S - f dt_.
  Eigen::MatrixXd fixed_time_sensitivity(double t);
  /// Adds to an event's transfer the shift of its own time from the step's end (a second event
  /// at one instant, an event at t_f): see the definition.
  void add_own_time_shift(const EventValues& v, SensitivityTransfer& transfer);
  [[noreturn]] void fail_step(const char* reason, double h);

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  RunKind kind_;
  bool sens_;
  const RungeKuttaTableau& tab_;
  int nx_, np_, nc_;
  bool has_running_cost_ = false;
  RunBook book_;
  StepLog log_;
  std::vector<double> atol_;

  // The run's state at the end of the last committed step: t_, x_ (the cost integrals are
  // book_.cost_integral()), mode_, and with sensitivities dx/dp (S_), dt_n/dp (dt_) and the
  // integrals' (book_.cost_integral_sensitivity()).
  double t_ = 0.0;
  int mode_ = 0;
  Eigen::VectorXd x_;
  Eigen::MatrixXd S_;
  Eigen::RowVectorXd dt_;
  Eigen::MatrixXd identity_p_;
  TangentWorkspace ws_;

  // The step being tried and the last one committed (for dense output).
  StageValues<double> cur_, prev_;
  bool first_stage_ready_ = false;  // cur_ holds K_1 = f(t_, x_) (FSAL or a rejected try)
  // Implicit stages: J = f_x(t_, x_) (valid while the step start stays), the Newton matrix.
  bool jacobian_ready_ = false;
  Eigen::MatrixXd jacobian_;
  double newton_h_ = 0.0;
  StageNewton newton_;
  std::vector<Eigen::PartialPivLU<Eigen::MatrixXd>> stage_lu_;
  Eigen::VectorXd zero_x_, zero_p_, error_;
  // Scratch of the tangent-linear step (sized once, reused every step).
  struct TangentScratch {
    Eigen::VectorXd dY, dx_next, dq, dx_h, dq_h;
    Eigen::MatrixXd fx, dK_h, dG_h, S_next, dq_total;
  } tangent_;
  // Scratch of a Rosenbrock step's tangent (sized once, reused every step).
  struct RosenbrockTangent {
    StageValues<Dual> st;
    VectorX<Dual> x, p, x_next, q;
  } rosenbrock_;
  Eigen::VectorXd x_next_, q_increment_;
  double h_next_ = 0.0;
  long steps_since_output_ = 0;
  struct CommittedStep {
    double t = 0.0, h = 0.0;
    Eigen::VectorXd x, q;  // at its start
    Eigen::MatrixXd S, dq;  // sensitivities at its start
    Eigen::RowVectorXd dt, dh;
    std::vector<Eigen::MatrixXd> dK, dG;  // per parameter: the stage slopes' tangents
    bool last_stage_tangent = false;       // dK[j].col(s-1) holds the last stage's tangent
  } last_;
  bool have_last_ = false;

  // Guards of the current segment: watched events, the sign each starts the step from.
  WatchedEvents watched_;
  std::vector<double> guard_start_;
  std::vector<double> guard_values_;
  std::vector<int> fired_;
  bool pending_roots_ = false;

  // Counters.
  long rhs_evals_ = 0, guard_evals_ = 0, rejected_ = 0, jacobian_evals_ = 0;
  std::string model_error_;
};

}  // namespace saltus::detail
