#include <saltus/core/problem.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace saltus {

namespace {

int index_of(const std::vector<std::string>& names, const std::string& name,
             const std::string& kind, const std::string& problem) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    throw InputError(fmt::format("unknown {} '{}' in problem '{}' (known: {})", kind, name,
                                 problem, fmt::join(names, ", ")));
  }
  return static_cast<int>(it - names.begin());
}

const std::string& name_of(const std::string& name) { return name; }
template <class T>
const std::string& name_of(const T& item) {
  return item.name;
}

/// Throws unless `name` is non-empty and new among `existing` (names, or items with a name).
/// It compares in place: copying the names at every addition made a problem with thousands of
/// events (a model file's contacts) quadratic in allocations.
template <class Items>
void require_unique(const Items& existing, const std::string& name, const std::string& kind) {
  if (name.empty()) throw InputError(fmt::format("a {} needs a non-empty name", kind));
  for (const auto& item : existing) {
    if (name_of(item) == name) throw InputError(fmt::format("duplicate {} name '{}'", kind, name));
  }
}

}  // namespace

bool Event::active_in(int mode) const {
  return active_modes.empty() ||
         std::find(active_modes.begin(), active_modes.end(), mode) != active_modes.end();
}

int Event::mode_after(int mode) const {
  const auto it = transitions.find(mode);
  if (it != transitions.end()) return it->second;
  return target_mode == kSameMode ? mode : target_mode;
}

EventBuilder& EventBuilder::switch_to(std::map<int, int> transitions) {
  event().transitions = std::move(transitions);
  return *this;
}

Event& EventBuilder::event() { return problem_.events_.at(static_cast<size_t>(index_)); }

EventBuilder& EventBuilder::switch_to(int mode) {
  event().target_mode = mode;
  return *this;
}

EventBuilder& EventBuilder::starts_on_guard() {
  event().may_start_on_guard = true;
  return *this;
}

EventBuilder& EventBuilder::fires_at_a_time() {
  event().time_event = true;
  return *this;
}

EventBuilder& EventBuilder::declared_at(std::string where) {
  event().declared_at = std::move(where);
  return *this;
}

EventBuilder& EventBuilder::zeno_remedy(std::string remedy) {
  event().zeno_remedy = std::move(remedy);
  return *this;
}

EventBuilder& EventBuilder::only_in(std::vector<int> modes) {
  event().active_modes = std::move(modes);
  return *this;
}

Problem::Problem(std::string name, std::string description)
    : name_(std::move(name)), description_(std::move(description)) {}

void Problem::set_states(std::vector<std::string> names) {
  std::vector<std::string> seen;
  for (const auto& n : names) {
    require_unique(seen, n, "state");
    seen.push_back(n);
  }
  states_ = std::move(names);
}

int Problem::add_parameter(const std::string& name, double nominal, std::string description) {
  require_unique(parameters_, name, "parameter");
  if (!std::isfinite(nominal)) {
    throw InputError(fmt::format("parameter '{}' has non-finite nominal value {}", name, nominal));
  }
  parameters_.push_back({name, nominal, std::move(description)});
  return n_parameters() - 1;
}

int Problem::add_mode_impl(const std::string& name, RhsFunctions rhs) {
  require_unique(modes_, name, "mode");
  modes_.push_back({name, std::move(rhs), std::nullopt, {}, {}, {}, {}, {}, {}, {}});
  return n_modes() - 1;
}

void Problem::set_rhs_tangents_impl(int mode, RhsTangentsFn tangents) {
  if (mode < 0 || mode >= n_modes()) throw InputError(fmt::format("set_block_tangents: mode {} out of range", mode));
  Mode& m = modes_[static_cast<size_t>(mode)];
  if (m.implicit()) throw InputError(fmt::format("set_block_tangents: mode '{}' is a residual mode", m.name));
  m.rhs_tangents = std::move(tangents);
}

