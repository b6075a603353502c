// Validation before integration: every field with a physical domain, the structure of the
// mechanism and its initial state are checked when the problem is built, and each failure is one
// InputError naming file:line:col, the field or element, and the value. Overrides of parameters
// (Problem::set_nominal, the command's --param) go through the same checks.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "support/model_text.hpp"

namespace {

using namespace saltus;
using namespace saltus::multibody;

// A pendulum hanging to the right of its pivot, then a second rod to point q.
const std::string kHead = R"(name: pendulum
horizon: 1
parameters: {L: 1.0, m: 1.0, e: 0.5}
ground: {O: [0, 0], C: [0, 5]}
costs: {height: {terminal: [{signal: y, of: p}]}}
)";

std::string error_of(const std::string& text, FormulationType type = FormulationType::Index1) {
  try {
    const Model model = parse_model(text, "model.yaml");
    FormulationSettings settings = model.formulation;
    settings.type = type;
    make_problem(model, settings);
  } catch (const InputError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("not an InputError: ") + e.what();
  }
  return "";
}

struct BadModel {
  const char* what;
  std::string body;                    // appended to kHead
  std::vector<std::string> expected;  // parts of the message
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// "model.yaml: " or "model.yaml:<line>:<column>: " at the start of a message.
bool located(const std::string& message) {
  const std::string file = "model.yaml";
  if (message.rfind(file, 0) != 0) return false;
  size_t i = file.size();
  if (message.compare(i, 2, ": ") == 0) return true;
  for (int part = 0; part < 2; ++part) {
    if (i >= message.size() || message[i] != ':') return false;
    const size_t digits = ++i;
    while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i]))) ++i;
    if (i == digits) return false;
  }
  return message.compare(i, 2, ": ") == 0;
}

