// `saltus optimize`: the command lines, the JSON, the history CSV and plot, exit statuses
// and one-line errors. The optimum is checked against the closed form of test_optimize.cpp.
#include "support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using saltus::test::contains;
using saltus::test::Outcome;
using saltus::test::saltus_cmd;
using saltus::test::temp_dir;

constexpr double kBallOptimum = 0.866554105436910791627;  // closed form, see test_optimize.cpp

std::vector<std::string> ball_command(std::vector<std::string> extra) {
  std::vector<std::string> args = {"optimize", "ball1d", "--cost", "h_T", "--maximize", "--vary", "e=0.78:0.92",
                                   "--param", "c=0", "--param", "h0=50", "--param", "g=9.8", "--param", "e=0.82",
                                   "--tend", "15"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(OptimizeCommand, PrintsEachEvaluationAndTheOptimumAndWritesItsFiles) {
  const auto dir = temp_dir("optimize");
  const auto json = (dir / "ball.json").string();
  const Outcome r = saltus_cmd(ball_command({"--method", "forward", "--json", json, "--out", (dir / "out").string()}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Maximizing 'h_T' over e in [0.78, 0.92] (forward gradients)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Optimum (L-BFGS")) << r.out;
  EXPECT_TRUE(contains(r.out, "0.86655410")) << r.out;
  EXPECT_TRUE(contains(r.out, "Stopped: ")) << r.out;

  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["problem"], "ball1d");
  EXPECT_EQ(j["cost_name"], "h_T");
  EXPECT_EQ(j["method"], "forward");
  EXPECT_TRUE(j["maximize"].get<bool>());
  EXPECT_NEAR(j["optimum"]["e"].get<double>(), kBallOptimum, 1e-8);
  EXPECT_NEAR(j["cost"].get<double>(), 19.36790281545390907985, 1e-8);
  EXPECT_DOUBLE_EQ(j["parameters"]["h0"].get<double>(), 50.0);
  EXPECT_TRUE(j["converged"].get<bool>());
  const int iterations = j["iterations"].get<int>();
  ASSERT_EQ(j["history"].size(), static_cast<size_t>(iterations));
  EXPECT_DOUBLE_EQ(j["history"][0]["x"]["e"].get<double>(), 0.82);
  EXPECT_EQ(j["history"][0]["events"].get<int>(), 3);

  const std::string csv = read_file(dir / "out" / "history.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "evaluation,e,cost,projected_gradient_norm,step,events,event_sequence_changed,feasible,failed");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), iterations + 1);
  const std::string png = read_file(dir / "out" / "convergence.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST(OptimizeCommand, FindsTheFiveBarsStaticBalanceFromTheShippedFile) {
  const Outcome r = saltus_cmd({"optimize", std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar.yaml", "--cost",
                                "drift", "--vary", "L01=2:3", "--vary", "L02=1.5:2.5"});
  ASSERT_EQ(r.status, 0) << r.err;
  // numpy reference of test_optimize.cpp: L01 = 2.431923574457584, L02 = 1.8448688868053873.
  // The optimum table's row "  L01   <value>   <lower> ...": its first number.
  const auto optimum = [&](const std::string& name) {
    const size_t table = r.out.find("Optimum");
    const size_t row = r.out.find("  " + name + " ", table);
    if (table == std::string::npos || row == std::string::npos) return std::nan("");
    return std::stod(r.out.substr(row + name.size() + 2));
  };
  EXPECT_NEAR(optimum("L01"), 2.431923574457584, 1e-8) << r.out;
  EXPECT_NEAR(optimum("L02"), 1.8448688868053873, 1e-8) << r.out;
}

TEST(OptimizeCommand, CostConstraintsAreHonoured) {
  const Outcome r = saltus_cmd(ball_command({"--constraint", "h_T<=15"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "constraint h_T <= 15: h_T = 15")) << r.out;
  EXPECT_TRUE(contains(r.out, "CCSAQ")) << r.out;
}

TEST(OptimizeCommand, StoppingAtTheEvaluationLimitIsAFailureWithItsReason) {
  const auto dir = temp_dir("optimize_limit");
  const auto json = (dir / "ball.json").string();
  const Outcome r = saltus_cmd(ball_command({"--max-evaluations", "2", "--json", json}));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "optimization did not converge: the limit on evaluations was reached")) << r.err;
  std::ifstream in(json);  // the best point so far is still written
  const auto j = nlohmann::json::parse(in);
  EXPECT_FALSE(j["converged"].get<bool>());
  EXPECT_EQ(j["iterations"].get<int>(), 2);
}

TEST(OptimizeCommand, BadInputGivesOneLineAndStatusTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"optimize", "ball1d", "--cost", "height", "--vary", "e=0.5:0.9"}, "cost to optimize: unknown cost 'height'"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "mass=0:1"}, "unknown parameter 'mass'"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.9:0.5"}, "varied parameter e: bounds are inverted"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.7:0.7"}, "varied parameter e: bounds are empty"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.1:0.5"}, "varied parameter e: the start e = 0.8 lies outside its bounds"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.5:2"}, "varied parameter e: bound 2 is outside the model's domain"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e"}, "--vary 'e': expected NAME=LO:HI"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.5:x"}, "--vary e: upper bound: 'x' is not a finite"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.5:0.9", "--constraint", "v_T<1"},
       "expected NAME<=VALUE or NAME>=VALUE"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.5:0.9", "--constraint", "speed<=1"},
       "constrained cost: unknown cost 'speed'"},
      {{"optimize", "ball1d", "--cost", "h_T"}, "--vary is required"},
      // Settings every run would refuse are bad input before the start's run, as for `run`.
      {{"optimize", "robertson_dae", "--cost", "G", "--vary", "p1=0.01:0.1", "--integrator", "dopri5"},
       "the dopri5 integrator runs explicit problems only"},
      {{"optimize", "ball1d", "--cost", "h_T", "--vary", "e=0.5:0.9", "--integrator", "cvodes", "--linear-solver",
        "sparse"},
       "linear solver 'sparse' is for IDAS runs"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome r = saltus_cmd(args);
    EXPECT_EQ(r.status, 2) << message;
    EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "' in: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << message;
  }
}

}  // namespace

// At a loose tolerance (rtol 1e-5) the discrete adjoint is the slope of the very cost the
// optimizer evaluates: L-BFGS converges by its gradient test to the closed-form optimum (the
// continuous adjoint at the same tolerance stalls its line search: docs/discrete-sensitivities.md).
TEST(OptimizeCommand, DiscreteGradientsConvergeAtALooseTolerance) {
  for (const char* integrator : {"dopri5", "sdirk", "rosenbrock"}) {
    const auto dir = temp_dir(std::string("optimize_") + integrator);
    const auto json = (dir / "ball.json").string();
    const Outcome r = saltus_cmd(ball_command({"--integrator", integrator, "--rtol", "1e-5", "--json", json}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "is below the tolerance")) << r.out;
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    EXPECT_TRUE(j["converged"].get<bool>()) << integrator;
    EXPECT_NEAR(j["optimum"]["e"].get<double>(), kBallOptimum, 1e-8) << integrator;
    EXPECT_LE(j["history"].size(), 10u) << integrator;
  }
}