void Problem::set_residual_tangents_impl(int mode, ResidualTangentsFn tangents) {
  if (mode < 0 || mode >= n_modes()) {
    throw InputError(fmt::format("set_block_residual_tangents: mode {} out of range", mode));
  }
  Mode& m = modes_[static_cast<size_t>(mode)];
  if (!m.implicit()) {
    throw InputError(fmt::format("set_block_residual_tangents: mode '{}' is an explicit right-hand side", m.name));
  }
  m.residual_tangents = std::move(tangents);
}

int Problem::add_residual_mode_impl(const std::string& name, Instantiated<ResidualFn> residual) {
  require_unique(modes_, name, "mode");
  modes_.push_back({name, {}, std::nullopt, {}, std::move(residual), {}, {}, {}, {}, {}});
  return n_modes() - 1;
}

void Problem::set_completion_tangents_impl(int mode, CompletionTangentsFn tangents) {
  if (mode < 0 || mode >= n_modes()) {
    throw InputError(fmt::format("set_block_completion_tangents: mode {} out of range", mode));
  }
  Mode& m = modes_[static_cast<size_t>(mode)];
  if (!m.completion) {
    throw InputError(fmt::format("set_block_completion_tangents: mode '{}' has no completion (set_completion first)", m.name));
  }
  m.completion_tangents = std::move(tangents);
}

void Problem::set_completion_impl(int mode, Instantiated<CompletionFn> completion) {
  if (mode < 0 || mode >= n_modes()) throw InputError(fmt::format("set_completion: mode {} out of range", mode));
  Mode& m = modes_[static_cast<size_t>(mode)];
  if (!m.implicit()) {
    throw InputError(fmt::format("set_completion: mode '{}' is an explicit right-hand side, not a residual", m.name));
  }
  m.completion = std::move(completion);
  m.completion_tangents = nullptr;  // they were the previous completion's
  m.rate_completion = nullptr;
}

void Problem::set_rate_completion(int mode, CompletionFn<Reverse> c) {
  if (mode < 0 || mode >= n_modes()) throw InputError(fmt::format("set_rate_completion: mode {} out of range", mode));
  Mode& m = modes_[static_cast<size_t>(mode)];
  if (!m.completion) {
    throw InputError(fmt::format("set_rate_completion: mode '{}' has no completion (set_completion first)", m.name));
  }
  m.rate_completion = std::move(c);
}

bool Problem::has_index2_modes() const {
  for (const auto& m : modes_) {
    if (m.index2()) return true;
  }
  return false;
}

void Problem::set_algebraic_states(const std::vector<std::string>& names) {
  std::vector<bool> algebraic(states_.size(), false);
  for (const auto& n : names) algebraic[static_cast<size_t>(state_index(n))] = true;
  algebraic_ = std::move(algebraic);
}

bool Problem::is_algebraic(int i) const {
  return !algebraic_.empty() && algebraic_.at(static_cast<size_t>(i));
}

int Problem::n_algebraic() const {
  return static_cast<int>(std::count(algebraic_.begin(), algebraic_.end(), true));
}

ProblemKind Problem::kind() const {
  if (n_algebraic() > 0) return ProblemKind::Residual;
  for (const auto& m : modes_) {
    if (m.implicit()) return ProblemKind::Residual;
  }
  for (const auto& e : events_) {
    if (e.transition || e.reads_rates()) return ProblemKind::Residual;
  }
  return ProblemKind::Explicit;
}

void Problem::set_initial_mode(int mode) {
  if (mode < 0 || mode >= n_modes()) {
    throw InputError(fmt::format("initial mode {} out of range (problem has {} modes)", mode,
                                 n_modes()));
  }
  initial_mode_ = mode;
}

void Problem::set_initial_mode_rule(std::function<int(In<double>, In<double>)> rule) {
  initial_mode_rule_ = std::move(rule);
}

int Problem::initial_mode_for(In<double> x0, In<double> p) const {
  if (!initial_mode_rule_) return initial_mode_;
  const int mode = initial_mode_rule_(x0, p);
  if (mode < 0 || mode >= n_modes()) {
    throw InputError(fmt::format("problem '{}': the initial-mode rule chose mode {} but there "
                                 "are {} modes",
                                 name_, mode, n_modes()));
  }
  return mode;
}