const std::vector<BadModel>& bad_models() {
  static const std::vector<BadModel> cases = {
      {"negative rod mass", R"(points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: L, mass: -2}]
)", {"model.yaml:7:", "elements[0].mass", "bar 'rod' needs mass >= 0, got -2"}},
      {"zero bar length", R"(points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 0, mass: 1}]
)", {"model.yaml:7:", "elements[0].length", "needs length > 0, got 0"}},
      {"negative length through a parameter", R"(points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: -1 * L, mass: 1}]
)", {"elements[0].length", "got -1 (from '-L' with L = 1)"}},
      {"zero point mass", R"(points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 1}, {type: point_mass, point: p, mass: 0}]
)", {"elements[1].mass", "needs mass > 0, got 0"}},
      {"zero body mass", R"(bodies: {b: {mass: 0, inertia: 1, position: [1, 0]}}
points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
)", {"model.yaml:6:", "bodies.b.mass", "body 'b' needs mass > 0, got 0"}},
      {"negative inertia", R"(bodies: {b: {mass: 1, inertia: -m, position: [1, 0]}}
points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
)", {"bodies.b.inertia", "got -1 (from '-m' with m = 1)"}},
      {"negative stiffness through a scaled parameter", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: spring, from: O, to: p, stiffness: -2*m, rest_length: 1}]
)", {"elements[1].stiffness", "got -2 (from '-2*m' with m = 1)"}},
      {"negative stiffness", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: spring, from: O, to: p, stiffness: -3, rest_length: 1}]
)", {"elements[1].stiffness", "needs stiffness >= 0, got -3"}},
      {"restitution above one", R"(points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: 1.5}]
)", {"model.yaml:8:", "contacts[0].restitution", "needs restitution in [0, 1], got 1.5"}},
      {"negative restitution", R"(points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: -0.2}]
)", {"contacts[0].restitution", "got -0.2"}},
      {"zero contact normal", R"(points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 0]}, restitution: e}]
)", {"contacts[0].line.normal", "needs a non-zero normal, got [0, 0]"}},
      {"zero line direction", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: point_on_line, point: p, line_point: O, direction: [0, 0]}]
)", {"elements[1].direction", "non-zero direction"}},
      {"duplicate element names", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, name: pm, point: p, mass: 1}, {type: point_mass, name: pm, point: p, mass: 1}]
)", {"model.yaml:7:", "elements[1].name", "the element name 'pm' is used twice"}},
      {"duplicate contact names", R"(points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts:
  - {name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}
  - {name: floor, point: p, line: {point: [0, -1], normal: [0, 1]}, restitution: e}
)", {"contacts[1].name", "the contact name 'floor' is used twice"}},
      {"duplicate key", R"(points: {p: {position: [1, 0]}}
horizon: 3
elements: [{type: point_mass, point: p, mass: 1}]
)", {"model.yaml:7:1: horizon: given twice"}},
      {"bar from a point to itself", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: bar, name: loop, from: p, to: p, length: 1}]
)", {"elements[1]", "bar 'loop' connects 'p' to itself"}},
      {"redundant constraints", R"(points: {p: {position: [1, 0]}, q: {position: [2, 0]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: 1, mass: 1}
  - {type: bar, name: copy, from: O, to: p, length: 1}
  - {type: bar, name: rod2, from: p, to: q, length: 1, mass: 1}
)", {"redundant or conflicting constraints", "bar 'rod'", "bar 'copy'", "model.yaml:8:5",
          // located at the first dependent row's element (it began "model.yaml: model ...")
          "elements[0]: model '"}},
      {"no degree of freedom", R"(points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 1, mass: 1}, {type: bar, name: rod2, from: C, to: p, length: 5}]
)", {"leave no degree of freedom", "bar 'rod' (1), bar 'rod2' (1)"}},
      {"cannot be assembled", R"(points: {p: {position: [1, 0]}, q: {position: [2, 0]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: 1, mass: 1}
  - {type: bar, name: rod2, from: p, to: q, length: 1, mass: 1}
  - {type: point_on_line, name: rail, point: p, line_point: C, direction: [1, 0]}
)", {"cannot be assembled", "largest in"}},
      {"singular mass matrix", R"(points: {p: {position: [1, 0]}, q: {position: [2, 0]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: 1, mass: 1}
  - {type: bar, name: rod2, from: p, to: q, length: 1}
)", {"model.yaml:6:", "points.q", "cannot start at t0", "coordinates without mass: q.x, q.y"}},
      {"partitioning law on a dependent coordinate", R"(points: {p: {position: [1, 1]}, q: {position: [2, 1]}}
independent: [p.y]
elements:
  - {type: point_mass, point: p, mass: 1}
  - {type: bar, name: rod, from: p, to: q, length: 1, mass: 1}
  - {type: point_on_line, point: p, line_point: C, direction: [1, 0]}
  - {type: point_on_line, point: q, line_point: C, direction: [1, 0]}
contacts: [{name: wall, point: q, line: {point: [5, 0], normal: [-1, 0]}, restitution: e, law: partitioning}]
)", {"contacts[0].law", "'q.x' is a dependent coordinate"}},
      {"contact starting inside", R"(points: {p: {position: [1, -0.5]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
)", {"contacts[0]", "contact 'floor' starts penetrating", "0.5 m beyond"}},
      {"contact starting closed at rest", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
)", {"contact 'floor' starts closed", "normal velocity 0 m/s"}},
      {"too many independent coordinates", R"(points: {p: {position: [1, 0]}}
independent: [p.x, p.y]
elements: [{type: bar, name: rod, from: O, to: p, length: 1, mass: 1}]
)", {"model.yaml:7:", "independent", "2 independent coordinates given (p.x, p.y)", "1 degrees of freedom"}},
      {"driven coordinate named independent", R"(points: {p: {position: [1, 0]}, q: {position: [1, 1]}}
independent: [p.x, q.x]
elements:
  - {type: coordinate_driver, name: drive, coordinate: p.x, function: {offset: 1}}
  - {type: point_mass, point: p, mass: 1}
  - {type: bar, name: rod, from: p, to: q, length: 1, mass: 1}
)", {"model.yaml:7:", "independent[0]", "'p.x' is prescribed by coordinate_driver 'drive'"}},
      {"contact starting closed and approaching", R"(points: {p: {position: [1, 0], velocity: [0, -1]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
)", {"contact 'floor' starts closed", "normal velocity -1 m/s"}},
      {"element name with a tab", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, name: "mass\tof p", point: p, mass: 1}]
)", {"model.yaml:7:", "elements[0].name", "a name may not hold a control character", "byte 5 of the name is code 9"}},
      {"independent coordinate that cannot move at the start", R"(points: {p: {position: [0, -1], velocity: [1, 0]}}
independent: [p.y]
elements: [{type: point_mass, point: p, mass: 1}, {type: bar, name: rod, from: O, to: p, length: 1}]
)", {"model.yaml:7:", "independent: the coordinates declared independent (p.y) do not parametrize the mechanism at "
     "its start", "[Phi_q; B] is singular", "leave 'independent' out"}},
      {"spring between ground points", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: spring, from: O, to: C, stiffness: 1, rest_length: 1}]
)", {"model.yaml:7:", "elements[1].to: a spring between the ground points 'O' and 'C' acts on nothing"}},
      {"force on a ground point", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: force, point: O, force: [1, 0]}]
)", {"model.yaml:7:", "elements[1].point: a force on the ground point 'O' moves nothing"}},
      {"rotational spring between ground and ground", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: rotational_spring, body_a: ground, body_b: ground, stiffness: 1}]
)", {"model.yaml:7:", "elements[1].body_b: a rotational spring between the ground and the ground acts on nothing"}},
      {"point mass on a ground point", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}, {type: point_mass, point: O, mass: 1}]
)", {"model.yaml:7:", "a point mass sits on a moving point (one of 'points'), got the ground point 'O'"}},
      {"point named as a ground point", R"(points: {O: {position: [1, 0]}}
elements: [{type: point_mass, point: O, mass: 1}]
)", {"model.yaml:6:", "points.O: the name 'O' is already used by a ground point"}},
      {"distance driver through zero within the file's horizon", R"(points: {p: {position: [0, -0.1]}}
elements:
  - {type: point_mass, point: p, mass: 1}
  - {type: distance_driver, name: winch, from: O, to: p, function: {offset: 0.1, amplitude: 0.3, frequency: 6}}
)", {"model.yaml:9:", "elements[1]: distance_driver 'winch' drives the distance to f(t) = ", "at t = 0.58023",
     "within the horizon [0, 1]", "f(t) must stay positive"}},
      {"distance driver that only touches zero", R"(points: {p: {position: [0, -0.1]}}
elements:
  - {type: point_mass, point: p, mass: 1}
  - {type: distance_driver, name: winch, from: O, to: p, function: {offset: 0.1, amplitude: 0.1, frequency: 6, phase: 1.5707963267948966}}
)", {"model.yaml:9:", "distance_driver 'winch' drives the distance to f(t) = ", "at t = 0.5235"}},
      {"negative Baumgarte damping", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
formulation: {type: index1, xi: -1}
)", {"model.yaml:8:", "formulation.xi", "must be >= 0, got -1"}},
      {"negative Baumgarte frequency", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
formulation: {type: penalty, omega: -5}
)", {"model.yaml:8:", "formulation.omega", "must be >= 0, got -5"}},
      {"a billion output times", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
outputs: 1000000000
)", {"model.yaml:8:", "outputs", "expected 2 ... 1000000 output times, got 1000000000"}},
      {"relative tolerance below double precision", R"(points: {p: {position: [1, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
tolerances: {rtol: 1.0e-300}
)", {"model.yaml:8:", "tolerances.rtol", "must be at least 1e-15", "got 1e-300"}},
  };
  return cases;
}

