#include "cli_common.hpp"

#include <saltus/core/number_text.hpp>
#include <saltus/core/options.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/multibody/shipped_models.hpp>
#include <saltus/io/atomic_file.hpp>

#include <fmt/format.h>
#include <unistd.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

namespace saltus::cli {

double parse_number(const std::string& text, const std::string& what) {
  const std::optional<double> value = number_from_text(text);
  if (!value) throw UsageError(fmt::format("{}: '{}' is not a number", what, text));
  if (!std::isfinite(*value)) throw UsageError(fmt::format("{}: value must be finite, got '{}'", what, text));
  return *value;
}

long parse_memory_size(const std::string& text) {
  const std::string what = "--adjoint-memory";
  std::string digits = text;
  double unit = 1.0;
  auto strip = [&](std::string_view suffix, double factor) {
    if (digits.size() > suffix.size() &&
        std::equal(suffix.rbegin(), suffix.rend(), digits.rbegin(),
                   [](char a, char b) { return a == std::toupper(static_cast<unsigned char>(b)); })) {
      digits.resize(digits.size() - suffix.size());
      unit = factor;
      return true;
    }
    return false;
  };
  // Every unit is binary, KB as KiB: a user who writes 512MB means the same budget as 512M.
  for (const auto& [suffix, factor] :
       {std::pair<std::string_view, double>{"KIB", 0x1p10}, {"MIB", 0x1p20}, {"GIB", 0x1p30}, {"KB", 0x1p10},
        {"MB", 0x1p20}, {"GB", 0x1p30}, {"K", 0x1p10}, {"M", 0x1p20}, {"G", 0x1p30}, {"B", 1.0}}) {
    if (strip(suffix, factor)) break;
  }
  double value = 0.0;
  try {
    value = parse_number(digits, what);
  } catch (const UsageError&) {
    throw UsageError(fmt::format("{}: '{}' is not a size (bytes, or a number with K, M or G, e.g. 512M)",
                                 what, text));
  }
  const double bytes = value * unit;
  if (!(bytes >= static_cast<double>(kMinAdjointMemoryBudget))) {
    throw UsageError(fmt::format("{} must be at least 1M (1048576 bytes), got {}", what, text));
  }
  if (!(bytes <= static_cast<double>(kMaxAdjointMemoryBudget))) {
    throw UsageError(fmt::format("{} must be at most 1048576G (2^50 bytes), got {}", what, text));
  }
  return static_cast<long>(bytes);
}


std::optional<multibody::Model> mechanism_model(const std::string& name) {
  if (const multibody::ShippedModel* shipped = multibody::shipped_model(name)) return multibody::load_shipped_model(*shipped);
  if (!multibody::is_model_file(name) || equations::is_equation_file(name)) return std::nullopt;
  return multibody::load_model(name);
}

Problem load_problem(const RunArgs& a) {
  if (multibody::is_model_file(a.name) && equations::is_equation_file(a.name)) {
    if (!a.formulation.empty()) {
      throw UsageError(fmt::format("--formulation applies to mechanism model files, not to the equation model '{}'",
                                   a.name));
    }
    return equations::load_equation_problem(a.name);
  }
  if (const std::optional<multibody::Model> mechanism = mechanism_model(a.name)) {
    const multibody::Model& model = *mechanism;
    multibody::FormulationSettings settings = model.formulation;
    if (!a.formulation.empty()) {
      try {
        settings.type = multibody::parse_formulation(a.formulation);
      } catch (const InputError& e) {
        throw UsageError(fmt::format("--formulation: {}", e.what()));
      }
    }
    return multibody::make_problem(model, settings);
  }
  try {
    examples::refuse_a_folder(a.name);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  if (!a.formulation.empty()) {
    throw UsageError(fmt::format("--formulation applies to model files (*.yaml), not to the built-in "
                                 "example '{}'",
                                 a.name));
  }
  return examples::make_example(a.name);
}

void apply_parameter_overrides(Problem& pb, const std::vector<std::string>& params) {
  struct Assignment {
    std::string text, name;
    double value;
  };
  std::vector<Assignment> pending;
  for (const auto& assignment : params) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError(fmt::format("--param '{}': expected name=value", assignment));
    }
    // "e = 0.5" (quoted with its spaces) means e=0.5: the spaces around '=' are not the name's.
    const std::string name = trim(assignment.substr(0, eq));
    if (name.empty()) throw UsageError(fmt::format("--param '{}': expected name=value", assignment));
    // The last of two values would win silently, and a script that sets one twice has a bug.
    for (const Assignment& earlier : pending) {
      if (earlier.name == name) {
        throw UsageError(fmt::format("--param {}: given twice (also --param {})", assignment, earlier.text));
      }
    }
    pending.push_back({assignment, name,
                       parse_number(trim(assignment.substr(eq + 1)), fmt::format("--param {}", name))});
  }
  while (!pending.empty()) {
    std::vector<Assignment> refused;
    std::string first_error;
    for (const Assignment& a : pending) {
      try {
        pb.set_nominal(a.name, a.value);
      } catch (const InputError& e) {
        if (refused.empty()) first_error = fmt::format("--param {}: {}", a.text, e.what());
        refused.push_back(a);
      }
    }
    if (refused.size() == pending.size()) throw UsageError(first_error);
    pending = std::move(refused);
  }
}

