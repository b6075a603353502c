// The shipped model files by name: shipped_models.hpp (the texts are generated into
// shipped_models_text.cpp at configure time).
#include <saltus/multibody/shipped_models.hpp>

#include <saltus/multibody/model_file.hpp>

#include <filesystem>

namespace saltus::multibody {

const ShippedModel* shipped_model(const std::string& name) {
  for (const ShippedModel& m : shipped_models()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

Model load_shipped_model(const ShippedModel& model) {
  return parse_model(model.text, std::filesystem::path(model.file).filename().string());
}

}  // namespace saltus::multibody