TEST(ModelValidation, EveryBadModelIsOneInputErrorWithItsLocation) {
  for (const BadModel& c : bad_models()) {
    const std::string message = error_of(kHead + c.body);
    ASSERT_FALSE(message.empty()) << c.what << ": accepted";
    EXPECT_TRUE(located(message)) << c.what << ": " << message;
    for (const std::string& part : c.expected) EXPECT_TRUE(contains(message, part)) << c.what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << c.what << ": " << message;
  }
}

// The C++ API's settings are checked as a file's are (a negative xi amplified the drift).
TEST(ModelValidation, FormulationSettingsOutsideTheirDomainsAreRefused) {
  const Model model = parse_model(kHead + "points: {p: {position: [1, 0]}}\nelements: [{type: point_mass, point: p, mass: 1}]\n",
                                  "model.yaml");
  FormulationSettings settings = model.formulation;
  settings.baumgarte_xi = -1.0;
  try {
    make_problem(model, settings);
    FAIL() << "xi = -1 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "FormulationSettings::baumgarte_xi = -1 is invalid: must be >= 0");
  }
  settings = model.formulation;
  settings.penalty_alpha = 0.0;
  EXPECT_THROW(make_problem(model, settings), InputError);
  EXPECT_NO_THROW(make_problem(model, model.formulation));
}

