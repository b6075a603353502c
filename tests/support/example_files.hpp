#pragma once
// The shipped mechanism model files (examples/*.yaml) as the tests load them.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <string>

namespace saltus::testing {

/// examples/`file` in formulation `type` (the file's other formulation settings kept).
inline Problem example_in(const std::string& file, multibody::FormulationType type) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/" + file);
  multibody::FormulationSettings settings = model.formulation;
  settings.type = type;
  return multibody::make_problem(model, settings);
}

}  // namespace saltus::testing
