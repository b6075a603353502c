#pragma once
// The description of a hybrid ODE: named states and parameters, modes with their right-hand
// sides, events (guard, crossing direction, jump, mode switch) and costs.
//
//   psi_j = integral_{t0}^{tf} g_j(t, x, xdot, p) dt + w_j(x(tf), p)
//
// Model functions are generic lambdas, compiled here for double, Complex, Dual and Reverse (see
// scalar.hpp). Sign conventions follow docs/theory.md: guards are scalar functions r(t, x, p);
// an event fires when r crosses zero in its enabled direction; jumps map x- to x+.
#include <saltus/core/error.hpp>
#include <saltus/core/model_function.hpp>
#include <saltus/core/options.hpp>

#include <Eigen/Core>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace saltus {

/// Crossing direction that triggers an event.
enum class Direction {
  Rising,   ///< r goes from negative to positive
  Falling,  ///< r goes from positive to negative
  Either,   ///< both
};

/// Whether a running cost g(t, x, xdot, p) reads its xdot argument. A cost declared Ignores is
/// evaluated with xdot = 0, which saves a right-hand side per quadrature evaluation and per
/// sensitivity direction; every run checks the declaration once at its start (a ModelError if
/// g changes with xdot there).
enum class RateUse {
  Reads,    ///< g may read xdot (the default)
  Ignores,  ///< g does not depend on xdot
};

/// Optional analytic Jacobians of a mode; when present they replace forward-mode AD in the
/// Newton iterations and in the sensitivity right-hand side. Check them with
/// verify::check_mode_jacobians.
struct AnalyticJacobian {
  /// f_x, n_x x n_x.
  std::function<void(double t, In<double> x, In<double> p, Eigen::Ref<Eigen::MatrixXd> fx)> state;
  /// f_p, n_x x n_p.
  std::function<void(double t, In<double> x, In<double> p, Eigen::Ref<Eigen::MatrixXd> fp)>
      parameters;
};

/// Tangents of a mode's right-hand side in k directions at once (Problem::set_block_tangents):
/// out.col(j) = f_x(t, x, p) dx.col(j) + f_p(t, x, p) dp.col(j); dx and out are n_x x k, dp is
/// n_p x k.
using RhsTangentsFn =
    std::function<void(double t, In<double> x, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx,
                       const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out)>;

/// The block tangents of the right-hand side `f` (its DualBlock instantiation): f evaluated once
/// per kTangentBlock directions.
RhsTangentsFn block_tangents(RhsFn<DualBlock> f);

/// Tangents of a residual mode's F in k directions at once (Problem::set_block_residual_tangents):
/// out.col(j) = F_x dx.col(j) + F_xdot dxdot.col(j) + F_p dp.col(j) at (t, x, xdot, p), t held;
/// dx, dxdot and out are n_x x k, dp is n_p x k.
using ResidualTangentsFn = std::function<void(
    double t, In<double> x, In<double> xdot, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx,
    const Eigen::Ref<const Eigen::MatrixXd>& dxdot, const Eigen::Ref<const Eigen::MatrixXd>& dp,
    Eigen::Ref<Eigen::MatrixXd> out)>;

/// The block tangents of the residual `f` (its DualBlock instantiation): f evaluated once per
/// kTangentBlock directions.
ResidualTangentsFn block_residual_tangents(ResidualFn<DualBlock> f);

/// Tangents of a mode's completion in k directions at once (Problem::set_block_completion_tangents):
/// x_out.col(j), xdot_out.col(j) = the directional derivatives of the completed x and x-dot along
/// (dx_guess.col(j), dp.col(j)) at (t, x_guess, p), t held; dx_guess, x_out and xdot_out are
/// n_x x k, dp is n_p x k.
using CompletionTangentsFn =
    std::function<void(double t, In<double> x_guess, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx_guess,
                       const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> x_out,
                       Eigen::Ref<Eigen::MatrixXd> xdot_out)>;

/// The block tangents of the completion `f` (its DualBlock instantiation): f evaluated once per
/// kTangentBlock directions.
CompletionTangentsFn block_completion_tangents(CompletionFn<DualBlock> f);