void Problem::set_jacobian(int mode, AnalyticJacobian jacobian) {
  if (mode < 0 || mode >= n_modes()) {
    throw InputError(fmt::format("set_jacobian: mode {} out of range", mode));
  }
  modes_[static_cast<size_t>(mode)].jacobian = std::move(jacobian);
}

EventBuilder Problem::add_event_impl(const std::string& name, Direction direction,
                                     Instantiated<GuardFn> guard) {
  require_unique(events_, name, "event");
  Event e;
  e.name = name;
  e.direction = direction;
  e.guard = std::move(guard);
  events_.push_back(std::move(e));
  return EventBuilder(*this, n_events() - 1);
}

EventBuilder Problem::add_rate_event_impl(const std::string& name, Direction direction,
                                          Instantiated<RateGuardFn> guard) {
  EventBuilder builder = add_event_impl(name, direction, {});
  events_.back().rate_guard = std::move(guard);
  return builder;
}

void Problem::add_rest_event(int event, int rest_mode, Instantiated<JumpFn> projection) {
  if (rest_mode < 0 || rest_mode >= n_modes()) {
    throw InputError(fmt::format("rests_in: mode {} out of range (problem '{}' has {} modes)", rest_mode, name_,
                                 n_modes()));
  }
  if (events_.at(static_cast<size_t>(event)).rest_event >= 0) {
    throw InputError(fmt::format("event '{}' already has a resting variant", events_[static_cast<size_t>(event)].name));
  }
  Event rest = events_[static_cast<size_t>(event)];
  rest.name += " (rest)";
  rest.jump = std::move(projection);
  rest.transition = {};  // the projection replaces the transition too
  rest.target_mode = rest_mode;
  rest.transitions.clear();
  rest.watched = false;
  events_.push_back(std::move(rest));
  events_[static_cast<size_t>(event)].rest_event = n_events() - 1;
}

void Problem::add_cost_impl(const std::string& name, RunningCostFunctions running,
                            Instantiated<TerminalCostFn> terminal, RateUse rates) {
  require_unique(costs_, name, "cost");
  costs_.push_back({name, std::move(running), rates, std::move(terminal), {}});
}

bool Problem::running_costs_read_rates() const {
  for (const Cost& c : costs_) {
    if (c.running && c.rates == RateUse::Reads) return true;
  }
  return false;
}

void Problem::add_event_cost_impl(const std::string& name, int event, Instantiated<GuardFn> c) {
  if (event < 0 || event >= n_events()) {
    throw InputError(fmt::format("cost '{}': event {} out of range (problem '{}' has {} events)", name, event, name_,
                                 n_events()));
  }
  auto it = std::find_if(costs_.begin(), costs_.end(), [&](const Cost& cost) { return cost.name == name; });
  if (it == costs_.end()) {
    costs_.push_back({name, {}, RateUse::Reads, {}, {}});
    it = costs_.end() - 1;
  }
  it->at_events.push_back({event, std::move(c)});
}

void Problem::set_outputs_impl(std::vector<std::string> names, std::vector<std::string> units,
                               Instantiated<OutputFn> h) {
  if (units.size() != names.size()) {
    throw InputError(fmt::format("problem '{}': {} output names but {} units", name_, names.size(), units.size()));
  }
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twin = std::adjacent_find(sorted.begin(), sorted.end()); twin != sorted.end()) {
    throw InputError(fmt::format("problem '{}': output '{}' is named twice", name_, *twin));
  }
  outputs_ = NamedOutputs{std::move(names), std::move(units), std::move(h)};
}

bool EventCostTerm::applies_to(const Problem& problem, int k) const {
  return event == k || problem.event(event).rest_event == k;
}

bool Cost::has_terms_for(const Problem& problem, int k) const {
  return std::any_of(at_events.begin(), at_events.end(),
                     [&](const EventCostTerm& term) { return term.applies_to(problem, k); });
}

