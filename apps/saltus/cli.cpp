#include "cli.hpp"
#include "cli_common.hpp"
#include "check_command.hpp"
#include "optimize_command.hpp"

#include "mechanism_sketch.hpp"
#include "plot_script.hpp"
#include "progress_line.hpp"

#include <saltus/core/parameter_subset.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/core/interrupt.hpp>
#include <saltus/io/atomic_file.hpp>
#include <saltus/io/csv_output.hpp>
#include <saltus/io/json_output.hpp>
#include <saltus/io/report.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/named_outputs.hpp>
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
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <unistd.h>
#include <sstream>
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

RunResult run_methods(const Problem& pb, const Options& options, const RunArgs& a, ProgressLine& progress,
                      std::ostream& err) {
  RunResult r;
  r.method = a.method;
  r.parameters = pb.nominal_parameters();
  const auto& p = r.parameters;
  double seconds = 0.0;
  if (a.method == "simulate") {
    progress.set_method("simulation");
    r.solution = timed(r.simulation_seconds, [&] { return simulate(pb, p, options); });
  } else if (a.method == "forward" || a.method == "all") {
    progress.set_method("forward sensitivity");
    r.solution = timed(seconds, [&] { return forward_sensitivity(pb, p, options); });
    r.estimates.push_back(forward_estimate(r.solution));
    r.seconds.push_back(seconds);
  } else if (a.method != "adjoint") {
    r.solution = simulate(pb, p, options);
  }
  if (a.method == "adjoint" || a.method == "all") {
    progress.set_method("adjoint");
    std::optional<Solution> adj;
    try {
      adj = timed(seconds, [&] { return adjoint(pb, p, options); });
    } catch (const InputError& e) {
      // A problem the adjoint does not cover (a running cost reading an algebraic rate, which only
      // the C++ API can write):
      // asked for alone it is refused; --method all compares the other methods.
      if (a.method == "adjoint") throw;
      fmt::print(err, "saltus: note: no adjoint: {}; --method all compares the other methods\n", e.what());
    }
    if (adj) {
      r.estimates.push_back(adjoint_estimate(*adj));
      r.seconds.push_back(seconds);
      r.initial_state_gradient = adj->initial_state_gradient;
      r.adjoint = adj->adjoint;
      if (a.method == "adjoint") r.solution = std::move(*adj);
    }
  }
  // With --method all, a check that fails (a perturbed run beyond a model's domain) is a note: the
  // forward and adjoint gradients stand, and the others are compared.
  const auto check_method = [&](const char* method, const char* name, auto&& estimate) {
    if (a.method != method && a.method != "all") return;
    progress.set_method(name);
    try {
      r.estimates.push_back(timed(seconds, estimate));
      r.seconds.push_back(seconds);
    } catch (const Interrupted&) {
      throw;
    } catch (const Error& e) {
      if (a.method != "all") throw;
      fmt::print(err, "saltus: note: no {}: {}; --method all compares the other methods\n", name, e.what());
    }
  };
  check_method("fd", "central differences", [&] { return central_differences(pb, p, options, a.fd_step); });
  check_method("complex-step", "complex step", [&] { return complex_step(pb, p, options, a.cs_step); });
  if (r.estimates.size() > 1) r.check = compare_gradients(pb, r.estimates);
  // The named outputs go only to files: evaluate them only when some file is written.
  if (!a.out_dir.empty() || !a.json_path.empty() || !a.animate.empty()) {
    r.outputs = output_trajectory(pb, r.solution, r.parameters,
                                  a.output_sensitivities ? OutputSensitivities::Compute : OutputSensitivities::Skip);
  }
  return r;
}

/// The mechanism of a model file (for mechanism.json and --animate), if the run is of one.

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path == nullptr ? "" : path;
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::filesystem::path dir(std::string(rest.substr(0, colon)));
    std::error_code ec;
    if (!dir.empty() && std::filesystem::exists(dir / program, ec)) return true;
    rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
  }
  return false;
}

