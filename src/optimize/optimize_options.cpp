// What optimize() accepts: validation of the design variables, constraints and tolerances, and
// the command-line spellings of design variables and cost constraints.
#include <saltus/optimize/optimize.hpp>

#include <saltus/core/number_text.hpp>
#include <saltus/solvers/simulate.hpp>

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <set>

namespace saltus {

namespace {

/// A finite number spelled exactly by `text` (all of it), or InputError naming `what`.
double parse_finite(const std::string& text, const std::string& what) {
  const std::optional<double> value = number_from_text(text);
  if (!value || !std::isfinite(*value)) throw InputError(fmt::format("{}: '{}' is not a finite number", what, text));
  return *value;
}

/// `name` with InputError's message prefixed by what it is.
int cost_named(const Problem& problem, const std::string& name, const std::string& role) {
  try {
    return problem.cost_index(name);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", role, e.what()));
  }
}

void validate_design_variable(const Problem& problem, const DesignVariable& v, const Eigen::VectorXd& nominal) {
  int index = -1;
  try {
    index = problem.parameter_index(v.name);
  } catch (const InputError& e) {
    throw InputError(fmt::format("varied parameter: {}", e.what()));
  }
  if (!std::isfinite(v.lower) || !std::isfinite(v.upper)) {
    throw InputError(fmt::format("varied parameter {}: bounds must be finite, got [{}, {}]", v.name, v.lower, v.upper));
  }
  if (!(v.lower < v.upper)) {
    throw InputError(fmt::format("varied parameter {}: bounds are {} ([{}, {}]): the lower bound must be below the upper",
                                 v.name, v.lower == v.upper ? "empty" : "inverted", v.lower, v.upper));
  }
  const double start = nominal[index];
  if (start < v.lower || start > v.upper) {
    throw InputError(fmt::format("varied parameter {0}: the start {0} = {1} lies outside its bounds [{2}, {3}] "
                                 "(the run starts from the parameter's value: --param {0}=VALUE, or "
                                 "set_param in Python)",
                                 v.name, start, v.lower, v.upper));
  }
  for (const double bound : {v.lower, v.upper}) {  // the whole box must be a valid model
    Eigen::VectorXd p = nominal;
    p[index] = bound;
    try {
      problem.check_domains(p);
    } catch (const InputError& e) {
      throw InputError(fmt::format("varied parameter {}: bound {} is outside the model's domain: {}", v.name, bound, e.what()));
    }
  }
}

}  // namespace

void validate(const Problem& problem, const OptimizeOptions& options) {
  cost_named(problem, options.cost, "cost to optimize");
  if (options.vary.empty()) throw InputError("no parameter to vary (give at least one: --vary NAME=LO:HI)");
  const Eigen::VectorXd nominal = problem.nominal_parameters();
  std::set<std::string> seen;
  for (const DesignVariable& v : options.vary) {
    if (!seen.insert(v.name).second) throw InputError(fmt::format("varied parameter {}: the parameter is varied twice", v.name));
    validate_design_variable(problem, v, nominal);
  }
  for (const CostConstraint& c : options.constraints) {
    cost_named(problem, c.cost, "constrained cost");
    if (!std::isfinite(c.bound)) throw InputError(fmt::format("the bound on cost '{}' must be finite", c.cost));
  }
  if (!(options.x_tolerance > 0.0)) {
    throw InputError(fmt::format("x_tolerance must be positive, got {}", options.x_tolerance));
  }
  if (!(options.gradient_tolerance >= 0.0)) {
    throw InputError(fmt::format("gradient_tolerance must not be negative, got {}", options.gradient_tolerance));
  }
  if (!(options.constraint_tolerance >= 0.0)) {
    throw InputError(fmt::format("constraint_tolerance must not be negative, got {}", options.constraint_tolerance));
  }
  if (options.max_evaluations < 1) {
    throw InputError(fmt::format("max_evaluations must be at least 1, got {}", options.max_evaluations));
  }
  if (options.max_consecutive_failures < 1) {
    throw InputError(
        fmt::format("max_consecutive_failures must be at least 1, got {}", options.max_consecutive_failures));
  }
  validate(options.run, problem.n_states(), problem.n_parameters());
  check_run_options(problem, options.run);  // bad input, not the failed run at the start
}

DesignVariable parse_design_variable(const std::string& text) {
  const auto eq = text.find('=');
  const auto colon = text.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || colon == std::string::npos) {
    throw InputError(fmt::format("--vary '{}': expected NAME=LO:HI", text));
  }
  DesignVariable v;
  v.name = text.substr(0, eq);
  v.lower = parse_finite(text.substr(eq + 1, colon - eq - 1), fmt::format("--vary {}: lower bound", v.name));
  v.upper = parse_finite(text.substr(colon + 1), fmt::format("--vary {}: upper bound", v.name));
  return v;
}

CostConstraint parse_cost_constraint(const std::string& text) {
  CostConstraint c;
  auto at = text.find("<=");
  c.sense = CostConstraint::Sense::AtMost;
  if (at == std::string::npos) {
    at = text.find(">=");
    c.sense = CostConstraint::Sense::AtLeast;
  }
  if (at == std::string::npos || at == 0) {
    throw InputError(fmt::format("--constraint '{}': expected NAME<=VALUE or NAME>=VALUE", text));
  }
  c.cost = text.substr(0, at);
  c.bound = parse_finite(text.substr(at + 2), fmt::format("--constraint {}: bound", c.cost));
  return c;
}

}  // namespace saltus
