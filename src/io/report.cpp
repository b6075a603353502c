#include <saltus/io/report.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

namespace saltus {

namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "n/a";
  return fmt::format("{: .6e}", v == 0.0 ? 0.0 : v);  // no "-0.000000e+00"
}

const char* direction_word(const EventRecord& e) { return e.grazing ? "  GRAZING" : ""; }

void print_events(std::ostream& out, const Problem& pb, const RunResult& r) {
  const auto& events = r.solution.events;
  fmt::print(out, "\nEvents ({}):\n", events.size());
  if (events.empty()) return;
  const auto params = pb.parameter_names();
  // Event-time sensitivities come with forward sensitivities (not from an adjoint run alone):
  // without them no dt/dp columns (an adjoint run printed their headers over blank cells).
  const Eigen::MatrixXd tau = r.estimates.empty() ? Eigen::MatrixXd() : r.estimates.front().event_time_gradient;
  fmt::print(out, "  {:>4} {:>16}  {:<14}", "#", "time [s]", "event");
  for (Eigen::Index k = 0; k < tau.cols() && k < static_cast<Eigen::Index>(params.size()); ++k) {
    fmt::print(out, " {:>14}", "dt/d" + params[static_cast<size_t>(k)]);
  }
  fmt::print(out, "\n");
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    fmt::print(out, "  {:>4} {:>16.10f}  {:<14}", i + 1, e.time, e.name);
    for (Eigen::Index k = 0; k < tau.cols(); ++k) {
      fmt::print(out, " {:>14}",
                 number(tau.rows() > static_cast<Eigen::Index>(i) ? tau(static_cast<Eigen::Index>(i), k)
                                                                   : NAN));
    }
    if (e.mode_before != e.mode_after) {
      fmt::print(out, "  {} -> {}", pb.mode(e.mode_before).name, pb.mode(e.mode_after).name);
    }
    fmt::print(out, "{}\n", direction_word(e));
  }
  for (const auto& e : events) {
    if (e.rest) {
      // A plastic landing rests at its first firing: nothing accumulates there.
      if (e.accumulation_time == e.time) {
        fmt::print(out, "  '{}' comes to rest at t = {:.10g}, at once (no bounce)", e.name, e.time);
      } else {
        fmt::print(out, "  '{}' comes to rest at t = {:.10g}: its firings accumulate at t_inf = {:.10g}", e.name,
                   e.time, e.accumulation_time);
      }
      if (e.daccumulation_dp.size() == pb.n_parameters()) {
        fmt::print(out, ", dt_inf/dp:");
        for (int k = 0; k < pb.n_parameters(); ++k) {
          fmt::print(out, " {} {}", params[static_cast<size_t>(k)], number(e.daccumulation_dp[k]));
        }
      }
      fmt::print(out, "\n");
    }
    if (e.grazing) {
      fmt::print(out, "  warning: event '{}' at t = {:.10g} grazes its guard (r-dot = {:.3g}); "
                      "its time has no derivative\n",
                 e.name, e.time, e.guard_rate);
    }
  }
}

void print_gradient(std::ostream& out, const Problem& pb, const GradientEstimate& est) {
  fmt::print(out, "\nGradient d cost / d parameter ({}):\n", est.method);
  fmt::print(out, "  {:<14}", "cost");
  for (const auto& name : pb.parameter_names()) fmt::print(out, " {:>14}", name);
  fmt::print(out, "\n");
  for (int c = 0; c < pb.n_costs(); ++c) {
    fmt::print(out, "  {:<14}", pb.cost(c).name);
    for (int k = 0; k < pb.n_parameters(); ++k) fmt::print(out, " {:>14}", number(est.cost_gradient(c, k)));
    fmt::print(out, "\n");
  }
}

/// Every estimate's (a method run alone too) warnings, where its perturbed runs took another
/// event sequence, and notes (central differences that ran outside a parameter's domain).
void print_estimate_remarks(std::ostream& out, const Problem& pb, const RunResult& r) {
  for (const auto& est : r.estimates) {
    for (size_t k = 0; k < est.event_sequence_changed.size(); ++k) {
      if (!est.event_sequence_changed[k]) continue;
      fmt::print(out, "  warning: {} for '{}': a perturbed run had another event sequence; that "
                      "estimate straddles a non-smooth point and is not a derivative\n",
                 est.method, pb.parameter_names()[k]);
    }
    for (const std::string& note : est.notes) fmt::print(out, "  note: {}\n", note);
  }
}

