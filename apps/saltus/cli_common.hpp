#pragma once
// What the `saltus` commands share: the usage error, number and size parsing, the model named
// on the command line with its overrides, notes, and output checks.
#include <saltus/core/error.hpp>
#include <saltus/core/options.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/multibody/model.hpp>

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace saltus::cli {

/// A command-line value that is not acceptable (exit status 2).
struct UsageError : InputError {
  using InputError::InputError;
};

/// The number `text` spells (all of it, finite), or UsageError naming `what`.
double parse_number(const std::string& text, const std::string& what);

/// "--adjoint-memory" sizes: bytes, or a number with K, M or G, KB, MB or GB, KiB, MiB or GiB,
/// any case, all binary ("512M", "512MB", "1.5G", "64MiB"), at least kMinAdjointMemoryBudget.
long parse_memory_size(const std::string& text);

/// The --linear-solver option's help and its values (run and optimize).
inline constexpr const char* kLinearSolverHelp =
    "Newton solver: dense | krylov (CVODES: matrix-free GMRES) | sparse (IDAS: KLU on the sparse Newton matrix) | "
    "auto (CVODES: krylov from 64 states, with forward sensitivities from 192; IDAS: sparse from 14 components) (default: the model's: auto for "
    "mechanisms except penalty, dense otherwise)";
inline const std::vector<std::string> kLinearSolvers{"dense", "krylov", "sparse", "auto"};
/// The --nonlinear-solver option's help and its values (run and optimize).
inline constexpr const char* kNonlinearSolverHelp =
    "CVODES corrector: newton | fixed-point (functional iteration, no linear solver: non-stiff models only) | auto "
    "(fixed-point from 64 states when the linear solver is auto too) (default: the model's: auto for mechanisms except "
    "penalty and those with compliant contacts, newton otherwise)";
inline const std::vector<std::string> kNonlinearSolvers{"newton", "fixed-point", "auto"};

struct RunArgs {
  std::string name;
  std::vector<std::string> params;
  std::string tend, rtol, atol;
  std::string method = "forward";
  std::string lmm;
  std::string linear_solver;     // empty: the model's (Options::linear_solver)
  std::string nonlinear_solver;  // empty: the model's (Options::nonlinear_solver)
  std::string integrator;        // empty: CVODES for explicit problems, IDAS for DAEs
  std::string json_path, out_dir;
  double fd_step = 0.0;  // 0: cbrt(rtol)
  double cs_step = 1e-20;
  std::string checkpoint_steps;  // empty: the example's setting
  std::string adjoint_memory;    // empty: Options::adjoint_memory_budget's default
  std::string formulation;       // empty: the model file's choice
  bool strict = false;           // notes about corrected input are errors
  bool output_sensitivities = false;  // differentiate the named outputs (forward runs)
  bool no_plots = false;         // --out writes CSV files only
  std::string animate;           // mechanism animation file (.gif or .mp4); empty: none
  std::vector<std::string> wrt;  // differentiate with respect to these parameters only; empty: all
  bool quiet = false;            // no progress line
};

/// The mechanism `name` names: a shipped model's name (fivebar, fivebar_floor, slidercrank,
/// chain: saltus/multibody/shipped_models.hpp) or a mechanism model file's path; none for an
/// equation model file or a built-in example.
std::optional<multibody::Model> mechanism_model(const std::string& name);

/// A built-in example by name, or the problem of a model file (path ending in .yaml / .yml) or
/// a shipped model's name: an equation model, or a mechanism in its own formulation or the one
/// --formulation asks for.
Problem load_problem(const RunArgs& a);

/// Sets the --param values (name=value each). Each is checked as it is set (domains, and a
/// model's start at the new values), so values that are only valid together (a point and the
/// floor below it moved down at once) cannot all pass in one order: an assignment refused in one
/// pass is retried after the others, and only one that no pass accepts is an error (UsageError).
void apply_parameter_overrides(Problem& pb, const std::vector<std::string>& params);

/// Applies --param, --tend, --rtol, --atol, --lmm, --linear-solver, --nonlinear-solver, --integrator,
/// --checkpoint-steps and --adjoint-memory.
void apply_overrides(Problem& pb, Options& options, const RunArgs& a);

/// Prints the problem's notes about corrected input as warnings, or refuses them (--strict).
void report_notes(const Problem& pb, const RunArgs& a, std::ostream& err);

/// Runs `write` and names the option if the output cannot be written.
template <class Write>
void write_output(const char* option, const std::string& path, Write&& write) {
  try {
    write();
  } catch (const std::exception& e) {
    throw UsageError(std::string(option) + " " + path + ": " + e.what());
  }
}

/// An output folder is writable if a file can be created in it.
void require_writable_folder(const std::string& folder);

/// Where a command's report goes: `out`, or `err` when --json writes onto the process's stdout
/// (`--json /dev/stdout`), which then holds the JSON alone (for a pipe into a JSON reader).
std::ostream& report_stream(const std::string& json_path, std::ostream& out, std::ostream& err);

/// CLI11 validators with messages that name the value: a positive number ("must be a positive
/// number, got 0"; CLI11's own said "Value 0 not in range 0.000000 to 1.79...e308"), and a
/// path that is not empty (an unset shell variable gave `--json ''`, and nothing was written).
CLI::Validator positive_number();
/// A validator for whole numbers from 1 (counts such as --max-evaluations): a fraction or a
/// word gets Saltus's message, not the parser's "Could not convert".
CLI::Validator positive_integer();
CLI::Validator non_empty_path();
/// A comma-separated list of names ("e,g"): an empty one (a stray comma, an empty value) is
/// refused, naming the text.
CLI::Validator comma_separated_names();
/// The names of every occurrence of such a flag, split at its commas (empty names kept: the
/// validator refused them).
std::vector<std::string> split_names(const std::vector<std::string>& occurrences);

}  // namespace saltus::cli
