#pragma once
// The `saltus` command, callable in-process so that tests can drive it.
#include <ostream>

namespace saltus::cli {

/// Runs the command with argv; writes the report to `out` and one-line errors to `err`.
/// Returns the exit status: 0 success, 1 a run failed, 2 bad input (command line or model),
/// 130 interrupted (SIGINT/SIGTERM stop the solvers at their next step; nothing is written).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace saltus::cli
