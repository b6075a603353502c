#include <saltus/examples/builtin.hpp>

#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/shipped_models.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace saltus::examples {

const std::vector<ExampleInfo>& builtin_examples() {
  static const std::vector<ExampleInfo> list = {
      {"ball1d", "bouncing ball with linear drag (2 states, impacts)", ball1d},
      {"galan", "switched scalar ODE, switches in both directions (seed 002, Sec. 5.1)", galan},
      {"box2d", "point mass bouncing in a box with quadratic drag (walls and floor)", box2d},
      {"time_events", "time-triggered events with state-dependent jumps", time_events},
      {"robertson", "stiff chemical kinetics, the SUNDIALS CVODES example (no events)",
       robertson},
      {"robertson_dae", "Robertson kinetics with the conservation law as algebraic equation (a DAE, on IDAS)",
       robertson_dae},
      {"hiskens", "switched linear system, switching lines as parameters (Hiskens & Pai)",
       hiskens},
      {"circle_drift", "point held on a circle by a multiplier, drift reversed at an event (index-2 DAE, on IDAS)",
       circle_drift},
      {"hysteretic", "oscillator with exponential-model hysteresis and memory (seed 002, Sec. 5.2)", hysteretic},
  };
  static const std::vector<ExampleInfo> with_shipped_models = [] {
    std::vector<ExampleInfo> all = list;
    for (const multibody::ShippedModel& m : multibody::shipped_models()) {
      all.push_back({m.name, m.summary, [&m] { return multibody::make_problem(multibody::load_shipped_model(m)); }});
    }
    return all;
  }();
  return with_shipped_models;
}

void refuse_a_folder(const std::string& name) {
  const auto& all = builtin_examples();
  if (std::any_of(all.begin(), all.end(), [&name](const ExampleInfo& e) { return e.name == name; })) return;
  std::error_code ec;
  if (std::filesystem::is_directory(name, ec)) {
    throw InputError(fmt::format("'{}' is a directory: a model is a built-in example's or a shipped model's name "
                                 "(saltus list) or a model file (*.yaml, *.yml, *.urdf)",
                                 name));
  }
}

Problem make_example(const std::string& name) {
  refuse_a_folder(name);
  std::string known;
  for (const auto& e : builtin_examples()) {
    if (e.name == name) return e.make();
    known += (known.empty() ? "" : ", ") + e.name;
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(name, ec)) {
    // A file whose extension says no model kind (p.xml, ROBOT.URDF): named as the file it is.
    throw InputError(fmt::format("'{}' is a file, but not a model file: a model file's name ends in .yaml, .yml or "
                                 ".urdf (lower case)",
                                 name));
  }
  throw InputError(fmt::format("unknown example '{}' (built-in examples: {})", name, known));
}

}  // namespace saltus::examples