/// The picture options, checked before any work.
void check_picture_options(const RunArgs& a, const Problem& pb, const multibody::Model* mechanism) {
  if (a.output_sensitivities) {
    if (a.method != "forward" && a.method != "all") {
      throw UsageError("--output-sensitivities needs forward sensitivities: use it with --method forward or all");
    }
    if (pb.outputs().size() == 0) {
      throw UsageError(fmt::format("--output-sensitivities: '{}' has no named outputs (mechanism model files have "
                                   "them, docs/multibody.md)",
                                   pb.name()));
    }
    if (a.out_dir.empty() && a.json_path.empty()) {
      throw UsageError("--output-sensitivities writes into the --out folder or the --json file: give one of them");
    }
  }
  if (a.animate.empty()) return;
  const std::string extension = std::filesystem::path(a.animate).extension().string();
  if (extension != ".gif" && extension != ".mp4") {
    throw UsageError(fmt::format("--animate {}: the file must end in .gif or .mp4", a.animate));
  }
  if (!mechanism) {
    throw UsageError(fmt::format("--animate draws mechanisms: '{}' is not a mechanism model file", a.name));
  }
  // The animation draws planar points and bodies: a spatial model (a URDF robot) failed only
  // after its whole run ("the mechanism has nothing to draw").
  if (mechanism->points.empty() && mechanism->bodies.empty()) {
    throw UsageError(fmt::format("--animate draws planar mechanisms: '{}' has no planar points or bodies (spatial "
                                 "bodies are not drawn)",
                                 a.name));
  }
  if (extension == ".mp4" && !on_path("ffmpeg")) {
    throw UsageError(fmt::format("--animate {}: an .mp4 needs ffmpeg (Debian: apt-get install ffmpeg); a .gif needs "
                                 "nothing more",
                                 a.animate));
  }
}

