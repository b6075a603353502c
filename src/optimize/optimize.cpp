// The NLopt driver of optimize(): bounds and cost constraints to NLopt, one sensitivity run per
// design point (design_evaluation.cpp), the iterate history, and the stopping decision.
//
// NLopt rather than Debian's liblbfgsb: the same C interface gives bounded L-BFGS and, for costs
// used as constraints, Svanberg's conservative convex separable approximations (CCSAQ, the MMA
// family); liblbfgsb is L-BFGS-B only (bounds), through a Fortran reverse-communication
// interface. CCSAQ rather than SLSQP: on the ball's height held at h_T <= 15, SLSQP stalled on
// infeasible points (26 runs, h_T off by 1.4e-4) where CCSAQ, whose iterates stay feasible,
// took 13 runs to 1e-11.
#include <saltus/optimize/optimize.hpp>

#include "design_evaluation.hpp"
#include "nlopt_handle.hpp"
#include "stationarity.hpp"

#include <saltus/core/interrupt.hpp>

#include <fmt/format.h>
#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace saltus {

namespace {

/// Unconstrained costs within this many rtol * max(1, |psi|) of each other tie
/// (OptimizationRun::improves_on_best).
constexpr double kCostNoiseFactor = 100.0;

/// A constrained point whose KKT residual is at most this fraction of the gradients' size is
/// stationary (OptimizationRun::stationarity_at_best). At the ball's h_T <= 15 optimum the
/// residual is 1e-9 of it; at the points CCSAQ wrongly stopped at, the whole gradient.
constexpr double kStationarityTolerance = 1e-3;
/// A varied parameter within this fraction of its range of a bound is at that bound; a
/// constraint whose slack is at most what its first-order change over such a move of every
/// parameter would be (or constraint_tolerance) is active.
constexpr double kActiveFraction = 1e-6;
/// Restarts of CCSAQ from a point it stopped at that is not stationary.
constexpr int kMaxRestarts = 3;

using optimize_detail::DesignEvaluation;
using optimize_detail::DesignEvaluator;
using optimize_detail::NloptHandle;

/// +1 for psi <= bound, -1 for psi >= bound: the constraint written as NLopt takes it,
/// sense_sign(c) (psi - bound) <= 0.
double sense_sign(const CostConstraint& c) { return c.sense == CostConstraint::Sense::AtMost ? 1.0 : -1.0; }

/// The state NLopt's callbacks share: the evaluator, the history and the stopping decision.
class OptimizationRun {
 public:
  OptimizationRun(const Problem& problem, const OptimizeOptions& options)
      : options_(options),
        evaluator_(problem, options),
        cost_index_(problem.cost_index(options.cost)),
        sign_(options.maximize ? -1.0 : 1.0),
        lower_(static_cast<Eigen::Index>(options.vary.size())),
        upper_(static_cast<Eigen::Index>(options.vary.size())) {
    for (size_t i = 0; i < options.vary.size(); ++i) {
      lower_[static_cast<Eigen::Index>(i)] = options.vary[i].lower;
      upper_[static_cast<Eigen::Index>(i)] = options.vary[i].upper;
    }
    for (const CostConstraint& c : options.constraints) constraint_costs_.push_back(problem.cost_index(c.cost));
  }

  const Eigen::VectorXd& lower() const { return lower_; }
  const Eigen::VectorXd& upper() const { return upper_; }
  DesignEvaluator& evaluator() { return evaluator_; }
  std::vector<OptimizeIterate>& history() { return history_; }
  const std::optional<size_t>& best() const { return best_; }
  const std::string& stop_reason() const { return stop_reason_; }
  bool converged() const { return converged_; }
  bool stopped() const { return stopping_; }
  int evaluations_left() const { return options_.max_evaluations - static_cast<int>(history_.size()); }

  /// The successful evaluation whose largest constraint violation is smallest (the start if
  /// every later run failed): what is reported when no point is feasible.
  size_t least_infeasible() const {
    size_t least = 0;
    double smallest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < history_.size(); ++i) {
      if (history_[i].failed) continue;
      const double v = largest_violation(history_[i]);
      if (v < smallest) {
        smallest = v;
        least = i;
      }
    }
    return least;
  }