void apply_overrides(Problem& pb, Options& options, const RunArgs& a) {
  apply_parameter_overrides(pb, a.params);
  if (!a.tend.empty()) {
    const double tf = parse_number(a.tend, "--tend");
    if (!(tf > options.t0)) {
      throw UsageError(fmt::format("--tend {}: the final time must exceed the initial time {}", a.tend, options.t0));
    }
    set_horizon(options, tf);
  }
  if (!a.checkpoint_steps.empty()) {
    const double steps = parse_number(a.checkpoint_steps, "--checkpoint-steps");
    if (steps < 1.0 || steps != std::floor(steps)) {
      throw UsageError(fmt::format("--checkpoint-steps must be a positive integer, got {}",
                                   a.checkpoint_steps));
    }
    if (steps > static_cast<double>(kMaxCheckpointSteps)) {
      throw UsageError(fmt::format("--checkpoint-steps must be at most {}, got {}", kMaxCheckpointSteps,
                                   a.checkpoint_steps));
    }
    options.checkpoint_steps = static_cast<long>(steps);
  }
  if (!a.adjoint_memory.empty()) options.adjoint_memory_budget = parse_memory_size(a.adjoint_memory);
  if (a.integrator == "cvodes") options.integrator = Integrator::Cvodes;
  if (a.integrator == "idas") options.integrator = Integrator::Idas;
  if (a.integrator == "dopri5") options.integrator = Integrator::Dopri5;
  if (a.integrator == "sdirk") options.integrator = Integrator::Sdirk;
  if (a.integrator == "rosenbrock") options.integrator = Integrator::Rosenbrock;
  if (!a.lmm.empty()) {
    options.method = a.lmm == "adams" ? LinearMultistep::Adams : LinearMultistep::BDF;
  }
  if (a.linear_solver == "dense") options.linear_solver = LinearSolver::Dense;
  if (a.linear_solver == "krylov") options.linear_solver = LinearSolver::Krylov;
  if (a.linear_solver == "sparse") options.linear_solver = LinearSolver::Sparse;
  if (a.linear_solver == "auto") options.linear_solver = LinearSolver::Automatic;
  if (a.nonlinear_solver == "newton") options.nonlinear_solver = NonlinearSolver::Newton;
  if (a.nonlinear_solver == "fixed-point") options.nonlinear_solver = NonlinearSolver::FixedPoint;
  if (a.nonlinear_solver == "auto") options.nonlinear_solver = NonlinearSolver::Automatic;
  if (!a.rtol.empty()) {
    options.rtol = parse_number(a.rtol, "--rtol");
    if (!(options.rtol >= kMinRtol)) {
      throw UsageError(fmt::format("--rtol must be at least {} (double precision's limit), got {}", kMinRtol, a.rtol));
    }
  }
  if (!a.atol.empty()) {
    const double atol = parse_number(a.atol, "--atol");
    // As a model file's tolerances.atol: 0 gives a state that passes through zero an infinite
    // error weight, which CVODES and IDAS refuse only once the run has started.
    if (atol <= 0.0) throw UsageError(fmt::format("--atol must be positive, got {}", a.atol));
    options.atol = atol;
    options.atol_per_state.clear();
  }
}

void report_notes(const Problem& pb, const RunArgs& a, std::ostream& err) {
  for (const std::string& remark : pb.remarks()) fmt::print(err, "saltus: note: {}\n", remark);
  for (const std::string& note : pb.notes()) {
    if (a.strict) throw UsageError(fmt::format("{} (refused by --strict)", note));
    fmt::print(err, "saltus: warning: {}\n", note);
  }
}

void require_writable_folder(const std::string& folder) {
  require_writable(std::filesystem::path(folder) / "trajectory.csv");
}

std::ostream& report_stream(const std::string& json_path, std::ostream& out, std::ostream& err) {
  return !json_path.empty() && open_descriptor(json_path) == STDOUT_FILENO ? err : out;
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return "must be a number, got '" + text + "'";
        if (!std::isfinite(value)) return "must be a finite number, got " + text;
        if (!(value > 0.0)) return "must be a positive number, got " + text;
        return {};
      },
      "POSITIVE");
}

CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value)) return "must be a positive integer, got '" + text + "'";
        if (!(value >= 1.0) || value != std::floor(value) || value > std::numeric_limits<int>::max()) {
          return "must be a positive integer, got " + text;
        }
        text = std::to_string(static_cast<long>(value));  // 2e2 as the integer parser takes it
        return {};
      },
      "POSITIVE INTEGER");
}

CLI::Validator non_empty_path() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "an empty path" : ""; }, "PATH");
}

CLI::Validator comma_separated_names() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        for (const std::string& name : split_names({text})) {
          if (name.empty()) return "an empty name in '" + text + "' (names separated by single commas, e.g. e,g)";
        }
        return {};
      },
      "NAME[,NAME...]");
}

std::vector<std::string> split_names(const std::vector<std::string>& occurrences) {
  std::vector<std::string> names;
  for (const std::string& text : occurrences) {
    size_t start = 0;
    for (size_t comma = text.find(','); ; comma = text.find(',', start)) {
      names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return names;
}

}  // namespace saltus::cli
