// A stop request (saltus::request_interrupt, SIGINT/SIGTERM in the command) ends every solver at
// its next step with saltus::Interrupted, and a cleared request lets the next run finish.
#include <saltus/core/interrupt.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>

namespace {

using namespace saltus;

/// A damped oscillator whose right-hand side asks for a stop after `calls_before_stop` calls.
Problem oscillator(std::shared_ptr<std::atomic<long>> calls, long calls_before_stop) {
  Problem pb("oscillator");
  pb.set_states({"x", "v"});
  pb.add_parameter("k", 4.0);
  pb.set_initial_state([](const auto&, auto x0) { x0 << 1.0, 0.0; });
  pb.add_mode("free", [calls, calls_before_stop](auto, const auto& x, const auto& p, auto xdot) {
    if (++*calls == calls_before_stop) request_interrupt();
    xdot[0] = x[1];
    xdot[1] = -p[0] * x[0] - 0.1 * x[1];
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 1000.0;
  return pb;
}

TEST(Interrupt, EverySolverStopsAtItsNextStep) {
  const std::vector<std::pair<const char*, std::function<void(const Problem&)>>> solvers = {
      {"simulate", [](const Problem& pb) { simulate(pb); }},
      {"forward", [](const Problem& pb) { forward_sensitivity(pb); }},
      {"adjoint", [](const Problem& pb) { adjoint(pb); }},
      {"complex step", [](const Problem& pb) { complex_step(pb, pb.nominal_parameters(), pb.options()); }},
      {"central differences", [](const Problem& pb) { central_differences(pb, pb.nominal_parameters(), pb.options()); }},
  };
  for (const auto& [name, solve] : solvers) {
    auto calls = std::make_shared<std::atomic<long>>(0);
    const Problem pb = oscillator(calls, 2000);
    clear_interrupt();
    try {
      solve(pb);
      ADD_FAILURE() << name << " ignored the stop request";
    } catch (const Interrupted& e) {
      EXPECT_NE(std::string(e.what()).find("interrupted at t = "), std::string::npos) << e.what();
    }
    // The request was honoured within a few steps, long before the 1000 s horizon.
    EXPECT_LT(calls->load(), 2100) << name;
    clear_interrupt();
  }
  auto calls = std::make_shared<std::atomic<long>>(0);
  EXPECT_NO_THROW(simulate(oscillator(calls, -1)));
}

}  // namespace