  /// The KKT residual of the best point against the size of the minimized function's
  /// gradients (kkt_residual; constraints and bounds within kActiveFraction active), as
  /// {residual, scale}: the point is stationary when residual <= kStationarityTolerance scale.
  std::pair<double, double> stationarity_at_best() const {
    const OptimizeIterate& it = history_[best_.value()];
    const Eigen::Index n = lower_.size();
    const Eigen::VectorXd g = sign_ * it.gradient;
    const DesignEvaluation& e = evaluation_of_best_;
    std::vector<Eigen::VectorXd> columns;
    for (size_t k = 0; k < options_.constraints.size(); ++k) {
      const CostConstraint& c = options_.constraints[k];
      const double s = sense_sign(c);
      const double value = s * (it.constraint_values[static_cast<Eigen::Index>(k)] - c.bound);  // c_k <= 0
      const Eigen::VectorXd gradient = s * e.gradients.row(constraint_costs_[k]).transpose();
      // In the parameters' units, not the cost's: a cost of size 1e-7 is not active for that.
      const double margin = kActiveFraction * gradient.cwiseAbs().dot(upper_ - lower_);
      if (value >= -std::max(margin, options_.constraint_tolerance)) columns.push_back(gradient);
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      const double near = kActiveFraction * (upper_[i] - lower_[i]);
      if (it.x[i] - lower_[i] <= near) columns.push_back(-Eigen::VectorXd::Unit(n, i));
      if (upper_[i] - it.x[i] <= near) columns.push_back(Eigen::VectorXd::Unit(n, i));
    }
    Eigen::MatrixXd active(n, static_cast<Eigen::Index>(columns.size()));
    for (size_t j = 0; j < columns.size(); ++j) active.col(static_cast<Eigen::Index>(j)) = columns[j];
    // The gradient's own size, or where it nearly vanishes (an optimum inside the constraints)
    // a thousandth of the start's: a point 0.5 from stationary does not pass against a start's
    // gradient of 1e3.
    const double scale = std::max(g.lpNorm<Eigen::Infinity>(), 1e-3 * start_gradient_norm_);
    return {optimize_detail::kkt_residual(g, active), scale};
  }
  int consecutive_failures() const { return consecutive_failures_; }
  void set_opt(nlopt_opt opt) { opt_ = opt; }
  std::exception_ptr error() const { return error_; }

