// `saltus run --out` pictures and files of mechanisms: named outputs, units, geometry, PNG plots
// for every method (adjoint-only included), --no-plots, --output-sensitivities, --animate, and
// plots that cannot be made. Runs the command in-process; the plot script in a child process.
#include "support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using saltus::test::contains;
using saltus::test::Outcome;
using saltus::test::saltus_cmd;
using saltus::test::temp_dir;
namespace fs = std::filesystem;

const std::string kFivebar = std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml";

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

/// The file starts with the PNG (or GIF) signature: a whole image, not a leftover.
bool has_signature(const fs::path& file, const std::string& signature) {
  std::ifstream in(file, std::ios::binary);
  std::string head(signature.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in && head == signature;
}

const std::string kPng = "\x89PNG\r\n\x1a\n";

void expect_no_partial_files(const fs::path& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << entry.path();
    EXPECT_EQ(name.find(".partial"), std::string::npos) << entry.path();
  }
}

/// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST(Pictures, MechanismFolderHasOutputsUnitsGeometryAndPlots) {
  const fs::path dir = temp_dir("pictures_mechanism");
  const Outcome r = saltus_cmd({"run", kFivebar, "--tend", "2", "--method", "all", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(first_line(dir / "costs.csv"), "t,vy_int,effort,y2_T");
  const std::string header = first_line(dir / "outputs.csv");
  for (const char* name : {"t,p1.x,p1.y,p1.x_dot,p1.y_dot,p2.x", "bar_12.reaction[0]", "bar_12.phi[0]", "spring1.force",
                           "floor.gap", "kinetic_energy,potential_energy,total_energy"}) {
    EXPECT_TRUE(contains(header, name)) << name << " in " << header;
  }
  std::ifstream units(dir / "units.csv");
  const std::string all_units((std::istreambuf_iterator<char>(units)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(all_units, "spring1.force,N\n")) << all_units;
  EXPECT_TRUE(contains(all_units, "total_energy,J\n")) << all_units;
  EXPECT_FALSE(fs::exists(dir / "output_sensitivities.csv"));  // asked for only
  std::ifstream sketch_file(dir / "mechanism.json");
  const auto sketch = nlohmann::json::parse(sketch_file);
  EXPECT_EQ(sketch["points"], nlohmann::json({"p1", "p2", "p3"}));
  EXPECT_EQ(sketch["elements"][0]["a"]["ground"], nlohmann::json({-0.5, 0.0}));
  EXPECT_EQ(sketch["contacts"][0]["normal"], nlohmann::json({0.0, 1.0}));
  for (const char* png : {"states.png", "sensitivities.png", "costs.png", "gradient.png", "mechanism_paths.png",
                          "mechanism_energies.png", "mechanism_reactions.png"}) {
    EXPECT_TRUE(has_signature(dir / png, kPng)) << png << "\n" << r.out << r.err;
  }
  expect_no_partial_files(dir);
}

// The plots come from the CSV files whatever the method wrote: an adjoint run has no
// sensitivities.csv, and its plots are still made.
TEST(Pictures, AdjointOnlyFolderIsPlotted) {
  const fs::path dir = temp_dir("pictures_adjoint");
  const Outcome r = saltus_cmd({"run", "ball1d", "--method", "adjoint", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "sensitivities.csv"));
  for (const char* png : {"states.png", "costs.png", "gradient.png"}) {
    EXPECT_TRUE(has_signature(dir / png, kPng)) << png << "\n" << r.out << r.err;
  }
  EXPECT_TRUE(contains(r.out, "gradient.png")) << r.out;
}

TEST(Pictures, NoPlotsWritesTheCsvFilesOnly) {
  const fs::path dir = temp_dir("pictures_none");
  const Outcome r = saltus_cmd({"run", "galan", "--out", dir.string(), "--no-plots"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "trajectory.csv"));
  for (const auto& entry : fs::directory_iterator(dir)) EXPECT_NE(entry.path().extension(), ".png") << entry.path();
}

TEST(Pictures, OutputSensitivitiesGoToCsvAndJson) {
  const fs::path dir = temp_dir("pictures_output_sensitivities");
  const std::string json = (dir / "r.json").string();
  const Outcome r = saltus_cmd({"run", kFivebar, "--tend", "0.5", "--output-sensitivities", "--no-plots", "--out",
                                (dir / "csv").string(), "--json", json});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(first_line(dir / "csv" / "output_sensitivities.csv"), "dtotal_energy/dg"));
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const auto& energy = j["outputs"]["total_energy"];
  EXPECT_EQ(energy["unit"], "J");
  ASSERT_EQ(energy["values"].size(), j["outputs"]["times"].size());
  ASSERT_EQ(energy["sensitivities"]["g"].size(), j["outputs"]["times"].size());
  // At the start (at rest, positions independent of g) only the weight's potential moves with g:
  // V = g * sum of the bars' masses times their centres' heights, so dV/dg is that sum.
  const auto y0 = [&](const char* point) { return j["outputs"][std::string(point) + ".y"]["values"][0].get<double>(); };
  const double y1 = y0("p1"), y2 = y0("p2"), y3 = y0("p3");
  const double heights = 1.0 * y1 / 2 + 1.5 * (y1 + y2) / 2 + 1.5 * (y2 + y3) / 2 + 1.0 * y3 / 2;
  EXPECT_NEAR(energy["sensitivities"]["g"][0].get<double>(), heights, 1e-12);
  EXPECT_EQ(j["outputs"]["kinetic_energy"]["sensitivities"]["g"][0].get<double>(), 0.0);
}

TEST(Pictures, BadPictureOptionsAreRefusedBeforeTheRun) {
  const fs::path dir = temp_dir("pictures_bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", kFivebar, "--method", "adjoint", "--output-sensitivities", "--out", dir.string()},
       "--output-sensitivities needs forward sensitivities"},
      {{"run", "galan", "--output-sensitivities", "--out", dir.string()}, "has no named outputs"},
      {{"run", kFivebar, "--output-sensitivities"}, "give one of them"},
      {{"run", kFivebar, "--animate", (dir / "motion.avi").string()}, "must end in .gif or .mp4"},
      {{"run", "ball1d", "--animate", (dir / "ball.gif").string()}, "is not a mechanism model file"},
      {{"run", std::string(SALTUS_SOURCE_DIR) + "/examples/arm.urdf", "--animate", (dir / "arm.gif").string()},
       "has no planar points or bodies"},
  };
  for (const auto& [args, words] : cases) {
    const Outcome r = saltus_cmd(args);
    EXPECT_EQ(r.status, 2) << words;
    EXPECT_TRUE(contains(r.err, words)) << r.err;
    EXPECT_TRUE(r.out.empty()) << "the run started: " << words;
  }
}

