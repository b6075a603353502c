#pragma once
// The readable report `saltus run` prints: events with dt_e/dp, costs, the gradient table with
// parameter names, the agreement between methods, and solver statistics.
#include <saltus/io/run_result.hpp>

#include <ostream>
#include <vector>

namespace saltus {

/// max |m| over the output trajectory for every monitor of the problem (Problem::monitors).
std::vector<double> monitor_maxima(const Problem& problem, const RunResult& result);

void print_report(std::ostream& out, const Problem& problem, const RunResult& result);

}  // namespace saltus
