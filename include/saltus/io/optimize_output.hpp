#pragma once
// What `saltus optimize` prints and writes: one line per evaluation as it happens, the optimum
// as a table of named values, and the files
//   JSON (to_json below): the optimum by name, the cost, the iterations and their history
//   DIR/history.csv     one row per evaluation
//   DIR/convergence.png the cost and the projected gradient norm against the evaluation
#include <saltus/core/problem.hpp>
#include <saltus/optimize/optimize.hpp>

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace saltus {

/// The column heads of print_iterate's lines.
void print_iterate_header(std::ostream& out, const OptimizeOptions& options);
/// One evaluation: index, cost, projected gradient norm, step, events, the varied values, and a
/// warning when the event sequence changed since the previous evaluation.
void print_iterate(std::ostream& out, const OptimizeIterate& it);
/// The optimum as a table of named values with bounds and gradient, the cost, constraints, the
/// algorithm, the number of evaluations and the reason for stopping.
void print_optimum(std::ostream& out, const OptimizeOptions& options, const OptimizeResult& result);

/// {"problem": str, "cost_name": str (the optimized cost), "maximize": bool, "method":
///  "adjoint"|"forward", "algorithm": str, "optimum": {name: value}, "cost": psi at the optimum,
///  "gradient": {name: dpsi/dx}, "projected_gradient_norm", "constraints": [{"cost",
///  "sense": "<="|">=", "bound", "value"}], "parameters": {every parameter: value at the optimum},
///  "converged": bool, "stop_reason": str, "iterations": number of evaluations, "history":
///  [{"evaluation", "x": {name: value}, "cost", "projected_gradient_norm", "step", "events",
///  "event_sequence_changed", "feasible", "best", "failed", "failure"}]}. Non-finite numbers
///  are null.
nlohmann::json to_json(const Problem& problem, const OptimizeOptions& options, const OptimizeResult& result);
/// Writes to_json to `path` whole or not at all; throws InputError naming the path.
void write_optimize_json(const std::string& path, const Problem& problem, const OptimizeOptions& options,
                         const OptimizeResult& result);
/// Writes DIR/history.csv (evaluation, each varied parameter, cost, projected_gradient_norm, step,
/// events, event_sequence_changed, feasible, failed) and DIR/convergence.png.
void write_optimize_history(const std::string& folder, const OptimizeOptions& options, const OptimizeResult& result);

}  // namespace saltus