void print_agreement(std::ostream& out, const RunResult& r) {
  if (!r.check) return;
  const GradientCheck& check = *r.check;
  fmt::print(out, "\nAgreement of methods (relative difference against {}):\n", check.methods[0]);
  fmt::print(out, "  {:<14} {:<10}", "cost", "parameter");
  for (const auto& m : check.methods) fmt::print(out, " {:>20}", m);
  for (size_t m = 1; m < check.methods.size(); ++m) fmt::print(out, " {:>12}", "rel.err " + std::to_string(m));
  fmt::print(out, "\n");
  for (const auto& e : check.entries) {
    fmt::print(out, "  {:<14} {:<10}", e.cost, e.parameter);
    for (double v : e.values) fmt::print(out, " {:>20.12e}", v);
    for (size_t m = 1; m < e.relative_errors.size(); ++m) {
      if (m < e.unchecked.size() && e.unchecked[m]) {
        fmt::print(out, " {:>12}", "noise");
      } else if (m < e.within_noise.size() && e.within_noise[m]) {
        fmt::print(out, " {:>11.2e}~", e.relative_differences[m]);
      } else {
        fmt::print(out, " {:>12.2e}", e.relative_errors[m]);
      }
    }
    fmt::print(out, "\n");
  }
  for (size_t m = 1; m < check.methods.size(); ++m) fmt::print(out, "  rel.err {}: {} against {}\n", m, check.methods[m], check.methods[0]);
  const bool any_within_noise = std::any_of(check.entries.begin(), check.entries.end(), [](const GradientCheckEntry& e) {
    return std::find(e.within_noise.begin(), e.within_noise.end(), true) != e.within_noise.end() ||
           std::find(e.unchecked.begin(), e.unchecked.end(), true) != e.unchecked.end();
  });
  if (any_within_noise) {
    fmt::print(out, "  ~: a difference within the estimate's integration noise, counted as none; noise: within a "
                    "noise above {:g} of the entry, not checked\n", kUncheckedNoiseFraction);
  }
  for (size_t m = 1; m < check.methods.size(); ++m) {
    fmt::print(out, "  largest relative difference, {} vs {}: {:.2e}", check.methods[m], check.methods[0],
               check.max_relative_error[m]);
    const int unchecked = m < check.unchecked_entries.size() ? check.unchecked_entries[m] : 0;
    if (unchecked > 0) {
      fmt::print(out, " ({} {} within the estimate's integration noise, above {:g} of the entry: not checked; a "
                      "larger --fd-step or a smaller --rtol checks {})",
                 unchecked, unchecked == 1 ? "entry" : "entries", kUncheckedNoiseFraction, unchecked == 1 ? "it" : "them");
    }
    fmt::print(out, "\n");
  }
}

void print_adjoint(std::ostream& out, const Problem& pb, const RunResult& r) {
  if (!r.adjoint) return;
  const AdjointStats& a = *r.adjoint;
  constexpr double kMiB = 1024.0 * 1024.0;
  if (a.backward.discrete) {
    fmt::print(out, "\nAdjoint (discrete, {}): the transpose of the computed steps; {} step states stored ({:.1f} MiB, "
                    "budget {:g} MiB), {} steps recomputed; backward: {} steps, {} tape recordings\n",
               a.backward.integrator, a.checkpoints, static_cast<double>(a.peak_stored_bytes) / kMiB,
               static_cast<double>(a.memory_budget) / kMiB, a.recomputed_segments, a.backward.steps,
               a.tape_recordings);
  } else if (a.backward.integrator == "IDAS") {
    // The IDAS adjoint keeps every segment's recording; its memory is not measured (docs/dae.md).
    fmt::print(out, "\nAdjoint (IDAS): {} check points (at most {} steps apart), every segment's recording kept; "
                    "backward: {} segments, {} steps, {} residuals\n",
               a.checkpoints, a.checkpoint_steps, a.backward.segments, a.backward.steps, a.backward.rhs_evals);
  } else {
    fmt::print(out, "\nAdjoint: {} check points (at most {} steps apart), {:.1f} MiB held at most (budget "
                    "{:g} MiB), {:.1f} MiB recorded in all, {} segments recomputed; backward: {} "
                    "segments, {} steps, {} right-hand sides, {} tape recordings\n",
               a.checkpoints, a.checkpoint_steps, static_cast<double>(a.peak_stored_bytes) / kMiB,
               static_cast<double>(a.memory_budget) / kMiB, static_cast<double>(a.stored_bytes) / kMiB,
               a.recomputed_segments, a.backward.segments, a.backward.steps, a.backward.rhs_evals,
               a.tape_recordings);
  }
  if (a.backward.linear_solver.starts_with("GMRES")) {
    fmt::print(out, "Adjoint backward linear solver: {}, {} iterations\n", a.backward.linear_solver,
               a.backward.linear_iterations);
  } else if (a.backward.linear_solver.starts_with("none")) {
    fmt::print(out, "Adjoint backward linear solver: {}\n", a.backward.linear_solver);
  }
  fmt::print(out, "Initial-state gradient d cost / d x0 (adjoint):\n  {:<14}", "cost");
  for (const auto& name : pb.state_names()) fmt::print(out, " {:>14}", name);
  fmt::print(out, "\n");
  for (int c = 0; c < pb.n_costs(); ++c) {
    fmt::print(out, "  {:<14}", pb.cost(c).name);
    for (int i = 0; i < pb.n_states(); ++i) {
      fmt::print(out, " {:>14}", number(r.initial_state_gradient(c, i)));
    }
    fmt::print(out, "\n");
  }
}

