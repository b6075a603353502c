#pragma once
// Independent gradient estimates for checking forward (and adjoint) sensitivities:
// central finite differences and the complex step with complex event times.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

#include <string>
#include <vector>

namespace saltus {

/// dpsi/dp, dx(tf)/dp and dt_e/dp estimated by one method.
struct GradientEstimate {
  std::string method;
  Eigen::VectorXd costs;                ///< psi at p, n_c
  Eigen::MatrixXd cost_gradient;        ///< n_c x n_p
  Eigen::MatrixXd final_sensitivity;    ///< n_x x n_p
  /// dt_e/dp per event of the nominal run, n_events x n_p; NaN where a perturbed run had a
  /// different event sequence (the derivative of that event time is then not estimated).
  Eigen::MatrixXd event_time_gradient;
  /// Per parameter: a perturbed run had another event sequence than the nominal one, so the
  /// estimate straddles a point where the cost is not smooth (e.g. an event crossing tf).
  std::vector<bool> event_sequence_changed;
  /// The estimate's expected error relative to the largest |d cost/dp| of each cost: 0 for the
  /// forward sensitivity, the adjoint and the complex step (exact up to the integration);
  /// central differences: 1.5 rtol / relative_step + relative_step^2 (their integration noise, and
  /// the truncation of the two-point formula they fall back on). compare_gradients judges entries
  /// below it absolutely.
  double noise_fraction = 0.0;
  /// The expected absolute error of each entry, n_c x n_p; empty for the exact methods. Central
  /// differences: the larger of 1.5 (rtol |psi_c| + atol) / h_k (the cost's integration error
  /// through the stencil) and twice the difference of their two-point estimates at h and 2h
  /// (where the fourth-order stencil ran). compare_gradients judges entries below it absolutely
  /// and counts a difference within it as none.
  Eigen::MatrixXd noise;
  /// Central differences: per parameter whose perturbed runs stepped outside its domain
  /// (Problem::check_domains; a restitution e = 0.995 with a relative step of 0.01 ran at
  /// e = 1.00495), a sentence naming the parameter, the value and the bound, and whether a
  /// smaller step stays inside (not when the value lies on the bound). The runs go on: the
  /// estimate is right where the model continues smoothly past the bound. Empty when p itself
  /// lies outside the domain.
  std::vector<std::string> notes;
};

/// Step of central differences for parameter value v: relative_step * |v|, or relative_step
/// when v = 0.
double central_difference_step(double value, double relative_step);

/// Default relative step for central differences at relative tolerance rtol: cbrt(rtol), kept
/// in [1e-8, 1e-2] (the O(rtol / h) integration noise stays near rtol^(2/3), and the
/// fourth-order stencil's O(h^4) truncation far below it).
double default_relative_step(double rtol);

/// Central differences of fourth order, (8 (psi(p + h e_k) - psi(p - h e_k)) - (psi(p + 2h e_k)
/// - psi(p - 2h e_k))) / 12h, four simulations per parameter; relative_step <= 0 picks
/// default_relative_step(options.rtol). Their truncation error is O(h^4) and their noise about
/// 1.5 rtol |psi| / h. Where the run at p +- 2h fails or takes another event sequence than p,
/// the two-point formula (psi(p + h e_k) - psi(p - h e_k)) / 2h instead (truncation O(h^2));
/// event_sequence_changed marks a change at p +- h, where no formula is smooth.
GradientEstimate central_differences(const Problem& problem, const Eigen::VectorXd& p,
                                     const Options& options, double relative_step = 0.0);

/// Complex step Im psi(p + i h e_k) / h with complex event times (one complex run per
/// parameter); exact to O(h^2) with no cancellation, so h = 1e-20 is the default.
GradientEstimate complex_step(const Problem& problem, const Eigen::VectorXd& p,
                              const Options& options, double step = 1e-20);

/// The same quantities from a forward-sensitivity Solution.
GradientEstimate forward_estimate(const Solution& solution);

/// dpsi/dp from an adjoint Solution (method "adjoint"; no final-state or event-time
/// sensitivities: the adjoint does not compute them).
GradientEstimate adjoint_estimate(const Solution& solution);

/// |a - b| / max(|b|, floor): the relative difference used in every comparison table.
double relative_difference(double a, double b, double floor);

/// One row of a gradient comparison: d cost / d parameter by every method.
struct GradientCheckEntry {
  std::string cost;
  std::string parameter;
  std::vector<double> values;          ///< one per method, same order as GradientCheck::methods
  std::vector<double> relative_errors; ///< against methods[0], beyond the estimates' noise; entry 0 is 0
  /// Against methods[0], the whole difference (noise included), relative as relative_errors.
  std::vector<double> relative_differences;
  /// Per method: the difference is within the estimates' noise of the entry (relative_errors 0).
  std::vector<bool> within_noise;
  /// Per method: its difference from methods[0] is within a noise estimate above
  /// kUncheckedNoiseFraction of the entry (central differences with a step too small for the
  /// cost's integration error), so its relative error (0) checks nothing. Entry 0 is false.
  std::vector<bool> unchecked;
};

struct GradientCheck {
  std::vector<std::string> methods;
  std::vector<GradientCheckEntry> entries;
  /// Largest relative error of each method against methods[0].
  std::vector<double> max_relative_error;
  /// Per method: how many entries are GradientCheckEntry::unchecked.
  std::vector<int> unchecked_entries;
};

/// An entry whose difference is within a noise estimate above this fraction of its size (below)
/// is reported as unchecked rather than as agreeing (GradientCheckEntry::unchecked).
inline constexpr double kUncheckedNoiseFraction = 0.1;
/// The size an entry is measured by for that is at least this fraction of its cost's largest
/// entry: an entry zero in exact arithmetic is checked absolutely against the row.
inline constexpr double kUncheckedRowFraction = 0.01;

/// compare_gradients judges no entry below this times max(1, |psi|) relatively: a cost whose
/// gradient is zero in exact arithmetic (a reaction held constant) has entries of rounding size
/// (1e-17) whose ratios are no disagreement.
inline constexpr double kGradientRoundingFloor = 1e-14;

/// Compares estimates entry by entry against `estimates[0]`. The floor of the relative error
/// of an entry is the largest |d cost/dp| of that cost times `floor_fraction` or the two
/// estimates' noise_fraction, whichever is largest, at least either estimate's noise of that
/// entry, and at least kGradientRoundingFloor max(1, |psi|), so that entries that are zero in
/// exact arithmetic are judged absolutely; a difference within either estimate's noise of the
/// entry counts as none (central differences' noise on an exactly zero entry is no
/// disagreement).
GradientCheck compare_gradients(const Problem& problem,
                                const std::vector<GradientEstimate>& estimates,
                                double floor_fraction = 1e-6);

/// Runs forward sensitivity, the complex step and central differences at p and compares them
/// entry by entry (methods[0] = forward sensitivity).
GradientCheck check_gradient(const Problem& problem, const Eigen::VectorXd& p,
                             const Options& options);

}  // namespace saltus
