// Regression tests for the findings of the model-file fuzzer (fuzz/fuzz_model_file.cpp,
// docs/fuzzing.md). Each test feeds the input that crashed, hung or escaped as a foreign
// exception (minimized) through the same path as the fuzz target, and asserts the located
// InputError that replaced it, or that the model builds.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using namespace saltus;
using namespace saltus::multibody;

/// What the fuzz target does with an input: parse, validate, and make_problem in every
/// formulation. Returns the message of the saltus::Error that stopped it, or "" if every
/// formulation built. Any other exception fails the test.
std::string outcome(const std::string& text) {
  try {
    const Model model = parse_model(text, "fuzz.yaml");
    model.validate();
    for (const FormulationType type : {FormulationType::Penalty, FormulationType::Index1, FormulationType::Maggi}) {
      FormulationSettings settings = model.formulation;
      settings.type = type;
      make_problem(model, settings);
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A pendulum that builds; the tests append or replace one part of it.
const std::string kHead = R"(horizon: 1
ground: {O: [0, 0]}
points: {p: {position: [1, 0]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: 1, mass: 1}
)";
const std::string kCost = "costs: {c: {terminal: [{signal: y, of: p}]}}\n";

TEST(FuzzRegressions, TheBaseModelBuilds) { EXPECT_EQ(outcome(kHead + kCost), ""); }

// Finding: yaml-cpp's YAML::BadSubscript ("operator[] call on a scalar") escaped from
// parse_model when a cost was a scalar instead of a mapping: the reader indexed it.
TEST(FuzzRegressions, ScalarWhereACostMappingBelongs) {
  const std::string msg = outcome(kHead + "costs:\n  G:\n    running:nk_FSA_dns\n");
  EXPECT_TRUE(contains(msg, "fuzz.yaml:8:5: costs.G: expected a mapping")) << msg;
}

// Same cause through iteration: a list where a mapping belongs made yaml-cpp throw
// YAML::InvalidNode from the key check.
TEST(FuzzRegressions, ListWhereAMappingBelongs) {
  std::string msg = outcome("horizon: 1\npoints: {p: [1, 0]}\n" + kCost);
  EXPECT_TRUE(contains(msg, "fuzz.yaml:2:13: points.p: expected a mapping")) << msg;
  msg = outcome(kHead + "tolerances: [1, 2]\n" + kCost);
  EXPECT_TRUE(contains(msg, "tolerances: expected a mapping")) << msg;
  msg = outcome(kHead + "contacts: [5]\n" + kCost);
  EXPECT_TRUE(contains(msg, "contacts[0]: expected a mapping")) << msg;
  msg = outcome(kHead + "costs: {c: {terminal: [7]}}\n");
  EXPECT_TRUE(contains(msg, "costs.c.terminal[0]: expected a mapping")) << msg;
}

// Finding: UBSan "1e+10 is outside the range of representable values of type 'int'": an
// integer field (outputs, power, row) was converted to int without a range check.
TEST(FuzzRegressions, IntegersOutsideTheIntRange) {
  std::string msg = outcome(kHead + "outputs: 1e10\n" + kCost);
  EXPECT_TRUE(contains(msg, "fuzz.yaml:6:10: outputs: integer out of range (|n| <= 1e9), got '1e10'")) << msg;
  msg = outcome(kHead + "costs: {c: {running: [{signal: y, of: p, power: 1e10}]}}\n");
  EXPECT_TRUE(contains(msg, "costs.c.running[0].power: integer out of range")) << msg;
  msg = outcome(kHead + "costs: {c: {running: [{signal: reaction, of: rod, row: -3e9}]}}\n");
  EXPECT_TRUE(contains(msg, "costs.c.running[0].row: integer out of range")) << msg;
  // In range they reach their own checks.
  msg = outcome(kHead + "costs: {c: {running: [{signal: y, of: p, power: 1e9}]}}\n");
  EXPECT_TRUE(contains(msg, "power: expected 1 ... 8")) << msg;
}

// Finding: ASan stack-overflow: an alias inside its own anchor makes a cyclic node graph, and
// the duplicate-key walk recursed forever.
TEST(FuzzRegressions, AnAliasInsideItsOwnAnchor) {
  std::string msg = outcome(kHead + "costs: &a {c: {running: [*a]}}\n");
  EXPECT_TRUE(contains(msg, "nested more than 32 levels deep (an alias inside its own anchor?)")) << msg;
  msg = outcome("horizon: 1\npoints: {p: {position: [1, 0]}}\nelements: &e [*e]\n" + kCost);
  EXPECT_TRUE(contains(msg, "nested more than 32 levels deep")) << msg;
}

// Finding: timeout: nine lines of aliases expand to 10^9 nodes, and the duplicate-key walk
// visited every one of them.
TEST(FuzzRegressions, AliasesThatExpandExponentially) {
  std::string text = "horizon: 1\npoints: {p: {position: [1, 0]}}\nx0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i <= 8; ++i) {
    text += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k > 0 ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = outcome(text + kCost);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(contains(msg, "the file expands to more than 200000 YAML nodes (aliases repeated?)")) << msg;
  EXPECT_LT(took.count(), 30.0);
  // Aliases within the budget are fine.
  EXPECT_EQ(outcome(kHead + "gravity: &g [0, -9.81]\n" + kCost), "");
}

std::string free_points(int count) {
  std::string text = "horizon: 1\npoints: {";
  for (int i = 0; i < count; ++i) text += (i > 0 ? ", p" : "p") + std::to_string(i) + ": {position: [0, " + std::to_string(i) + "]}";
  text += "}\nelements:\n";
  for (int i = 0; i < count; ++i) text += "  - {type: point_mass, point: p" + std::to_string(i) + ", mass: 1}\n";
  return text + "costs: {c: {terminal: [{signal: y, of: p0}]}}\n";
}

// Finding: timeouts and out-of-memory (rss > 2 GB): a few kilobytes of points or bodies make
// n in the thousands, and the formulations were dense, O((n + m)^3) per evaluation (Maggi's
// reduced mass matrix and the DAE formulations' Jacobians still are). Models are limited to
// Model::max_coordinates, checked when the file is read (before lookups that scale with n) and
// by Model::validate for models built in C++.
TEST(FuzzRegressions, ModelsLargerThanTheCoordinateLimit) {
  static_assert(Model::max_coordinates == 1000);
  std::string msg = outcome(free_points(501));
  EXPECT_TRUE(contains(msg, "fuzz.yaml:2:9: points: the model has 1002 coordinates (501 points, 0 bodies); "
                            "Saltus's formulations take at most 1000")) << msg;
  EXPECT_EQ(outcome(free_points(500)), "");

  Model model = parse_model(free_points(500), "fuzz.yaml");
  model.points.push_back(Point{"extra"});
  try {
    model.validate();
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "the model has 1002 coordinates")) << e.what();
  }
}

// Finding: timeout: fifteen thousand contacts (one alias each) made make_problem quadratic
// (Problem copied every event name at each addition). The copies are gone, and contacts are
// limited to Model::max_contacts.
TEST(FuzzRegressions, ManyContacts) {
  auto contacts = [](int count) {
    std::string text = kHead + "contacts: [&c {point: p, line: {point: [0, -2], normal: [0, 1]}, restitution: 0.5}";
    for (int i = 1; i < count; ++i) text += ", *c";
    return text + "]\n" + kCost;
  };
  std::string msg = outcome(contacts(Model::max_contacts + 1));
  EXPECT_TRUE(contains(msg, "fuzz.yaml:6:11: contacts: the model has 1001 contacts; Saltus takes at most 1000")) << msg;
  EXPECT_EQ(outcome(contacts(Model::max_contacts)), "");
}

// Finding: UBSan "reference binding to null pointer" inside Eigen's ColPivHouseholderQR: a
// constraint whose every row is zero (a bar between two ground points) has rank 0, and the
// redundancy report factored a basis without columns, whose empty norm vector Eigen reads.
TEST(FuzzRegressions, AConstraintBetweenTwoGroundPoints) {
  const std::string msg = outcome(R"(horizon: 1
ground: {A: [0, 0], B: [1, 0]}
points: {p: {position: [1, 0]}}
elements:
  - {type: bar, from: A, to: B, length: 1}
  - {type: point_mass, point: p, mass: 1}
)" + kCost);
  EXPECT_TRUE(contains(msg, "has rank 0 < 1 constraint rows")) << msg;
  EXPECT_TRUE(contains(msg, "dependent rows: elements[0] (bar) (row 0 of Phi, fuzz.yaml:5:5: elements[0]) with a zero row"))
      << msg;
}

// Found alongside: an independent coordinate listed twice passed the count check and failed
// later without a location ("duplicate state name 'p.x'" or a singular position analysis).
TEST(FuzzRegressions, IndependentCoordinateListedTwice) {
  const std::string msg = outcome("horizon: 1\npoints: {p: {position: [1, 0]}}\nindependent: [p.x, p.x]\n" + kCost);
  EXPECT_TRUE(contains(msg, "fuzz.yaml:3:20: independent[1]: 'p.x' is listed twice")) << msg;
}

}  // namespace

namespace {

// Finding: timeout: a NUL character after a tab made yaml-cpp report empty documents at one
// place forever, and the walk over the documents after the first (a second one is refused)
// never ended. It ends where a document starts where the previous one did.
TEST(FuzzRegressions, ANulCharacterEndsTheDocuments) {
  std::string text = ", x\t";  // minimized from the fuzzer's input
  text += '\0';
  text += "h: 1\n";
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = outcome(text);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_TRUE(contains(msg, "fuzz.yaml:")) << msg;
  // A second document with content is refused at its first line; a trailing '---' is not one.
  EXPECT_TRUE(contains(outcome(kHead + kCost + "---\nhorizon: 2\n"), "fuzz.yaml:8:1: a second YAML document"));
  EXPECT_EQ(outcome(kHead + kCost + "---\n"), "");
}

}  // namespace
