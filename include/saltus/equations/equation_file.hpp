#pragma once
// Hybrid ODE models written as equations in YAML model files: states with initial values,
// parameters, modes with right-hand sides, events with guards, jumps and mode switches, time
// events, costs and run settings, every formula an expression (saltus/core/expression.hpp)
// evaluated in every scalar type Saltus differentiates with. The format is documented in
// docs/model-files.md, "Equation models"; examples/equations/ holds the shipped models.
//
// Every error is an InputError of one line naming the file, the line and column, the field
// (which names the state, mode, event or cost) and what is wrong, e.g.
//   ball1d.yaml:14:13: modes.flight.rhs[1]: in expression '-g - k*v': unknown name 'k' (...)
#include <saltus/core/problem.hpp>

#include <string>

namespace saltus::equations {

/// True if `path` is a YAML file whose top level is a mapping with a `states` key (an equation
/// model; a mechanism file has none). Reads and parses the file, nothing more. Throws
/// InputError if the file cannot be read ("cannot read model file 'path'") or is not valid
/// YAML (file:line:column).
bool is_equation_file(const std::string& path);

/// Reads an equation model file into a Problem with its default options (horizon, outputs,
/// tolerances, method). Throws InputError (file:line:column: field: what) for bad input.
Problem load_equation_problem(const std::string& path);

/// As load_equation_problem for the YAML `text`; `source` names it in messages.
Problem parse_equation_problem(const std::string& text, const std::string& source);

}  // namespace saltus::equations