/// A mode's dynamics: an explicit right-hand side xdot = f(t, x, p) (Problem::add_mode), or a
/// residual F(t, x, xdot, p) = 0 (Problem::add_residual_mode). Exactly one of the two is set.
struct Mode {
  std::string name;
  RhsFunctions rhs;
  std::optional<AnalyticJacobian> jacobian;
  /// Optional (Problem::set_block_tangents): several tangents of `rhs` from one evaluation; when
  /// set, CVODES's forward sensitivities (with their running costs' rates), the dense AD
  /// Jacobians f_x, f_p (derivatives/tangent.hpp) and, when the mode runs on IDAS, its residual's
  /// blocks (residual_tangents) use it, in blocks of kTangentBlock directions (a lone last one
  /// in a Dual); Jacobian-vector products and the Runge-Kutta integrators keep one Dual
  /// evaluation per direction.
  RhsTangentsFn rhs_tangents;
  Instantiated<ResidualFn> residual;
  /// Optional (Problem::set_block_residual_tangents): several tangents of `residual` from one
  /// evaluation; when set, every matrix of the residual's derivatives (IDAS's Newton matrix, sparse
  /// colours or dense columns; F_x, F_xdot and F_p at restarts, implicit transitions and in the
  /// adjoint's linearization) and IDAS's forward sensitivities use it (derivatives/residual.hpp);
  /// single tangents (an event transfer's directions, the adjoint's products) keep one Dual
  /// evaluation each.
  ResidualTangentsFn residual_tangents;
  /// For residual modes of index 2 (Problem::set_completion): the model's consistent completion.
  Instantiated<CompletionFn> completion;
  /// Optional (Problem::set_block_completion_tangents): several tangents of `completion` from one
  /// evaluation; when set, the forward sensitivities' completion (at the start, at outputs and
  /// around events; one direction per parameter) uses them (derivatives/residual.hpp,
  /// completion_tangents).
  CompletionTangentsFn completion_tangents;
  /// Optional (Problem::set_rate_completion): the map whose rates the adjoint's backward pass
  /// records in place of the completion's.
  CompletionFn<Reverse> rate_completion;
  bool implicit() const { return static_cast<bool>(residual); }
  /// Index 2 with a completion, rather than index 1 (consistency by Newton on [F_ydot | F_z]).
  bool index2() const { return static_cast<bool>(completion); }
  /// Where a model file declares the mode ("file:line:column: modes.name",
  /// Problem::declare_mode_at); empty for a mode built in C++.
  std::string declared_at;
  /// "declared_at: " for a message about the mode found during a run, or "".
  std::string where() const { return declared_at.empty() ? std::string() : declared_at + ": "; }
};

/// How a problem's dynamics are written, and so which integrator runs it.
enum class ProblemKind {
  Explicit,  ///< every mode is xdot = f(t, x, p): CVODES
  Residual,  ///< some mode is a residual F(t, x, xdot, p) = 0, some state is algebraic, or some
             ///< event has an implicit transition: IDAS
};

/// Mode index meaning "stay in the current mode".
inline constexpr int kSameMode = -1;

struct Event {
  std::string name;
  Direction direction = Direction::Either;
  /// The guard r(t, x, p); empty when the guard reads rates (rate_guard).
  Instantiated<GuardFn> guard;
  /// A guard r(t, x, x-dot, p) that reads rates (Problem::add_event with a four-argument
  /// guard); empty otherwise. Such a problem runs on IDAS (ProblemKind::Residual).
  Instantiated<RateGuardFn> rate_guard;
  Instantiated<JumpFn> jump;      ///< empty: the state is continuous (pure mode switch)
  /// An implicit transition (EventBuilder::transition) instead of a jump; empty if none.
  Instantiated<TransitionFn> transition;
  int target_mode = kSameMode;    ///< mode after the event (unless `transitions` says otherwise)
  std::map<int, int> transitions; ///< mode before -> mode after, overriding target_mode
  std::vector<int> active_modes;  ///< modes in which the guard is watched; empty: all
  /// The event's resting variant (EventBuilder::rests_in), or -1. It shares the guard and is
  /// never watched itself: Saltus applies it instead of this event at the firing where the
  /// firings accumulate (docs/events.md, "Zeno and resting").
  int rest_event = -1;
  bool watched = true;  ///< false for resting variants, which root finding does not watch
  /// The guard may be exactly zero at the initial time (EventBuilder::starts_on_guard): the
  /// root there is ignored instead of refused as input.
  bool may_start_on_guard = false;
  /// A time event (EventBuilder::fires_at_a_time): its guard is t - t_e(p), rising.
  bool time_event = false;
  /// Where a model file declares the event ("file:line:column: events.name",
  /// EventBuilder::declared_at); empty for an event built in C++.
  std::string declared_at;
  /// "declared_at: " for a message about the event found during a run, or "".
  std::string where() const { return declared_at.empty() ? std::string() : declared_at + ": "; }
  /// What a user can do when the firings of this event, which has no resting variant,
  /// accumulate (EventBuilder::zeno_remedy); empty: the message proposes a resting variant.
  std::string zeno_remedy;
  bool active_in(int mode) const;
  bool reads_rates() const { return static_cast<bool>(rate_guard); }
  /// The guard's value at (t, x, x-dot, p), whichever form it has.
  template <class S>
  S guard_at(S t, In<S> x, In<S> xdot, In<S> p) const {
    return reads_rates() ? rate_guard.template get<S>()(t, x, xdot, p) : guard.template get<S>()(t, x, p);
  }
  /// The mode the event leads to from `mode`.
  int mode_after(int mode) const;
};

