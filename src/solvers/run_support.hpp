#pragma once
// Bookkeeping shared by the real and the complex hybrid runs: the output grid, the watched
// guards of a mode, the Zeno guard, and the absolute-tolerance vector.
#include <saltus/core/error.hpp>
#include <saltus/core/interrupt.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>

#include <cmath>
#include <deque>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace saltus {
struct EventValues;
}  // namespace saltus

namespace saltus::detail {

/// Runs the body of a CVODES callback. Exceptions must not cross CVODES' C frames: one thrown
/// by a model function (e.g. a singular mass matrix) is kept as `error`, reported when the
/// integration stops, and the callback returns CVODES' unrecoverable flag -1.
template <class Body>
int guarded_callback(std::string& error, Body&& body) noexcept {
  // A requested stop ends the integration at its next step; the caller's failure path turns
  // the unrecoverable flag into saltus::Interrupted.
  if (interrupt_requested()) return -1;
  try {
    return body();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "a model function threw an unknown exception";
  }
  return -1;
}

/// The number of model errors and non-finite values that a run's right-hand sides report to the
/// integrator as recoverable within one advance (to the next output or root; recoverable_callback),
/// or a backward pass between two stops (backward_stops), before they end the run.
inline constexpr int kRecoverableFailures = 50;

/// Keeps `message` as `error` and returns a callback's flag for a failed evaluation:
/// recoverable (1) up to kRecoverableFailures times (`failures` counts them), then fatal (-1): a
/// model that keeps failing would otherwise make the integrator creep towards the bad point.
inline int recoverable_failure(std::string& error, int& failures, std::string message) {
  error = std::move(message);
  return ++failures > kRecoverableFailures ? -1 : 1;
}

/// Runs the body of a right-hand-side callback (of the state, its sensitivities or the cost
/// quadratures) as guarded_callback, with a ModelError recoverable: a trial state the
/// integrator only tried may lie outside the model's domain (a Maggi position analysis that does
/// not converge there: a spinning wheel's Euler parameter in the independent set predicted past
/// its turning point 1), and the integrator then retries with a shorter step, as for a value that
/// is not finite. The message is kept as `error`; `failures` counts them, and after
/// kRecoverableFailures the callback fails for good (the run resets the count after each
/// advance of the integrator).
template <class Body>
int recoverable_callback(std::string& error, int& failures, Body&& body) noexcept {
  return guarded_callback(error, [&]() -> int {
    try {
      return body();
    } catch (const ModelError& e) {
      return recoverable_failure(error, failures, e.what());
    }
  });
}

/// "the adjoint <what> of mode '<mode>' is not finite at t = <t>": a backward callback's value.
std::string nonfinite_adjoint_message(const std::string& mode, const char* what, double t);

/// Runs the body of a backward (adjoint) callback, which returns 0, or 1 where its output (`what`,
/// in mode `mode`, at t) is not finite. Exceptions must not cross the integrator's C frames. A
/// ModelError is recoverable as a value that is not finite is: the backward pass reads the
/// forward solution between its points, which may leave the model's domain where the recorded
/// states did not (a Maggi independent set near a turning point). Both are kept as `error` and
/// counted in `failures`, up to kRecoverableFailures (recoverable_failure). Any other exception
/// (the first is kept in `exception`) and a requested stop fail for good.
template <class Body>
int backward_callback(std::string& error, int& failures, std::exception_ptr& exception, const std::string& mode,
                      const char* what, double t, Body&& body) noexcept {
  if (interrupt_requested()) return -1;
  try {
    const int flag = body();
    if (flag <= 0) return flag;
    return recoverable_failure(error, failures, nonfinite_adjoint_message(mode, what, t));
  } catch (const ModelError& e) {
    try {
      return recoverable_failure(error, failures, e.what());
    } catch (...) {
      if (!exception) exception = std::current_exception();
    }
  } catch (...) {
    if (!exception) exception = std::current_exception();
  }
  return -1;
}

/// Whether an integrator's failure is one of its own limits, which no failed evaluation causes:
/// the step limit, an accuracy beyond reach, repeated error-test failures. CVODES's
/// CV_TOO_MUCH_WORK, CV_TOO_MUCH_ACC, CV_ERR_FAILURE and IDAS's IDA_TOO_MUCH_WORK,
/// IDA_TOO_MUCH_ACC, IDA_ERR_FAIL are -1, -2 and -3 in both (a failed evaluation shows as a
/// convergence failure or a callback's own flag).
inline bool integrator_limit(int flag) { return flag == -1 || flag == -2 || flag == -3; }

/// The model error kept from this advance or backward stretch (`model_error`, empty if none) when the integrator
/// then failed with `flag` (`flag_name`, `context`: where): thrown as the cause, unless the
/// failure is one of the integrator's own limits. An evaluation the integrator recovered from
/// (a trial state outside the model's domain, a shorter step taken) did not cause those: then
/// the returned note says that it happened, for the integrator's own message.
inline std::string blame_model_error(const std::string& model_error, int flag, const std::string& flag_name,
                                     const std::string& context) {
  if (model_error.empty()) return {};
  if (!integrator_limit(flag)) throw ModelError(model_error + " (" + flag_name + " " + context + ")");
  return "; earlier in this stretch the model failed at a trial state and the step was shortened: " + model_error;
}

/// What a real run computes.
enum class RunKind {
  Simulation,          ///< states, events, costs
  ForwardSensitivity,  ///< plus S = dx/dp through every event
  AdjointRecording,    ///< plus one integrator session with check points per segment
};

/// Reports progress (Options::on_progress) if someone listens.
inline void report_progress(const Options& options, const char* phase, double t, long events) {
  if (options.on_progress) options.on_progress(RunProgress{phase, t, options.t0, options.tf, events});
}

/// The name of a run of that kind in progress reports.
inline const char* phase_name(RunKind kind) {
  switch (kind) {
    case RunKind::Simulation: return "simulation";
    case RunKind::ForwardSensitivity: return "forward";
    case RunKind::AdjointRecording: return "adjoint forward";
  }
  return "";
}

/// Whether a run of `problem` integrates on IDAS (Options::integrator; Automatic: when the
/// problem has residual modes). Throws InputError if CVODES is asked for a residual problem.
bool integrates_on_idas(const Problem& problem, const Options& options);
/// As integrates_on_idas, for a run about to start: also throws InputError when an IDAS run is
/// asked for the fixed-point corrector (NonlinearSolver::FixedPoint, CVODES only).
bool runs_on_idas(const Problem& problem, const Options& options);

/// Whether runs of `problem` are discrete Runge-Kutta runs (Options::integrator Dopri5). Throws
/// InputError if the problem is a DAE.
bool runs_discrete(const Problem& problem, const Options& options);

/// The adjoint's tolerances from Options (adjoint_rtol, adjoint_atol, adjoint_quadrature_atol
/// with their fallbacks): the gradient quadratures' absolute tolerances per cost and parameter
/// (n_c x n_p, cost-major), each divided by the parameter's scale.
struct AdjointTolerances {
  double rtol = 0.0;
  std::vector<double> cost_atol;  ///< per cost: the absolute tolerance of its adjoint lambda_c
  std::vector<double> quadrature_atol;
  /// cost_atol repeated over each cost's `block` adjoint states (cost-major, as the backward
  /// problems hold them).
  std::vector<double> per_state(int block) const;
};
/// The backward tolerances; `costs` are the forward pass's psi (Options::adjoint_atol_from_costs).
AdjointTolerances adjoint_tolerances(const Options& options, const Eigen::VectorXd& p, const Eigen::VectorXd& costs);

/// Output times: options.output_times (tf appended if missing) or n_outputs uniform points.
std::vector<double> output_grid(const Options& options);
/// Where a backward pass over [t_start, t_end] stops on its way down: the output times strictly
/// inside, descending, then t_start. Between two stops its recoverable failures are counted as a
/// forward run's are between two outputs (kRecoverableFailures); the stops change no step.
std::vector<double> backward_stops(const std::vector<double>& outputs, double t_start, double t_end);

/// Runs a backward pass over [t_start, t_end] stop by stop (backward_stops): `error` and
/// `failures` start afresh at each, and `integrate(stop)`, a SUNDIALS flag, runs until the first
/// negative flag or a kept `exception`. Returns the last flag.
template <class Integrate>
int integrate_backward_by_stops(const std::vector<double>& outputs, double t_start, double t_end, std::string& error,
                                int& failures, const std::exception_ptr& exception, Integrate&& integrate) {
  int flag = 0;
  for (const double stop : backward_stops(outputs, t_start, t_end)) {
    error.clear();  // a failure recovered from before this stop names none of its failures
    failures = 0;
    flag = integrate(stop);
    if (flag < 0 || exception) break;
  }
  return flag;
}

/// Events watched in `mode`, in declaration order, and their CVODES direction flags.
struct WatchedEvents {
  std::vector<int> events;
  std::vector<int> directions;
  /// Per watched event: the band |r| <= |held[i]| in which its guard is held off zero, at the
  /// value held[i] (its sign the non-firing side; hold_guards_near_zero, guard_rate.hpp), or 0.
  std::vector<double> held;
  /// Per watched event: the value its guard fires at in this segment, 0 or the start value of a
  /// guard that begins the segment within its band on its firing side (hold_guards_near_zero):
  /// evaluate_guards reports r - level[i].
  std::vector<double> level;
  /// The level of `event` (a watched event, or the resting variant of one: the same guard), 0
  /// where it has none or is not watched.
  double level_of(const Problem& problem, int event) const;
  /// Per watched event: 1 where its root at the segment's start was dropped as noise
  /// (watch_return_crossings), so that hold_guards_near_zero holds it while it stays in its band.
  std::vector<char> dropped_at_start;
  /// Per watched event: 1 where the event was applied at the root the segment starts from
  /// (watch_return_crossings): its guard may sit at zero there, passed through.
  std::vector<char> applied_at_start;
  /// Per watched event applied at that root: its guard's rate r-dot- before the firing
  /// (OnTheGuard::rate_before), else NaN.
  std::vector<double> rate_before_at_start;
};
WatchedEvents watched_events(const Problem& problem, int mode);

/// Checks at the start of a run that every running cost declared RateUse::Ignores gives the
/// same value with xdot = 0, xdot = f(t0, x0) and a fixed non-zero probe; throws ModelError
/// naming the cost otherwise (its value would silently be wrong).
void check_rate_declarations(const Problem& problem, int mode, double t0, In<double> x0, In<double> p);

/// Absolute tolerance per state.
std::vector<double> state_atol(const Options& options, int n_states);

/// The state tolerances that forward sensitivities scale by 1/pbar_k with
/// Options::sensitivity_atol_from_states: max(atol_i, rtol * scale), with the state's scale
/// at the start (Problem::state_scale).
std::vector<double> sensitivity_state_atol(const Options& options, int n_states, double scale);

/// Absolute tolerance per state for IDAS: state_atol, with the algebraic states of a problem
/// with index-2 modes loosened to kIndex2AlgebraicAtol. IDAS leaves them out of its error test
/// there (IDASetSuppressAlg), but its Newton test still weighs them, and their corrections grow
/// like 1/h for index 2: with ordinary tolerances the steps collapsed (circle_drift at rtol 1e-8
/// failed at t = 1e-11). Saltus recomputes them from the completion at outputs and events.
std::vector<double> dae_state_atol(const Problem& problem, const Options& options);
inline constexpr double kIndex2AlgebraicAtol = 1e100;

/// Parameter scales for the sensitivity error weights (pbar).
std::vector<double> parameter_scales(const Options& options, const Eigen::VectorXd& p);

/// Writes the real parts of the watched guards at (t, x, x-dot, p) into g (the integrators'
/// root functions; x-dot is read by guards that read rates, which only IDAS runs see).
/// A held guard (WatchedEvents::held) reads its band on its non-firing side while it stays
/// within it, and is released (for the rest of the segment) once it leaves it; a guard with a
/// level (WatchedEvents::level) reads r - level.
/// Returns 0, or -1 with `error` naming the event whose guard is not finite.
template <class S>
int evaluate_guards(const Problem& problem, WatchedEvents& watched, double t, In<S> x, In<S> xdot,
                    In<S> p, double* g, std::string& error) {
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const Event& e = problem.event(watched.events[i]);
    g[i] = real_part(e.guard_at<S>(S(t), x, xdot, p));  // events on the real part
    if (!std::isfinite(g[i])) {
      error = "the guard of event '" + e.name + "' is not finite at t = " + std::to_string(t);
      return -1;
    }
    if (i < watched.level.size()) g[i] -= watched.level[i];
    if (i < watched.held.size() && watched.held[i] != 0.0) {
      if (std::abs(g[i]) <= std::abs(watched.held[i])) {
        g[i] = watched.held[i];
      } else {
        watched.held[i] = 0.0;
      }
    }
  }
  return 0;
}

