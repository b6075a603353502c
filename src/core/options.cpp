#include <saltus/core/error.hpp>
#include <saltus/core/options.hpp>

#include <fmt/format.h>

#include <cmath>

namespace saltus {

namespace {

void require(bool ok, const std::string& field, double value, const std::string& rule) {
  if (!ok) throw InputError(fmt::format("option '{}' = {} is invalid: {}", field, value, rule));
}

bool positive(double v) { return std::isfinite(v) && v > 0.0; }

}  // namespace

void set_horizon(Options& o, double tf) {
  require(std::isfinite(tf) && tf > o.t0, "tf", tf, "must be finite and greater than t0");
  std::vector<double> kept;
  for (double t : o.output_times) {
    if (t < tf) kept.push_back(t);
  }
  if (!o.output_times.empty()) kept.push_back(tf);
  o.output_times = kept;
  o.tf = tf;
}

void validate(const Options& o, int n_states, int n_parameters) {
  require(std::isfinite(o.t0), "t0", o.t0, "must be finite");
  require(std::isfinite(o.tf) && o.tf > o.t0, "tf", o.tf, "must be finite and greater than t0");
  require(positive(o.rtol) && o.rtol >= kMinRtol, "rtol", o.rtol, fmt::format("must be a number >= {} (kMinRtol)", kMinRtol));
  require(std::isfinite(o.atol) && o.atol >= 0.0, "atol", o.atol, "must be >= 0");
  require(o.cost_atol < 0.0 || std::isfinite(o.cost_atol), "cost_atol", o.cost_atol,
          "must be finite");
  if (!o.atol_per_state.empty()) {
    require(static_cast<int>(o.atol_per_state.size()) == n_states, "atol_per_state size",
            static_cast<double>(o.atol_per_state.size()), "must equal the number of states");
    for (double a : o.atol_per_state) {
      require(std::isfinite(a) && a >= 0.0, "atol_per_state", a, "entries must be >= 0");
    }
  }
  if (!o.parameter_scales.empty()) {
    require(static_cast<int>(o.parameter_scales.size()) == n_parameters,
            "parameter_scales size", static_cast<double>(o.parameter_scales.size()),
            "must equal the number of parameters");
    for (double s : o.parameter_scales) require(positive(s), "parameter_scales", s, "must be > 0");
  }
  require(o.output_times.empty() ? o.n_outputs >= 2 && o.n_outputs <= kMaxOutputTimes : true, "n_outputs", o.n_outputs,
          fmt::format("must be 2 ... {} (kMaxOutputTimes)", kMaxOutputTimes));
  require(o.output_times.size() <= static_cast<size_t>(kMaxOutputTimes), "output_times size",
          static_cast<double>(o.output_times.size()), fmt::format("must be at most {} (kMaxOutputTimes)", kMaxOutputTimes));
  double previous = o.t0 - 1.0;
  for (double t : o.output_times) {
    require(std::isfinite(t) && t >= o.t0 && t <= o.tf, "output_times", t,
            "must lie in [t0, tf]");
    require(t > previous, "output_times", t, "must be strictly increasing");
    previous = t;
  }
  require(o.max_steps > 0, "max_steps", static_cast<double>(o.max_steps), "must be positive");
  require(o.krylov_min_states >= 1, "krylov_min_states", o.krylov_min_states, "must be positive");
  require(o.krylov_min_states_with_sensitivities >= 1, "krylov_min_states_with_sensitivities",
          o.krylov_min_states_with_sensitivities, "must be positive");
  require(o.sparse_min_states >= 1, "sparse_min_states", o.sparse_min_states, "must be positive");
  require(o.max_event_cascade > 0, "max_event_cascade", o.max_event_cascade, "must be positive");
  require(std::isfinite(o.cascade_window) && o.cascade_window >= 0.0, "cascade_window",
          o.cascade_window, "must be >= 0");
  require(o.max_events > 0, "max_events", static_cast<double>(o.max_events), "must be positive");
  require(o.zeno_intervals >= 3, "zeno_intervals", o.zeno_intervals, "must be at least 3");
  require(positive(o.zeno_ratio_tolerance), "zeno_ratio_tolerance", o.zeno_ratio_tolerance, "must be > 0");
  require(positive(o.zeno_tail), "zeno_tail", o.zeno_tail, "must be > 0");
  require(std::isfinite(o.grazing_tolerance) && o.grazing_tolerance >= 0.0, "grazing_tolerance",
          o.grazing_tolerance, "must be >= 0");
  require(o.checkpoint_steps >= 0 && o.checkpoint_steps <= kMaxCheckpointSteps, "checkpoint_steps",
          static_cast<double>(o.checkpoint_steps),
          fmt::format("must be positive and at most {} (or 0 for the automatic spacing)", kMaxCheckpointSteps));
  require(o.adjoint_memory_budget >= kMinAdjointMemoryBudget && o.adjoint_memory_budget <= kMaxAdjointMemoryBudget,
          "adjoint_memory_budget", static_cast<double>(o.adjoint_memory_budget),
          "must be at least 1 MiB (1048576 bytes) and at most 2^50 bytes");
  require(o.adjoint_rtol < 0.0 || (positive(o.adjoint_rtol) && o.adjoint_rtol >= kMinRtol), "adjoint_rtol",
          o.adjoint_rtol, fmt::format("must be at least {} (kMinRtol; or negative for rtol)", kMinRtol));
  require(positive(o.adjoint_rtol_scale) && o.adjoint_rtol_scale <= 1.0, "adjoint_rtol_scale", o.adjoint_rtol_scale,
          "must be in (0, 1]");
  require(!std::isnan(o.adjoint_atol), "adjoint_atol", o.adjoint_atol, "must be a number");
  require(!std::isnan(o.adjoint_quadrature_atol), "adjoint_quadrature_atol",
          o.adjoint_quadrature_atol, "must be a number");
}

}  // namespace saltus