/// A term c(t_e, x(t_e-), p) a cost adds at every firing of an event (theory/hybrid-ode.md
/// section 5.3), for example an impact speed. It is a scalar function like a guard.
class Problem;

struct EventCostTerm {
  int event = -1;                ///< the event (its resting variant counts as a firing too)
  Instantiated<GuardFn> value;   ///< c(t, x-, p)
  /// Whether a firing of event k counts: k is the event or its resting variant.
  bool applies_to(const Problem& problem, int k) const;
};

struct Cost {
  std::string name;
  RunningCostFunctions running;    ///< empty: no integral part
  RateUse rates = RateUse::Reads;         ///< whether `running` reads xdot
  Instantiated<TerminalCostFn> terminal;  ///< empty: no terminal part
  std::vector<EventCostTerm> at_events;   ///< point terms, summed over the firings
  /// The terms of event k: those attached to k, or to the event whose resting variant k is.
  bool has_terms_for(const Problem& problem, int k) const;
};

/// A diagnostic m(t, x, p) the report shows as max |m| over the output trajectory (for example
/// a formulation's constraint residuals). It is not differentiated.
struct Monitor {
  std::string name;
  std::function<double(double t, In<double> x, In<double> p)> value;
};

/// A model's reading of the state where an integration failed: a clause naming what in the
/// model is singular there (a spring whose ends coincide), or "" when it sees nothing. Appended
/// to the integrator's failure message; never called on a path that succeeds.
using FailureDiagnosis = std::function<std::string(double t, In<double> x, In<double> p)>;

/// Quantities derived from the state, y = h(t, x, p), recorded at the output times with their
/// sensitivities dy/dp = h_x S + h_p (solvers/named_outputs.hpp). Not differentiated inside the
/// run, so they cost nothing while integrating.
struct NamedOutputs {
  std::vector<std::string> names;  ///< n_y names, unique
  std::vector<std::string> units;  ///< n_y SI units ("m", "N", "J"; "" when none applies)
  Instantiated<OutputFn> value;    ///< h(t, x, p, y)
  int size() const { return static_cast<int>(names.size()); }
};

struct Parameter {
  std::string name;
  double nominal = 0.0;
  std::string description;
};

class Problem;

