#include <saltus/core/error.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace saltus {

double central_difference_step(double value, double relative_step) {
  return value != 0.0 ? relative_step * std::abs(value) : relative_step;
}

double default_relative_step(double rtol) {
  return std::clamp(std::cbrt(rtol), 1e-8, 1e-2);
}

namespace {

bool same_event_sequence(const Solution& a, const Solution& b) {
  if (a.events.size() != b.events.size()) return false;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (a.events[i].event != b.events[i].event) return false;
  }
  return true;
}

/// The derivative at p from values at p - 2h, p - h, p + h and p + 2h (T: double or a vector):
/// the fourth-order stencil, or with `fourth_order` false the two-point one from +-h.
template <class T>
T stencil(const T& minus2, const T& minus1, const T& plus1, const T& plus2, double h, bool fourth_order) {
  if (!fourth_order) return T((plus1 - minus1) / (2.0 * h));
  return T((8.0 * (plus1 - minus1) - (plus2 - minus2)) / (12.0 * h));
}

/// Throws `e` again, of its own kind, its message saying that it happened in central
/// differences' run at `name` = value (the nominal run succeeded: without this the message read
/// as if it had failed).
[[noreturn]] void rethrow_in_perturbed_run(const Error& e, const std::string& name, double value, double nominal) {
  const std::string message = fmt::format("central differences for '{}': the run at {} = {:.17g} (nominal {:.17g}) failed: {}",
                                          name, name, value, nominal, e.what());
  if (dynamic_cast<const SolverError*>(&e)) throw SolverError(message);
  if (dynamic_cast<const ZenoError*>(&e)) throw ZenoError(message);
  if (dynamic_cast<const GrazingError*>(&e)) throw GrazingError(message);
  throw ModelError(message);
}