  /// The objective NLopt minimizes: s psi_c, with its gradient. A failed run is reported as a
  /// point much worse than the best one, so that the line search backtracks.
  double objective(const double* x_data, double* gradient) {
    return guarded([&] {
      const DesignEvaluation& e = evaluate(x_data);
      const Eigen::Index n = lower_.size();
      if (e.failed) {
        if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, n) = failure_gradient_;
        return failure_value_;
      }
      if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, n) = sign_ * e.gradients.row(cost_index_).transpose();
      return sign_ * e.costs[cost_index_];
    }, gradient);
  }

  /// Constraint k as NLopt wants it: c(x) <= 0.
  double constraint(size_t k, const double* x_data, double* gradient) {
    return guarded([&] {
      const DesignEvaluation& e = evaluate(x_data);
      const CostConstraint& c = options_.constraints[k];
      const double s = sense_sign(c);
      const Eigen::Index n = lower_.size();
      if (e.failed) {  // infeasible by a margin, pointing back to where the runs succeeded
        if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, n) = failure_gradient_;
        return std::abs(failure_value_);
      }
      const int j = constraint_costs_[k];
      if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, n) = s * e.gradients.row(j).transpose();
      return s * (e.costs[j] - c.bound);
    }, gradient);
  }

  /// Evaluates x (or takes the cached run) and records a new iterate when x is new.
  const DesignEvaluation& evaluate(const double* x_data) {
    const Eigen::Index n = lower_.size();
    const Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(x_data, n);
    if (!history_.empty() && history_.back().x == x) return evaluator_.at(x);
    // A restart begins at the best point: its run is kept, not repeated.
    if (best_ && history_[*best_].x == x) return evaluation_of_best_;
    const DesignEvaluation& e = evaluator_.at(x);
    record(e);
    return e;
  }

 private:
  /// Runs a callback's body unless a stop was decided: NLopt's L-BFGS notices a forced stop only
  /// between its iterations, and must not get another run meanwhile.
  template <class F>
  double guarded(F&& f, double* gradient) {
    if (stopping_) {
      if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, lower_.size()).setZero();
      return 0.0;
    }
    try {
      return f();
    } catch (...) {  // no exception may cross NLopt's C code: stop it and rethrow afterwards
      if (!error_) error_ = std::current_exception();
      stop();
      return 0.0;
    }
  }

  void stop() {
    stopping_ = true;
    nlopt_force_stop(opt_);
  }

  void record(const DesignEvaluation& e) {
    OptimizeIterate it;
    it.index = static_cast<int>(history_.size()) + 1;
    it.x = e.x;
    it.failed = e.failed;
    it.failure = e.failure;
    it.cost = e.costs[cost_index_];
    it.gradient = e.gradients.row(cost_index_).transpose();
    it.step = last_x_ ? (e.x - *last_x_).cwiseAbs().maxCoeff() : 0.0;
    last_x_ = e.x;
    it.constraint_values.resize(static_cast<Eigen::Index>(constraint_costs_.size()));
    for (size_t k = 0; k < constraint_costs_.size(); ++k) {
      it.constraint_values[static_cast<Eigen::Index>(k)] = e.costs[constraint_costs_[k]];
    }
    if (e.failed) {
      it.projected_gradient_norm = std::numeric_limits<double>::quiet_NaN();
      it.feasible = false;
      ++consecutive_failures_;
    } else {
      consecutive_failures_ = 0;
      const Eigen::VectorXd g = sign_ * it.gradient;
      const Eigen::VectorXd projected = (e.x - g).cwiseMax(lower_).cwiseMin(upper_);
      it.projected_gradient_norm = (projected - e.x).cwiseAbs().maxCoeff();
      it.events = static_cast<long>(e.event_names.size());
      it.event_sequence_changed = last_events_ && *last_events_ != e.event_names;
      last_events_ = e.event_names;
      it.feasible = feasible(it);
      const double f = sign_ * it.cost;
      if (it.feasible && improves_on_best(f, it.projected_gradient_norm)) best_ = history_.size();
      if (it.feasible) note_lowest(f, history_.size());
      if (history_.empty()) start_gradient_norm_ = g.lpNorm<Eigen::Infinity>();
      if (best_ && *best_ == history_.size()) {
        it.best = true;
        evaluation_of_best_ = e;
        failure_value_ = f + 1e3 * std::max(1.0, std::abs(f));
        failure_gradient_ = g;
      }
    }
    history_.push_back(it);
    if (options_.on_iterate) options_.on_iterate(history_.back());
    decide_stop(history_.back());
  }

  /// A clearly lower minimized cost than the lowest so far; at a tie with it, the smaller
  /// projected gradient (the point nearer the optimum where the cost is flat). Without
  /// constraints, costs within kCostNoiseFactor times the integration's accuracy, rtol |psi| +
  /// the costs' atol, tie: the integration's error moves a cost by about that much between
  /// neighbouring points (the five-bar's effort by 1.3e-7 = 60 rtol |psi| at one e), so a lower
  /// cost there says nothing, and the optimum reported had a gradient 600 times its stationary
  /// neighbour's; with ties at round-off only, a point that passed the gradient test lost to
  /// one 2e-14 lower that had not. Ties are judged against the lowest cost seen, so that a chain
  /// of them cannot drift upward. With constraints the projected gradient does not vanish at the
  /// optimum: ties stay at round-off.
  bool improves_on_best(double f, double projected_gradient_norm) const {
    if (!best_) return true;
    if (ties_with_lowest(f)) return projected_gradient_norm < history_[*best_].projected_gradient_norm;
    return f < lowest_;
  }

  bool ties_with_lowest(double f) const {
    const double magnitude = std::max(std::abs(f), std::abs(lowest_));
    const double round_off = 4.0 * std::numeric_limits<double>::epsilon() * magnitude;
    const double cost_atol = options_.run.cost_atol >= 0.0 ? options_.run.cost_atol : options_.run.atol;
    const double noise = kCostNoiseFactor * (options_.run.rtol * magnitude + cost_atol);
    return std::abs(f - lowest_) <= (options_.constraints.empty() ? std::max(round_off, noise) : round_off);
  }

  /// Records a feasible minimized cost f of the evaluation `index`; the best point follows the
  /// lowest cost where that has moved out of the best one's tie.
  void note_lowest(double f, size_t index) {
    if (lowest_index_ && f >= lowest_) return;
    lowest_ = f;
    lowest_index_ = index;
    // (The evaluation being recorded is not in history_ yet: if it is the best, nothing moves.)
    if (best_ && *best_ != index && !ties_with_lowest(sign_ * history_[*best_].cost)) best_ = index;
  }

  double largest_violation(const OptimizeIterate& it) const {
    double largest = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < options_.constraints.size(); ++k) {
      const CostConstraint& c = options_.constraints[k];
      const double value = it.constraint_values[static_cast<Eigen::Index>(k)];
      largest = std::max(largest, sense_sign(c) * (value - c.bound));
    }
    return largest;
  }

  /// Whether an earlier run failed at `it`'s point (to the step tolerance).
  bool failed_before(const OptimizeIterate& it) const {
    const auto same_point = [&](const OptimizeIterate& other) {
      for (Eigen::Index i = 0; i < it.x.size(); ++i) {
        const double scale = std::max(std::abs(it.x[i]), 1e-3 * (upper_[i] - lower_[i]));
        if (std::abs(it.x[i] - other.x[i]) > options_.x_tolerance * scale) return false;
      }
      return true;
    };
    return std::any_of(history_.begin(), history_.end() - 1,
                       [&](const OptimizeIterate& other) { return other.failed && same_point(other); });
  }

  bool feasible(const OptimizeIterate& it) const {
    return options_.constraints.empty() || largest_violation(it) <= options_.constraint_tolerance;
  }

  /// NLopt has no gradient test and no notion of a failed point: both are decided here, with
  /// the limit on evaluations.
  void decide_stop(const OptimizeIterate& it) {
    if (it.failed && consecutive_failures_ >= options_.max_consecutive_failures) {
      stop_reason_ = fmt::format("{} runs in a row failed; the last: {}", consecutive_failures_, it.failure);
    } else if (it.failed && failed_before(it)) {
      // L-BFGS backtracks from a failed point by a few per cent and then asks for it again (its
      // model's minimum): on (a - 2.5)^2 with runs failing from a = 2, 100 runs alternated
      // between 2.5 and a point 1 % closer to the edge.
      stop_reason_ = fmt::format(
          "the optimizer asked again for a point where the run failed ({}); the optimum may lie at the edge of "
          "the region where the runs succeed: narrow the bounds to it",
          it.failure);
    } else if (!it.failed && it.best && options_.constraints.empty() &&
               it.projected_gradient_norm <= options_.gradient_tolerance * std::max(1.0, std::abs(it.cost))) {
      // Only at the best point: a stationary point with a worse cost (the ball's h_T at e = 0.92
      // on a branch with a bounce fewer, below e = 0.8's) stopped the run "converged" at e = 0.8,
      // whose projected gradient was 0.12.
      stop_reason_ = fmt::format("the projected gradient norm {:.3g} at evaluation {} is below the tolerance",
                                 it.projected_gradient_norm, it.index);
      converged_ = true;
    } else if (static_cast<int>(history_.size()) >= options_.max_evaluations) {
      stop_reason_ = "the limit on evaluations was reached";
    } else {
      return;
    }
    stop();
  }

  const OptimizeOptions& options_;
  DesignEvaluator evaluator_;
  int cost_index_;
  double sign_;
  Eigen::VectorXd lower_, upper_;
  std::vector<int> constraint_costs_;
  std::vector<OptimizeIterate> history_;
  std::optional<size_t> best_;
  double lowest_ = 0.0;                  // the lowest feasible minimized cost seen
  std::optional<size_t> lowest_index_;   // and its evaluation
  std::optional<Eigen::VectorXd> last_x_;
  std::optional<std::vector<std::string>> last_events_;
  double failure_value_ = 0.0;
  Eigen::VectorXd failure_gradient_;
  DesignEvaluation evaluation_of_best_;  // every cost's gradient there (stationarity_at_best)
  double start_gradient_norm_ = 0.0;     // |s d psi_c/dx|_inf at the start
  int consecutive_failures_ = 0;
  std::string stop_reason_;
  bool converged_ = false;
  nlopt_opt opt_ = nullptr;
  bool stopping_ = false;
  std::exception_ptr error_;
};