/// For a run that ran out of steps (CV_TOO_MUCH_WORK, IDA_TOO_MUCH_WORK) whose last step had
/// fallen to within 1e-12 of t (|h| <= 1e-12 max(1, |t|)): "; its steps had fallen to ... s", with
/// the likely cause, the motion (or its sensitivities) going singular there. An outside reader's
/// drag law log(h - 1), with h falling to 1, ran out of 500,000 steps in a forward run under a
/// message that named only the step budget. Empty otherwise.
std::string vanishing_steps_hint(double last_step, double t);

/// As above for guards r(t, x, p) (an explicit problem: CVODES and the explicit integrators,
/// which never see a guard that reads rates: Problem::kind sends those problems to IDAS).
template <class S>
int evaluate_guards(const Problem& problem, WatchedEvents& watched, double t, In<S> x, In<S> p, double* g,
                    std::string& error) {
  for (const int k : watched.events) {
    if (!problem.event(k).reads_rates()) continue;
    error = "the guard of event '" + problem.event(k).name + "' reads rates, which this integrator does not give";
    return -1;
  }
  return evaluate_guards<S>(problem, watched, t, x, x.head(0), p, g, error);
}

/// The roots against their events' directions at one root (roots_against_their_direction,
/// guard_rate.hpp).
struct RootsAgainstDirection {
  std::vector<int> dropped;  ///< events whose roots were cleared
  std::vector<int> resting;  ///< events that apply their resting variant at this root
};

