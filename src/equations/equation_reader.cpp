// Reads an equation model file (docs/model-files.md, "Equation models") into a Problem.
#include <saltus/equations/equation_file.hpp>
#include <saltus/core/options.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "../yaml/yaml_fields.hpp"
#include "expression_functions.hpp"

namespace saltus::equations {

namespace {

/// How close to t0 a time event may come (relative to max(1, |t0|)): runs resolve time events to
/// 1e-12 relative (time_event_due, segment_driver.hpp).
constexpr double kTimeEventResolution = 1e-12;

std::string join(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The position in the expression `text` of the name in the first `der(name)`, or npos. The
/// text parsed, so its der( ... ) are well formed.
size_t rate_position(const std::string& text, const std::string& name) {
  size_t i = 0;
  while (i < text.size()) {
    if (!name_char(text[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < text.size() && name_char(text[i])) ++i;
    if (text.compare(start, i - start, "der") != 0 || std::isdigit(static_cast<unsigned char>(text[start]))) continue;
    size_t j = text.find_first_not_of(" \t\n\r\f\v", i);
    if (j == std::string::npos || text[j] != '(') continue;
    j = text.find_first_not_of(" \t\n\r\f\v", j + 1);
    if (j == std::string::npos) break;
    size_t end = j;
    while (end < text.size() && name_char(text[end])) ++end;
    if (text.compare(j, end - j, name) == 0) return j;
  }
  return std::string::npos;
}

/// Reads one YAML document into a Problem, keeping the field path for messages.
class Reader : yaml::Fields {
 public:
  Reader(const YAML::Node& root, std::string source) : Fields(std::move(source)), root_(root) {}

  Problem read() {
    check_root(root_, "states:, modes:, ...",
               {"name", "description", "horizon", "outputs", "tolerances", "method", "parameters", "states",
                "algebraic", "modes", "initial_mode", "events", "costs"});
    Problem pb(root_["name"] ? label(root_["name"], "name") : "model",
               root_["description"] ? scalar(root_["description"], "description") : "");
    read_parameters(pb);
    read_states(pb);
    read_algebraic(pb);
    read_modes(pb);
    read_initial_mode(pb);
    read_events(pb);
    read_costs(pb);
    read_settings(pb);
    try {
      pb.validate();
    } catch (const InputError& e) {
      fail(root_, "", e.what());
    }
    return pb;
  }

 private:
  /// Expressions over the parameters only (initial values, event times).
  std::span<const NameGroup> parameters_only() const { return {groups_.data(), 1}; }
  /// Over the parameters, the states and the time t (right-hand sides, guards, jumps).
  std::span<const NameGroup> states_and_time() const { return {groups_.data(), 3}; }
  /// As states_and_time, and the rates der(x) of the differential states (residuals, running
  /// costs, guards).
  std::span<const NameGroup> with_rates() const { return {groups_.data(), 4}; }
  /// As with_rates, and the values before the event, pre(x) and pre(der(x)) (transitions).
  std::span<const NameGroup> with_values_before() const { return {groups_.data(), 6}; }

  Expression parse(const YAML::Node& n, const std::string& field, std::span<const NameGroup> groups) const {
    const std::string text = trim(scalar(n, field));
    if (text.empty() || yaml::non_finite_number(text)) {
      fail(n, field, fmt::format("expected a finite number or an expression, got '{}'", text));
    }
    Expression e = Fields::expression(n, field, text, groups);
    if (groups.size() > size_t(kRates)) check_rates(n, field, text, e);
    return e;
  }

  /// der(z) of an algebraic state z is an error: its rate is not part of the model (a residual
  /// must not read it, and IDAS's value of it is only approximate).
  void check_rates(const YAML::Node& n, const std::string& field, const std::string& text, const Expression& e) const {
    std::vector<int> rates = e.names_in(kRates);
    for (const int i : e.names_in(kRatesBefore)) rates.push_back(i);
    for (const int i : rates) {
      if (!algebraic_[size_t(i)]) continue;
      const std::string& z = states_[size_t(i)];
      std::vector<std::string> differential;
      for (size_t k = 0; k < states_.size(); ++k) {
        if (!algebraic_[k]) differential.push_back(states_[k]);
      }
      const size_t at = rate_position(text, z);
      fail_in_expression(n, field, text, at == std::string::npos ? 0 : at,
                         fmt::format("der({}): '{}' is an algebraic state, and the rate of an algebraic state is "
                                     "not available (der() takes a differential state: {})",
                                     z, z, differential.empty() ? "none" : join(differential)));
    }
  }

  /// The top-level mapping `key`, required and not empty.
  YAML::Node required_map(const std::string& key, const std::string& expected) const {
    const YAML::Node n = require(root_, key, "");
    if (!n.IsMap() || n.size() == 0) fail(n, key, "expected " + expected);
    return n;
  }

  /// A list of one expression per state (`per` says how the count relates to the states: "one
  /// per state", or for residuals "as many equations as states").
  ExpressionList per_state(const YAML::Node& n, const std::string& field, std::span<const NameGroup> groups,
                           const std::string& per = "one per state") const {
    const size_t nx = states_.size();
    if (!n.IsSequence()) {
      fail(n, field, fmt::format("expected a list of {} expressions, {} ({})", nx, per, join(states_)));
    }
    if (n.size() != nx) {
      fail(n, field, fmt::format("expected {} expressions, {} ({}), got {}{}", nx, per, join(states_), n.size(),
                                 n.size() > nx ? " (quote an expression that contains a comma: \"min(x, v)\")" : ""));
    }
    std::vector<Expression> list;
    for (size_t i = 0; i < nx; ++i) list.push_back(parse(n[i], fmt::format("{}[{}]", field, i), groups));
    return std::make_shared<const std::vector<Expression>>(std::move(list));
  }

  /// An implicit transition: one equation per differential state, over the values after the
  /// event (names, der(name)) and before it (pre(name), pre(der(name))).
  ExpressionList per_differential_state(const YAML::Node& n, const std::string& field) const {
    std::vector<std::string> differential;
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!algebraic_[i]) differential.push_back(states_[i]);
    }
    if (!n.IsSequence() || n.size() != differential.size()) {
      fail(n, field, fmt::format("expected a list of {} equations, one per differential state ({}){}",
                                 differential.size(), join(differential),
                                 n.IsSequence() ? fmt::format(", got {}", n.size()) : ""));
    }
    std::vector<Expression> list;
    for (size_t i = 0; i < n.size(); ++i) list.push_back(parse(n[i], fmt::format("{}[{}]", field, i), with_values_before()));
    return std::make_shared<const std::vector<Expression>>(std::move(list));
  }

  /// A parameter or state name: an identifier that expressions can read, new, not reserved.
  void check_name(const YAML::Node& key, const std::string& field, const std::string& name) const {
    // Names an expression may not use for a parameter or a state: they mean something already.
    check_identifier(key, field, name, {"t", "pi", "der"}, "t: time, pi, der(x): rate of x");
    if (std::find(parameters_.begin(), parameters_.end(), name) != parameters_.end() ||
        std::find(states_.begin(), states_.end(), name) != states_.end()) {
      fail(key, field, fmt::format("the name '{}' is already used", name));
    }
  }

  void read_parameters(Problem& pb) {
    const YAML::Node ps = root_["parameters"];
    if (!ps) return;
    if (!ps.IsMap()) fail(ps, "parameters", "expected a mapping name: value (or name: {value:, description:, min:, max:})");
    // Every parameter's name, so that a value reading a later one is told, as one reading an
    // earlier one, that values are numbers or constant expressions (not "unknown name").
    std::vector<std::string> declared;
    for (const auto& kv : ps) declared.push_back(kv.first.as<std::string>());
    const std::array<NameGroup, 1> all_parameters{NameGroup{"parameters", &declared}};
    for (const auto& kv : ps) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "parameters." + name;
      check_name(kv.first, field, name);
      double value = 0.0, lower = -std::numeric_limits<double>::infinity(), upper = -lower;
      std::string description;
      if (kv.second.IsMap()) {
        check_keys(kv.second, field, {"value", "description", "min", "max"});
        value = constant(require(kv.second, "value", field), field + ".value", all_parameters);
        if (kv.second["description"]) description = scalar(kv.second["description"], field + ".description");
        if (kv.second["min"]) lower = constant(kv.second["min"], field + ".min", all_parameters);
        if (kv.second["max"]) upper = constant(kv.second["max"], field + ".max", all_parameters);
        if (!(lower <= upper)) fail(kv.second, field, fmt::format("min {} is above max {}", lower, upper));
        if (!(value >= lower && value <= upper)) {
          fail(kv.second, field, fmt::format("the value {} is outside [min, max] = [{}, {}]", value, lower, upper));
        }
      } else {
        value = constant(kv.second, field, all_parameters);
      }
      pb.add_parameter(name, value, description);
      if (kv.second.IsMap() && (kv.second["min"] || kv.second["max"])) bound(pb, name, location(kv.second) + ": " + field, lower, upper);
      parameters_.push_back(name);
    }
  }

  /// Every value of parameter `name` (overrides included) must lie in [lower, upper]; `where`
  /// ("file:line:col: parameters.k") locates the message.
  static void bound(Problem& pb, const std::string& name, const std::string& where, double lower, double upper) {
    const int i = pb.parameter_index(name);
    pb.add_parameter_check([i, where, lower, upper](In<double> p) {
      if (p[i] >= lower && p[i] <= upper) return;
      throw InputError(fmt::format("{}: the value {} is outside [min, max] = [{}, {}]", where, p[i], lower, upper));
    });
  }

  void read_states(Problem& pb) {
    const YAML::Node xs = required_map("states", "a mapping name: initial value (at least one state)");
    std::vector<std::pair<YAML::Node, std::string>> initial;
    for (const auto& kv : xs) {
      const std::string name = kv.first.as<std::string>();
      check_name(kv.first, "states." + name, name);
      states_.push_back(name);
      initial.emplace_back(kv.second, "states." + name);
    }
    pb.set_states(states_);
    std::vector<Expression> x0;
    const Eigen::VectorXd p = pb.nominal_parameters();
    for (const auto& [node, field] : initial) {
      x0.push_back(parse(node, field, parameters_only()));
      const double v = x0.back().evaluate<double>(p);
      if (!std::isfinite(v)) {
        fail(node, field, fmt::format("'{}' is not finite at the nominal parameters (got {})", x0.back().text(),
                                      std::isnan(v) ? "nan" : fmt::format("{}", v)));
      }
    }
    pb.set_initial_state(initial_state_function(std::make_shared<const std::vector<Expression>>(std::move(x0))));
  }

  /// `algebraic: name` or `algebraic: [name, ...]`: states whose rates do not enter the
  /// residuals; their initial values and the jumps' entries for them are first guesses.
  void read_algebraic(Problem& pb) {
    algebraic_.assign(states_.size(), false);
    differential_ = states_;
    const YAML::Node a = root_["algebraic"];
    if (!a) return;
    const std::string expected = "expected a state name or a list of state names";
    std::vector<std::pair<YAML::Node, std::string>> items;
    if (a.IsSequence()) {
      if (a.size() == 0) fail(a, "algebraic", expected + " (at least one)");
      for (size_t i = 0; i < a.size(); ++i) items.emplace_back(a[i], fmt::format("algebraic[{}]", i));
    } else if (a.IsScalar()) {
      items.emplace_back(a, "algebraic");
    } else {
      fail(a, "algebraic", expected);
    }
    std::vector<std::string> names;
    for (const auto& [node, field] : items) {
      const std::string name = scalar(node, field);
      const auto it = std::find(states_.begin(), states_.end(), name);
      if (it == states_.end()) {
        const bool parameter = std::find(parameters_.begin(), parameters_.end(), name) != parameters_.end();
        fail(node, field,
             parameter ? fmt::format("'{}' is a parameter, not a state (states: {})", name, join(states_))
                       : fmt::format("unknown state '{}' (states: {})", name, join(states_)));
      }
      const size_t i = static_cast<size_t>(it - states_.begin());
      if (algebraic_[i]) fail(node, field, fmt::format("the state '{}' is listed twice", name));
      algebraic_[i] = true;
      names.push_back(name);
    }
    differential_.clear();
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!algebraic_[i]) differential_.push_back(states_[i]);
    }
    pb.set_algebraic_states(names);
  }