/// Fluent configuration of an event just added to a Problem.
class EventBuilder {
 public:
  EventBuilder(Problem& problem, int index) : problem_(problem), index_(index) {}
  /// x+ = phi(t, x-, p), a generic lambda `phi(t, x_minus, p, x_plus)`.
  template <class F>
  EventBuilder& jump(const F& phi);
  /// An implicit transition instead of a jump: `T(t, x_plus, xdot_plus, x_minus, xdot_minus, p,
  /// residual)` writes n_y = n_x - n_algebraic equations that, with the new mode's residual,
  /// determine x+ and its rates (theory/hybrid-dae.md sections 1-2; docs/dae.md, "Implicit
  /// transitions"). It may read the rates of the differential states before and after the
  /// event (those of algebraic states come as zero). The problem then runs on IDAS. Into an
  /// index-2 mode (a completion) T writes only n_y - n_c equations, n_c the number of the
  /// completion's constraints, which give the rest (docs/dae.md, "Implicit transitions").
  template <class F>
  EventBuilder& transition(const F& t);
  /// Switch to `mode` (an index returned by Problem::add_mode) when the event fires.
  EventBuilder& switch_to(int mode);
  /// Mode-dependent switch: from mode `from` go to `transitions.at(from)`; modes not listed
  /// follow switch_to (or stay). One guard shared by several modes is one event, so that
  /// simultaneous events compose correctly across mode changes.
  EventBuilder& switch_to(std::map<int, int> transitions);
  /// Watch the guard only in these modes (default: every mode).
  EventBuilder& only_in(std::vector<int> modes);
  /// When this event's firings accumulate geometrically (a Zeno sequence: a ball settling on its
  /// floor), or a firing would leave the state on the guard with zero rate (restitution 0), the
  /// motion comes to rest: at that firing `projection(t, x_minus, p, x_rest)` replaces the jump
  /// and the mode becomes `rest_mode`, whose own events (a lift-off) may leave it again. The run
  /// continues; the event log marks the firing and reports the extrapolated accumulation time.
  /// Call after only_in / switch_to: the resting variant copies the guard and watched modes.
  template <class F>
  EventBuilder& rests_in(int rest_mode, const F& projection);
  /// The initial state may lie exactly on this event's guard, and the root there is ignored:
  /// the run starts at a switching point and leaves the guard away from the firing direction,
  /// at an order the crossing speed does not show (the hysteretic oscillator starts at a
  /// reversal with v = v' = 0 and v ~ t^3). Without it such a start is refused as input
  /// (docs/events.md, "Starting on a guard"). A motion that in fact goes through the guard in
  /// the firing direction is then not detected there.
  EventBuilder& starts_on_guard();
  /// Marks a time event: its guard is t - t_e(p) with Direction::Rising; reports (saltus check)
  /// give it as the time t_e rather than as a guard.
  EventBuilder& fires_at_a_time();
  /// Where a model file declares the event ("file:line:column: events.name"): input errors
  /// about it that only a run finds (a start on its guard, an implicit transition without
  /// solution) then begin with it, as the file reader's own messages do.
  EventBuilder& declared_at(std::string where);
  /// The remedy the ZenoError names when this event's firings accumulate and it has no resting
  /// variant, instead of proposing one: for an event that is itself part of a resting contact
  /// (a persistent contact's stick and slip), where a resting variant is no answer.
  EventBuilder& zeno_remedy(std::string remedy);
  int index() const { return index_; }

 private:
  Event& event();
  Problem& problem_;
  int index_;
};

