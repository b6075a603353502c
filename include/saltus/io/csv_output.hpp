#pragma once
// CSV files of a run, written into a folder (created if missing):
//   trajectory.csv    t, mode, one column per state
//   costs.csv         t, one column per cost: psi as if the horizon ended at t
//   sensitivities.csv t, one column d<state>/d<param> per pair (forward sensitivity runs)
//   outputs.csv       t, one column per named output (Problem::outputs; mechanisms)
//   units.csv         name, unit of every named output
//   output_sensitivities.csv  t, one column d<output>/d<param> per pair (forward runs)
//   events.csv        time, name, mode_before, mode_after, x-/x+ per state, dt/d<param>
//   gradient.csv      cost, param, one column per method (not for --method simulate)
#include <saltus/io/run_result.hpp>

#include <string>

namespace saltus {

/// Throws InputError naming the folder or file that cannot be written.
void write_csv(const std::string& folder, const Problem& problem, const RunResult& result);

}  // namespace saltus
