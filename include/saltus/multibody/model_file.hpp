#pragma once
// Planar model files (YAML). The format is documented in docs/model-files.md with a complete
// example; examples/*.yaml are the canonical models of docs/benchmarks.md.
//
// Every error names the file, the line and column, and the field, e.g.
//   examples/fivebar.yaml:12:5: elements[2].length: expected a number or a parameter name
#include <saltus/multibody/model.hpp>

#include <string>

namespace saltus::multibody {

/// Reads a model file. Throws InputError (file, line, field) for malformed input.
Model load_model(const std::string& path);

/// Parses model text; `source` names it in messages.
Model parse_model(const std::string& text, const std::string& source);

/// True if `name` looks like a model file path (ends in .yaml or .yml).
bool is_model_file(const std::string& name);

}  // namespace saltus::multibody
