#pragma once
// `saltus check FILE`: reads a model file (a mechanism or equations) and runs every check a run
// makes before integrating, then describes the model (docs/model-files.md).
#include <ostream>
#include <string>

namespace saltus::cli {

/// Prints the description; returns 0. Throws UsageError for a path that is not a model file and
/// InputError (file:line:column) for a bad one.
int run_check(const std::string& file, std::ostream& out);

}  // namespace saltus::cli