double objective_callback(unsigned, const double* x, double* gradient, void* data) {
  return static_cast<OptimizationRun*>(data)->objective(x, gradient);
}

struct ConstraintData {
  OptimizationRun* run;
  size_t index;
};

double constraint_callback(unsigned, const double* x, double* gradient, void* data) {
  auto* c = static_cast<ConstraintData*>(data);
  return c->run->constraint(c->index, x, gradient);
}


void require_ok(nlopt_result r, const char* what) {
  if (r < 0) throw Error(fmt::format("NLopt refused {}: {}", what, nlopt_result_to_string(r)));
}

/// Why NLopt stopped, in words.
std::string nlopt_stop_reason(nlopt_result r) {
  switch (r) {
    case NLOPT_SUCCESS: return "the optimizer reports success";
    case NLOPT_FTOL_REACHED: return "the cost no longer changes (function tolerance)";
    case NLOPT_XTOL_REACHED: return "the step is below the tolerance on the parameters";
    case NLOPT_MAXEVAL_REACHED: return "the limit on evaluations was reached";
    case NLOPT_ROUNDOFF_LIMITED: return "round-off limits further progress (the gradient cannot be reduced further)";
    case NLOPT_FAILURE:
      // L-BFGS's line search found no decrease: near an optimum the costs' integration error
      // (about rtol |psi| from point to point) outgrows the changes it tries.
      return "the optimizer stopped: FAILURE (its line search found no decrease; near an optimum the costs' "
             "integration error hides the changes it tries: a tighter --rtol helps)";
    default: return fmt::format("the optimizer stopped: {}", nlopt_result_to_string(r));
  }
}