TEST(Pictures, AnimateWritesAWholeGif) {
  const fs::path dir = temp_dir("pictures_animate");
  fs::create_directories(dir);
  const fs::path gif = dir / "fivebar.gif";
  const Outcome r = saltus_cmd({"run", kFivebar, "--tend", "0.6", "--method", "adjoint", "--animate", gif.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(has_signature(gif, "GIF89a")) << r.out;
  EXPECT_TRUE(contains(r.out, "Wrote " + gif.string())) << r.out;
  expect_no_partial_files(dir);
}

// A contact line carried by a body is sketched in that body's frame, and the animation turns it.
TEST(Pictures, CarriedContactLineIsSketchedInItsBodyAndAnimated) {
  const fs::path dir = temp_dir("pictures_paddle");
  const fs::path gif = dir / "paddle.gif";
  const Outcome r = saltus_cmd({"run", std::string(SALTUS_SOURCE_DIR) + "/examples/paddle.yaml", "--method",
                                "simulate", "--out", dir.string(), "--no-plots", "--animate", gif.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  std::ifstream sketch_file(dir / "mechanism.json");
  const auto sketch = nlohmann::json::parse(sketch_file);
  EXPECT_EQ(sketch["contacts"][0]["line_body"], "paddle");
  EXPECT_EQ(sketch["contacts"][0]["line_point"], nlohmann::json({0.0, 0.02}));
  EXPECT_TRUE(has_signature(gif, "GIF89a")) << r.out;
  expect_no_partial_files(dir);
}

// Plots that cannot be made (no Python here) are a warning and the CSV files stay; an
// animation that cannot be made fails the command.
TEST(Pictures, MissingPlotterIsAWarningButFailsAnAnimation) {
  const ScopedEnv no_python("SALTUS_PYTHON", "/nonexistent/python3");
  const fs::path dir = temp_dir("pictures_no_python");
  const Outcome plots = saltus_cmd({"run", "galan", "--out", dir.string()});
  EXPECT_EQ(plots.status, 0) << plots.err;
  EXPECT_TRUE(contains(plots.err, "saltus: warning: no plots in")) << plots.err;
  EXPECT_TRUE(fs::exists(dir / "trajectory.csv"));
  const Outcome movie = saltus_cmd({"run", kFivebar, "--tend", "0.2", "--animate", (dir / "m.gif").string()});
  EXPECT_EQ(movie.status, 1) << movie.err;
  EXPECT_TRUE(contains(movie.err, "--animate")) << movie.err;
  EXPECT_FALSE(fs::exists(dir / "m.gif"));
}