void print_monitors(std::ostream& out, const Problem& pb, const RunResult& r) {
  if (pb.monitors().empty()) return;
  const std::vector<double> maxima = monitor_maxima(pb, r);
  fmt::print(out, "\nMonitors (max |value| over the output times):\n");
  for (size_t i = 0; i < maxima.size(); ++i) {
    fmt::print(out, "  {:<38} {:.3e}\n", pb.monitors()[i].name, maxima[i]);
  }
}

}  // namespace

std::vector<double> monitor_maxima(const Problem& pb, const RunResult& r) {
  const Solution& s = r.solution;
  std::vector<double> maxima;
  for (const Monitor& m : pb.monitors()) {
    double worst = 0.0;
    for (size_t k = 0; k < s.times.size(); ++k) {
      const Eigen::VectorXd x = s.states.row(static_cast<Eigen::Index>(k)).transpose();
      worst = std::max(worst, std::abs(m.value(s.times[k], x, r.parameters)));
    }
    maxima.push_back(worst);
  }
  return maxima;
}

void print_report(std::ostream& out, const Problem& pb, const RunResult& r) {
  const Solution& s = r.solution;
  fmt::print(out, "Saltus run: {}{}{}\n", pb.name(), pb.description().empty() ? "" : " — ", pb.description());
  fmt::print(out, "Method: {}    horizon: [{}, {}] s\n", r.method, s.times.front(), s.times.back());
  if (s.stats.discrete) {
    fmt::print(out, "Integrator: {}, discrete: forward and adjoint give the derivatives of the computed steps, exact to "
                    "round-off (docs/discrete-sensitivities.md)\n",
               s.stats.integrator);
  }
  fmt::print(out, "\nParameters:{}\n", pb.n_parameters() == 0 ? " none (no gradient to compute)" : "");
  for (int k = 0; k < pb.n_parameters(); ++k) {
    fmt::print(out, "  {:<10} = {:.10g}\n", pb.parameters()[static_cast<size_t>(k)].name, r.parameters[k]);
  }
  print_events(out, pb, r);
  fmt::print(out, "\nFinal state (t = {}, mode '{}'):\n", s.times.back(), pb.mode(s.final_mode).name);
  const std::vector<std::string> final_names = pb.state_names_at(s.final_state);
  for (int i = 0; i < pb.n_states(); ++i) {
    fmt::print(out, "  {:<10} = {: .12e}\n", final_names[static_cast<size_t>(i)], s.final_state[i]);
  }
  fmt::print(out, "\nCosts:\n");
  for (int c = 0; c < pb.n_costs(); ++c) {
    fmt::print(out, "  {:<14} = {: .12e}\n", pb.cost(c).name, s.costs[c]);
  }
  print_monitors(out, pb, r);
  if (pb.n_parameters() > 0 && !r.estimates.empty()) {
    print_gradient(out, pb, r.estimates.front());
    print_agreement(out, r);
    print_estimate_remarks(out, pb, r);
  }
  print_adjoint(out, pb, r);
  fmt::print(out, "\nSolver ({}): {} segments, {} steps, {} {} evals, {} Jacobians, {} guard evals, {} "
                  "error-test failures\n",
             s.stats.integrator, s.stats.segments, s.stats.steps, s.stats.rhs_evals, s.stats.integrator == "IDAS" ? "residual" : "f", s.stats.jacobian_evals,
             s.stats.root_evals, s.stats.error_test_failures);
  if (s.stats.linear_solver.starts_with("GMRES")) {
    fmt::print(out, "Linear solver: {}, {} iterations\n", s.stats.linear_solver, s.stats.linear_iterations);
  } else if (s.stats.linear_solver != "dense") {
    fmt::print(out, "Linear solver: {}\n", s.stats.linear_solver);
  }
  fmt::print(out, "Time:");
  if (r.simulation_seconds >= 0.0) fmt::print(out, "  simulation {:.3f} s", r.simulation_seconds);
  for (size_t m = 0; m < r.estimates.size(); ++m) {
    fmt::print(out, "  {} {:.3f} s", r.estimates[m].method, r.seconds[m]);
  }
  fmt::print(out, "\n");
}

}  // namespace saltus
