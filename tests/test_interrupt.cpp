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
#include <thread>
#include <type_traits>

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
  for (const Integrator integrator :
       {Integrator::Automatic, Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
    for (const auto& [name, solve] : solvers) {
      auto calls = std::make_shared<std::atomic<long>>(0);
      Problem pb = oscillator(calls, 2000);
      pb.options().integrator = integrator;
      clear_interrupt();
      try {
        solve(pb);
        ADD_FAILURE() << name << " ignored the stop request";
      } catch (const Interrupted& e) {
        EXPECT_NE(std::string(e.what()).find("interrupted at t = "), std::string::npos) << e.what();
      }
      // The request was honoured within a few steps, long before the 1000 s horizon.
      EXPECT_LT(calls->load(), 2100) << name << " " << static_cast<int>(integrator);
      clear_interrupt();
    }
  }
  auto calls = std::make_shared<std::atomic<long>>(0);
  EXPECT_NO_THROW(simulate(oscillator(calls, -1)));
}

/// Calls of a model's right-hand side, counted by scalar type: real (forward passes and the
/// adjoint's recomputations) and reverse-mode (only the adjoint's backward pass records tapes).
struct CallCounts {
  std::atomic<long> real{0};
  std::atomic<long> reverse{0};
};

/// A ball bouncing elastically for ever (a segment per bounce), counting its right-hand sides.
Problem counting_ball(std::shared_ptr<CallCounts> counts, double tf) {
  Problem pb("counting_ball");
  pb.set_states({"h", "v"});
  pb.add_parameter("g", 9.81);
  pb.add_parameter("e", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x << 1.0, 0.0; });
  pb.add_mode("flight", [counts](auto, const auto& x, const auto& p, auto xdot) {
    using S = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_same_v<S, double>) ++counts->real;
    if constexpr (std::is_same_v<S, Reverse>) ++counts->reverse;
    xdot[0] = x[1];
    xdot[1] = -p[0];
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp << x[0], -p[1] * x[1]; });
  pb.add_terminal_cost("h_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = tf;
  pb.options().max_events = 1000000;
  return pb;
}

/// Runs `solve` while another thread requests a stop once `ready` holds; expects Interrupted.
void expect_stopped_from_another_thread(const std::function<void()>& solve,
                                        const std::function<bool()>& ready, const char* name) {
  clear_interrupt();
  std::atomic<bool> finished{false};
  std::thread stopper([&] {
    while (!finished.load() && !ready()) std::this_thread::yield();
    request_interrupt();
  });
  try {
    solve();
    ADD_FAILURE() << name << " finished without honouring the stop request";
  } catch (const Interrupted& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted at t = "), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << " threw another error: " << e.what();
  }
  finished = true;
  stopper.join();
  clear_interrupt();
}

TEST(Interrupt, AnotherThreadStopsTheForwardTheAdjointAndTheComplexStep) {
  // Horizons of many minutes of work: only the stop request ends these runs early.
  auto counts = std::make_shared<CallCounts>();
  const Problem endless = counting_ball(counts, 1e6);
  const auto after_real_calls = [&] { return counts->real.load() > 5000; };
  expect_stopped_from_another_thread([&] { forward_sensitivity(endless); }, after_real_calls,
                                     "forward sensitivity");
  counts->real = 0;
  expect_stopped_from_another_thread(
      [&] { complex_step(endless, endless.nominal_parameters(), endless.options()); },
      after_real_calls, "complex step");
  // The adjoint is stopped in its backward pass, where a 1 MiB budget makes it recompute most
  // of the 2200 segments from their snapshots.
  const Problem bounded = counting_ball(counts, 2000.0);
  Options o = bounded.options();
  o.adjoint_memory_budget = kMinAdjointMemoryBudget;
  expect_stopped_from_another_thread(
      [&] { adjoint(bounded, bounded.nominal_parameters(), o); },
      [&] { return counts->reverse.load() > 1000; }, "adjoint");
}

}  // namespace
