#pragma once
// Running Saltus's plot script (scripts/saltus-plot, installed beside the command) on a folder
// of result files: PNG plots, and the mechanism animation of --animate.
#include <iosfwd>
#include <string>
#include <vector>

namespace saltus::cli {

/// What one run of the script did: its exit status (-1: it could not be started) and what it
/// printed (stdout and stderr together).
struct ScriptRun {
  int status = -1;
  std::string output;
};

/// The script: $SALTUS_PLOT_SCRIPT, else saltus-plot beside the running executable, else the
/// source tree's scripts/saltus-plot. The interpreter: $SALTUS_PYTHON, else the Python the
/// build found (Debian's /usr/bin/python3, which has matplotlib).
ScriptRun run_plot_script(const std::vector<std::string>& arguments);

}  // namespace saltus::cli