/// A folder that is removed with everything in it when the object goes (the CSV files an
/// animation is made from when --out did not ask to keep them).
class ScratchFolder {
 public:
  ScratchFolder() {
    path_ = std::filesystem::temp_directory_path() / fmt::format("saltus-animate-{}", static_cast<long>(getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void write_result_folder(const std::string& folder, const Problem& pb, const RunResult& result,
                         const std::optional<multibody::Model>& mechanism, const Eigen::VectorXd& all_parameters) {
  write_csv(folder, pb, result);
  if (mechanism) {
    AtomicFile file(std::filesystem::path(folder) / "mechanism.json");
    file.stream() << mechanism_sketch(*mechanism, all_parameters).dump(1) << "\n";
    file.commit();
  }
}

/// PNG plots of the --out folder (unless --no-plots) and the --animate file, by the plot
/// script. Plots that cannot be made are a warning (the CSV files are the result); an
/// animation asked for that cannot be made fails the command.
void draw_pictures(const RunArgs& a, const std::string& folder, std::ostream& out, std::ostream& err) {
  std::vector<std::string> arguments = {folder};
  const bool plots = !a.out_dir.empty() && !a.no_plots;
  if (!plots) arguments.emplace_back("--no-plots");
  if (!a.animate.empty()) {
    arguments.emplace_back("--animate");
    arguments.push_back(a.animate);
  }
  if (!plots && a.animate.empty()) return;
  const ScriptRun run = run_plot_script(arguments);
  if (run.status == 0) {
    fmt::print(out, "{}", run.output);
    return;
  }
  std::string reason = run.output;
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
  if (const size_t last = reason.rfind('\n'); last != std::string::npos) reason = reason.substr(last + 1);
  if (reason.empty()) reason = fmt::format("the plot script exited with status {}", run.status);
  if (!a.animate.empty()) throw Error(fmt::format("--animate {}: {}", a.animate, reason));
  fmt::print(err, "saltus: warning: no plots in {}: {} (the CSV files are written; --no-plots skips plots)\n", folder,
             reason);
}

int run_example(const RunArgs& a, std::ostream& stdout_stream, std::ostream& err) {
  const SolverMessageScope messages(err);  // one cap on integrator warnings for the command
  std::ostream& out = report_stream(a.json_path, stdout_stream, err);
  Problem pb = load_problem(a);
  Options options = pb.options();
  apply_overrides(pb, options, a);
  report_notes(pb, a, err);
  const std::optional<multibody::Model> mechanism = mechanism_model(a.name);
  check_picture_options(a, pb, mechanism ? &*mechanism : nullptr);
  const Eigen::VectorXd all_parameters = pb.nominal_parameters();  // the geometry reads every one
  const std::vector<std::string> all_names = pb.parameter_names();
  if (!a.wrt.empty()) {
    try {
      pb = with_free_parameters(pb, split_names(a.wrt));
    } catch (const InputError& e) {
      throw UsageError(fmt::format("--wrt: {}", e.what()));
    }
  }
  // Unwritable outputs fail before the work, not after it.
  if (!a.json_path.empty()) write_output("--json", a.json_path, [&] { require_writable(a.json_path); });
  if (!a.out_dir.empty()) write_output("--out", a.out_dir, [&] { require_writable_folder(a.out_dir); });
  if (!a.animate.empty()) write_output("--animate", a.animate, [&] { require_writable(a.animate); });
  ProgressLine progress(!a.quiet && isatty(STDERR_FILENO) != 0);
  options.on_progress = progress.callback();
  RunResult result = run_methods(pb, options, a, progress, err);
  const std::vector<std::string> chosen = pb.parameter_names();
  for (size_t k = 0; k < all_names.size(); ++k) {
    if (std::find(chosen.begin(), chosen.end(), all_names[k]) != chosen.end()) continue;
    result.fixed_parameters.emplace_back(all_names[k], all_parameters[static_cast<Eigen::Index>(k)]);
  }
  progress.clear();
  throw_if_interrupted(options.tf);  // an interrupt between two methods leaves no output either
  print_report(out, pb, result);
  if (!a.json_path.empty()) {
    write_output("--json", a.json_path, [&] { write_json(a.json_path, pb, result); });
    fmt::print(out, "Wrote {}\n", a.json_path);
  }
  if (!a.out_dir.empty()) {
    write_output("--out", a.out_dir, [&] { write_result_folder(a.out_dir, pb, result, mechanism, all_parameters); });
    fmt::print(out, "Wrote CSV files to {}/\n", a.out_dir);
    draw_pictures(a, a.out_dir, out, err);
  } else if (!a.animate.empty()) {
    const ScratchFolder scratch;
    write_result_folder(scratch.path(), pb, result, mechanism, all_parameters);
    draw_pictures(a, scratch.path(), out, err);
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
  size_t width = 0;
  for (const auto& e : examples::builtin_examples()) width = std::max(width, e.name.size());
  for (const auto& e : examples::builtin_examples()) fmt::print(out, "{:<{}} {}\n", e.name, width, e.summary);
}

}  // namespace

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"Saltus: forward and adjoint sensitivities of hybrid systems, exact through events", "saltus"};
  app.require_subcommand(1);
  auto* list = app.add_subcommand("list", "List the built-in examples and the shipped models run by name");
  auto* run_cmd =
      app.add_subcommand("run", "Run a built-in example, a shipped model or a model file and print its report");
  auto* check_cmd = app.add_subcommand("check", "Check a model file without integrating it");
  std::string check_file;
  check_cmd->add_option("file", check_file, "Model file (*.yaml)")->required();
  std::vector<std::string> check_params;
  check_cmd->add_option("--param", check_params, "Check at an overridden parameter: name=value (repeatable)")
      ->allow_extra_args(false);
  bool check_quiet = false;
  check_cmd->add_flag("--quiet", check_quiet,
                      "Print nothing when the model passes (bad input still gets its one line on stderr and exit 2)");
  OptimizeArgs optimize_args;
  auto* optimize_cmd = add_optimize_command(app, optimize_args);
  RunArgs a;
  run_cmd->add_option("name", a.name, "Example name (see `saltus list`) or a model file (*.yaml, or a URDF robot *.urdf)")->required();
  run_cmd->add_option("--formulation", a.formulation,
                      "Multibody formulation for model files: penalty | index1 | maggi | ggl | stabilized_index1 | index3 (default: the file's)");
  run_cmd->add_option("--param", a.params, "Override a parameter: name=value (repeatable)")->allow_extra_args(false);
  run_cmd->add_option("--tend", a.tend, "Final time [s]");
  run_cmd->add_option("--method", a.method,
                      "simulate (no derivatives) | forward | adjoint | fd | complex-step | all (default forward)")
      ->check(CLI::IsMember({"simulate", "forward", "adjoint", "fd", "complex-step", "all"}));
  run_cmd->add_option("--wrt", a.wrt,
                      "Differentiate with respect to these parameters only, e.g. --wrt e,g (default: all; the "
                      "others stay at their values)")
      ->check(comma_separated_names())
      ->allow_extra_args(false);
  run_cmd->add_option("--checkpoint-steps", a.checkpoint_steps,
                      "adjoint: forward steps between check points (default: chosen per segment)");
  run_cmd->add_option("--adjoint-memory", a.adjoint_memory,
                      "adjoint: bytes held at once for the backward pass, e.g. 512M or 2G (default 256M); "
                      "segments beyond it are recomputed");
  run_cmd->add_option("--lmm", a.lmm, "CVODES method: bdf | adams (default: the example's)")
      ->check(CLI::IsMember({"bdf", "adams"}));
  run_cmd->add_option("--linear-solver", a.linear_solver, kLinearSolverHelp)->check(CLI::IsMember(kLinearSolvers));
  run_cmd->add_option("--nonlinear-solver", a.nonlinear_solver, kNonlinearSolverHelp)
      ->check(CLI::IsMember(kNonlinearSolvers));
  run_cmd->add_option("--integrator", a.integrator,
                      "cvodes | idas | dopri5 | sdirk | rosenbrock (default: cvodes for ODEs, idas for DAEs; idas runs "
                      "an ODE as x' - f = 0; dopri5, sdirk, rosenbrock: Runge-Kutta (explicit 5(4), L-stable "
                      "implicit 4(3), L-stable Rosenbrock 3(2)) whose forward and adjoint give the derivatives of "
                      "the computed steps, docs/discrete-sensitivities.md)")
      ->check(CLI::IsMember({"cvodes", "idas", "dopri5", "sdirk", "rosenbrock"}));
  run_cmd->add_option("--rtol", a.rtol, "Relative tolerance");
  run_cmd->add_option("--atol", a.atol, "Absolute tolerance (all states)");
  run_cmd->add_option("--fd-step", a.fd_step,
                      "Relative step of central differences, h / |p_k| (default: cbrt(rtol))")
      ->check(positive_number());
  run_cmd->add_option("--cs-step", a.cs_step, "Complex step size, absolute (default: 1e-20)")
      ->check(positive_number());
  run_cmd->add_option("--json", a.json_path, "Write results as JSON to this file")->check(non_empty_path());
  run_cmd->add_option("--out", a.out_dir,
                      "Write the result's CSV files here, with PNG plots of them (docs/plots.md)")
      ->check(non_empty_path());
  run_cmd->add_flag("--no-plots", a.no_plots, "With --out: the CSV files only, no PNG plots");
  run_cmd->add_option("--animate", a.animate, "Mechanisms: render the motion to FILE.gif (or FILE.mp4, with ffmpeg)");
  run_cmd->add_flag("--output-sensitivities", a.output_sensitivities,
                    "With --method forward or all: the sensitivities of the named outputs too "
                    "(output_sensitivities.csv, --json)");
  run_cmd->add_flag("--quiet", a.quiet, "No progress line (shown on a terminal for runs longer than about 2 s)");
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
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--method: At Most 1 required but received 2" for an option given twice.
    const std::string what = e.what();
    const auto at_most = what.find(": At Most 1 required");
    if (at_most != std::string::npos) {
      fmt::print(err, "saltus: error: {}: given more than once (it takes one value)\n", what.substr(0, at_most));
    } else {
      fmt::print(err, "saltus: error: {}\n", what);
    }
    return 2;
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
      if (!check_quiet) return run_check(check_file, check_params, out);
      std::ostringstream report;  // the checks run in full; their report is dropped
      return run_check(check_file, check_params, report);
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