bool is_converged(nlopt_result r) {
  return r == NLOPT_SUCCESS || r == NLOPT_FTOL_REACHED || r == NLOPT_XTOL_REACHED || r == NLOPT_ROUNDOFF_LIMITED;
}

}  // namespace

OptimizeResult optimize(const Problem& problem, const OptimizeOptions& options) {
  validate(problem, options);
  OptimizationRun run(problem, options);
  const size_t n = options.vary.size();
  const bool constrained = !options.constraints.empty();
  NloptHandle opt(nlopt_create(constrained ? NLOPT_LD_CCSAQ : NLOPT_LD_LBFGS, static_cast<unsigned>(n)));
  if (!opt) throw Error("NLopt could not create the optimizer");
  run.set_opt(opt.get());

  const Eigen::VectorXd nominal = problem.nominal_parameters();
  Eigen::VectorXd x0(static_cast<Eigen::Index>(n));
  for (size_t i = 0; i < n; ++i) x0[static_cast<Eigen::Index>(i)] = nominal[run.evaluator().varied()[i]];
  // The start must run: there is no point to backtrack to.
  const DesignEvaluation& start = run.evaluate(x0.data());
  if (start.failed) throw SolverError(fmt::format("the run at the starting point failed: {}", start.failure));

  require_ok(nlopt_set_lower_bounds(opt.get(), run.lower().data()), "the lower bounds");
  require_ok(nlopt_set_upper_bounds(opt.get(), run.upper().data()), "the upper bounds");
  require_ok(nlopt_set_min_objective(opt.get(), objective_callback, &run), "the objective");
  std::vector<ConstraintData> constraint_data;
  constraint_data.reserve(options.constraints.size());
  for (size_t k = 0; k < options.constraints.size(); ++k) {
    constraint_data.push_back({&run, k});
    require_ok(nlopt_add_inequality_constraint(opt.get(), constraint_callback, &constraint_data.back(),
                                               options.constraint_tolerance),
               "a constraint");
  }
  require_ok(nlopt_set_xtol_rel(opt.get(), options.x_tolerance), "the step tolerance");
  Eigen::VectorXd xtol_abs = options.x_tolerance * 1e-3 * (run.upper() - run.lower());
  require_ok(nlopt_set_xtol_abs(opt.get(), xtol_abs.data()), "the step tolerance");
  // The limit on evaluations is kept by OptimizationRun (NLopt's own first call at x0 reuses the
  // start's run, so NLopt's count is one ahead); NLopt's is only a backstop.
  require_ok(nlopt_set_maxeval(opt.get(), static_cast<int>(std::min<long>(options.max_evaluations + 1L,
                                                                          std::numeric_limits<int>::max()))),
             "the evaluation limit");

  double f = 0.0;
  Eigen::VectorXd xs = x0;
  nlopt_result r = nlopt_optimize(opt.get(), xs.data(), &f);
  if (run.error()) std::rethrow_exception(run.error());
  // CCSAQ's stop at a small step is checked: from a point that is not stationary it starts
  // again (afresh: its approximations' state is reset), up to kMaxRestarts times.
  std::string not_stationary;
  for (int restart = 0; constrained && is_converged(r) && !run.stopped() && run.best(); ++restart) {
    const auto [residual, scale] = run.stationarity_at_best();
    if (residual <= kStationarityTolerance * scale) {
      not_stationary.clear();
      break;
    }
    not_stationary = fmt::format("; the point is not stationary (KKT residual {:.3g} against gradients of {:.3g}; "
                                 "{} restart{} from it)",
                                 residual, scale, restart, restart == 1 ? "" : "s");
    if (restart == kMaxRestarts || run.evaluations_left() < 2) break;
    xs = run.history()[*run.best()].x;
    require_ok(nlopt_set_maxeval(opt.get(), static_cast<int>(std::min<long>(run.evaluations_left() + 1L,
                                                                            std::numeric_limits<int>::max()))),
               "the evaluation limit");
    r = nlopt_optimize(opt.get(), xs.data(), &f);
    if (run.error()) std::rethrow_exception(run.error());
    not_stationary.clear();  // judged afresh (the loop's next pass), or the stop is NLopt's own
  }

  OptimizeResult result;
  result.algorithm = constrained ? "CCSAQ (NLopt LD_CCSAQ)" : "L-BFGS (NLopt LD_LBFGS)";
  for (const DesignVariable& v : options.vary) result.names.push_back(v.name);
  // The best feasible point, or without one the least infeasible.
  const size_t reported = run.best() ? *run.best() : run.least_infeasible();
  result.history = std::move(run.history());
  result.evaluations = static_cast<int>(result.history.size());
  if (run.stopped()) {  // a stop decided here, whatever NLopt made of it
    result.stop_reason = run.stop_reason();
    result.converged = run.converged();
  } else {
    result.stop_reason = nlopt_stop_reason(r);
    result.converged = is_converged(r) && not_stationary.empty();
    result.stop_reason += not_stationary;
  }
  if (!run.best()) {
    result.converged = false;
    result.stop_reason += "; no evaluated point satisfies the constraints (the point reported violates them least)";
  }
  const OptimizeIterate& best = result.history[reported];
  result.optimum = best.x;
  result.parameters = run.evaluator().parameters_at(best.x);
  result.cost = best.cost;
  result.gradient = best.gradient;
  result.projected_gradient_norm = best.projected_gradient_norm;
  result.constraint_values = best.constraint_values;
  return result;
}

}  // namespace saltus