/// An event that leaves the state on its guard at a root: applied there (its modes and its
/// guard's rate before the jump), or dropped (no jump: rate_before NaN).
struct OnTheGuard {
  int event = -1;
  int mode_before = 0, mode_after = 0;
  double rate_before = 0.0;
  bool kept_state = false;  ///< applied, and its jump left the (differential) states as they were
};

/// What a run's last root leaves for the segment that starts there: the events applied (every
/// run type notes them as it applies them) and the roots against their direction (dropped, or
/// resting), so that the segment watches the guards the state sits on (watch_return_crossings).
/// A retried segment start reads the same. Noise that keeps crossing a guard against its
/// direction, restart after restart, stops the run instead of looping.
class RootMemory {
 public:
  /// A root at t: the roots against their direction found there and the roots left to apply
  /// (`fired`). Forgets the previous root. Returns true where every root was dropped as noise:
  /// nothing to apply, the segment goes on (SegmentIntegrator::apply_roots). Throws ZenoError at
  /// the max_dropped_restarts-th such root in a row.
  bool record(const Problem& problem, RootsAgainstDirection found, const std::vector<int>& fired, double t);
  /// An event applied at this root (its values, EventValues: real parts in complex runs).
  void applied(const Problem& problem, const EventValues& event);
  /// Whether event k rests at this root.
  bool rests(int k) const;
  const std::vector<OnTheGuard>& on_the_guard() const { return on_the_guard_; }

