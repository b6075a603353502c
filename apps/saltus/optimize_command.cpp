#include "optimize_command.hpp"

#include <saltus/core/interrupt.hpp>
#include <saltus/io/atomic_file.hpp>
#include <saltus/io/optimize_output.hpp>
#include <saltus/optimize/optimize.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace saltus::cli {

namespace {

/// The command line's design variables and constraints, with their errors as usage errors.
OptimizeOptions optimize_options(const OptimizeArgs& a, const Options& run) {
  OptimizeOptions o;
  o.cost = a.cost;
  o.maximize = a.maximize;
  o.method = a.method == "forward" ? GradientMethod::Forward : GradientMethod::Adjoint;
  o.run = run;
  o.max_evaluations = a.max_evaluations;
  try {
    for (const auto& v : a.vary) o.vary.push_back(parse_design_variable(v));
    for (const auto& c : a.constraints) o.constraints.push_back(parse_cost_constraint(c));
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  return o;
}

}  // namespace

CLI::App* add_optimize_command(CLI::App& app, OptimizeArgs& a) {
  auto* cmd = app.add_subcommand("optimize", "Optimize a cost over parameters within bounds, with exact gradients");
  cmd->add_option("name", a.run.name, "Example name (see `saltus list`) or a model file (*.yaml, or a URDF robot *.urdf)")->required();
  cmd->add_option("--cost", a.cost, "The cost to minimize (or maximize)")->required();
  cmd->add_flag("--maximize", a.maximize, "Maximize the cost instead of minimizing it");
  cmd->add_option("--vary", a.vary, "A parameter to vary within bounds: NAME=LO:HI (repeatable); it starts from "
                                    "its nominal value (--param NAME=VALUE)")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--constraint", a.constraints, "Keep a cost bounded: NAME<=VALUE or NAME>=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--method", a.method, "Gradient method: adjoint | forward (default adjoint)")
      ->check(CLI::IsMember({"adjoint", "forward"}));
  cmd->add_option("--max-evaluations", a.max_evaluations, "Runs allowed (default 200)")->check(positive_integer());
  cmd->add_option("--param", a.run.params, "Override a parameter (also the start of a varied one): name=value")
      ->allow_extra_args(false);
  cmd->add_option("--tend", a.run.tend, "Final time [s]");
  cmd->add_option("--formulation", a.run.formulation,
                  "Multibody formulation for model files: penalty | index1 | maggi | ggl | stabilized_index1 | index3 (default: the file's)");
  cmd->add_option("--lmm", a.run.lmm, "CVODES method: bdf | adams (default: the example's)")
      ->check(CLI::IsMember({"bdf", "adams"}));
  cmd->add_option("--linear-solver", a.run.linear_solver, kLinearSolverHelp)->check(CLI::IsMember(kLinearSolvers));
  cmd->add_option("--nonlinear-solver", a.run.nonlinear_solver, kNonlinearSolverHelp)
      ->check(CLI::IsMember(kNonlinearSolvers));
  cmd->add_option("--integrator", a.run.integrator,
                  "cvodes | idas | dopri5 | sdirk | rosenbrock (default: cvodes for ODEs, idas for DAEs; dopri5, sdirk, rosenbrock: "
                  "gradients of the computed "
                  "steps, exact to round-off)")
      ->check(CLI::IsMember({"cvodes", "idas", "dopri5", "sdirk", "rosenbrock"}));
  cmd->add_option("--rtol", a.run.rtol, "Relative tolerance");
  cmd->add_option("--atol", a.run.atol, "Absolute tolerance (all states)");
  cmd->add_option("--adjoint-memory", a.run.adjoint_memory, "adjoint: bytes held at once (default 256M)");
  cmd->add_option("--json", a.run.json_path, "Write the optimum and the history as JSON to this file")
      ->check(non_empty_path());
  cmd->add_option("--out", a.run.out_dir, "Write history.csv and convergence.png here")->check(non_empty_path());
  cmd->add_flag("--strict", a.run.strict, "Refuse input that Saltus would correct with a warning");
  cmd->add_flag("--quiet", a.run.quiet, "No line per evaluation: only the optimum and why it stopped");
  return cmd;
}

int run_optimize(const OptimizeArgs& a, std::ostream& stdout_stream, std::ostream& err) {
  const SolverMessageScope messages(err);
  std::ostream& out = report_stream(a.run.json_path, stdout_stream, err);
  Problem pb = load_problem(a.run);
  Options run = pb.options();
  apply_overrides(pb, run, a.run);
  report_notes(pb, a.run, err);
  OptimizeOptions options = optimize_options(a, run);
  try {
    validate(pb, options);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  if (!a.run.json_path.empty()) write_output("--json", a.run.json_path, [&] { require_writable(a.run.json_path); });
  if (!a.run.out_dir.empty()) write_output("--out", a.run.out_dir, [&] { require_writable_folder(a.run.out_dir); });
  if (!a.run.quiet) {
    print_iterate_header(out, options);
    options.on_iterate = [&out](const OptimizeIterate& it) {
      print_iterate(out, it);
      out.flush();
    };
  }
  const OptimizeResult result = optimize(pb, options);
  print_optimum(out, options, result);
  if (!a.run.json_path.empty()) {
    write_output("--json", a.run.json_path, [&] { write_optimize_json(a.run.json_path, pb, options, result); });
    fmt::print(out, "Wrote {}\n", a.run.json_path);
  }
  if (!a.run.out_dir.empty()) {
    write_output("--out", a.run.out_dir, [&] { write_optimize_history(a.run.out_dir, options, result); });
    fmt::print(out, "Wrote {}/history.csv and {}/convergence.png\n", a.run.out_dir, a.run.out_dir);
  }
  if (!result.converged) {
    fmt::print(err, "saltus: optimization did not converge: {}\n", result.stop_reason);
    return 1;
  }
  return 0;
}

}  // namespace saltus::cli
