#pragma once
// `saltus optimize MODEL --cost NAME [--maximize] --vary NAME=LO:HI ... [--constraint NAME<=V]
//  [--method adjoint|forward] [--json FILE] [--out DIR]` and the run options of `saltus run`.
#include "cli_common.hpp"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace saltus::cli {

struct OptimizeArgs {
  RunArgs run;  ///< model, --param, --tend, tolerances, --formulation, --json, --out, --strict
  std::string cost;
  bool maximize = false;
  std::vector<std::string> vary;
  std::vector<std::string> constraints;
  std::string method = "adjoint";
  int max_evaluations = 200;
};

/// Adds the `optimize` subcommand with its options bound to `args`.
CLI::App* add_optimize_command(CLI::App& app, OptimizeArgs& args);

/// Runs it: a line per evaluation, then the optimum; exit status as for `run`.
int run_optimize(const OptimizeArgs& args, std::ostream& out, std::ostream& err);

}  // namespace saltus::cli