  static constexpr int max_dropped_restarts = 100;

 private:
  std::vector<int> resting_;
  std::vector<OnTheGuard> on_the_guard_;
  int in_a_row_ = 0;
};

/// Stops runs whose events pile up without time advancing.
class CascadeGuard {
 public:
  /// `problem` and `options` must outlive the guard.
  CascadeGuard(const Problem& problem, const Options& options) : problem_(problem), options_(options) {}
  /// Records a firing of `event` at t that took (mode_before, x_before) to (mode_after,
  /// x_after); throws ZenoError past the cascade or total limits, and where a cascade comes back
  /// to a mode and state it already met twice (a sliding mode: see the definition).
  void record(double t, int event, int mode_before, In<double> x_before, int mode_after, In<double> x_after);

  /// Times a cascade may meet one mode and state (its start counts) before it is a loop: the
  /// modes on both sides of a guard drive the motion into it (a relay without hysteresis, heat ->
  /// cool -> heat at T = T_set). A single return is legitimate (a block that sticks and slips
  /// again at once with the force past static friction); a third meeting repeats the second.
  static constexpr int max_visits = 2;

 private:
  struct Visit {
    int mode;
    Eigen::VectorXd x;
  };
  /// Whether x and y agree within the integration's tolerances, every component.
  bool same_state(In<double> x, In<double> y) const;
  /// How often this cascade met `mode` at a state within the tolerances of x.
  int visits(int mode, In<double> x) const;
  void refuse_loop(double t, int event, int mode) const;

  const Problem& problem_;
  const Options& options_;
  double last_time_ = 0.0;
  int cascade_ = 0;
  long total_ = 0;
  std::vector<Visit> visits_;   ///< this cascade's: its start, then after each firing
  std::vector<int> modes_;      ///< this cascade's mode sequence, for the message
};