TEST(ModelValidation, EveryFormulationRefusesTheSameModels) {
  for (const FormulationType type : {FormulationType::Penalty, FormulationType::Maggi}) {
    for (const BadModel& c : bad_models()) {
      EXPECT_FALSE(error_of(kHead + c.body, type).empty()) << c.what << " accepted by " << to_string(type);
      EXPECT_FALSE(contains(error_of(kHead + c.body, type), "not an InputError")) << c.what;
    }
  }
}

TEST(ModelValidation, ATerminalTermReadingAReactionIsLocated) {
  const std::string text = R"(name: pull
horizon: 1
points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 1, mass: 1}]
ground: {O: [0, 0]}
costs: {pull: {terminal: [{signal: reaction, of: rod}]}}
)";
  const std::string message = error_of(text);
  EXPECT_TRUE(contains(message, "model.yaml:6:")) << message;
  EXPECT_TRUE(contains(message, "costs.pull.terminal[0].signal: cost 'pull': a terminal term cannot use "
                                "accelerations or reactions"))
      << message;
}

TEST(ModelValidation, AMissingHorizonIsAnError) {
  const std::string text = R"(name: free
points: {p: {position: [0, 0]}}
elements: [{type: point_mass, point: p, mass: 1}]
costs: {y: {terminal: [{signal: y, of: p}]}}
)";
  EXPECT_TRUE(contains(error_of(text), "horizon: missing field")) << error_of(text);
  // A reversed horizon echoes its two times.
  const std::string reversed = "horizon: [3, 1]\n" + text;
  EXPECT_TRUE(contains(error_of(reversed), "model.yaml:1:10: horizon: the final time must exceed the initial time (got [3, 1])"))
      << error_of(reversed);
}

TEST(ModelValidation, ScaledParametersMayContainSpaces) {
  const Model m = parse_model(kHead + R"(points: {p: {position: [-0.5, 0]}}
elements: [{type: bar, from: O, to: p, length: " -0.5 * L ", mass: 0.5*m}]
)", "model.yaml");
  ASSERT_EQ(m.elements.size(), 1u);
  EXPECT_EQ(m.elements[0].length.parameter, 0);
  EXPECT_DOUBLE_EQ(m.elements[0].length.scale, -0.5);
}

