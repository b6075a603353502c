// The readable side of `saltus optimize`: a line per evaluation while it runs, then the optimum.
#include <saltus/io/optimize_output.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cmath>

namespace saltus {

namespace {

std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.10g}", v) : std::string("-"); }

const char* sense_text(CostConstraint::Sense s) { return s == CostConstraint::Sense::AtMost ? "<=" : ">="; }

}  // namespace

void print_iterate_header(std::ostream& out, const OptimizeOptions& o) {
  fmt::print(out, "{} '{}' over", o.maximize ? "Maximizing" : "Minimizing", o.cost);
  for (const auto& v : o.vary) fmt::print(out, " {} in [{:g}, {:g}]", v.name, v.lower, v.upper);
  fmt::print(out, " ({} gradients)\n", o.method == GradientMethod::Adjoint ? "adjoint" : "forward");
  fmt::print(out, "  {:>4} {:>18} {:>12} {:>12} {:>7}", "eval", "cost", "proj.grad", "step", "events");
  for (const auto& v : o.vary) fmt::print(out, " {:>18}", v.name);
  fmt::print(out, "\n");
}

void print_iterate(std::ostream& out, const OptimizeIterate& it) {
  fmt::print(out, "  {:>4}", it.index);
  if (it.failed) {
    fmt::print(out, " {:>18} {:>12} {:>12.4g} {:>7}", "failed", "-", it.step, "-");
  } else {
    fmt::print(out, " {:>18.12g} {:>12.4g} {:>12.4g} {:>7}", it.cost, it.projected_gradient_norm, it.step, it.events);
  }
  for (Eigen::Index i = 0; i < it.x.size(); ++i) fmt::print(out, " {:>18.12g}", it.x[i]);
  if (it.best) fmt::print(out, "  *");
  if (!it.failed && !it.feasible) fmt::print(out, "  (infeasible)");
  fmt::print(out, "\n");
  // The start has nothing to backtrack to: its failure ends the optimization (optimize()).
  if (it.failed) fmt::print(out, "       run failed: {}{}\n", it.failure, it.index > 1 ? " (backtracking)" : "");
  if (it.event_sequence_changed) {
    fmt::print(out, "       warning: the event sequence changed from the previous evaluation; the cost may be "
                    "non-smooth between the two points\n");
  }
}

void print_optimum(std::ostream& out, const OptimizeOptions& o, const OptimizeResult& r) {
  fmt::print(out, "\nOptimum ({}, {} evaluations):\n", r.algorithm, r.evaluations);
  fmt::print(out, "  {:<14} {:>20} {:>14} {:>14} {:>14}\n", "parameter", "value", "lower", "upper",
             "d cost/d p");
  for (size_t i = 0; i < r.names.size(); ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    fmt::print(out, "  {:<14} {:>20.14g} {:>14g} {:>14g} {:>14}\n", r.names[i], r.optimum[k], o.vary[i].lower,
               o.vary[i].upper, number(r.gradient[k]));
  }
  fmt::print(out, "  {} = {:.14g} ({})", o.cost, r.cost, o.maximize ? "maximized" : "minimized");
  // With constraints the projected gradient need not vanish at the optimum: not shown.
  if (o.constraints.empty()) fmt::print(out, ", projected gradient norm {:.3g}", r.projected_gradient_norm);
  fmt::print(out, "\n");
  for (size_t k = 0; k < o.constraints.size(); ++k) {
    const auto& c = o.constraints[k];
    fmt::print(out, "  constraint {} {} {:g}: {} = {:.10g}\n", c.cost, sense_text(c.sense), c.bound, c.cost,
               r.constraint_values[static_cast<Eigen::Index>(k)]);
  }
  fmt::print(out, "Stopped: {}{}\n", r.stop_reason, r.converged ? "" : " (not converged)");
}

}  // namespace saltus
