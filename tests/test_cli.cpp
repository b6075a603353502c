// The `saltus` command: reports, JSON shape, CSV files and one-line errors with exit status.
#include "cli_common.hpp"
#include "support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

namespace {

using saltus::test::contains;
using saltus::test::Outcome;
using saltus::test::saltus_cmd;
using saltus::test::temp_dir;
using saltus::test::write_temp_file;

}  // namespace

TEST(Cli, ListShowsEveryExample) {
  const Outcome r = saltus_cmd({"list"});
  EXPECT_EQ(r.status, 0);
  for (const char* name : {"ball1d", "galan", "box2d", "time_events", "robertson", "robertson_dae", "hiskens",
                           "circle_drift", "hysteretic", "fivebar", "fivebar_floor", "slidercrank", "chain"}) {
    EXPECT_TRUE(contains(r.out, std::string(name) + " ")) << name;
  }
}

// docs/benchmarks.md's mechanisms run by name as its other problems do (`saltus run slidercrank`
// said "unknown example"), with --param, --formulation and check, and give the file's numbers.
TEST(Cli, TheShippedMechanismsRunByName) {
  const auto dir = temp_dir("shipped");
  std::filesystem::create_directories(dir);
  const std::string by_name = (dir / "name.json").string(), by_file = (dir / "file.json").string();
  const std::string file = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml";
  for (const auto& [target, json] : {std::pair{std::string("fivebar_floor"), by_name}, std::pair{file, by_file}}) {
    const Outcome r = saltus_cmd({"run", target, "--param", "e=0.5", "--tend", "2", "--formulation", "ggl", "--method",
                                  "adjoint", "--json", json});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  std::ifstream name_in(by_name), file_in(by_file);
  const auto a = nlohmann::json::parse(name_in), b = nlohmann::json::parse(file_in);
  EXPECT_EQ(a["costs"], b["costs"]);
  EXPECT_EQ(a["gradient"], b["gradient"]);
  // The published slider-crank cost (SUNDIALS's example at rtol 1e-6: 3.3366157997761721).
  const Outcome crank = saltus_cmd({"run", "slidercrank", "--method", "simulate"});
  ASSERT_EQ(crank.status, 0) << crank.err;
  EXPECT_TRUE(contains(crank.out, "G              =  3.3366")) << crank.out;
  for (const char* name : {"fivebar", "fivebar_floor", "slidercrank", "chain"}) {
    const Outcome check = saltus_cmd({"check", name, "--quiet"});
    EXPECT_EQ(check.status, 0) << name << ": " << check.err;
  }
}

TEST(Cli, RunWritesJsonOfTheAgreedShape) {
  const auto dir = temp_dir("json");
  const auto path = (dir / "galan.json").string();
  const Outcome r = saltus_cmd({"run", "galan", "--json", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Gradient"));
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["problem"], "galan");
  EXPECT_EQ(j["method"], "forward");
  EXPECT_DOUBLE_EQ(j["parameters"]["p"].get<double>(), 2.9);
  EXPECT_NEAR(j["costs"]["G"].get<double>(), 20.0290746533596, 1e-8);
  EXPECT_NEAR(j["gradient"]["G"]["p"].get<double>(), -2.31195310744389, 1e-8);
  EXPECT_NEAR(j["final_state"]["x"].get<double>(), 4.99884240621728, 1e-9);
  ASSERT_EQ(j["events"].size(), 3u);
  EXPECT_EQ(j["events"][1]["name"], "B_to_A");
  EXPECT_NEAR(j["events"][0]["time"].get<double>(), 0.219215922289804, 1e-10);
  EXPECT_NEAR(j["events"][0]["dtime_dp"]["p"].get<double>(), 0.315707550098, 1e-8);
}

TEST(Cli, ParameterAndHorizonOverridesApply) {
  const auto dir = temp_dir("override");
  const auto path = (dir / "ball.json").string();
  const Outcome r = saltus_cmd({"run", "ball1d", "--param", "c=0", "--param", "h0=2", "--tend",
                                "0.5", "--json", path});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_DOUBLE_EQ(j["parameters"]["h0"].get<double>(), 2.0);
  EXPECT_NEAR(j["final_state"]["h"].get<double>(), 2.0 - 9.81 * 0.125, 1e-9);  // free fall
  EXPECT_EQ(j["events"].size(), 0u);
}

TEST(Cli, MethodAllComparesEveryMethodAndWritesCsv) {
  const auto dir = temp_dir("csv");
  const Outcome r = saltus_cmd({"run", "time_events", "--method", "all", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "complex step"));
  EXPECT_TRUE(contains(r.out, "central differences"));
  EXPECT_TRUE(contains(r.out, "largest relative difference, adjoint vs forward sensitivity"));
  EXPECT_TRUE(contains(r.out, "check points"));
  for (const char* f : {"trajectory.csv", "sensitivities.csv", "events.csv", "gradient.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  }
  std::ifstream traj(dir / "trajectory.csv");
  std::string header;
  std::getline(traj, header);
  EXPECT_EQ(header, "t,mode,x");
}

// Model files name modes, events and costs freely: a name with a comma or a quote is one CSV
// field in double quotes (RFC 4180), so that every row has as many fields as its header.
TEST(Cli, CsvQuotesNamesThatHoldCommasOrQuotes) {
  const std::string file = write_temp_file("csv_names", "relay.yaml", R"(name: relay
horizon: 2
parameters: {a: 1}
states: {T: 0}
modes:
  "heat,up": {rhs: ["a"]}
  cool: {rhs: ["-a"]}
initial_mode: "heat,up"
events:
  "off \"now\"": {guard: T - 0.5, direction: rising, only_in: "heat,up", next: cool}
costs:
  "pi, der": {terminal: T}
)");
  const auto dir = temp_dir("csv_names_out");
  const Outcome r = saltus_cmd({"run", file, "--method", "forward", "--out", dir.string(), "--no-plots"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines_of = [&dir](const char* name) {
    std::ifstream in(dir / name);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  const auto trajectory = lines_of("trajectory.csv");
  ASSERT_GE(trajectory.size(), 2u);
  EXPECT_EQ(trajectory[0], "t,mode,T");
  EXPECT_TRUE(contains(trajectory[1], ",\"heat,up\",")) << trajectory[1];
  EXPECT_EQ(lines_of("costs.csv")[0], "t,\"pi, der\"");
  const auto gradient = lines_of("gradient.csv");
  ASSERT_GE(gradient.size(), 2u);
  EXPECT_EQ(gradient[1].rfind("\"pi, der\",a,", 0), 0u) << gradient[1];
  const auto events = lines_of("events.csv");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(contains(events[1], ",\"off \"\"now\"\"\",\"heat,up\",cool,")) << events[1];
}

TEST(Cli, BadInputGivesOneLineAndNonZeroStatus) {
  const std::vector<std::vector<std::string>> bad = {
      {"run", "nosuch"},
      {"run", "ball1d", "--param", "gravity=1"},
      {"run", "ball1d", "--param", "g=abc"},
      {"run", "ball1d", "--param", "g=nan"},
      {"run", "ball1d", "--param", "g=1e400"},  // beyond double's range: "must be finite", not "not a number"
      {"run", "ball1d", "--param", "g=1e-400"},  // below it: refused, not rounded to 0
      {"run", "."},                             // a directory
      {"run", "ball1d", "--param", "g"},
      {"run", "ball1d", "--rtol", "-1e-6"},
      {"run", "ball1d", "--rtol", "1e-300"},  // below double precision's reach: refused, not run at CVODES's floor
      {"run", "ball1d", "--atol", "-1"},
      {"run", "ball1d", "--atol", "0"},
      {"run", "ball1d", "--tend", "-2"},
      {"run", "ball1d", "--method", "magic"},
      {"run", "ball1d", "--method", "adjoint", "--checkpoint-steps", "0"},
      {"run", "ball1d", "--method", "adjoint", "--adjoint-memory", "512k"},
      {"run", "ball1d", "--method", "adjoint", "--adjoint-memory", "lots"},
      // Too large (an outside reader's findings): 2^62 steps overflowed the buffer's byte count
      // (a double free, or all the machine's memory), 9e8 failed in CVodeAdjInit (exit 1),
      // 2^63 - 1 wrapped to a negative "option" value; a huge budget was called too small.
      {"run", "ball1d", "--method", "adjoint", "--checkpoint-steps", "4611686018427387904"},
      {"run", "ball1d", "--method", "adjoint", "--checkpoint-steps", "9223372036854775807"},
      {"run", "ball1d", "--method", "adjoint", "--checkpoint-steps", "900000000"},
      {"run", "ball1d", "--method", "adjoint", "--adjoint-memory", "1e30G"},
      {"run", "ball1d", "--fd-step", "inf"},
      {"frobnicate"},
  };
  const std::vector<std::string> expected_words = {
      "nosuch", "gravity", "abc", "finite", "--param g: value must be finite, got '1e400'",
      "--param g: '1e-400' is not a number", "'.' is a directory",
      "name=value", "rtol", "--rtol must be at least 1e-15 (double precision's limit), got 1e-300", "atol",
      "--atol must be positive, got 0", "--tend -2: the final time must exceed",
      "magic", "checkpoint-steps must be a positive integer, got 0",
      "--adjoint-memory must be at least 1M (1048576 bytes), got 512k",
      "--adjoint-memory: 'lots' is not a size",
      "--checkpoint-steps must be at most 1000000000, got 4611686018427387904",
      "--checkpoint-steps must be at most 1000000000, got 9223372036854775807",
      "checkpoint_steps (--checkpoint-steps) = 900000000: its interpolation buffer of 900000001 points",
      "--adjoint-memory must be at most 1048576G (2^50 bytes), got 1e30G", "must be a finite number, got inf",
      "frobnicate"};
  for (size_t i = 0; i < bad.size(); ++i) {
    const Outcome r = saltus_cmd(bad[i]);
    EXPECT_NE(r.status, 0) << i;
    EXPECT_TRUE(contains(r.err, expected_words[i])) << i << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << i << ": " << r.err;
  }
}

// A model without parameters (the shipped URDF arm) has no gradient: every method and
// formulation says so and runs; the penalty form's forward run failed allocating sensitivity
// tolerances for no parameter ("SUNDIALS could not allocate the sensitivity tolerances").
TEST(Cli, AModelWithoutParametersRunsEveryMethod) {
  const std::string arm = std::string(SALTUS_SOURCE_DIR) + "/examples/arm.urdf";
  for (const char* formulation : {"penalty", "index1", "ggl"}) {
    const Outcome r = saltus_cmd({"run", arm, "--formulation", formulation, "--method", "all"});
    EXPECT_EQ(r.status, 0) << formulation << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "Parameters: none (no gradient to compute)")) << formulation << ": " << r.out;
  }
}

// Every spelling of a binary unit is the same size: a user's "512MB" is 512 MiB, not an error.
TEST(Cli, MemorySizesTakeEverySpellingOfTheirUnit) {
  const std::vector<std::pair<std::string, long>> sizes = {
      {"1048576", 1L << 20}, {"1048576B", 1L << 20}, {"1024k", 1L << 20}, {"1024KB", 1L << 20},
      {"1024KiB", 1L << 20}, {"512M", 512L << 20}, {"512MB", 512L << 20}, {"512mb", 512L << 20},
      {"512MiB", 512L << 20}, {"1.5G", 3L << 29}, {"2GB", 2L << 30}, {"2gib", 2L << 30}};
  for (const auto& [text, bytes] : sizes) EXPECT_EQ(saltus::cli::parse_memory_size(text), bytes) << text;
  for (const std::string text : {"512MBB", "MB", "12 apples", "512BM"}) {
    EXPECT_THROW(saltus::cli::parse_memory_size(text), saltus::cli::UsageError) << text;
  }
}

// The elastic, drag-free ball bounces 33 times in 30 s: with a buffer of 1,000 points per
// segment (about 0.3 MiB for its two states), within 1M most of its segments are recomputed, the
// JSON reports a peak under the budget, and the gradient is the one of the default budget (the
// recomputation repeats the same steps).
TEST(Cli, AdjointMemoryBoundsWhatIsHeld) {
  const auto dir = temp_dir("adjoint_memory");
  const std::vector<std::string> run = {"run", "ball1d", "--method", "adjoint", "--param", "e=1", "--param",
                                        "c=0", "--tend", "30", "--checkpoint-steps", "1000"};
  auto with = [&](std::vector<std::string> extra, const std::string& file) {
    std::vector<std::string> args = run;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--json", (dir / file).string()});
    const Outcome r = saltus_cmd(args);
    EXPECT_EQ(r.status, 0) << r.err;
    std::ifstream in(dir / file);
    return nlohmann::json::parse(in);
  };
  const auto small = with({"--adjoint-memory", "1M"}, "small.json");
  const auto large = with({"--adjoint-memory", "1GiB"}, "large.json");
  EXPECT_EQ(small["adjoint"]["memory_budget"].get<long>(), 1L << 20);
  EXPECT_EQ(large["adjoint"]["memory_budget"].get<long>(), 1L << 30);
  EXPECT_LE(small["adjoint"]["peak_stored_bytes"].get<long>(), 1L << 20);
  EXPECT_GT(small["adjoint"]["recomputed_segments"].get<long>(), 20);
  EXPECT_EQ(large["adjoint"]["recomputed_segments"].get<long>(), 0);
  EXPECT_GT(large["adjoint"]["peak_stored_bytes"].get<long>(), 1L << 20);
  for (const auto& cost : large["gradient"].items()) {
    for (const auto& entry : cost.value().items()) {
      const double expected = entry.value().get<double>();
      const double got = small["gradient"][cost.key()][entry.key()].get<double>();
      EXPECT_NEAR(got, expected, 1e-12 * std::max(1.0, std::abs(expected))) << cost.key() << "/" << entry.key();
    }
  }
}

TEST(Cli, AdamsMethodGivesTheSameGradient) {
  const auto dir = temp_dir("adams");
  const Outcome bdf = saltus_cmd({"run", "galan", "--json", (dir / "bdf.json").string()});
  const Outcome adams =
      saltus_cmd({"run", "galan", "--lmm", "adams", "--json", (dir / "adams.json").string()});
  ASSERT_EQ(bdf.status, 0);
  ASSERT_EQ(adams.status, 0) << adams.err;
  std::ifstream a(dir / "adams.json"), b(dir / "bdf.json");
  const auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  EXPECT_NEAR(ja["gradient"]["G"]["p"].get<double>(), jb["gradient"]["G"]["p"].get<double>(), 1e-7);
}

// --linear-solver krylov: matrix-free GMRES, named in the report and the JSON; galan's gradient
// (closed form -2.31195311) as with the dense LU. A value outside the list is a usage error.
TEST(Cli, KrylovLinearSolverGivesTheSameGradient) {
  const auto dir = temp_dir("krylov");
  const Outcome r = saltus_cmd({"run", "galan", "--linear-solver", "krylov", "--json", (dir / "k.json").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Linear solver: GMRES (matrix-free)")) << r.out;
  std::ifstream in(dir / "k.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["stats"]["linear_solver"], "GMRES (matrix-free)");
  EXPECT_NEAR(j["gradient"]["G"]["p"].get<double>(), -2.31195311, 1e-6);
  const Outcome bad = saltus_cmd({"run", "galan", "--linear-solver", "lu"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "--linear-solver")) << bad.err;
}

// --nonlinear-solver fixed-point: functional iteration, no linear solver, named in the report
// and the JSON; galan's gradient (closed form -2.31195311) as with Newton. IDAS refuses it with
// one line (exit 2), and a value outside the list is a usage error.
TEST(Cli, FixedPointCorrectorGivesTheSameGradient) {
  const auto dir = temp_dir("fixed_point");
  const Outcome r =
      saltus_cmd({"run", "galan", "--nonlinear-solver", "fixed-point", "--json", (dir / "f.json").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Linear solver: none (fixed-point iteration)")) << r.out;
  std::ifstream in(dir / "f.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["stats"]["linear_solver"], "none (fixed-point iteration)");
  EXPECT_NEAR(j["gradient"]["G"]["p"].get<double>(), -2.31195311, 1e-6);
  const Outcome idas = saltus_cmd({"run", "galan", "--integrator", "idas", "--nonlinear-solver", "fixed-point"});
  EXPECT_EQ(idas.status, 2);
  EXPECT_TRUE(contains(idas.err, "the fixed-point nonlinear solver is for CVODES runs")) << idas.err;
  const Outcome bad = saltus_cmd({"run", "galan", "--nonlinear-solver", "picard"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "--nonlinear-solver")) << bad.err;
}

// --linear-solver sparse: KLU on IDAS's sparse Newton matrix, named in the report; galan run on
// IDAS gives its closed-form gradient. CVODES refuses it with one line (exit 2).
TEST(Cli, SparseLinearSolverRunsOnIdasOnly) {
  const Outcome r = saltus_cmd({"run", "galan", "--integrator", "idas", "--linear-solver", "sparse"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Linear solver: KLU on the sparse Newton matrix (")) << r.out;
  EXPECT_TRUE(contains(r.out, "-2.311953e+00")) << r.out;
  const Outcome cvodes = saltus_cmd({"run", "galan", "--linear-solver", "sparse"});
  EXPECT_EQ(cvodes.status, 2);
  EXPECT_TRUE(contains(cvodes.err, "linear solver 'sparse' is for IDAS runs")) << cvodes.err;
}

TEST(Cli, WarnsWhenFiniteDifferencesStraddleAnEventAtTheHorizon) {
  // ball1d with g = 8, h0 = 50 to T = 15: the 20th impact falls 5 ms before T and moves by
  // 39 s per unit of e, so central differences in e change the event count.
  const Outcome r = saltus_cmd({"run", "ball1d", "--param", "g=8", "--param", "h0=50", "--tend",
                                "15", "--method", "all"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "warning: central differences for 'e'")) << r.out;
}

// box2d has no resting mode: a plastic wall impact (e = 0) leaves it on its guard, a failed run.
TEST(Cli, ZenoRunFailsWithStatusOne) {
  const Outcome r = saltus_cmd({"run", "box2d", "--param", "e=0"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "'right_wall'")) << r.err;
  EXPECT_TRUE(contains(r.err, "stays on its guard")) << r.err;
}

// ball1d rests: the bounces of the README's example accumulate and every method agrees.
TEST(Cli, SettlingBallRunsEveryMethodAndReportsTheAccumulation) {
  const Outcome r = saltus_cmd({"run", "ball1d", "--param", "e=0.7", "--param", "c=0", "--tend", "3", "--method", "all"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "'impact (rest)' comes to rest at t = 2.558")) << r.out;
  EXPECT_TRUE(contains(r.out, "accumulate at t_inf = 2.5586")) << r.out;
  // Central differences alone warn of a perturbed run with another event sequence too (only
  // --method all did).
  const Outcome fd = saltus_cmd({"run", "ball1d", "--tend", "5", "--method", "fd"});
  ASSERT_EQ(fd.status, 0) << fd.err;
  EXPECT_TRUE(contains(fd.out, "warning: central differences for 'e': a perturbed run had another event sequence"))
      << fd.out;
  // A plastic impact rests at its first firing: nothing accumulates (the report said its
  // firings accumulate at the firing's own time).
  const Outcome plastic = saltus_cmd({"run", "ball1d", "--param", "e=0", "--tend", "3", "--method", "simulate"});
  ASSERT_EQ(plastic.status, 0) << plastic.err;
  EXPECT_TRUE(contains(plastic.out, "' comes to rest at t = ")) << plastic.out;
  EXPECT_TRUE(contains(plastic.out, ", at once (no bounce)")) << plastic.out;
  EXPECT_FALSE(contains(plastic.out, "accumulate")) << plastic.out;
}

// A model file runs like an example: the JSON keeps its shape with the benchmark names, the
// formulation can be overridden, and the constraint residuals are reported.
TEST(Cli, ModelFileRunsInTheRequestedFormulation) {
  const auto dir = temp_dir("model_file");
  const auto path = (dir / "fivebar.json").string();
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar.yaml";
  const Outcome r = saltus_cmd({"run", model, "--formulation", "index1", "--rtol", "1e-9", "--json", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "index1 formulation"));
  EXPECT_TRUE(contains(r.out, "constraint residual"));
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["problem"], "fivebar");
  EXPECT_NEAR(j["gradient"]["drift"]["L01"].get<double>(), -4.2288, 6e-5);  // seed 003, Table 1
  EXPECT_NEAR(j["gradient"]["drift"]["L02"].get<double>(), 3.2116, 6e-5);
  EXPECT_LT(j["monitors"]["constraint residual |Phi|"].get<double>(), 1e-6);
}

// --method all compares every method the problem has (on a problem the adjoint refused, the
// others with a note naming the reason; no model file reaches that today).
TEST(Cli, MethodAllComparesTheAdjointOfEveryDaeForm) {
  // A state-dependent mass matrix: the adjoint takes the conservative form (docs/dae.md,
  // "Adjoint").
  const auto dir = temp_dir("variable_mass");
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "mass.yaml").string();
  std::ofstream(model) << R"(name: varmass
horizon: 1
parameters:
  k: {value: 2.0}
states:
  x: 1
modes:
  A: {residual: ["(1 + x^2)*der(x) + k*x"]}
costs:
  G: {running: x}
)";
  const Outcome all = saltus_cmd({"run", model, "--method", "all"});
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_TRUE(contains(all.out, "adjoint vs forward sensitivity")) << all.out;
  // Every multibody formulation has an adjoint: ggl, stabilized_index1 and index3 through the
  // completion.
  const std::string slidercrank = std::string(SALTUS_SOURCE_DIR) + "/examples/slidercrank.yaml";
  for (const char* formulation : {"ggl", "stabilized_index1", "index3"}) {
    const Outcome r = saltus_cmd({"run", slidercrank, "--formulation", formulation, "--method", "all"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "adjoint vs forward sensitivity")) << formulation << r.out;
  }
}

TEST(Cli, FormulationErrorsAreUsageErrors) {
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar.yaml";
  const Outcome bad = saltus_cmd({"run", model, "--formulation", "lagrange"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "unknown formulation 'lagrange'")) << bad.err;
  const Outcome builtin = saltus_cmd({"run", "galan", "--formulation", "maggi"});
  EXPECT_EQ(builtin.status, 2);
  EXPECT_TRUE(contains(builtin.err, "--formulation applies to model files")) << builtin.err;
  const Outcome missing = saltus_cmd({"run", "no/such/model.yaml"});
  EXPECT_NE(missing.status, 0);
  EXPECT_TRUE(contains(missing.err, "cannot read model file 'no/such/model.yaml': No such file or directory")) << missing.err;
  const std::string xml = write_temp_file("other_extension", "robot.xml", "<robot name='r'/>\n");
  const Outcome other = saltus_cmd({"run", xml});
  EXPECT_EQ(other.status, 2);
  EXPECT_TRUE(contains(other.err, "robot.xml' is a file, but not a model file: a model file's name ends in .yaml, .yml "
                                  "or .urdf"))
      << other.err;
}

// Bad model input is exit status 2 with one line naming the file, line and column, whether the
// value comes from the file or from --param (which is named too).
TEST(Cli, ModelErrorsAreBadInputWithTheirLocation) {
  const std::string path = write_temp_file("bad_model", "ball.yaml", R"(name: ball
horizon: 1
parameters: {m: 2, e: 0.5}
points: {p: {position: [0, 1]}}
elements: [{type: point_mass, point: p, mass: m}]
contacts: [{name: floor, point: p, line: {point: [0, 0], normal: [0, 1]}, restitution: e}]
costs: {yT: {terminal: [{signal: y, of: p}]}}
)");
  const Outcome fine = saltus_cmd({"run", path});
  EXPECT_EQ(fine.status, 0) << fine.err;
  const Outcome mass = saltus_cmd({"run", path, "--param", "m=-1"});
  EXPECT_EQ(mass.status, 2);
  EXPECT_TRUE(contains(mass.err, "--param m=-1: " + path + ":5:")) << mass.err;
  EXPECT_TRUE(contains(mass.err, "needs mass > 0, got -1")) << mass.err;
  const Outcome restitution = saltus_cmd({"run", path, "--param", "e=1.5"});
  EXPECT_EQ(restitution.status, 2);
  EXPECT_TRUE(contains(restitution.err, "contacts[0].restitution")) << restitution.err;
  for (const Outcome& r : {mass, restitution}) EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const Outcome builtin = saltus_cmd({"run", "ball1d", "--param", "e=-0.2"});
  EXPECT_EQ(builtin.status, 2);
  EXPECT_TRUE(contains(builtin.err, "--param e=-0.2: parameter 'e' of problem 'ball1d' must lie in [0, 1]"))
      << builtin.err;
}

// --param values are checked at the model's start too (a point started below its floor), and
// values valid only together are accepted in any order (each refused one is retried after the
// others): the point lowered with its floor runs, the point lowered alone is refused.
TEST(Cli, ParameterOverridesAreCheckedAtTheStartAndTogether) {
  const std::string path = write_temp_file("start_overrides", "drop.yaml", R"(name: drop
horizon: 0.5
parameters: {y0: 1, floor: 0}
points: {p: {position: [0, y0]}}
elements: [{type: point_mass, point: p, mass: 1}]
contacts: [{name: floor, point: p, line: {point: [0, floor], normal: [0, 1]}, restitution: 0.5}]
costs: {yT: {terminal: [{signal: y, of: p}]}}
)");
  const Outcome alone = saltus_cmd({"run", path, "--method", "simulate", "--param", "y0=-2"});
  EXPECT_EQ(alone.status, 2) << alone.err;
  EXPECT_TRUE(contains(alone.err, "--param y0=-2: " + path + ":6:")) << alone.err;
  EXPECT_TRUE(contains(alone.err, "contact 'floor' starts penetrating")) << alone.err;
  EXPECT_EQ(std::count(alone.err.begin(), alone.err.end(), '\n'), 1) << alone.err;
  const Outcome together = saltus_cmd({"run", path, "--method", "simulate", "--param", "y0=-2", "--param", "floor=-2.5"});
  EXPECT_EQ(together.status, 0) << together.err;
}

// An option given twice is one clear line (CLI11 said "At Most 1 required but received 2"), and
// a parameter set twice is refused rather than the last value winning silently.
TEST(Cli, AnOptionOrParameterGivenTwiceIsRefused) {
  const Outcome method = saltus_cmd({"run", "galan", "--method", "forward", "--method", "adjoint"});
  EXPECT_EQ(method.status, 2) << method.err;
  EXPECT_EQ(method.err, "saltus: error: --method: given more than once (it takes one value)\n");
  const Outcome param = saltus_cmd({"run", "galan", "--param", "p=3", "--param", "p=4"});
  EXPECT_EQ(param.status, 2) << param.err;
  EXPECT_TRUE(contains(param.err, "--param p=4: given twice (also --param p=3)")) << param.err;
  const Outcome rates = saltus_cmd({"run", "robertson", "--param", "p1=-0.04"});
  EXPECT_EQ(rates.status, 2) << rates.err;
  EXPECT_TRUE(contains(rates.err, "parameter 'p1' of problem 'robertson' must lie in [0, inf]")) << rates.err;
  const Outcome below = saltus_cmd({"run", "ball1d", "--param", "h0=-0.5"});
  EXPECT_EQ(below.status, 2) << below.err;
  EXPECT_TRUE(contains(below.err, "ball1d needs h0 >= r")) << below.err;
}

// A quoted assignment with spaces around '=' (an outside reader's "e = 0.5") sets the parameter
// as e=0.5 does; a name of spaces alone is no name.
TEST(Cli, AParameterAssignmentMayHaveSpacesAroundTheEqualsSign) {
  const Outcome spaced = saltus_cmd({"run", "ball1d", "--method", "simulate", "--param", " e = 0.5 "});
  const Outcome plain = saltus_cmd({"run", "ball1d", "--method", "simulate", "--param", "e=0.5"});
  EXPECT_EQ(spaced.status, 0) << spaced.err;
  const auto without_time = [](const std::string& out) { return out.substr(0, out.find("Time:")); };
  EXPECT_EQ(without_time(spaced.out), without_time(plain.out));
  EXPECT_TRUE(contains(spaced.out, "  e          = 0.5\n")) << spaced.out;
  const Outcome nameless = saltus_cmd({"run", "ball1d", "--param", "  =0.5"});
  EXPECT_EQ(nameless.status, 2) << nameless.err;
  EXPECT_EQ(nameless.err, "saltus: error: --param '  =0.5': expected name=value\n");
}

// Stated velocities that the constraints overrule: a warning line and the run goes on, or with
// --strict exit status 2 before any work.
TEST(Cli, CorrectedVelocitiesWarnOrAreRefusedWithStrict) {
  const std::string path = write_temp_file("strict", "pendulum.yaml", R"(name: pendulum
horizon: 0.1
ground: {O: [0, 0]}
points: {p: {position: [1, 0], velocity: [1, 0]}}
elements: [{type: bar, from: O, to: p, length: 1, mass: 1}]
costs: {yT: {terminal: [{signal: y, of: p}]}}
)");
  const Outcome warned = saltus_cmd({"run", path});
  EXPECT_EQ(warned.status, 0) << warned.err;
  EXPECT_TRUE(contains(warned.err, "saltus: warning: " + path + ":4:")) << warned.err;
  EXPECT_TRUE(contains(warned.err, "points.p.velocity")) << warned.err;
  const Outcome strict = saltus_cmd({"run", path, "--strict"});
  EXPECT_EQ(strict.status, 2);
  EXPECT_TRUE(contains(strict.err, "(refused by --strict)")) << strict.err;
  EXPECT_TRUE(strict.out.empty());
}

// An override is noted as the file's own value would be: a rod length that makes assembly move
// the drawn end far warns with --param as it does in the file, and --strict refuses it (before,
// an override ran without the note, and --strict ran it).
TEST(Cli, AnOverrideThatAssemblyCorrectsWarnsAsTheFilesValue) {
  const std::string path = write_temp_file("override_notes", "rod.yaml", R"(name: rod
horizon: 0.1
parameters: {l: 1}
ground: {O: [0, 0]}
points: {p: {position: [1, 0]}}
elements: [{type: bar, from: O, to: p, length: l, mass: 1}]
costs: {yT: {terminal: [{signal: y, of: p}]}}
)");
  const Outcome nominal = saltus_cmd({"run", path, "--strict"});
  EXPECT_EQ(nominal.status, 0) << nominal.err;
  EXPECT_FALSE(contains(nominal.err, "warning")) << nominal.err;
  const Outcome warned = saltus_cmd({"run", path, "--param", "l=2"});
  EXPECT_EQ(warned.status, 0) << warned.err;
  EXPECT_TRUE(contains(warned.err, "saltus: warning: " + path + ":5:")) << warned.err;
  EXPECT_TRUE(contains(warned.err, "assembly moved p.x from 1 to 2")) << warned.err;
  const Outcome strict = saltus_cmd({"run", path, "--param", "l=2", "--strict"});
  EXPECT_EQ(strict.status, 2);
  EXPECT_TRUE(contains(strict.err, "(refused by --strict)")) << strict.err;
  // Back to the file's value, no note.
  const Outcome back = saltus_cmd({"run", path, "--param", "l=1", "--strict"});
  EXPECT_EQ(back.status, 0) << back.err;
}

// What a URDF import leaves out (joint limits, damping) is a note, not a correction: --strict
// runs it (before, a URDF with the <limit> every revolute joint must have could not run strict).
TEST(Cli, UrdfImportRemarksAreNotesThatStrictKeeps) {
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/urdf_arm.yaml";
  const Outcome r = saltus_cmd({"run", model, "--method", "simulate", "--tend", "0.01", "--strict"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "saltus: note: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "arm.urdf: URDF joint limits ignored (pitch, elbow)")) << r.err;
  EXPECT_FALSE(contains(r.err, "saltus: warning:")) << r.err;
}

// An output that cannot be written is named with its option before the run, and a written
// output leaves no temporary file behind.
TEST(Cli, UnwritableOutputsNameTheirOption) {
  const auto dir = temp_dir("unwritable");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "file") << "a file where a folder is expected\n";
  const auto json = (dir / "file" / "out.json").string();
  const Outcome r = saltus_cmd({"run", "galan", "--json", json});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--json " + json + ": ")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "the run started before the output was checked";
  const Outcome folder = saltus_cmd({"run", "galan", "--out", (dir / "file").string()});
  EXPECT_EQ(folder.status, 2);
  EXPECT_TRUE(contains(folder.err, "--out ")) << folder.err;
  const Outcome ok = saltus_cmd({"run", "galan", "--json", (dir / "ok.json").string(), "--out", (dir / "csv").string()});
  ASSERT_EQ(ok.status, 0) << ok.err;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find("saltus-tmp"), std::string::npos) << entry.path();
  }
}

// SIGINT stops a long run at the solvers' next step: one line, exit status 130, and neither the
// JSON file nor a temporary file is left behind. Runs the real binary in a child process.
TEST(Cli, InterruptStopsTheRunAndLeavesNoOutput) {
  const auto dir = temp_dir("interrupt");
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "out.json").string();
  const std::string err_path = (dir / "stderr.txt").string();
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar.yaml";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!freopen(err_path.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(99);
    execl(SALTUS_BINARY, "saltus", "run", model.c_str(), "--tend", "1e6", "--json", json.c_str(),
          static_cast<char*>(nullptr));
    _exit(98);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(kill(child, SIGINT), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) {  // up to 60 s; a stuck child fails the test
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the run did not stop within 60 s of SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream err_in(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(err, "saltus: interrupted at t = ")) << err;
  EXPECT_TRUE(contains(err, "(no output written)")) << err;
  EXPECT_FALSE(std::filesystem::exists(json));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find("saltus-tmp"), std::string::npos) << entry.path();
  }
}

namespace {

// `saltus check` describes a model without integrating it; its numbers are checked against the
// five-bar's geometry (four bars between three moving points: 6 coordinates, 2 degrees of
// freedom) and its errors are those of a run.
TEST(Cli, CheckDescribesAModelWithoutRunningIt) {
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml";
  const Outcome r = saltus_cmd({"check", model});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Coordinates (6; 3 points, 0 bodies): p1.x, p1.y, p2.x, p2.y, p3.x, p3.y")) << r.out;
  EXPECT_TRUE(contains(r.out, "Constraints (4 rows):")) << r.out;
  EXPECT_TRUE(contains(r.out, "Degrees of freedom: 2 (rank of Phi_q at the initial configuration: 4 of 4 rows; "
                              "redundant constraints: 0)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  L01 = 2.23607: used by elements[4].rest_length (")) << r.out;
  EXPECT_TRUE(contains(r.out, "  floor: point 'p2', initial gap ")) << r.out;
  EXPECT_TRUE(contains(r.out, "OK: the model assembles and starts")) << r.out;
  EXPECT_EQ(r.err, "");
  // Persistent contacts say whether they start active: the ladder leans on its wall and floor.
  const Outcome ladder = saltus_cmd({"check", std::string(SALTUS_SOURCE_DIR) + "/examples/ladder.yaml"});
  ASSERT_EQ(ladder.status, 0) << ladder.err;
  EXPECT_TRUE(contains(ladder.out, "  wall: a point of body 'ladder', initial gap 0 m, normal velocity 0 m/s; persistent, starts active"))
      << ladder.out;
  EXPECT_TRUE(contains(ladder.out, "  top_floor: a point of body 'ladder', initial gap 3.82135 m, normal velocity 0 m/s; "
                                   "persistent, starts open"))
      << ladder.out;
}

TEST(Cli, CheckRefusesWhatARunRefuses) {
  const auto dir = temp_dir("check");
  std::filesystem::create_directories(dir);
  const auto path = (dir / "bad.yaml").string();
  std::ofstream(path) << "horizon: 1\nparameters: {L: 1}\nground: {O: [0, 0]}\npoints: {p: {position: [1, 0]}}\n"
                         "elements:\n  - {type: bar, name: rod, from: O, to: p, length: \"L - 2\", mass: 1}\n"
                         "costs: {c: {terminal: [{signal: y, of: p}]}}\n";
  Outcome r = saltus_cmd({"check", path});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "bad.yaml:6:") && contains(r.err, "bar 'rod' needs length > 0, got -1")) << r.err;
  // --quiet prints nothing for a model that passes, and the same line for one that does not.
  r = saltus_cmd({"check", "--quiet", path});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "bar 'rod' needs length > 0, got -1")) << r.err;
  const Outcome quiet = saltus_cmd({"check", "--quiet", std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml"});
  EXPECT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.err, "");
  r = saltus_cmd({"check", "ball1d"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "'ball1d' is a built-in example defined in C++, with no model file to check")) << r.err;
  EXPECT_TRUE(contains(r.err, "or a shipped model's name (fivebar, fivebar_floor, slidercrank, chain)")) << r.err;
  r = saltus_cmd({"check", "nosuch"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "check takes a model file (*.yaml, *.yml or a URDF robot *.urdf) or a shipped model's name")) << r.err;
  EXPECT_TRUE(contains(r.err, "got 'nosuch'")) << r.err;
}

TEST(Cli, EquationModelsRunCheckAndOptimizeLikeTheirBuiltIns) {
  const std::string dir = std::string(SALTUS_SOURCE_DIR) + "/examples/equations/";
  const auto out = temp_dir("equations");
  const Outcome file = saltus_cmd({"run", dir + "galan.yaml", "--json", (out / "file.json").string()});
  ASSERT_EQ(file.status, 0) << file.err;
  std::ifstream in(out / "file.json");
  const auto j = nlohmann::json::parse(in);
  // The built-in's values (RunWritesJsonOfTheAgreedShape).
  EXPECT_NEAR(j["costs"]["G"].get<double>(), 20.0290746533596, 1e-8);
  EXPECT_NEAR(j["gradient"]["G"]["p"].get<double>(), -2.31195310744389, 1e-8);

  const Outcome check = saltus_cmd({"check", dir + "ball1d.yaml"});
  ASSERT_EQ(check.status, 0) << check.err;
  EXPECT_TRUE(contains(check.out, "equation model")) << check.out;
  EXPECT_TRUE(contains(check.out, "v = 0 at t0 = 0, rate -9.81")) << check.out;
  EXPECT_TRUE(contains(check.out, "impact: falling, watched in flight, with a jump, comes to rest in rest"))
      << check.out;
  EXPECT_TRUE(contains(check.out, "OK: the model loads and starts")) << check.out;
  // A time event is given by its time (not as a rising guard).
  const Outcome times = saltus_cmd({"check", dir + "time_events.yaml"});
  ASSERT_EQ(times.status, 0) << times.err;
  EXPECT_TRUE(contains(times.out, "at_alpha: at t = 1.5, watched in")) << times.out;
  EXPECT_FALSE(contains(times.out, "rising")) << times.out;

  const Outcome opt = saltus_cmd({"optimize", dir + "ball1d.yaml", "--cost", "h_T", "--maximize", "--vary",
                                  "e=0.78:0.92", "--param", "c=0", "--param", "h0=50", "--param", "g=9.8", "--param",
                                  "e=0.82", "--tend", "15"});
  ASSERT_EQ(opt.status, 0) << opt.err;
  EXPECT_TRUE(contains(opt.out, "0.86655410")) << opt.out;  // closed form 0.866554105437 (test_optimize.cpp)

  const Outcome formulation = saltus_cmd({"run", dir + "ball1d.yaml", "--formulation", "maggi"});
  EXPECT_EQ(formulation.status, 2);
  EXPECT_TRUE(contains(formulation.err, "--formulation applies to mechanism model files")) << formulation.err;
}

TEST(Cli, CheckRefusesAnEquationModelThatARunRefusesBeforeIntegrating) {
  const auto dir = temp_dir("check_start");
  std::filesystem::create_directories(dir);
  const auto path = (dir / "on_guard.yaml").string();
  // It starts at rest on the guard of its falling event: a run refuses it, so must check.
  std::ofstream(path) << "horizon: 1\nstates: {h: 0, v: 0}\nmodes: {flight: {rhs: [v, -9.81]}}\n"
                         "events: {impact: {guard: h, direction: falling, jump: [h, -v]}}\n"
                         "costs: {h_T: {terminal: h}}\n";
  const Outcome check = saltus_cmd({"check", path});
  EXPECT_EQ(check.status, 2);
  EXPECT_TRUE(contains(check.err, "event 'impact': the run starts on its guard")) << check.err;
  EXPECT_TRUE(contains(check.err, "starts_on_guard: true")) << check.err;
  const Outcome run = saltus_cmd({"run", path});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, check.err);
}

// A folder named like a built-in example (left by `run ball1d --out ball1d`) does not hide the
// example; a folder that is no example's name is named as a folder.
TEST(Cli, AFolderDoesNotHideABuiltInExample) {
  const auto dir = temp_dir("folder_named_ball1d");
  std::filesystem::create_directories(dir / "ball1d");
  std::filesystem::create_directories(dir / "results");
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  const Outcome example = saltus_cmd({"run", "ball1d", "--method", "simulate"});
  const Outcome folder = saltus_cmd({"run", "results"});
  // optimize names it alike (it said "run takes ...").
  const Outcome optimize = saltus_cmd({"optimize", "results", "--cost", "x", "--vary", "a=0:1"});
  std::filesystem::current_path(previous);
  EXPECT_EQ(example.status, 0) << example.err;
  EXPECT_EQ(folder.status, 2);
  EXPECT_TRUE(contains(folder.err, "'results' is a directory: a model is a built-in example's")) << folder.err;
  EXPECT_EQ(optimize.status, 2);
  EXPECT_TRUE(contains(optimize.err, "'results' is a directory: a model is")) << optimize.err;
  EXPECT_FALSE(contains(optimize.err, "run takes")) << optimize.err;
}

// A write that fails part-way (a full device) names the system's reason (it said "unknown
// error": the reason was read after the stream had stopped writing).
TEST(Cli, AFullDeviceIsNamedAsFull) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const Outcome r = saltus_cmd({"run", "ball1d", "--method", "simulate", "--json", "/dev/full"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "error while writing '/dev/full': No space left on device")) << r.err;
}

// check takes --param as run does: the description, the warnings and the refusals are those of
// the overridden values (check had no --param: "The following arguments were not expected").
TEST(Cli, CheckTakesParameterOverrides) {
  const std::string floor = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml";
  const Outcome mechanism = saltus_cmd({"check", floor, "--param", "e=0.3"});
  ASSERT_EQ(mechanism.status, 0) << mechanism.err;
  EXPECT_TRUE(contains(mechanism.out, "  e = 0.3: used by contacts[0].restitution")) << mechanism.out;
  const Outcome shipped = saltus_cmd({"check", "fivebar_floor", "--param", "e=0.3"});
  EXPECT_TRUE(contains(shipped.out, "  e = 0.3: used by contacts[0].restitution")) << shipped.out;
  const Outcome equation =
      saltus_cmd({"check", std::string(SALTUS_SOURCE_DIR) + "/examples/equations/ball1d.yaml", "--param", "h0=3"});
  ASSERT_EQ(equation.status, 0) << equation.err;
  EXPECT_TRUE(contains(equation.out, "  h = 3 at t0")) << equation.out;
  const Outcome unknown = saltus_cmd({"check", floor, "--param", "nosuch=1"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_TRUE(contains(unknown.err, "--param nosuch=1: unknown parameter 'nosuch'")) << unknown.err;
}

// What a run would fail on at its first step is named by check, before anything is printed, and
// refused by a run as bad input the same way; an initial state that is no number at the
// overridden values is bad input.
TEST(Cli, NonFiniteStartsAreNamed) {
  const std::string head = "horizon: 1\nparameters: {a: 1}\nstates: {T: a}\n";
  const std::string rate = write_temp_file("nan_rate", "m.yaml",
                                           head + "modes: {m: {rhs: [\"sqrt(T - 2)\"]}}\ncosts: {T_T: {terminal: T}}\n");
  const Outcome check_rate = saltus_cmd({"check", rate});
  EXPECT_EQ(check_rate.status, 2);
  EXPECT_TRUE(check_rate.out.empty()) << check_rate.out;
  EXPECT_TRUE(contains(check_rate.err, "m.yaml:4:12: modes.m: mode 'm': the rate of state 'T' at the start (t0 = 0) is nan"))
      << check_rate.err;
  const std::string cost = write_temp_file("nan_cost", "m.yaml",
                                           head + "modes: {m: {rhs: [1]}}\ncosts: {c: {running: \"log(T - 2)\"}}\n");
  const Outcome check_cost = saltus_cmd({"check", cost});
  EXPECT_EQ(check_cost.status, 2);
  EXPECT_TRUE(contains(check_cost.err, "the running cost of 'c' at the start (t0 = 0) is nan")) << check_cost.err;
  // A run refuses them too, as bad input before it integrates (it failed at its first step,
  // exit 1), on CVODES and on the Runge-Kutta integrators.
  for (const std::string integrator : {"cvodes", "dopri5"}) {
    const Outcome run_cost = saltus_cmd({"run", cost, "--integrator", integrator});
    EXPECT_EQ(run_cost.status, 2) << integrator;
    EXPECT_TRUE(contains(run_cost.err, "the running cost of 'c' at the start (t0 = 0) is nan")) << run_cost.err;
    const Outcome run_rate = saltus_cmd({"run", rate, "--integrator", integrator});
    EXPECT_EQ(run_rate.status, 2) << integrator;
    EXPECT_TRUE(contains(run_rate.err, "mode 'm': the rate of state 'T' at the start (t0 = 0) is nan")) << run_rate.err;
  }
  // A mechanism's rate that is not finite at the start names its file (it named the mode
  // alone): a body spun at 1e200 rad/s.
  const std::string spun = write_temp_file(
      "nan_mechanism", "spun.yaml",
      "horizon: 1\nparameters: {m: 1.3}\nspatial:\n  bodies:\n    bob:\n      mass: m\n"
      "      inertia: [0.02, 0.03, 0.01, 0.002, -0.001, 0.003]\n      center: [0.05, 0, -0.6]\n"
      "      position: [0.1, -0.2, 1.0]\n      angular_velocity: [0, 0, 1.0e200]\n  joints:\n"
      "    - {type: spherical, name: pivot, a: ground, b: bob, point_a: [0.1, -0.2, 1.0], point_b: [0, 0, 0]}\n"
      "costs:\n  tipz: {terminal: [{signal: z, of: bob}]}\n");
  const Outcome spun_run = saltus_cmd({"run", spun});
  EXPECT_EQ(spun_run.status, 2);
  EXPECT_TRUE(contains(spun_run.err, "spun.yaml: mode 'motion': the rate of state")) << spun_run.err;
  const std::string root = write_temp_file("nan_start", "m.yaml",
                                           "horizon: 1\nparameters: {a: 1}\nstates: {T: sqrt(a)}\n"
                                           "modes: {m: {rhs: [1]}}\ncosts: {T_T: {terminal: T}}\n");
  const Outcome start = saltus_cmd({"run", root, "--param", "a=-1"});
  EXPECT_EQ(start.status, 2);
  EXPECT_TRUE(contains(start.err, "the initial state (T=nan) of problem 'model' is not finite at the parameters' values"))
      << start.err;
  // On IDAS the same (a run failed, exit 1, "the residual of mode 'm' is not finite at the
  // start"): a residual mode names its row, an explicit mode (on IDAS for the residual mode
  // beside it) the state's rate; in check, a run and the complex step.
  const std::string residual = write_temp_file(
      "nan_residual", "m.yaml",
      "horizon: 1\nstates: {x: 0, y: 1}\nmodes:\n  m: {residual: [der(x) - y, der(y) - log(x)]}\n"
      "costs: {x_T: {terminal: x}}\n");
  const std::string explicit_dae = write_temp_file(
      "nan_explicit_dae", "m.yaml",
      "horizon: 1\nstates: {x: 0, y: 1}\nmodes:\n  m: {rhs: [y, log(x)]}\n  r: {residual: [der(x) - y, der(y)]}\n"
      "costs: {x_T: {terminal: x}}\n");
  for (const std::string method : {"check", "simulate", "complex-step"}) {
    const auto command = [&](const std::string& file) {
      return method == "check" ? std::vector<std::string>{"check", file}
                               : std::vector<std::string>{"run", file, "--method", method};
    };
    const Outcome row = saltus_cmd(command(residual));
    EXPECT_EQ(row.status, 2) << method << row.err;
    EXPECT_TRUE(contains(row.err, "m.yaml:4:6: modes.m: mode 'm': residual[1] at the start (t0 = 0) is infinite, at "
                                  "the state (x=0, y=1) and zero rates"))
        << method << row.err;
    const Outcome rate_on_idas = saltus_cmd(command(explicit_dae));
    EXPECT_EQ(rate_on_idas.status, 2) << method << rate_on_idas.err;
    EXPECT_TRUE(contains(rate_on_idas.err, "modes.m: mode 'm': the rate of state 'y' at the start (t0 = 0) is infinite"))
        << method << rate_on_idas.err;
  }
}

// A running cost that becomes nan during the run (sqrt(x), x = 1 - t past t = 1) is named, with
// exit 1, in every method on CVODES. Simulation and forward runs said "CVodeGetQuadDky failed:
// CV_BAD_T" (CVode returned at the output time after stepping past the failed evaluations).
TEST(Cli, ARunningCostThatTurnsNanIsNamedInEveryMethod) {
  const std::string file = write_temp_file("nan_later", "m.yaml",
                                           "horizon: 3\nparameters: {a: 1}\nstates: {x: 1}\n"
                                           "modes: {m: {rhs: [-a]}}\ncosts: {c: {running: sqrt(x)}}\n");
  for (const std::string method : {"simulate", "forward", "adjoint", "complex-step"}) {
    const Outcome r = saltus_cmd({"run", file, "--method", method});
    EXPECT_EQ(r.status, 1) << method;
    EXPECT_TRUE(contains(r.err, "the running cost of 'c' is nan at t = 1")) << method << ": " << r.err;
  }
}

}  // namespace

// A perturbed run of central differences that fails is named as such (the nominal run
// succeeded: the message read as if it had failed); with --method all it is a note, and the
// other methods' results stand (they were all lost, exit 1). x(1) = 1 - k: log(x(1)) is finite
// at k = 0.9999999, but not at k + h past 1.
TEST(Cli, AFailedCentralDifferenceRunIsNamedAndAllKeepsTheOthers) {
  const std::string file = write_temp_file("fd_fails", "m.yaml",
                                           "horizon: 1\nparameters: {k: 0.9999999}\nstates: {x: 1}\n"
                                           "modes: {m: {rhs: [-k]}}\ncosts: {c: {terminal: log(x)}}\n");
  const Outcome fd = saltus_cmd({"run", file, "--method", "fd"});
  EXPECT_EQ(fd.status, 1);
  EXPECT_TRUE(contains(fd.err, "central differences for 'k': the run at k = 1.00")) << fd.err;
  EXPECT_TRUE(contains(fd.err, "(nominal 0.99999990000000005) failed: ")) << fd.err;
  const Outcome all = saltus_cmd({"run", file, "--method", "all"});
  EXPECT_EQ(all.status, 0) << all.err;
  EXPECT_TRUE(contains(all.err, "saltus: note: no central differences: central differences for 'k'")) << all.err;
  EXPECT_TRUE(contains(all.out, "largest relative difference, adjoint vs forward sensitivity")) << all.out;
}

// --json /dev/stdout puts the JSON alone on stdout, the report on stderr: a pipe into a JSON
// reader gets JSON. (With stdout redirected to a file, the report overwrote the JSON's start.)
TEST(Cli, JsonOnStdoutIsAloneThere) {
  const auto dir = temp_dir("json_stdout");
  std::filesystem::create_directories(dir);
  const std::string captured = (dir / "stdout.txt").string();
  std::fflush(stdout);
  std::cout.flush();
  const int saved = ::dup(STDOUT_FILENO);
  ASSERT_GE(saved, 0);
  const int file = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(file, 0);
  ::dup2(file, STDOUT_FILENO);
  ::close(file);
  const Outcome r = saltus_cmd({"run", "ball1d", "--method", "simulate", "--json", "/dev/stdout"});
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "Saltus run: ball1d")) << r.err;
  std::ifstream in(captured);
  const nlohmann::json json = nlohmann::json::parse(in);  // throws unless the file is JSON alone
  EXPECT_EQ(json["events"].size(), 3u);
}

// A plain simulation: trajectory, events and costs, no derivative anywhere; the costs are the
// forward run's (the same integration without sensitivities, to the tolerances).
TEST(Cli, MethodSimulateRunsWithoutDerivatives) {
  const auto dir = temp_dir("simulate");
  const auto json = (dir / "r.json").string();
  const Outcome r = saltus_cmd({"run", "galan", "--method", "simulate", "--json", json, "--out", (dir / "csv").string(),
                                "--no-plots"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "Gradient")) << r.out;
  EXPECT_TRUE(contains(r.out, "Time:  simulation ")) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["method"], "simulate");
  EXPECT_FALSE(j.contains("gradient"));
  EXPECT_NEAR(j["costs"]["G"].get<double>(), 20.0290746533596, 1e-7);
  EXPECT_EQ(j["events"].size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(dir / "csv" / "trajectory.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir / "csv" / "gradient.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir / "csv" / "sensitivities.csv"));
}

// --wrt: the gradient with respect to the named parameters only, the others fixed at their
// (overridden) values; the same numbers as the full gradient's columns.
TEST(Cli, WrtDifferentiatesTheNamedParametersOnly) {
  const auto dir = temp_dir("wrt");
  const std::string model = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml";
  const auto full_json = (dir / "full.json").string(), wrt_json = (dir / "wrt.json").string();
  ASSERT_EQ(saltus_cmd({"run", model, "--tend", "2", "--param", "L01=2.2", "--json", full_json}).status, 0);
  const Outcome r = saltus_cmd({"run", model, "--tend", "2", "--param", "L01=2.2", "--wrt", "g,e", "--method", "all",
                                "--json", wrt_json});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream full_in(full_json), wrt_in(wrt_json);
  const auto full = nlohmann::json::parse(full_in), wrt = nlohmann::json::parse(wrt_in);
  EXPECT_EQ(wrt["parameters"].size(), 2u);
  EXPECT_NEAR(wrt["costs"]["effort"].get<double>(), full["costs"]["effort"].get<double>(), 1e-7 * 22.08);
  for (const char* p : {"g", "e"}) {
    const double reference = full["gradient"]["effort"][p].get<double>();
    EXPECT_NEAR(wrt["gradient"]["effort"][p].get<double>(), reference, 1e-6 * std::abs(reference)) << p;
    EXPECT_NEAR(wrt["methods"]["adjoint"]["gradient"]["effort"][p].get<double>(), reference, 1e-5 * std::abs(reference));
  }
  EXPECT_FALSE(wrt["gradient"]["effort"].contains("L01"));
  EXPECT_EQ(wrt["fixed_parameters"]["L01"].get<double>(), 2.2);  // the JSON alone tells every value the run used
  EXPECT_EQ(wrt["fixed_parameters"].size() + 2, full["parameters"].size());
  EXPECT_FALSE(full.contains("fixed_parameters"));
  const Outcome bad = saltus_cmd({"run", model, "--wrt", "g,nope"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "--wrt: unknown parameter 'nope'")) << bad.err;
  // A stray comma or an empty value names the text (a trailing comma used to be dropped
  // silently, an empty value said "unknown parameter ''").
  for (const char* text : {"e,", ",e", "e,,g", ""}) {
    const Outcome stray = saltus_cmd({"run", "ball1d", "--wrt", text});
    EXPECT_EQ(stray.status, 2) << text;
    EXPECT_TRUE(contains(stray.err, std::string("an empty name in '") + text + "'")) << stray.err;
  }
}

// Event-time sensitivities come with forward sensitivities: an adjoint run's report has no dt/dp
// columns (it printed their headers over blank cells) and its JSON events an empty dtime_dp.
TEST(Cli, AnAdjointRunHasNoEventTimeSensitivities) {
  const auto dir = temp_dir("adjoint_events");
  const auto json = (dir / "a.json").string();
  const Outcome adjoint = saltus_cmd({"run", "ball1d", "--method", "adjoint", "--json", json});
  ASSERT_EQ(adjoint.status, 0) << adjoint.err;
  EXPECT_FALSE(contains(adjoint.out, "dt/d")) << adjoint.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_FALSE(j["events"].empty());
  EXPECT_TRUE(j["events"][0]["dtime_dp"].empty());
  const Outcome forward = saltus_cmd({"run", "ball1d", "--method", "forward"});
  EXPECT_TRUE(contains(forward.out, "dt/de")) << forward.out;
}

// A repeatable option takes one value per occurrence, so it may come before the model's name
// (before, `run --wrt e ball1d` took ball1d as a second name and said "name is required").
TEST(Cli, RepeatableOptionsMayComeBeforeTheModel) {
  const Outcome wrt = saltus_cmd({"run", "--wrt", "e", "--wrt", "g", "ball1d", "--quiet"});
  ASSERT_EQ(wrt.status, 0) << wrt.err;
  EXPECT_TRUE(contains(wrt.out, "dt/de")) << wrt.out;
  EXPECT_TRUE(contains(wrt.out, "dt/dg")) << wrt.out;
  EXPECT_FALSE(contains(wrt.out, "dt/dc")) << wrt.out;
  const Outcome param = saltus_cmd({"run", "--param", "e=0.9", "ball1d", "--method", "simulate", "--quiet"});
  ASSERT_EQ(param.status, 0) << param.err;
  EXPECT_TRUE(contains(param.out, "e          = 0.9")) << param.out;
  const Outcome vary = saltus_cmd({"optimize", "--vary", "e=0.5:0.9", "ball1d", "--cost", "h_T", "--max-evaluations", "3"});
  EXPECT_EQ(vary.status, 0) << vary.err;
}

// --integrator dopri5: the report says the derivatives are those of the computed steps; forward,
// adjoint and the complex step of the steps agree to round-off, and the gradient is galan's
// closed form (theory hybrid-dae.md section 6) within the integrator's accuracy. DAEs are refused.
TEST(Cli, Dopri5GivesDiscreteDerivativesAndRefusesDaes) {
  const auto dir = temp_dir("dopri5");
  const auto json = (dir / "r.json").string();
  const Outcome r = saltus_cmd({"run", "galan", "--integrator", "dopri5", "--method", "all", "--rtol", "1e-10",
                                "--atol", "1e-12", "--json", json});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Integrator: dopri5, discrete")) << r.out;
  EXPECT_TRUE(contains(r.out, "Adjoint (discrete, dopri5)")) << r.out;
  EXPECT_TRUE(contains(r.out, "Solver (dopri5)")) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const double forward = j["gradient"]["G"]["p"].get<double>();
  EXPECT_NEAR(forward, -2.31195310744389, 1e-7);
  EXPECT_EQ(j["stats"]["integrator"], "dopri5");
  EXPECT_TRUE(j["stats"]["discrete"].get<bool>());
  EXPECT_NEAR(j["methods"]["adjoint"]["gradient"]["G"]["p"].get<double>(), forward, 1e-13);
  EXPECT_NEAR(j["methods"]["complex step"]["gradient"]["G"]["p"].get<double>(), forward, 1e-13);
  const Outcome dae = saltus_cmd({"run", "robertson_dae", "--integrator", "dopri5"});
  EXPECT_EQ(dae.status, 2);
  EXPECT_TRUE(contains(dae.err, "dopri5 integrator runs explicit problems only")) << dae.err;
  const Outcome bad = saltus_cmd({"run", "galan", "--integrator", "rk4"});
  EXPECT_EQ(bad.status, 2);
}