// Domain checks guard every later change of a nominal value, with the same message, and keep the
// old value when they refuse.
TEST(ModelValidation, OverridesGoThroughTheSameChecks) {
  Problem pb = make_problem(parse_model(kHead + R"(points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: m}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
)", "model.yaml"));
  try {
    pb.set_nominal("e", 1.5);
    FAIL() << "restitution 1.5 accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "model.yaml:8:")) << e.what();
    EXPECT_TRUE(contains(e.what(), "contacts[0].restitution")) << e.what();
    EXPECT_TRUE(contains(e.what(), "(from parameter 'e' = 1.5)")) << e.what();
  }
  EXPECT_DOUBLE_EQ(pb.nominal_parameters()[2], 0.5);
  EXPECT_THROW(pb.set_nominal("m", -1.0), InputError);
  // The start checks too: the point at height L (a parameter) starts below its floor.
  Problem lifted = make_problem(parse_model(kHead + R"(points: {p: {position: [1, L]}}
elements: [{type: point_mass, point: p, mass: m}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
)", "model.yaml"));
  try {
    lifted.set_nominal("L", -0.25);
    FAIL() << "a start below the floor accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "contact 'floor' starts penetrating")) << e.what();
    EXPECT_TRUE(contains(e.what(), "0.25 m beyond")) << e.what();
    EXPECT_TRUE(located(e.what())) << e.what();
  }
  EXPECT_DOUBLE_EQ(lifted.nominal_parameters()[0], 1.0);
  // An expression finite at the file's values but not at an override is refused where it is
  // written (a position sqrt(L - 0.5) failed assembly naming "(-nan)" and no field).
  Problem rooted = make_problem(parse_model(kHead + R"yaml(points: {p: {position: [1, "1 + sqrt(L - 0.5)"]}}
elements: [{type: point_mass, point: p, mass: m}]
)yaml", "model.yaml"));
  try {
    rooted.set_nominal("L", 0.25);
    FAIL() << "a position not finite at L = 0.25 accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "model.yaml:6:")) << e.what();
    EXPECT_TRUE(contains(e.what(), "points.p.position[1]: '1 + sqrt(L - 0.5)' is not finite at the parameters' values "
                                   "(got nan)"))
        << e.what();
  }
  EXPECT_NO_THROW(pb.set_nominal("e", 1.0));
  // Solvers called with an explicit vector do not check domains: differences may step across
  // e = 1.
  Eigen::VectorXd p = pb.nominal_parameters();
  p[2] = 1.0 + 1e-6;
  EXPECT_NO_THROW(simulate(pb, p, pb.options()));
}

// Parameters as in equation model files: {value, description, min, max}; the bounds hold for
// the file's value and every override, beside the model's own domains.
TEST(ModelValidation, ParametersTakeADescriptionAndBounds) {
  const std::string body = R"(horizon: 1
ground: {O: [0, 0]}
points: {p: {position: [1, 1]}}
elements: [{type: point_mass, point: p, mass: m}]
costs: {height: {terminal: [{signal: y, of: p}]}}
)";
  Problem pb = make_problem(parse_model(R"(parameters:
  m: {value: 2, description: "mass of p [kg]", min: 0.5, max: 4}
  g: 9.81
)" + body, "model.yaml"));
  EXPECT_DOUBLE_EQ(pb.nominal_parameters()[0], 2.0);
  EXPECT_EQ(pb.parameters()[0].description, "mass of p [kg]");
  try {
    pb.set_nominal("m", 4.5);
    ADD_FAILURE() << "m = 4.5 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "model.yaml:2:6: parameters.m: the value 4.5 is outside [min, max] = [0.5, 4]");
  }
  EXPECT_THROW(pb.set_nominal("m", 0.25), InputError);
  EXPECT_NO_THROW(pb.set_nominal("m", 4.0));
  EXPECT_NO_THROW(pb.set_nominal("g", -100.0));  // unbounded
  const auto parse_error = [&](const std::string& parameters) {
    try {
      make_problem(parse_model(parameters + body, "model.yaml"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string outside = parse_error("parameters: {m: {value: 5, min: 0, max: 4}}\n");
  EXPECT_TRUE(contains(outside, "model.yaml:1:") && contains(outside, "parameters.m") &&
              contains(outside, "the value 5 is outside [min, max] = [0, 4]"))
      << outside;
  const std::string unknown = parse_error("parameters: {m: {value: 1, lower: 0}}\n");
  EXPECT_TRUE(contains(unknown, "parameters.m") && contains(unknown, "lower")) << unknown;
  const std::string crossed = parse_error("parameters: {m: {value: 1, min: 2, max: 0}}\n");
  EXPECT_TRUE(contains(crossed, "parameters.m") && contains(crossed, "min 2 is above max 0")) << crossed;
  const std::string no_value = parse_error("parameters: {m: {min: 0}}\n");
  EXPECT_TRUE(contains(no_value, "parameters.m") && contains(no_value, "value")) << no_value;
  // The model's own domain still holds inside wide bounds.
  const std::string domain = parse_error("parameters: {m: {value: -1, min: -5}}\n");
  EXPECT_TRUE(contains(domain, "mass > 0")) << domain;
}

// A parameter named pi took the place of the constant in every expression (a pendulum started at
// sin(1), not sin(pi)), and a name that is no identifier could not be read by any expression;
// both are refused where they are declared.
TEST(ModelValidation, AParameterNameIsAnIdentifierOtherThanPi) {
  const std::string body = R"yaml(horizon: 1
ground: {O: [0, 0]}
points: {p: {position: ["cos(pi)", 1]}}
elements: [{type: point_mass, point: p, mass: 1}]
costs: {height: {terminal: [{signal: y, of: p}]}}
)yaml";
  EXPECT_EQ(error_of("parameters: {pi: 1}\n" + body),
            "model.yaml:1:14: parameters.pi: 'pi' is reserved (the constant pi of expressions)");
  EXPECT_EQ(error_of("parameters: {\"k-1\": 2}\n" + body),
            "model.yaml:1:14: parameters.k-1: a name must be letters, digits and _, not starting with a digit");
  EXPECT_EQ(error_of("parameters: {2k: 2}\n" + body),
            "model.yaml:1:14: parameters.2k: a name must be letters, digits and _, not starting with a digit");
}

// A fixed_point element is named as written, not as the revolute joint it is built as.
TEST(ModelValidation, AFixedPointIsNamedAsWritten) {
  const std::string message = error_of(R"(horizon: 1
ground: {O: [0, 0]}
points: {p: {position: [1, 0]}}
elements:
  - {type: fixed_point, name: pivot, point: p, at: [1, 0]}
  - {type: coordinate_driver, name: lift, coordinate: p.y, function: {rate: 1}}
costs: {height: {terminal: [{signal: y, of: p}]}}
)");
  // The driver conflicts with the fixed point: named as such (not as "no degree of freedom").
  EXPECT_TRUE(contains(message, "coordinate_driver 'lift' (row 2 of Phi") && contains(message, "with fixed_point 'pivot'") &&
              !contains(message, "revolute"))
      << message;
}

// theta, omega and alpha are signals of planar bodies: a point or a spatial body is named as such.
TEST(ModelValidation, AnAngleSignalOfAPointNamesIt) {
  const std::string message = error_of(R"(name: pendulum
horizon: 1
ground: {O: [0, 0]}
points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 1, mass: 1}]
costs: {angle: {terminal: [{signal: theta, of: p}]}}
)");
  EXPECT_TRUE(located(message)) << message;
  EXPECT_TRUE(contains(message, "costs.angle") && contains(message, "'p' is a point")) << message;
}

// A cost term's field that its signal does not read is refused where it stands (kinetic_energy
// with of: ran as the whole model's energy), and a name of the wrong kind says what it names.
TEST(ModelValidation, ACostTermFieldItsSignalDoesNotReadIsRefused) {
  const std::string model = R"(name: pendulum
horizon: 1
ground: {O: [0, 0]}
bodies: {b: {mass: 1, inertia: 0.1, position: [1, 0]}}
points: {p: {position: [1, 0]}}
elements: [{type: bar, name: rod, from: O, to: p, length: 1, mass: 1}, {type: point_mass, point: p, mass: 1},
           {type: revolute, name: pin, a: p, b: {body: b, at: [0, 0]}}]
costs: {c: {running: [TERM]}}
)";
  const struct {
    const char* term;
    std::vector<std::string> expected;
  } cases[] = {
      {"{signal: kinetic_energy, of: b}", {"model.yaml:8:", "costs.c.running[0].of", "signal 'kinetic_energy' is the whole model's"}},
      {"{signal: time, of: b}", {"costs.c.running[0].of", "signal 'time'"}},
      {"{signal: x, of: p, row: 1}", {"costs.c.running[0].row", "only a reaction has rows; signal 'x' takes none"}},
      {"{signal: theta, of: {body: b, at: [0.3, 0]}}", {"costs.c.running[0].of", "of: takes its name, not a point on it"}},
      {"{signal: reaction, of: p}", {"costs.c.running[0].of", "'p' is a point, not a joint or constraint element"}},
      {"{signal: spring_length, of: b}", {"costs.c.running[0].of", "'b' is a body, not a (translational) spring"}},
      {"{signal: spring_length, of: pin}", {"'pin' is a revolute element, not a (translational) spring"}},
      {"{signal: normal_force, of: rod}", {"'rod' is a bar element, not a compliant contact"}},
      {"{signal: reaction, of: nothing}", {"unknown name 'nothing' (expected a joint or constraint element)"}},
  };
  EXPECT_EQ(error_of(test::replace_once(model, "TERM", "{signal: reaction, of: pin, row: 1}")), "");
  for (const auto& c : cases) {
    const std::string message = error_of(test::replace_once(model, "TERM", c.term));
    EXPECT_TRUE(located(message)) << c.term << ": " << message;
    for (const std::string& part : c.expected) EXPECT_TRUE(contains(message, part)) << c.term << ": " << message;
  }
}

// A stated velocity that the constraints overrule is kept as a note naming the field and the
// size of the change; velocities that satisfy them give no note.
TEST(ModelValidation, InconsistentInitialVelocitiesGiveANote) {
  const std::string body = R"(points: {p: {position: [1, 0]}, q: {position: [2, 0], velocity: [1, 1]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: 1, mass: 1}
  - {type: bar, name: rod2, from: p, to: q, length: 1, mass: 1}
)";
  const Problem pb = make_problem(parse_model(kHead + body, "model.yaml"));
  ASSERT_EQ(pb.notes().size(), 1u);
  EXPECT_TRUE(contains(pb.notes()[0], "model.yaml:6:")) << pb.notes()[0];
  EXPECT_TRUE(contains(pb.notes()[0], "points.q.velocity")) << pb.notes()[0];
  EXPECT_TRUE(contains(pb.notes()[0], "changes this one by up to 1")) << pb.notes()[0];
  std::string consistent = body;
  consistent.replace(consistent.find("velocity: [1, 1]"), 16, "velocity: [0, 1]");
  EXPECT_TRUE(make_problem(parse_model(kHead + consistent, "model.yaml")).notes().empty());
}

// The same notes for spatial bodies (found by model files written from the docs: a spherical
// pendulum's bob given 0.2 m off its rod and a link given the wrong axis were assembled and their
// velocities changed without a word, and --strict accepted them): a position moved by more than
// 1 % of the model's size (now a 3D box with the joints' ground points: the pendulum's was 0),
// an orientation turned by more than 1 % of a turn, a stated velocity that the constraints change.
TEST(ModelValidation, SpatialBodiesMovedByAssemblyGiveNotes) {
  const auto pendulum = [](const std::string& z, const std::string& velocity, const std::string& angle) {
    return "name: conical\nhorizon: 1\ngravity: [0, 0, -9.81]\nspatial:\n  bodies:\n"
           "    bob: {mass: 1, inertia: [0.01, 0.01, 0.01], position: [0.6, 0, " + z + "], velocity: " + velocity +
           ", orientation: {axis: [0, 1, 0], angle: " + angle + "}}\n"
           "  joints:\n    - {type: revolute, a: ground, b: bob, point_a: [0, 0, 1], axis_a: [0, 1, 0], "
           "point_b: [-0.6, 0, 0], axis_b: [0, 1, 0]}\n"
           "costs: {z_T: {terminal: [{signal: z, of: bob}]}}\n";
  };
  EXPECT_TRUE(make_problem(parse_model(pendulum("1", "[0, 0, 0]", "0"), "model.yaml")).notes().empty());
  const std::vector<std::string> moved =
      make_problem(parse_model(pendulum("0.8", "[0, 0, 0]", "0"), "model.yaml")).notes();
  const auto position = std::find_if(moved.begin(), moved.end(),
                                     [](const std::string& n) { return contains(n, "spatial.bodies.bob.position"); });
  ASSERT_NE(position, moved.end());
  EXPECT_TRUE(contains(*position, "model.yaml:6:") && contains(*position, "assembly moved bob.")) << *position;
  const std::vector<std::string> turned =
      make_problem(parse_model(pendulum("1", "[0, 0, 0]", "0.5"), "model.yaml")).notes();
  ASSERT_FALSE(turned.empty());
  EXPECT_TRUE(contains(turned[0], "spatial.bodies.bob.orientation") && contains(turned[0], "by 0.5 rad")) << turned[0];
  const std::vector<std::string> velocity =
      make_problem(parse_model(pendulum("1", "[0, 0.5, 0]", "0"), "model.yaml")).notes();
  ASSERT_EQ(velocity.size(), 1u);
  EXPECT_TRUE(contains(velocity[0], "spatial.bodies.bob.velocity") && contains(velocity[0], "by up to 0.5"))
      << velocity[0];
}

// A free point mass (no constraint rows, no contact) under gravity: the closed-form parabola,
// with dy(T)/dg = -T^2/2 and dx(T)/dvx = T by forward sensitivities and the adjoint.
TEST(ModelValidation, AFreePointMassFollowsItsParabola) {
  const Problem pb = make_problem(parse_model(R"(name: free
horizon: 1.5
tolerances: {rtol: 1.0e-11, atol: 1.0e-12}
parameters: {g: 9.81, m: 2}
gravity: [0, -g]
points: {p: {position: [0.25, 3], velocity: [1.5, 2]}}
elements: [{type: point_mass, point: p, mass: m}]
costs: {yT: {terminal: [{signal: y, of: p}]}, xT: {terminal: [{signal: x, of: p}]}}
)", "free.yaml"));
  const double T = 1.5;
  for (const Solution& s : {forward_sensitivity(pb), adjoint(pb)}) {
    EXPECT_NEAR(s.costs[0], 3.0 + 2.0 * T - 0.5 * 9.81 * T * T, 1e-8);
    EXPECT_NEAR(s.costs[1], 0.25 + 1.5 * T, 1e-8);
    EXPECT_NEAR(s.cost_gradient(0, 0), -0.5 * T * T, 1e-7);  // dyT/dg
    EXPECT_NEAR(s.cost_gradient(0, 1), 0.0, 1e-9);           // the mass does not matter
    EXPECT_NEAR(s.cost_gradient(1, 0), 0.0, 1e-9);
  }
  EXPECT_TRUE(pb.monitors().empty());  // no constraint rows, no residuals to report
}

}  // namespace