  bool has_algebraic() const { return std::find(algebraic_.begin(), algebraic_.end(), true) != algebraic_.end(); }

  std::string algebraic_names() const {
    std::vector<std::string> names;
    for (size_t i = 0; i < states_.size(); ++i) {
      if (algebraic_[i]) names.push_back(states_[i]);
    }
    return join(names);
  }

  /// `name: {rhs: [...]}` (x' = f) or `name: {residual: [...]}` (F = 0).
  void read_modes(Problem& pb) {
    const YAML::Node ms =
        required_map("modes", "a mapping name: {rhs: [...]} or name: {residual: [...]} (at least one mode)");
    for (const auto& kv : ms) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "modes." + name;
      check_label(kv.first, field, name);
      check_keys(kv.second, field, {"rhs", "residual"});
      const YAML::Node rhs = kv.second["rhs"], residual = kv.second["residual"];
      if (rhs && residual) {
        fail(kv.second, field,
             fmt::format("mode '{}' has both rhs and residual: give exactly one (rhs: x' = f, residual: F = 0)", name));
      }
      if (!rhs && !residual) {
        fail(kv.second, field,
             fmt::format("mode '{}' needs exactly one of rhs (x' = f) and residual (F = 0)", name));
      }
      if (rhs) {
        if (has_algebraic()) {
          fail(rhs, field + ".rhs",
               fmt::format("mode '{}' is explicit (rhs), but the file has algebraic states ({}): every mode must be "
                           "a residual (residual: [...])",
                           name, algebraic_names()));
        }
        const int index = pb.add_mode(name, vector_function(per_state(rhs, field + ".rhs", states_and_time())));
        pb.declare_mode_at(index, location(kv.second) + ": " + field);
      } else {
        const int index = pb.add_residual_mode(
            name, residual_function(per_state(residual, field + ".residual", with_rates(), "as many equations as states")));
        pb.declare_mode_at(index, location(kv.second) + ": " + field);
      }
      modes_.push_back(name);
    }
  }

  int mode(const YAML::Node& n, const std::string& field) const {
    const std::string name = scalar(n, field);
    const auto it = std::find(modes_.begin(), modes_.end(), name);
    if (it == modes_.end()) fail(n, field, fmt::format("unknown mode '{}' (modes: {})", name, join(modes_)));
    return static_cast<int>(it - modes_.begin());
  }

  /// A mode name, or {sign_of: r, positive: M1, otherwise: M2}: M1 if r(t0, x0, p) > 0.
  void read_initial_mode(Problem& pb) {
    const YAML::Node n = root_["initial_mode"];
    if (!n) return;
    if (!n.IsMap()) {
      pb.set_initial_mode(mode(n, "initial_mode"));
      return;
    }
    check_keys(n, "initial_mode", {"sign_of", "positive", "otherwise"});
    const Expression r = parse(require(n, "sign_of", "initial_mode"), "initial_mode.sign_of", states_and_time());
    const int positive = mode(require(n, "positive", "initial_mode"), "initial_mode.positive");
    const int otherwise = mode(require(n, "otherwise", "initial_mode"), "initial_mode.otherwise");
    const double t0 = initial_time();
    const std::string where = location(n["sign_of"]) + ": initial_mode.sign_of";
    // Evaluated on real values, also in complex-step runs (Problem::set_initial_mode_rule). A
    // value that is not a number has no sign: refused rather than read as "otherwise".
    pb.set_initial_mode_rule([r, positive, otherwise, t0, where](In<double> x0, In<double> p) {
      const double value = r.evaluate<double>(p, x0, t0);
      if (std::isnan(value)) {
        throw InputError(fmt::format("{}: evaluates to nan at the start (t0 = {}): its sign cannot choose the initial mode",
                                     where, t0));
      }
      return value > 0.0 ? positive : otherwise;
    });
  }

  void read_events(Problem& pb) {
    const YAML::Node es = root_["events"];
    if (!es) return;
    if (!es.IsMap()) fail(es, "events", "expected a mapping name: {guard:, direction:, jump:, next:, ...}");
    for (const auto& kv : es) {
      const std::string name = kv.first.as<std::string>();
      check_label(kv.first, "events." + name, name);
      read_event(pb, name, kv.second);
    }
  }

  /// A time event fires as t rises through its time: one at or before the start never would (at
  /// t0 the run starts on its guard). A parameter check, so --param is held to it too.
  void refuse_times_before_the_start(Problem& pb, const std::string& name, const Expression& at,
                                     const std::string& where) const {
    const double t0 = initial_time();
    auto check = [at, t0, name, where](In<double> p) {
      const double time = at.evaluate<double>(p);
      if (!std::isfinite(time)) {
        throw InputError(fmt::format("{}: the time of the time event '{}' is {}, not a finite number", where, name,
                                     std::isnan(time) ? "nan" : time > 0 ? "inf" : "-inf"));
      }
      if (!(time > t0)) {
        throw InputError(fmt::format("{}: the time event '{}' at t = {} does not come after the start t0 = {}: a time "
                                     "event fires only after t0 (give a jump at the start in the initial states)",
                                     where, name, time, t0));
      }
      // Within the root finder's resolution of t0 the guard t - t_e starts the run at zero, where
      // CVODES sets it aside and a Runge-Kutta step cannot end: the event would never fire.
      if (!(time - t0 > kTimeEventResolution * std::max(1.0, std::abs(t0)))) {
        throw InputError(fmt::format("{}: the time event '{}' at t = {:.17g} comes within {} (relative) of the start "
                                     "t0 = {}, closer than a run resolves time: it would never fire (give a jump at "
                                     "the start in the initial states)",
                                     where, name, time, kTimeEventResolution, t0));
      }
    };
    check(pb.nominal_parameters());
    pb.add_parameter_check(std::move(check));
  }

  void read_event(Problem& pb, const std::string& name, const YAML::Node& n) {
    const std::string field = "events." + name;
    check_keys(n, field,
               {"guard", "direction", "at", "jump", "transition", "next", "only_in", "rests_in", "starts_on_guard"});
    if (n["guard"] && n["at"]) {
      fail(n, field, "has both a guard and a time 'at': give exactly one (guard: a state event, at: a time event)");
    }
    if (!n["guard"] && !n["at"]) fail(n, field, "needs either a guard (with a direction) or a time 'at'");
    std::optional<EventBuilder> event;
    if (n["at"]) {
      if (n["direction"]) fail(n["direction"], field + ".direction", "a time event ('at') fires as t rises: no direction");
      if (n["starts_on_guard"]) {
        fail(n["starts_on_guard"], field + ".starts_on_guard",
             "a time event ('at') has no guard for the initial state to lie on (it fires when t reaches its time)");
      }
      const Expression at = parse(n["at"], field + ".at", parameters_only());
      event.emplace(pb.add_event(name, Direction::Rising, time_guard(at)));
      event->fires_at_a_time();
      refuse_times_before_the_start(pb, name, at, location(n["at"]) + ": " + field + ".at");
    } else {
      const Direction direction = read_direction(require(n, "direction", field), field + ".direction");
      // A guard may read the rates der(y) of differential states: the model then runs on IDAS.
      const Expression guard = parse(n["guard"], field + ".guard", with_rates());
      if (guard.names_in(kRates).empty()) {
        event.emplace(pb.add_event(name, direction, scalar_function(guard)));
      } else {
        event.emplace(pb.add_event(name, direction, running_function(guard)));
      }
    }
    event->declared_at(location(n) + ": " + field);
    bool identity_jump = true;
    if (const YAML::Node j = n["jump"]) {
      const ExpressionList jump = per_state(j, field + ".jump", states_and_time());
      // An algebraic entry is only a first guess: the state after the event does not depend on it.
      for (size_t i = 0; i < states_.size(); ++i) identity_jump &= algebraic_[i] || (*jump)[i].text() == states_[i];
      event->jump(vector_function(jump));
    }
    if (const YAML::Node tr = n["transition"]) {
      if (n["jump"]) fail(tr, field + ".transition", "an event has a jump or a transition, not both");
      event->transition(transition_function(per_differential_state(tr, field + ".transition")));
      identity_jump = false;
    }
    std::vector<int> watched;
    if (const YAML::Node in = n["only_in"]) {
      watched = mode_list(in, field + ".only_in");
      event->only_in(watched);
    }
    if (const YAML::Node next = n["next"]) read_next(*event, next, field + ".next", watched);
    if (const YAML::Node rest = n["rests_in"]) {
      check_keys(rest, field + ".rests_in", {"mode", "jump"});
      const int rest_mode = mode(require(rest, "mode", field + ".rests_in"), field + ".rests_in.mode");
      const ExpressionList projection =
          per_state(require(rest, "jump", field + ".rests_in"), field + ".rests_in.jump", states_and_time());
      event->rests_in(rest_mode, vector_function(projection));
    }
    if (const YAML::Node start = n["starts_on_guard"]) {
      if (boolean(start, field + ".starts_on_guard")) event->starts_on_guard();
    }
    check_changes_something(pb.event(event->index()), n, field, identity_jump);
  }

  Direction read_direction(const YAML::Node& n, const std::string& field) const {
    const std::string d = scalar(n, field);
    if (d == "rising") return Direction::Rising;
    if (d == "falling") return Direction::Falling;
    if (d == "either") return Direction::Either;
    fail(n, field, fmt::format("unknown direction '{}' (rising, falling or either)", d));
  }

  /// A mode name or a list of them.
  std::vector<int> mode_list(const YAML::Node& n, const std::string& field) const {
    if (!n.IsSequence()) return {mode(n, field)};
    if (n.size() == 0) fail(n, field, "expected at least one mode");
    std::vector<int> out;
    for (size_t i = 0; i < n.size(); ++i) out.push_back(mode(n[i], fmt::format("{}[{}]", field, i)));
    return out;
  }

  /// `next: mode`, or `next: {from: to, ...}` (modes not listed stay).
  void read_next(EventBuilder& event, const YAML::Node& n, const std::string& field, const std::vector<int>& watched) {
    if (!n.IsMap()) {
      event.switch_to(mode(n, field));
      return;
    }
    std::map<int, int> transitions;
    for (const auto& kv : n) {
      const int from = mode(kv.first, field);
      if (!watched.empty() && std::find(watched.begin(), watched.end(), from) == watched.end()) {
        fail(kv.first, field, fmt::format("the event is not watched in mode '{}' (only_in)", modes_[size_t(from)]));
      }
      transitions[from] = mode(kv.second, field + "." + kv.first.as<std::string>());
    }
    event.switch_to(std::move(transitions));
  }

  /// An event that keeps the state and the mode would fire again and again at one instant (a
  /// cycle of zero-time events), or at best do nothing: it needs a jump or a next mode.
  void check_changes_something(const Event& e, const YAML::Node& n, const std::string& field, bool identity_jump) const {
    if (!identity_jump) return;
    for (int m = 0; m < static_cast<int>(modes_.size()); ++m) {
      if (!e.active_in(m) || e.mode_after(m) != m) continue;
      fail(n, field,
           fmt::format("in mode '{}' the event keeps the state and the mode, so it would change nothing "
                       "(give a jump, or a next mode)",
                       modes_[size_t(m)]));
    }
  }

  void read_costs(Problem& pb) {
    const YAML::Node cs = required_map("costs", "a mapping name: {running:, terminal:, events:} (at least one cost)");
    for (const auto& kv : cs) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "costs." + name;
      check_label(kv.first, field, name);
      check_keys(kv.second, field, {"running", "terminal", "events"});
      const YAML::Node g = kv.second["running"], w = kv.second["terminal"], at = kv.second["events"];
      if (!g && !w && !at) fail(kv.second, field, "needs a running, a terminal or an events part");
      if (g && w) {
        pb.add_cost(name, running_function(parse(g, field + ".running", with_rates())),
                    scalar_function(parse(w, field + ".terminal", states_and_time())));
      } else if (g) {
        pb.add_running_cost(name, running_function(parse(g, field + ".running", with_rates())));
      } else if (w) {
        pb.add_terminal_cost(name, scalar_function(parse(w, field + ".terminal", states_and_time())));
      }
      if (at) read_event_costs(pb, name, at, field + ".events");
    }
  }

  /// `events: {event: c, ...}`: the cost adds c(t_e, x(t_e-), p) at every firing of the event.
  void read_event_costs(Problem& pb, const std::string& cost, const YAML::Node& n, const std::string& field) {
    if (!n.IsMap() || n.size() == 0) fail(n, field, "expected a mapping event: expression (at least one)");
    std::vector<std::string> events;  // the file's events (not their resting variants)
    for (int k = 0; k < pb.n_events(); ++k) {
      if (pb.event(k).watched) events.push_back(pb.event(k).name);
    }
    for (const auto& kv : n) {
      const std::string event = kv.first.as<std::string>();
      if (std::find(events.begin(), events.end(), event) == events.end()) {
        fail(kv.first, field, fmt::format("unknown event '{}' (events: {})", event, join(events)));
      }
      const Expression c = parse(kv.second, field + "." + event, states_and_time());
      pb.add_event_cost(cost, pb.event_index(event), scalar_function(c));
    }
  }

  /// (t0, tf) from `horizon`, checked (the time events read t0 before the settings are read).
  std::pair<double, double> horizon() const {
    // No default horizon: a silent 1 s would hide a forgotten field.
    const YAML::Node h = require(root_, "horizon", "");
    double t0 = 0.0, tf = 0.0;
    if (h.IsSequence()) {
      if (h.size() != 2) fail(h, "horizon", "expected tf or [t0, tf]");
      t0 = constant(h[0], "horizon[0]", parameters_only());
      tf = constant(h[1], "horizon[1]", parameters_only());
    } else {
      tf = constant(h, "horizon", parameters_only());
    }
    if (!(tf > t0)) fail(h, "horizon", fmt::format("the final time must exceed the initial time (got [{}, {}])", t0, tf));
    return {t0, tf};
  }
  double initial_time() const { return horizon().first; }

  void read_settings(Problem& pb) {
    Options& o = pb.options();
    std::tie(o.t0, o.tf) = horizon();
    if (const YAML::Node n = root_["outputs"]; n && n.IsSequence()) {
      o.output_times = output_times(n, o.t0, o.tf);
    } else if (n) {
      const double v = constant(n, "outputs", parameters_only());
      if (v != std::floor(v) || v < 2 || v > kMaxOutputTimes) {
        fail(n, "outputs", fmt::format("expected an integer number of output times, 2 ... {}, got {}", kMaxOutputTimes, v));
      }
      o.n_outputs = static_cast<int>(v);
    }
    if (const YAML::Node t = root_["tolerances"]) {
      check_keys(t, "tolerances", {"rtol", "atol", "cost_atol"});
      if (t["rtol"]) o.rtol = relative_tolerance(t["rtol"], positive(t["rtol"], "tolerances.rtol"));
      if (const YAML::Node a = t["atol"]; a && a.IsSequence()) {
        if (a.size() != states_.size()) {
          fail(a, "tolerances.atol",
               fmt::format("expected a number, or a list of {} numbers, one per state ({}), got {}", states_.size(),
                           join(states_), a.size()));
        }
        o.atol_per_state.clear();
        for (size_t i = 0; i < a.size(); ++i) {
          o.atol_per_state.push_back(positive(a[i], fmt::format("tolerances.atol[{}]", i)));
        }
      } else if (a) {
        o.atol = positive(a, "tolerances.atol");
      }
      if (t["cost_atol"]) o.cost_atol = positive(t["cost_atol"], "tolerances.cost_atol");
    }
    if (const YAML::Node m = root_["method"]) {
      const std::string method = scalar(m, "method");
      if (method == "bdf") {
        o.method = LinearMultistep::BDF;
      } else if (method == "adams") {
        o.method = LinearMultistep::Adams;
      } else {
        fail(m, "method", fmt::format("unknown method '{}' (bdf or adams)", method));
      }
    }
  }

  /// `outputs: [t_1, ..., t_m]`: the output times, strictly increasing in [t0, tf].
  std::vector<double> output_times(const YAML::Node& n, double t0, double tf) const {
    if (n.size() == 0) fail(n, "outputs", "expected a number of output times, or a list of output times");
    if (n.size() > static_cast<size_t>(kMaxOutputTimes)) {
      fail(n, "outputs", fmt::format("at most {} output times, got {}", kMaxOutputTimes, n.size()));
    }
    std::vector<double> times;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string field = fmt::format("outputs[{}]", i);
      const double t = constant(n[i], field, parameters_only());
      if (!(t >= t0 && t <= tf)) fail(n[i], field, fmt::format("the output time {} is outside the horizon [{}, {}]", t, t0, tf));
      if (!times.empty() && !(t > times.back())) {
        fail(n[i], field, fmt::format("output times must increase strictly: {} follows {}", t, times.back()));
      }
      times.push_back(t);
    }
    return times;
  }


  double positive(const YAML::Node& n, const std::string& field) const {
    const double v = constant(n, field, parameters_only());
    if (!(v > 0.0)) fail(n, field, fmt::format("must be positive, got {}", v));
    return v;
  }

  const YAML::Node& root_;
  std::vector<std::string> parameters_, states_, modes_;
  std::vector<bool> algebraic_;  ///< per state, from `algebraic`
  /// The states that are not algebraic: the rates messages offer (der(z) of an algebraic z is refused).
  std::vector<std::string> differential_;
  const std::vector<std::string> time_ = {"t"};
  /// Expressions' name groups, in the order expression_functions.hpp evaluates them.
  const std::array<NameGroup, 6> groups_ = {NameGroup{"parameters", &parameters_},
                                            NameGroup{"states", &states_},
                                            NameGroup{"time", &time_},
                                            NameGroup{"rates", &states_, true, false, &differential_},
                                            NameGroup{"states before the event", &states_, false, true},
                                            NameGroup{"rates before the event", &states_, true, true, &differential_}};
};

}  // namespace

Problem parse_equation_problem(const std::string& text, const std::string& source) {
  return yaml::read_text<Reader>(text, source);
}

Problem load_equation_problem(const std::string& path) { return parse_equation_problem(yaml::read_file(path), path); }

bool is_equation_file(const std::string& path) {
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".urdf") == 0) return false;  // a multibody robot
  const YAML::Node root = yaml::load_text(yaml::read_file(path), path);
  // `modes` too: a file that forgot `states` is still an equation model, and is told so.
  return root.IsMap() && (static_cast<bool>(root["states"]) || static_cast<bool>(root["modes"]));
}

}  // namespace saltus::equations