class Problem {
 public:
  explicit Problem(std::string name, std::string description = "");

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }

  // ---- definition -------------------------------------------------------------------------
  /// Names the states; their number is n_x.
  void set_states(std::vector<std::string> names);
  /// Adds a named parameter with its nominal value; returns its index in p.
  int add_parameter(const std::string& name, double nominal, std::string description = "");
  /// x(t0) = x0(p). `f(p, x0)` is a generic lambda.
  template <class F>
  void set_initial_state(const F& f) {
    initial_state_ = Instantiated<InitialStateFn>::from(f);
  }
  /// Adds a mode with right-hand side `f(t, x, p, xdot)`; returns its index. The first mode
  /// added is the initial mode unless set_initial_mode says otherwise.
  template <class F>
  int add_mode(const std::string& name, const F& f) {
    return add_mode_impl(name, RhsFunctions::from(f));
  }
  /// Lets CVODES's forward sensitivities and the dense AD Jacobians of mode `mode` (an explicit
  /// mode) evaluate its right-hand side once per kTangentBlock directions, in DualBlock scalars,
  /// instead of once per direction in Dual. `f` must be the generic lambda given to add_mode for that mode. Worth it
  /// where most of an evaluation is shared between directions (a factorization, the elements'
  /// kinematics): the multibody formulations set it (docs/benchmarks.md, "Block tangents").
  template <class F>
  void set_block_tangents(int mode, const F& f) {
    set_rhs_tangents_impl(mode, block_tangents(RhsFn<DualBlock>(f)));
  }
  /// Adds a mode whose dynamics are the residual `F(t, x, xdot, p, res)` = 0 (n_x equations, a
  /// generic lambda); returns its index. The problem becomes a DAE (ProblemKind::Residual), run
  /// by IDAS. Index 1 is required: with y the differential and z the algebraic states, the
  /// matrix [F_ydot | F_z] must be nonsingular (docs/dae.md).
  template <class F>
  int add_residual_mode(const std::string& name, const F& f) {
    return add_residual_mode_impl(name, Instantiated<ResidualFn>::from(f));
  }
  /// set_block_tangents for a residual mode: IDAS's sparse Newton matrix and forward
  /// sensitivities evaluate its residual once per kTangentBlock directions, in DualBlock scalars.
  /// `f` must be the generic lambda given to add_residual_mode for that mode.
  template <class F>
  void set_block_residual_tangents(int mode, const F& f) {
    set_residual_tangents_impl(mode, block_residual_tangents(ResidualFn<DualBlock>(f)));
  }
  /// Where a model file declares mode `mode` ("file:line:column: modes.name"): input errors
  /// about it that only a run finds (not index 1 at a state, no consistent state) then begin
  /// with it.
  void declare_mode_at(int mode, std::string where);
  /// Makes residual mode `mode` a Hessenberg index-2 DAE (ydot = f(t, y, z, p), 0 = k(t, y, p),
  /// k_y f_z nonsingular; docs/dae.md, "Index 2") whose consistent values the model computes:
  /// `c(t, x_guess, p, x, xdot)` (a generic lambda) projects the differential states of the
  /// guess onto k = 0, solves the hidden constraint k_y f + k_t = 0 for the algebraic states and
  /// returns x and its rate (the algebraic entries of xdot may be zero). Saltus differentiates it
  /// (forward AD, complex step) for the consistent sensitivities, and IDAS leaves the algebraic
  /// states out of its error test.
  template <class C>
  void set_completion(int mode, const C& c) {
    set_completion_impl(mode, Instantiated<CompletionFn>::from(c));
  }
  /// set_block_tangents for a completion (after set_completion): the forward sensitivities'
  /// completion (at the start, at outputs and around events) evaluates it once per kTangentBlock
  /// directions, in DualBlock scalars.
  /// `c` must be the generic lambda given to set_completion for that mode.
  template <class C>
  void set_block_completion_tangents(int mode, const C& c) {
    set_completion_tangents_impl(mode, block_completion_tangents(CompletionFn<DualBlock>(c)));
  }
  /// Optional, after set_completion: a map C~(t, x_guess, p) whose rates the adjoint's backward
  /// pass records at every point in place of the completion's (completed_adjoint.hpp), when it
  /// is cheaper. C~ must equal the completion on consistent states and its rates must keep
  /// consistent states consistent; then its ODE x' = x-dot of C~ has the completion's motions
  /// from every consistent start, and its adjoint gives the same gradient. The transposes at
  /// the final time, events and the start keep the completion's. Example: the velocities
  /// projected and the positions kept, where the DAE holds the position constraints as equations.
  void set_rate_completion(int mode, CompletionFn<Reverse> c);
  /// Whether some mode is index 2.
  bool has_index2_modes() const;
  /// Declares states (by name, among set_states) as algebraic: their derivatives do not enter
  /// the residuals, and their values follow from the residuals given the differential states
  /// (at the start, after every event). Every mode of such a problem must be a residual mode.
  /// In modes with a completion (set_completion) they are the states IDAS leaves out of its
  /// error test; there the residual may read their rates (the stabilized index-1 multibody form
  /// integrates multipliers chi, psi whose rates enter it).
  void set_algebraic_states(const std::vector<std::string>& names);
  /// Whether state i is algebraic.
  bool is_algebraic(int i) const;
  int n_algebraic() const;
  /// Explicit, or Residual if any mode is a residual or any state algebraic.
  ProblemKind kind() const;
  void set_initial_mode(int mode);
  /// Chooses the initial mode from the logical state: `rule(x0, p)` returns a mode index.
  /// Use it when the mode follows from the sign of a guard at x0 (it is evaluated on real
  /// values, also in complex-step runs, so the mode sequence stays that of the real run).
  void set_initial_mode_rule(std::function<int(In<double> x0, In<double> p)> rule);
  /// The initial mode for x0 and p: the rule's choice if there is one, else initial_mode().
  /// Throws InputError if the rule returns an index out of range.
  int initial_mode_for(In<double> x0, In<double> p) const;
  void set_jacobian(int mode, AnalyticJacobian jacobian);
  /// Adds an event with guard `r(t, x, p)` that fires on crossings in `direction`. The guard
  /// may also read the rates, `r(t, x, xdot, p)` (a generic lambda of four arguments): a
  /// velocity reversal, a flow changing sign (theory/hybrid-dae.md section 1). The problem then
  /// runs on IDAS (ProblemKind::Residual, explicit modes included); the crossing speed reads
  /// x-ddot, which the differentiated residual gives. Such a guard must not read the rates of
  /// algebraic states nor be watched in an index-2 mode (docs/dae.md, "Events").
  template <class F>
  EventBuilder add_event(const std::string& name, Direction direction, const F& r) {
    if constexpr (std::is_invocable_v<const F&, double, In<double>, In<double>, In<double>>) {
      return add_rate_event_impl(name, direction, Instantiated<RateGuardFn>::from(r));
    } else {
      return add_event_impl(name, direction, Instantiated<GuardFn>::from(r));
    }
  }
  /// Adds the cost psi = integral of g(t, x, xdot, p) dt (`rates`: whether g reads xdot).
  template <class G>
  void add_running_cost(const std::string& name, const G& g, RateUse rates = RateUse::Reads) {
    add_cost_impl(name, RunningCostFunctions::from(g), {}, rates);
  }
  /// Adds the cost psi = w(tf, x(tf), p): a generic lambda `w(t, x, p)`, or `w(x, p)` when it
  /// does not depend on the final time.
  template <class W>
  void add_terminal_cost(const std::string& name, const W& w) {
    add_cost_impl(name, {}, Instantiated<TerminalCostFn>::from(with_final_time(w)));
  }
  /// Adds the cost psi = integral of g dt + w(tf, x(tf), p) (w as for add_terminal_cost).
  template <class G, class W>
  void add_cost(const std::string& name, const G& g, const W& w, RateUse rates = RateUse::Reads) {
    add_cost_impl(name, RunningCostFunctions::from(g),
                  Instantiated<TerminalCostFn>::from(with_final_time(w)), rates);
  }
  /// Adds to cost `name` the term c(t_e, x(t_e-), p) at every firing of `event` (an index from
  /// add_event; also at the firing where its motion comes to rest, EventBuilder::rests_in):
  /// psi += sum over firings of c. `c(t, x_minus, p)` is a generic lambda. A cost not yet
  /// defined is created with only this term; more terms (other events) may be added.
  template <class C>
  void add_event_cost(const std::string& name, int event, const C& c) {
    add_event_cost_impl(name, event, Instantiated<GuardFn>::from(c));
  }
  /// Adds a diagnostic shown in reports (see Monitor).
  void add_monitor(const std::string& name, std::function<double(double, In<double>, In<double>)> value) {
    monitors_.push_back(Monitor{name, std::move(value)});
  }
  const std::vector<Monitor>& monitors() const { return monitors_; }
  /// Adds a reading of the state where an integration fails (see FailureDiagnosis).
  void add_failure_diagnosis(FailureDiagnosis diagnosis) { failure_diagnoses_.push_back(std::move(diagnosis)); }
  /// The diagnoses' clauses at (t, x, p), each after "; " ("" when none has one). A diagnosis
  /// that throws says nothing: this runs on the way to reporting another failure.
  std::string diagnose_failure(double t, In<double> x, In<double> p) const;
  /// Sets the named outputs: `h(t, x, p, y)` (a generic lambda) writes the n_y = names.size()
  /// values; `units` has one entry per name. Throws InputError on sizes that differ or names
  /// that repeat.
  template <class H>
  void set_outputs(std::vector<std::string> names, std::vector<std::string> units, const H& h) {
    set_outputs_impl(std::move(names), std::move(units), Instantiated<OutputFn>::from(h));
  }
  /// The named outputs (size 0 when the problem has none).
  const NamedOutputs& outputs() const { return outputs_; }
  /// Default run settings (horizon, outputs, tolerances, method).
  Options& options() { return options_; }
  const Options& options() const { return options_; }

  // ---- queries ----------------------------------------------------------------------------
  int n_states() const { return static_cast<int>(states_.size()); }
  int n_parameters() const { return static_cast<int>(parameters_.size()); }
  int n_costs() const { return static_cast<int>(costs_.size()); }
  /// Whether some running cost reads xdot (RateUse::Reads).
  bool running_costs_read_rates() const;
  int n_modes() const { return static_cast<int>(modes_.size()); }
  int n_events() const { return static_cast<int>(events_.size()); }
  const std::vector<std::string>& state_names() const { return states_; }
  /// The names of the entries of the state x (n_x): state_names(), unless the problem's states
  /// change meaning along a run (set_state_names_at: the maggi formulation's independent
  /// coordinates after a repartition). Reports name a final state by it.
  std::vector<std::string> state_names_at(In<double> x) const {
    return state_names_at_ ? state_names_at_(x) : states_;
  }
  /// What state_names_at gives at x; it must return n_x names.
  void set_state_names_at(std::function<std::vector<std::string>(In<double>)> names) {
    state_names_at_ = std::move(names);
  }
  /// The size of the state x0 at the start of a run (>= 1), from which
  /// Options::sensitivity_atol_from_states takes its tolerance floor: max(1, |x0|_inf), unless
  /// set_state_scale gave the problem its own.
  double state_scale(In<double> x0) const;
  /// A problem's own state_scale, for states whose absolute size means nothing: a mechanism's
  /// positions measured from a distant origin (a vehicle at x = 1000 m) would loosen its
  /// sensitivities' tolerances 60-fold; its scale is translation-invariant instead
  /// (multibody::Model::motion_scale).
  void set_state_scale(std::function<double(In<double> x0)> scale) { state_scale_ = std::move(scale); }
  std::vector<std::string> parameter_names() const;
  std::vector<std::string> cost_names() const;
  const std::vector<Parameter>& parameters() const { return parameters_; }
  const Mode& mode(int i) const { return modes_.at(static_cast<size_t>(i)); }
  const Event& event(int i) const { return events_.at(static_cast<size_t>(i)); }
  const Cost& cost(int i) const { return costs_.at(static_cast<size_t>(i)); }
  const Instantiated<InitialStateFn>& initial_state() const { return initial_state_; }
  int initial_mode() const { return initial_mode_; }

  /// Index of a parameter / cost / state by name; throws InputError listing the known names.
  int parameter_index(const std::string& name) const;
  int event_index(const std::string& name) const;
  int cost_index(const std::string& name) const;
  int state_index(const std::string& name) const;
  /// Nominal parameter vector, n_p.
  Eigen::VectorXd nominal_parameters() const;
  /// Sets the nominal value of a named parameter. Throws InputError (and keeps the old value)
  /// on unknown names, NaN, or a value outside the parameter's domain (check_domains).
  void set_nominal(const std::string& name, double value);

  // ---- physical domains and notes ---------------------------------------------------------
  /// Adds a domain check: `check(p)` throws InputError naming the field and the value if p is
  /// outside the model's physical domain (a negative mass, a restitution above 1, ...).
  /// Checks guard the nominal values (set_nominal, the command's --param); solvers called with
  /// an explicit p do not run them, so that differences may step across a bound such as e = 1.
  void add_parameter_check(std::function<void(In<double> p)> check);
  /// Requires lower <= p[name] <= upper (a built-in convenience over add_parameter_check).
  void bound_parameter(const std::string& name, double lower, double upper);
  /// Runs validate_parameters and every domain check on p.
  void check_domains(const Eigen::VectorXd& p) const;
  /// Adds a horizon check: `check(p, t0, tf)` throws InputError naming the field when the model
  /// cannot run over [t0, tf] [s] at p (a driven distance that reaches zero in it). Every run
  /// checks its own horizon and parameters at its start (check_horizon), so a horizon longer
  /// than the model's own (`--tend`) is checked too.
  void add_horizon_check(std::function<void(In<double> p, double t0, double tf)> check);
  /// Runs every horizon check on p over [t0, tf].
  void check_horizon(In<double> p, double t0, double tf) const;
  /// Remarks made while building the problem about input that was corrected (for example
  /// initial velocities made consistent with the constraints). The command prints them as
  /// warnings, or refuses them with --strict.
  void add_note(std::string note);
  /// Notes that depend on the parameters (a mechanism's assembly corrections and overruled
  /// initial velocities at its start): `notes_at(p)` runs now at the nominal values and again
  /// after every set_nominal, so that an override is noted as the file's own value would be.
  void set_parameter_notes(std::function<std::vector<std::string>(In<double> p)> notes_at);
  /// The notes added, then those of set_parameter_notes at the nominal values.
  const std::vector<std::string>& notes() const { return notes_; }
  /// Remarks about what the input left out or Saltus assumed without correcting anything (a
  /// URDF's joint limits): the command prints them as notes, also with --strict.
  void add_remark(std::string remark) { remarks_.push_back(std::move(remark)); }
  const std::vector<std::string>& remarks() const { return remarks_; }

  /// Throws InputError if the problem is incomplete (no states, modes, initial state, costs)
  /// or inconsistent (event targets or active modes out of range).
  void validate() const;
  /// Throws InputError if p has the wrong size or a non-finite entry (naming the parameter).
  void validate_parameters(const Eigen::VectorXd& p) const;

 private:
  friend class EventBuilder;
  friend Problem with_free_parameters(const Problem& problem, const std::vector<std::string>& names);
  void add_rest_event(int event, int rest_mode, Instantiated<JumpFn> projection);
  int add_mode_impl(const std::string& name, RhsFunctions rhs);
  void set_rhs_tangents_impl(int mode, RhsTangentsFn tangents);
  void set_residual_tangents_impl(int mode, ResidualTangentsFn tangents);
  int add_residual_mode_impl(const std::string& name, Instantiated<ResidualFn> residual);
  void join_notes();  // notes_ from added_notes_ and parameter_notes_
  void set_completion_impl(int mode, Instantiated<CompletionFn> completion);
  void set_completion_tangents_impl(int mode, CompletionTangentsFn tangents);
  EventBuilder add_event_impl(const std::string& name, Direction direction,
                              Instantiated<GuardFn> guard);
  EventBuilder add_rate_event_impl(const std::string& name, Direction direction, Instantiated<RateGuardFn> guard);
  void add_cost_impl(const std::string& name, RunningCostFunctions running,
                     Instantiated<TerminalCostFn> terminal, RateUse rates = RateUse::Reads);
  void add_event_cost_impl(const std::string& name, int event, Instantiated<GuardFn> c);
  void set_outputs_impl(std::vector<std::string> names, std::vector<std::string> units,
                        Instantiated<OutputFn> h);

  std::string name_;
  std::string description_;
  std::vector<std::string> states_;
  std::function<std::vector<std::string>(In<double>)> state_names_at_;
  std::function<double(In<double>)> state_scale_;
  std::vector<bool> algebraic_;  // per state; empty: none
  std::vector<Parameter> parameters_;
  Instantiated<InitialStateFn> initial_state_;
  std::vector<Mode> modes_;
  std::vector<Event> events_;
  std::vector<Cost> costs_;
  std::vector<Monitor> monitors_;
  std::vector<FailureDiagnosis> failure_diagnoses_;
  NamedOutputs outputs_;
  std::vector<std::function<void(In<double>)>> parameter_checks_;
  std::vector<std::function<void(In<double>, double, double)>> horizon_checks_;
  std::vector<std::string> added_notes_;      // add_note
  std::vector<std::string> parameter_notes_;  // notes_at_ at the nominal values
  std::function<std::vector<std::string>(In<double>)> notes_at_;
  std::vector<std::string> notes_;            // both, in that order
  std::vector<std::string> remarks_;
  int initial_mode_ = 0;
  std::function<int(In<double>, In<double>)> initial_mode_rule_;
  Options options_;
};

template <class F>
EventBuilder& EventBuilder::rests_in(int rest_mode, const F& projection) {
  problem_.add_rest_event(index_, rest_mode, Instantiated<JumpFn>::from(projection));
  return *this;
}

template <class F>
EventBuilder& EventBuilder::jump(const F& phi) {
  event().jump = Instantiated<JumpFn>::from(phi);
  return *this;
}

template <class F>
EventBuilder& EventBuilder::transition(const F& t) {
  event().transition = Instantiated<TransitionFn>::from(t);
  return *this;
}

}  // namespace saltus
