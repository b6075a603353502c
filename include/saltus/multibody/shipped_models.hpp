#pragma once
// The mechanism model files Saltus ships under examples/ that `saltus run NAME`, `saltus check
// NAME`, `saltus optimize NAME` and the Python module's load(NAME) take by name, as the built-in
// examples: the canonical mechanisms of docs/benchmarks.md (fivebar, fivebar_floor, slidercrank,
// and chain, the 8-rod chain). Their YAML text is compiled in (cmake/EmbedShippedModels.cmake),
// so a name runs from any folder and after installation; messages name the file
// (fivebar.yaml:12:3).
#include <saltus/multibody/model.hpp>

#include <string>
#include <vector>

namespace saltus::multibody {

struct ShippedModel {
  const char* name;     ///< what `saltus run` takes: "fivebar"
  const char* file;     ///< the file under the source tree: "examples/fivebar.yaml"
  const char* summary;  ///< one line for `saltus list`
  const char* text;     ///< the file's YAML
};

/// Every shipped model, in the order `saltus list` shows them.
const std::vector<ShippedModel>& shipped_models();

/// The shipped model called `name`, or nullptr.
const ShippedModel* shipped_model(const std::string& name);

/// The model of a shipped model file, read from its text (messages name its file's name).
Model load_shipped_model(const ShippedModel& model);

}  // namespace saltus::multibody