double Problem::state_scale(In<double> x0) const {
  return std::max(1.0, state_scale_ ? state_scale_(x0) : x0.lpNorm<Eigen::Infinity>());
}

std::vector<std::string> Problem::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& p : parameters_) names.push_back(p.name);
  return names;
}

std::vector<std::string> Problem::cost_names() const {
  std::vector<std::string> names;
  for (const auto& c : costs_) names.push_back(c.name);
  return names;
}

int Problem::parameter_index(const std::string& name) const {
  return index_of(parameter_names(), name, "parameter", name_);
}
int Problem::cost_index(const std::string& name) const {
  return index_of(cost_names(), name, "cost", name_);
}
int Problem::event_index(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& e : events_) names.push_back(e.name);
  return index_of(names, name, "event", name_);
}
int Problem::state_index(const std::string& name) const {
  return index_of(states_, name, "state", name_);
}

Eigen::VectorXd Problem::nominal_parameters() const {
  Eigen::VectorXd p(n_parameters());
  for (int i = 0; i < n_parameters(); ++i) p[i] = parameters_[static_cast<size_t>(i)].nominal;
  return p;
}

void Problem::set_nominal(const std::string& name, double value) {
  const int i = parameter_index(name);
  if (!std::isfinite(value)) {
    throw InputError(fmt::format("parameter '{}' must be finite, got {}", name, value));
  }
  const double previous = parameters_[static_cast<size_t>(i)].nominal;
  parameters_[static_cast<size_t>(i)].nominal = value;
  try {
    check_domains(nominal_parameters());
    if (notes_at_) parameter_notes_ = notes_at_(nominal_parameters());
  } catch (...) {
    parameters_[static_cast<size_t>(i)].nominal = previous;
    throw;
  }
  join_notes();
}

void Problem::add_note(std::string note) {
  added_notes_.push_back(std::move(note));
  join_notes();
}

void Problem::set_parameter_notes(std::function<std::vector<std::string>(In<double>)> notes_at) {
  // Computed before anything is kept: a notes_at that throws leaves the problem as it was.
  std::vector<std::string> notes = notes_at ? notes_at(nominal_parameters()) : std::vector<std::string>{};
  notes_at_ = std::move(notes_at);
  parameter_notes_ = std::move(notes);
  join_notes();
}

void Problem::join_notes() {
  notes_ = added_notes_;
  notes_.insert(notes_.end(), parameter_notes_.begin(), parameter_notes_.end());
}

void Problem::declare_mode_at(int mode, std::string where) {
  if (mode < 0 || mode >= n_modes()) throw InputError(fmt::format("declare_mode_at: mode {} out of range", mode));
  modes_[static_cast<size_t>(mode)].declared_at = std::move(where);
}

void Problem::add_parameter_check(std::function<void(In<double>)> check) {
  parameter_checks_.push_back(std::move(check));
}

void Problem::bound_parameter(const std::string& name, double lower, double upper) {
  const int i = parameter_index(name);
  add_parameter_check([i, name, lower, upper, problem = name_](In<double> p) {
    if (!(p[i] >= lower && p[i] <= upper)) {
      throw InputError(fmt::format("parameter '{}' of problem '{}' must lie in [{}, {}], got {}", name,
                                   problem, lower, upper, p[i]));
    }
  });
}

void Problem::check_domains(const Eigen::VectorXd& p) const {
  validate_parameters(p);
  for (const auto& check : parameter_checks_) check(p);
}

void Problem::add_horizon_check(std::function<void(In<double> p, double t0, double tf)> check) {
  horizon_checks_.push_back(std::move(check));
}

void Problem::check_horizon(In<double> p, double t0, double tf) const {
  for (const auto& check : horizon_checks_) check(p, t0, tf);
}