/// Why `p` lies outside the problem's domain (check_domains' message), or empty if it does not.
std::string domain_violation(const Problem& problem, const Eigen::VectorXd& p) {
  try {
    problem.check_domains(p);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

/// The note for central differences in p_k that ran at p_k + offset, outside the domain
/// (`outside`, check_domains' message; p itself inside): whether a smaller step would stay inside,
/// or p_k lies on the bound itself.
std::string domain_note(const Problem& problem, const Eigen::VectorXd& p, int k, double offset,
                        const std::string& outside) {
  const std::string name = problem.parameter_names()[static_cast<size_t>(k)];
  Eigen::VectorXd nudged = p;
  nudged[k] += 1e-6 * offset;
  const char* remedy = domain_violation(problem, nudged).empty()
                           ? "a smaller relative step stays inside"
                           : "its value lies on the bound, so every central difference steps past it";
  return fmt::format("central differences for '{}' ran at {} = {:.10g}, outside its domain ({}); the estimate "
                     "holds where the model continues smoothly past the bound; {}",
                     name, name, p[k] + offset, outside, remedy);
}

}  // namespace

GradientEstimate central_differences(const Problem& problem, const Eigen::VectorXd& p,
                                     const Options& options, double relative_step) {
  if (!(relative_step > 0.0)) relative_step = default_relative_step(options.rtol);
  const Solution nominal = simulate(problem, p, options);
  const int np = problem.n_parameters();
  GradientEstimate est;
  est.method = "central differences";
  // The fourth-order stencil's noise (8 + 1) / 6 rtol / h; the truncation of the two-point
  // formula that replaces it where p +- 2h changes the event sequence, O(h^2).
  est.noise_fraction = 1.5 * options.rtol / relative_step + relative_step * relative_step;
  est.costs = nominal.costs;
  est.cost_gradient.resize(problem.n_costs(), np);
  est.noise = Eigen::MatrixXd::Zero(problem.n_costs(), np);
  est.final_sensitivity.resize(problem.n_states(), np);
  est.event_time_gradient.setConstant(static_cast<Eigen::Index>(nominal.events.size()), np,
                                      std::numeric_limits<double>::quiet_NaN());
  // Notes only for runs that leave a domain p is in (a p given outside it was the caller's choice).
  const bool nominal_inside = domain_violation(problem, p).empty();
  for (int k = 0; k < np; ++k) {
    const double h = central_difference_step(p[k], relative_step);
    // Runs at p_k - 2h, p_k - h, p_k + h, p_k + 2h.
    std::array<Solution, 4> runs;
    const std::array<double, 4> offsets = {-2.0 * h, -h, h, 2.0 * h};
    std::array<bool, 4> same{};
    bool noted = false;  // one note per parameter, at the first run outside its domain
    for (size_t r = 0; r < runs.size(); ++r) {
      Eigen::VectorXd shifted = p;
      shifted[k] += offsets[r];
      const bool outer = r == 0 || r == 3;
      if (const std::string outside = noted || !nominal_inside ? std::string() : domain_violation(problem, shifted);
          !outside.empty()) {
        est.notes.push_back(domain_note(problem, p, k, offsets[r], outside));
        noted = true;
      }
      try {
        runs[r] = simulate(problem, shifted, options);
        same[r] = same_event_sequence(nominal, runs[r]);
      } catch (const InputError& e) {
        // The model refuses the shifted values (a start that is not finite there): no input
        // of the user's is bad, the estimate fails.
        if (!outer) {
          throw ModelError(fmt::format("central differences for '{}': the run at {} = {:.17g} refused its start: {}",
                                       problem.parameter_names()[static_cast<size_t>(k)],
                                       problem.parameter_names()[static_cast<size_t>(k)], shifted[k], e.what()));
        }
        same[r] = false;
      } catch (const Interrupted&) {
        throw;
      } catch (const Error& e) {
        // p +- h must run; p +- 2h only refines (the two-point formula).
        if (!outer) rethrow_in_perturbed_run(e, problem.parameter_names()[static_cast<size_t>(k)], shifted[k], p[k]);
        same[r] = false;
      }
    }
    // (8 (f(+h) - f(-h)) - (f(+2h) - f(-2h))) / 12h: truncation O(h^4) instead of the two-point
    // formula's O(h^2), which near impacts dominated (a slider on a driven rail at rtol 1e-10:
    // 5e-4 of the largest entry, now 6e-7). Where p +- 2h takes another event sequence than p
    // (and p +- h does not: a five-bar whose third impact appears at +2h) or fails, the
    // two-point formula (f(+h) - f(-h)) / 2h, which stays on the smooth side.
    const bool inner = same[1] && same[2];
    const bool fourth_order = inner && same[0] && same[3];
    const auto derivative = [&](const auto& minus2, const auto& minus1, const auto& plus1, const auto& plus2) {
      return stencil(minus2, minus1, plus1, plus2, h, fourth_order);
    };
    est.cost_gradient.col(k) = derivative(runs[0].costs, runs[1].costs, runs[2].costs, runs[3].costs);
    // The integration's noise: each cost is off by about rtol |psi| + its atol, and the
    // stencil's weights carry 1.5 times that over h (the two-point formula's 1 / (2h) less). A
    // cost that does not depend on p_k still moves with it through the steps the error control
    // takes (the kick model's y_T / beta: -7.9e-8 where the stencil's spread was smaller).
    const double cost_atol = options.cost_atol >= 0.0 ? options.cost_atol : options.atol;
    est.noise.col(k) = (1.5 / h) * (options.rtol * nominal.costs.cwiseAbs().array() + cost_atol).matrix();
    if (fourth_order) {
      // The two-point estimates at h and 2h differ by their noise (and a truncation the stencil
      // removes): an entry zero in exact arithmetic showed -3.4e-8 where they gave -1.9e-8 and
      // +1.7e-8 (hysteretic's d G / d beta).
      const Eigen::VectorXd at_h = (runs[2].costs - runs[1].costs) / (2.0 * h);
      const Eigen::VectorXd at_2h = (runs[3].costs - runs[0].costs) / (4.0 * h);
      est.noise.col(k) = est.noise.col(k).cwiseMax(2.0 * (at_h - at_2h).cwiseAbs());
    }
    est.final_sensitivity.col(k) =
        derivative(runs[0].final_state, runs[1].final_state, runs[2].final_state, runs[3].final_state);
    est.event_sequence_changed.push_back(!inner);
    if (inner) {
      for (size_t e = 0; e < nominal.events.size(); ++e) {
        const auto time = [&](size_t r) { return fourth_order || r == 1 || r == 2 ? runs[r].events[e].time : 0.0; };
        est.event_time_gradient(static_cast<Eigen::Index>(e), k) = derivative(time(0), time(1), time(2), time(3));
      }
    }
  }
  return est;
}

GradientEstimate forward_estimate(const Solution& s) {
  GradientEstimate est;
  est.method = "forward sensitivity";
  est.costs = s.costs;
  est.cost_gradient = s.cost_gradient;
  est.final_sensitivity = s.final_sensitivity;
  est.event_time_gradient.resize(static_cast<Eigen::Index>(s.events.size()),
                                 s.cost_gradient.cols());
  for (size_t e = 0; e < s.events.size(); ++e) {
    est.event_time_gradient.row(static_cast<Eigen::Index>(e)) = s.events[e].dtime_dp;
  }
  return est;
}

GradientEstimate adjoint_estimate(const Solution& s) {
  GradientEstimate est;
  est.method = "adjoint";
  est.costs = s.costs;
  est.cost_gradient = s.cost_gradient;
  return est;
}

}  // namespace saltus