/// Where a geometric sequence of firings accumulates: t_inf = t_c + D2^2 / (D1 - D2) (Aitken's
/// extrapolation from the last three firings t_a < t_b < t_c, D1 = t_b - t_a, D2 = t_c - t_b),
/// and its derivative weights dt_inf/dt_a, dt_inf/dt_b, dt_inf/dt_c (they sum to 1), so that
/// dt_inf/dp = w_a tau_a + w_b tau_b + w_c tau_c exactly.
struct Accumulation {
  double time = 0.0;
  double ratio = 0.0;  ///< rho, the intervals' common ratio
  double weight_a = 0.0, weight_b = 0.0, weight_c = 1.0;
  long record_a = -1, record_b = -1;  ///< event-log indices of the firings a and b (-1: none)
};

/// The largest ratio of a geometric sequence of firings whose limit, further than zeno_tail,
/// stops a run (ZenoWatch::refuse_accumulation): intervals that shrink by a few percent agree
/// within zeno_ratio_tolerance too (a pendulum's half-periods as its swing decays, rho 0.996),
/// and their "limit" is an artefact of four intervals.
inline constexpr double kFarZenoRatio = 0.9;

/// Where a message points a user whose event needs a resting variant.
inline constexpr const char* kRestingVariantHint =
    "a model file's contact: persistent: true; EventBuilder::rests_in, or rests_in: in an equation file; "
    "docs/events.md";

/// Watches the firings of events and decides where the motion comes to rest (Options::
/// zeno_intervals, zeno_ratio_tolerance, zeno_tail): an event with a resting variant switches to
/// it there, one without stops the run (refuse_accumulation).
class ZenoWatch {
 public:
  explicit ZenoWatch(const Options& options) : options_(options) {}
  /// The accumulation if a firing of `event` at t would complete a qualifying geometric sequence
  /// whose limit is within zeno_tail * max(1, |t|): where the motion comes to rest.
  std::optional<Accumulation> accumulation(int event, double t) const;
  /// The limit of the geometric sequence a firing of `event` at t would complete, however far.
  std::optional<Accumulation> geometric_limit(int event, double t) const;
  /// Throws ZenoError if a firing of `event`, which has no resting variant, at t completes a
  /// geometric sequence whose limit comes before tf: the run cannot continue past it (the
  /// bounces of a chain's tip pressed onto a floor by the rest of the chain). A limit beyond
  /// zeno_tail needs a ratio of at most kFarZenoRatio. Called before the firing is applied.
  void refuse_accumulation(const Problem& problem, int event, double t) const;
  /// Records a firing of `event` at t, logged as event-log entry `record`.
  void record(int event, double t, long record);

 private:
  struct Firing {
    double time;
    long record;
  };
  const Options& options_;
  std::map<int, std::deque<Firing>> firings_;
};

/// True if two event times are closer than the cascade window.
bool same_instant(double a, double b, const Options& options);

/// Every cost as if the horizon ended at t: `integrals` (the running integrals to t with the
/// event terms so far, n_c) plus the terminal parts at (t, x). Solution::cost_history.
Eigen::VectorXd costs_to_date(const Problem& problem, double t, In<double> x, In<double> p, In<double> integrals);

/// The first step of an IDAS run that starts at t = options.t0 in a mode with a completion, and
/// with Options::motion_first_step_at_restarts of every segment after an event (0 elsewhere,
/// and where IDAS's own estimate is as large: IDAS then takes its own). IDAS's
/// estimate, 0.5 / |x-dot|, is about rtol |q| / |v| for a mechanism that starts moving, where an
/// index-3 Newton matrix's condition grows like h^-3; this is the motion's scale instead, h =
/// |x-ddot|^-1/2 (the first-order local error h^2/2 |x-ddot| at half the error weight), both in
/// IDAS's norm over its `components` (n_x and the cost integrals; algebraic states and the
/// integrals count, as IDAS counts them, but add nothing), at most a thousandth of the way to the
/// first output. x-ddot: the completion's rates differentiated along the motion (one tangent).
/// The complex step's run takes the same step from the real parts.
double completed_first_step(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                            const Options& options, int components, TangentWorkspace& ws);

/// At most this many entries of a state in a message (describe_state).
inline constexpr int kDescribedEntries = 12;

/// "(h=1, v=-2)" for messages: every entry of a state of at most kDescribedEntries, else the
/// non-finite entries and the first ones, kDescribedEntries in all, in order, and the count of
/// the others ("..., and 372 more of 384 states").
std::string describe_state(const Problem& problem, const Eigen::VectorXd& x);

}  // namespace saltus::detail
