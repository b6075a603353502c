// Malformed model files give one clear error naming the file, the line and the field.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <gtest/gtest.h>

#include <string>

#include "support/model_text.hpp"

namespace {

using namespace saltus;
using namespace saltus::multibody;

const std::string kGood = R"(name: pendulum
horizon: 1
parameters: {L: 1.0}
ground: {O: [0, 0]}
points: {p: {position: [1, 0]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: L, mass: 1}
costs: {height: {terminal: [{signal: y, of: p}]}}
)";

std::string error_of(const std::string& text) { return test::model_error(text); }

std::string replace(const std::string& text, const std::string& from, const std::string& to) {
  return test::replace_once(text, from, to);
}

TEST(ModelFiles, TheReferenceModelLoads) { EXPECT_EQ(error_of(kGood), ""); }

// The file's description comes first in the problem's, then the formulation that runs (Python's
// Model.description and the report's first line showed only the generated part).
TEST(ModelFiles, TheProblemDescriptionStartsWithTheFiles) {
  const Problem pb = make_problem(parse_model(replace(kGood, "horizon: 1", "horizon: 1\ndescription: a rod on a pin"), "model.yaml"));
  EXPECT_EQ(pb.description().rfind("a rod on a pin; planar multibody model (index1 formulation, KKT matrix", 0), 0u)
      << pb.description();
  EXPECT_EQ(make_problem(parse_model(kGood, "model.yaml")).description().rfind("planar multibody model (", 0), 0u);
}

TEST(ModelFiles, UnknownElementTypeNamesLineFieldAndChoices) {
  const std::string msg = error_of(replace(kGood, "type: bar", "type: beam"));
  EXPECT_NE(msg.find("model.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("elements[0].type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown element type 'beam'"), std::string::npos) << msg;
}

TEST(ModelFiles, MissingFieldIsNamed) {
  const std::string msg = error_of(replace(kGood, ", length: L", ""));
  EXPECT_NE(msg.find("model.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("elements[0].length: missing field"), std::string::npos) << msg;
}

// A cost term without its signal is named at the term (the reader once asked the missing key
// for its position, and yaml-cpp threw instead of the reader's error).
TEST(ModelFiles, CostTermWithoutSignalIsNamed) {
  const std::string msg = error_of(replace(kGood, "{signal: y, of: p}", "{of: p, weight: 2}"));
  EXPECT_NE(msg.find("model.yaml:8:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("costs.height.terminal[0].signal: missing field"), std::string::npos) << msg;
}

TEST(ModelFiles, WrongTypeNamesTheValue) {
  const std::string msg = error_of(replace(kGood, "mass: 1}", "mass: heavy}"));
  EXPECT_NE(msg.find("model.yaml:7:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("elements[0].mass"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'heavy'"), std::string::npos) << msg;
  const std::string list = error_of(replace(kGood, "position: [1, 0]", "position: 1"));
  EXPECT_NE(list.find("model.yaml:5:"), std::string::npos) << list;
  EXPECT_NE(list.find("points.p.position: expected [x, y]"), std::string::npos) << list;
}

TEST(ModelFiles, UnknownFieldAndUnknownPointAreNamed) {
  const std::string field = error_of(replace(kGood, "mass: 1}", "mass: 1, colour: red}"));
  EXPECT_NE(field.find("elements[0].colour: unknown field"), std::string::npos) << field;
  const std::string point = error_of(replace(kGood, "to: p,", "to: q,"));
  EXPECT_NE(point.find("elements[0].to: unknown point 'q'"), std::string::npos) << point;
}

TEST(ModelFiles, MalformedYamlNamesTheLine) {
  const std::string msg = error_of(replace(kGood, "points: {p: {position: [1, 0]}}", "points: {p: [1, 0"));
  EXPECT_NE(msg.find("model.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed YAML"), std::string::npos) << msg;
}

// A tab in the indentation is named where it is (yaml-cpp gave up a line later with "illegal
// map value").
TEST(ModelFiles, ATabInTheIndentationIsNamed) {
  EXPECT_EQ(error_of("horizon: 1\nstates:\n\tx: 1\nmodes: {A: {rhs: [-x]}}\n"),
            "model.yaml:3:1: malformed YAML: a tab in the indentation (YAML indents with spaces only)");
  EXPECT_EQ(error_of("horizon: 1\nstates:\n  \tx: 1\n"),
            "model.yaml:3:3: malformed YAML: a tab in the indentation (YAML indents with spaces only)");
}

// An empty file and an empty costs mapping are located too (they named no line).
TEST(ModelFiles, AnEmptyFileOrCostsMappingIsLocated) {
  EXPECT_EQ(error_of(""), "model.yaml:1:1: the file is empty: a model file is a YAML mapping (an equation model: "
                         "horizon:, states:, modes:, ...; a mechanism: points:, elements:, ...)");
  EXPECT_EQ(error_of(replace(kGood, "costs: {height: {terminal: [{signal: y, of: p}]}}", "costs: {}")),
            "model.yaml:8:8: costs: expected a mapping name: {running: [...], terminal: [...]} (at least one cost)");
}

TEST(ModelFiles, MechanismThatCannotBeAssembledIsReported) {
  // A second bar of length 3 from a pin 1 m away cannot meet the first bar's end.
  std::string text = replace(kGood, "ground: {O: [0, 0]}", "ground: {O: [0, 0], Q: [0.5, 0]}");
  text = replace(text, "points: {p: {position: [1, 0]}}",
                 "points: {p: {position: [1, 0]}, r: {position: [1, 1]}}");
  text = replace(text, "costs:", "  - {type: bar, from: p, to: r, length: 1}\n  - {type: bar, from: Q, to: r, length: 9}\nindependent: [p.y]\ncosts:");
  const std::string msg = error_of(text);
  EXPECT_NE(msg.find("cannot be assembled"), std::string::npos) << msg;
  EXPECT_NE(msg.find("p.y"), std::string::npos) << msg;
}

TEST(ModelFiles, NonFiniteParameterAndBadFormulationAreRejected) {
  EXPECT_NE(error_of(replace(kGood, "L: 1.0", "L: .nan")).find("parameters.L: expected a finite number"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "horizon: 1", "horizon: 1\nformulation: lagrange")).find("unknown formulation 'lagrange'"),
            std::string::npos);
  EXPECT_THROW(load_model("/nonexistent/model.yaml"), InputError);
}

// A given position far from an assembled configuration is corrected with a warning naming the
// field and the correction (the bob of a unit pendulum drawn at (1, 0.3): the independent y
// stays, x moves to sqrt(1 - 0.09) = 0.953939, by 0.0461 m, more than 1 % of the model's size,
// the diagonal of the box around O and p, sqrt(1.09) = 1.04 m).
TEST(ModelFiles, LargeAssemblyCorrectionsAreNoted) {
  const Problem pb = make_problem(parse_model(replace(kGood, "position: [1, 0]", "position: [1, 0.3]"), "model.yaml"));
  ASSERT_EQ(pb.notes().size(), 1u);
  const std::string& note = pb.notes()[0];
  EXPECT_NE(note.find("model.yaml:5:"), std::string::npos) << note;
  EXPECT_NE(note.find("assembly moved p.x from 1 to 0.953939 (by 0.0461 m, more than 1 % of the model's size, 1.04 m)"),
            std::string::npos)
      << note;
  // A guess within 1 % is corrected silently.
  EXPECT_TRUE(make_problem(parse_model(replace(kGood, "position: [1, 0]", "position: [1, 0.005]"), "model.yaml"))
                  .notes()
                  .empty());
}

}  // namespace

namespace {

// The default gravity (docs/model-files.md, the Fields table): along -y, along -z for a model of
// spatial bodies only, and along -y for the spatial bodies of a model with planar parts too.
TEST(ModelFiles, DefaultGravityFollowsTheModelsKind) {
  const std::string spatial_body = "spatial:\n  bodies:\n    ball: {mass: 1, inertia: [1, 1, 1], position: [0, 0, 1]}\n";
  const std::string costs = "costs:\n  z: {terminal: [{signal: z, of: ball}]}\n";
  const Model spatial = parse_model("name: s\nhorizon: 1\n" + spatial_body + costs, "s.yaml");
  EXPECT_EQ(spatial.gravity_y.constant, 0.0);
  EXPECT_EQ(spatial.gravity_z.constant, -9.81);
  const Model mixed = parse_model("name: m\nhorizon: 1\npoints:\n  a: {position: [0, 0]}\nelements:\n"
                                  "  - {type: point_mass, point: a, mass: 1}\n" + spatial_body + costs,
                                  "m.yaml");
  EXPECT_EQ(mixed.gravity_y.constant, -9.81);
  EXPECT_EQ(mixed.gravity_z.constant, 0.0);
}

}  // namespace

namespace {

// A planar body's stated angular velocity is checked on its own: a slider on a vertical guide,
// pulled by a distance driver (so its translational velocity is derived, 0.6 m/s), whose stated
// spin the constraints keep. Before, the unstated velocity drew a warning "the stated initial
// velocity violates the velocity constraints" and --strict refused the file.
TEST(ModelFiles, AnUnstatedBodyVelocityDrawsNoWarning) {
  const std::string slider = R"(name: winch
horizon: 1
parameters: {A: 0.2, w: 3}
ground: {O: [0, 0]}
bodies:
  slider: {mass: 2, inertia: 0.01, position: [0, -1], angular_velocity: 0.5}
elements:
  - {type: point_on_line, name: guide, point: slider, line_point: O, direction: [0, 1]}
  - {type: distance_driver, name: winch, from: O, to: slider, function: {offset: 1, amplitude: A, frequency: w}}
costs:
  y_T: {terminal: [{signal: y, of: slider}]}
)";
  EXPECT_TRUE(make_problem(parse_model(slider, "winch.yaml")).notes().empty());
  // A stated velocity the driver changes is named with its line and column.
  const Problem stated = make_problem(parse_model(
      replace(slider, "angular_velocity: 0.5}", "angular_velocity: 0.5, velocity: [0, 0]}"), "winch.yaml"));
  ASSERT_EQ(stated.notes().size(), 1u);
  EXPECT_EQ(stated.notes()[0].rfind("winch.yaml:6:", 0), 0u) << stated.notes()[0];
  EXPECT_NE(stated.notes()[0].find("bodies.slider.velocity"), std::string::npos) << stated.notes()[0];
}

}  // namespace

namespace {

// A fully driven spatial mechanism is refused at the joint that took its last freedom, with the
// spatial joints' and normalizations' rows (before: "elements: ..." with no rows listed).
TEST(ModelFiles, AFullyDrivenSpatialMechanismNamesItsLastJoint) {
  const std::string driven = R"(name: driven_pendulum
horizon: 1
spatial:
  bodies:
    rod: {mass: 1, inertia: [0.1, 0.1, 0.01], position: [0, 0, -0.5]}
  joints:
    - {type: revolute, name: hinge, a: ground, b: rod, point_a: [0, 0, 0], point_b: [0, 0, 0.5], axis_a: [0, 1, 0], axis_b: [0, 1, 0]}
    - {type: rotational_driver, name: motor, joint: hinge, function: {rate: 1}}
costs:
  z: {terminal: [{signal: z, of: rod}]}
)";
  try {
    make_problem(parse_model(driven, "driven.yaml"));
    FAIL() << "a fully driven mechanism was accepted";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("driven.yaml:8:7: spatial.joints[1]: ", 0), 0u) << message;
    EXPECT_NE(message.find("joint 'hinge' (5), joint 'motor' (1), 1 normalizations"), std::string::npos) << message;
  }
}

}  // namespace