void Problem::validate() const {
  const auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("problem '{}': {}", name_, what));
  };
  if (states_.empty()) fail("no states (call set_states)");
  if (modes_.empty()) fail("no modes (call add_mode)");
  if (!initial_state_) fail("no initial state (call set_initial_state)");
  if (costs_.empty()) fail("no costs (add at least one running or terminal cost)");
  if (initial_mode_ < 0 || initial_mode_ >= n_modes()) fail("initial mode out of range");
  if (!algebraic_.empty() && algebraic_.size() != states_.size()) {
    fail("the algebraic states were declared before set_states changed the states");
  }
  for (const auto& m : modes_) {
    if (n_algebraic() > 0 && !m.implicit()) {
      fail(fmt::format("mode '{}' is an explicit right-hand side, but the problem has algebraic states: "
                       "write it as a residual (add_residual_mode)",
                       m.name));
    }
    if (m.implicit() && m.jacobian) {
      fail(fmt::format("mode '{}' is a residual: analytic right-hand-side Jacobians do not apply to it", m.name));
    }
  }
  for (const auto& e : events_) {
    if (e.jump && e.transition) {
      fail(fmt::format("event '{}' has both a jump and an implicit transition: give one", e.name));
    }
    if (e.target_mode != kSameMode && (e.target_mode < 0 || e.target_mode >= n_modes())) {
      fail(fmt::format("event '{}' switches to mode {} but there are {} modes", e.name,
                       e.target_mode, n_modes()));
    }
    for (const auto& [from, to] : e.transitions) {
      if (from < 0 || from >= n_modes() || to < 0 || to >= n_modes()) {
        fail(fmt::format("event '{}' has a mode transition {} -> {} but there are {} modes",
                         e.name, from, to, n_modes()));
      }
    }
    for (int m : e.active_modes) {
      if (m < 0 || m >= n_modes()) {
        fail(fmt::format("event '{}' is watched in mode {} but there are {} modes", e.name, m,
                         n_modes()));
      }
    }
    for (int m = 0; m < n_modes() && e.reads_rates() && e.watched; ++m) {
      // The index-2 transfer and adjoint go through the completion, which maps states, not
      // rates: a guard reading rates there has no derivatives in Saltus.
      // Also the mode after a firing that may rest: whether the state stays on the guard there
      // reads the guard's crossing speed in that mode.
      const bool rests_into_index2 = e.rest_event >= 0 && modes_[static_cast<size_t>(e.mode_after(m))].index2();
      if (e.active_in(m) && (modes_[static_cast<size_t>(m)].index2() || rests_into_index2)) {
        fail(fmt::format("event '{}' has a guard that reads rates and is watched in mode '{}'{}, which is index 2 "
                         "(a completion): guards of index-2 modes read t, x and p only (docs/dae.md, \"Events\")",
                         e.name, modes_[static_cast<size_t>(m)].name,
                         modes_[static_cast<size_t>(m)].index2()
                             ? ""
                             : fmt::format(" and may rest into mode '{}'", modes_[static_cast<size_t>(e.mode_after(m))].name)));
      }
    }
  }
  saltus::validate(options_, n_states(), n_parameters());
}

std::string Problem::diagnose_failure(double t, In<double> x, In<double> p) const {
  std::string clauses;
  for (const FailureDiagnosis& diagnosis : failure_diagnoses_) {
    try {
      const std::string clause = diagnosis(t, x, p);
      if (!clause.empty()) clauses += "; " + clause;
    } catch (...) {
      // The state the integrator stopped at may be outside the model's domain: no reading.
    }
  }
  return clauses;
}

void Problem::validate_parameters(const Eigen::VectorXd& p) const {
  if (p.size() != n_parameters()) {
    throw InputError(fmt::format("problem '{}' has {} parameters, got a vector of {}", name_,
                                 n_parameters(), p.size()));
  }
  for (int i = 0; i < p.size(); ++i) {
    if (!std::isfinite(p[i])) {
      throw InputError(fmt::format("parameter '{}' of problem '{}' is not finite ({})",
                                   parameters_[static_cast<size_t>(i)].name, name_, p[i]));
    }
  }
}

}  // namespace saltus
