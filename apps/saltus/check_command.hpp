#pragma once
// `saltus check FILE`: reads a model file (a mechanism or equations) and runs every check a run
// makes before integrating, then describes the model (docs/model-files.md).
#include <ostream>
#include <string>
#include <vector>

namespace saltus::cli {

/// Prints the description at the parameters' values after `params` (--param name=value, as
/// `saltus run` takes them); returns 0. Throws UsageError for a path that is not a model file or
/// a bad override, and InputError (file:line:column) for a bad model.
int run_check(const std::string& file, const std::vector<std::string>& params, std::ostream& out);

}  // namespace saltus::cli
