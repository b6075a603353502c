#include "cli.hpp"
#include "cli_common.hpp"
#include "check_command.hpp"
#include "optimize_command.hpp"

#include <saltus/examples/builtin.hpp>
#include <saltus/core/interrupt.hpp>
#include <saltus/io/atomic_file.hpp>
#include <saltus/io/csv_output.hpp>
#include <saltus/io/json_output.hpp>
#include <saltus/io/report.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/solvers/solver_messages.hpp>
#include <saltus/verify/gradient.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace saltus::cli {

namespace {

template <class F>
auto timed(double& seconds, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  auto value = f();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return value;
}

RunResult run_methods(const Problem& pb, const Options& options, const RunArgs& a, std::ostream& err) {
  RunResult r;
  // Index-2 modes have no adjoint yet: --method all runs the other methods (asked for alone, the
  // adjoint is refused with the reason).
  const bool skip_adjoint = a.method == "all" && pb.has_index2_modes();
  if (skip_adjoint) {
    fmt::print(err, "saltus: note: {} has index-2 modes, whose adjoint is not available yet (docs/dae.md); --method "
                    "all compares forward sensitivities, central differences and the complex step\n",
               pb.name());
  }
  r.method = a.method;
  r.parameters = pb.nominal_parameters();
  const auto& p = r.parameters;
  double seconds = 0.0;
  if (a.method == "forward" || a.method == "all") {
    r.solution = timed(seconds, [&] { return forward_sensitivity(pb, p, options); });
    r.estimates.push_back(forward_estimate(r.solution));
    r.seconds.push_back(seconds);
  } else if (a.method != "adjoint") {
    r.solution = simulate(pb, p, options);
  }
  if (a.method == "adjoint" || (a.method == "all" && !skip_adjoint)) {
    Solution adj = timed(seconds, [&] { return adjoint(pb, p, options); });
    r.estimates.push_back(adjoint_estimate(adj));
    r.seconds.push_back(seconds);
    r.initial_state_gradient = adj.initial_state_gradient;
    r.adjoint = adj.adjoint;
    if (a.method == "adjoint") r.solution = std::move(adj);
  }
  if (a.method == "fd" || a.method == "all") {
    r.estimates.push_back(timed(seconds, [&] { return central_differences(pb, p, options, a.fd_step); }));
    r.seconds.push_back(seconds);
  }
  if (a.method == "complex-step" || a.method == "all") {
    r.estimates.push_back(timed(seconds, [&] { return complex_step(pb, p, options, a.cs_step); }));
    r.seconds.push_back(seconds);
  }
  if (r.estimates.size() > 1) r.check = compare_gradients(pb, r.estimates);
  return r;
}

int run_example(const RunArgs& a, std::ostream& out, std::ostream& err) {
  const SolverMessageScope messages(err);  // one cap on integrator warnings for the command
  Problem pb = load_problem(a);
  Options options = pb.options();
  apply_overrides(pb, options, a);
  report_notes(pb, a, err);
  // Unwritable outputs fail before the work, not after it.
  if (!a.json_path.empty()) write_output("--json", a.json_path, [&] { require_writable(a.json_path); });
  if (!a.out_dir.empty()) write_output("--out", a.out_dir, [&] { require_writable_folder(a.out_dir); });
  const RunResult result = run_methods(pb, options, a, err);
  throw_if_interrupted(options.tf);  // an interrupt between two methods leaves no output either
  print_report(out, pb, result);
  if (!a.json_path.empty()) {
    write_output("--json", a.json_path, [&] { write_json(a.json_path, pb, result); });
    fmt::print(out, "Wrote {}\n", a.json_path);
  }
  if (!a.out_dir.empty()) {
    write_output("--out", a.out_dir, [&] { write_csv(a.out_dir, pb, result); });
    fmt::print(out, "Wrote CSV files to {}/\n", a.out_dir);
  }
  return 0;
}

extern "C" void on_stop_signal(int) { request_interrupt(); }

/// SIGINT and SIGTERM ask the solvers to stop at their next step; a second signal of the same
/// kind ends the process at once (the handler resets itself).
class StopSignals {
 public:
  StopSignals() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

void list_examples(std::ostream& out) {
  for (const auto& e : examples::builtin_examples()) fmt::print(out, "{:<12} {}\n", e.name, e.summary);
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"Saltus: forward and adjoint sensitivities of hybrid systems, exact through events", "saltus"};
  app.require_subcommand(1);
  auto* list = app.add_subcommand("list", "List the built-in examples");
  auto* run_cmd = app.add_subcommand("run", "Run a built-in example and print its report");
  auto* check_cmd = app.add_subcommand("check", "Check a model file without integrating it");
  std::string check_file;
  check_cmd->add_option("file", check_file, "Model file (*.yaml)")->required();
  OptimizeArgs optimize_args;
  auto* optimize_cmd = add_optimize_command(app, optimize_args);
  RunArgs a;
  run_cmd->add_option("name", a.name, "Example name (see `saltus list`) or a model file (*.yaml)")->required();
  run_cmd->add_option("--formulation", a.formulation,
                      "Multibody formulation for model files: penalty | index1 | maggi | ggl | stabilized_index1 (default: the file's)");
  run_cmd->add_option("--param", a.params, "Override a parameter: name=value (repeatable)");
  run_cmd->add_option("--tend", a.tend, "Final time [s]");
  run_cmd->add_option("--method", a.method, "forward | adjoint | fd | complex-step | all")
      ->check(CLI::IsMember({"forward", "adjoint", "fd", "complex-step", "all"}));
  run_cmd->add_option("--checkpoint-steps", a.checkpoint_steps,
                      "adjoint: forward steps between CVODES check points (default 100)");
  run_cmd->add_option("--adjoint-memory", a.adjoint_memory,
                      "adjoint: bytes held at once for the backward pass, e.g. 512M or 2G (default 256M); "
                      "segments beyond it are recomputed");
  run_cmd->add_option("--lmm", a.lmm, "CVODES method: bdf | adams (default: the example's)")
      ->check(CLI::IsMember({"bdf", "adams"}));
  run_cmd->add_option("--integrator", a.integrator,
                      "cvodes | idas (default: cvodes for ODEs, idas for DAEs; idas runs an ODE as x' - f = 0)")
      ->check(CLI::IsMember({"cvodes", "idas"}));
  run_cmd->add_option("--rtol", a.rtol, "Relative tolerance");
  run_cmd->add_option("--atol", a.atol, "Absolute tolerance (all states)");
  run_cmd->add_option("--fd-step", a.fd_step,
                      "Relative step of central differences (default: cbrt(rtol))")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--cs-step", a.cs_step, "Complex step size")->check(CLI::PositiveNumber);
  run_cmd->add_option("--json", a.json_path, "Write results as JSON to this file");
  run_cmd->add_option("--out", a.out_dir, "Write trajectory, sensitivity and event CSV files here");
  run_cmd->add_flag("--strict", a.strict,
                    "Refuse input that Saltus would correct with a warning (e.g. initial velocities "
                    "that violate the constraints)");
  if (argc > 1) {
    const std::string command = argv[1];
    if (command != "list" && command != "run" && command != "check" && command != "optimize" &&
        command.rfind("-", 0) != 0) {
      fmt::print(err, "saltus: error: unknown command '{}' (commands: list, run, check, optimize)\n", command);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print(out, "{}", app.help());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print(out, "{}", app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(err, "saltus: error: {}\n", e.what());
    return 2;
  }
  try {
    if (list->parsed()) {
      list_examples(out);
      return 0;
    }
    if (check_cmd->parsed()) {
      return run_check(check_file, out);
    }
    (void)run_cmd;
    clear_interrupt();
    const StopSignals signals;
    if (optimize_cmd->parsed()) return run_optimize(optimize_args, out, err);
    return run_example(a, out, err);
  } catch (const Interrupted& e) {
    fmt::print(err, "saltus: {} (no output written)\n", e.what());
    return 130;
  } catch (const UsageError& e) {
    fmt::print(err, "saltus: error: {}\n", e.what());
    return 2;
  } catch (const InputError& e) {
    fmt::print(err, "saltus: error: {}\n", e.what());
    return 2;
  } catch (const Error& e) {
    fmt::print(err, "saltus: run failed: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(err, "saltus: run failed: {}\n", e.what());
    return 1;
  }
}

}  // namespace saltus::cli
