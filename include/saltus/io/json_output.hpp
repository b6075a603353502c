#pragma once
// JSON results:
//   {"problem": str, "method": str, "parameters": {name: value}, "costs": {name: value},
//    "gradient": {cost: {param: value}}, "final_state": {state: value},
//    "events": [{"time": t, "name": str, "dtime_dp": {param: value}}], ...}
// plus "methods" (every method's gradient, time and largest relative error against the
// reported one) and "stats". Non-finite numbers (an event-time derivative a method could not
// estimate) are written as null.
#include <saltus/io/run_result.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace saltus {

nlohmann::json to_json(const Problem& problem, const RunResult& result);
/// Writes to_json to `path`; throws InputError naming the path if it cannot be written.
void write_json(const std::string& path, const Problem& problem, const RunResult& result);

}  // namespace saltus
