#pragma once
// The readable report `saltus run` prints: events with dt_e/dp, costs, the gradient table with
// parameter names, the agreement between methods, and solver statistics.
#include <saltus/io/run_result.hpp>

#include <ostream>

namespace saltus {

void print_report(std::ostream& out, const Problem& problem, const RunResult& result);

}  // namespace saltus
