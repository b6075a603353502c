#pragma once
// Design optimization with exact hybrid gradients: minimize (or maximize) one cost of a Problem
// over some of its parameters within bounds, optionally with other costs bounded above or below,
//
//   min_x  s psi_c(p(x))   subject to  lo <= x <= hi,  psi_k(p(x)) <= b_k  (or >= b_k),
//
// where p(x) is the problem's nominal parameter vector with the varied entries replaced by x and
// s = +1 (minimize) or -1 (maximize). Every iterate is one run of the chosen sensitivity method
// (adjoint or forward), which returns all the costs and their gradients at once.
//
// Optimizers from NLopt (docs/optimize.md): bounded L-BFGS when only bounds are given, CCSAQ
// (Svanberg's conservative convex separable approximations, the MMA family, whose iterates stay
// feasible) when costs are constrained. They stop when a step changes x by less than
// x_tolerance (relative) or, without constraints, when the projected gradient vanishes at the
// best point. A constrained stop is checked for KKT stationarity and CCSAQ restarted from a
// point that is not stationary (up to three times); a failed run asked for again stops the run
// unconverged (docs/optimize.md).
#include <saltus/core/options.hpp>
#include <saltus/core/problem.hpp>

#include <Eigen/Core>

#include <functional>
#include <string>
#include <vector>

namespace saltus {

/// A parameter the optimizer varies, within [lower, upper] (lower < upper). It starts from the
/// problem's nominal value, which must lie within the bounds.
struct DesignVariable {
  std::string name;
  double lower = 0.0;
  double upper = 0.0;
};

/// A cost kept on one side of a bound: psi <= bound (AtMost) or psi >= bound (AtLeast).
struct CostConstraint {
  enum class Sense { AtMost, AtLeast };
  std::string cost;
  Sense sense = Sense::AtMost;
  double bound = 0.0;
};

enum class GradientMethod { Adjoint, Forward };

/// One run at an iterate, in the order the optimizer asked for them.
struct OptimizeIterate {
  int index = 0;                  ///< 1-based evaluation number
  Eigen::VectorXd x;              ///< the varied parameters, in OptimizeOptions::vary order
  bool failed = false;            ///< the run failed; `failure` says why, the numbers are NaN
  std::string failure;
  double cost = 0.0;              ///< the optimized cost psi_c (not negated when maximizing)
  Eigen::VectorXd gradient;       ///< d psi_c / dx
  /// max_i |P(x - s g)_i - x_i|: the infinity norm of the projected gradient (s g is the gradient
  /// of the minimized function, P clamps into the bounds); 0 at a bound-constrained optimum.
  double projected_gradient_norm = 0.0;
  double step = 0.0;              ///< max_i |x_i - x_i of the previous evaluation|; 0 at the first
  Eigen::VectorXd constraint_values;  ///< psi_k of each CostConstraint
  long events = 0;                ///< events of the run
  /// The sequence of event names differs from the previous successful evaluation's: the cost
  /// may be non-smooth between the two points.
  bool event_sequence_changed = false;
  bool feasible = true;           ///< every CostConstraint holds (to constraint_tolerance)
  bool best = false;              ///< the best feasible point so far
};

struct OptimizeOptions {
  std::string cost;               ///< the cost to optimize
  bool maximize = false;
  std::vector<DesignVariable> vary;
  std::vector<CostConstraint> constraints;
  GradientMethod method = GradientMethod::Adjoint;
  Options run;                    ///< integration settings of every run (the problem's by default)
  /// Stop when a step changes every x_i by less than x_tolerance * max(|x_i|, 1e-3 (hi - lo)).
  double x_tolerance = 1e-10;
  /// Stop when the projected gradient norm is at most gradient_tolerance * max(1, |psi_c|).
  double gradient_tolerance = 1e-12;
  double constraint_tolerance = 1e-8;  ///< allowed violation of a CostConstraint, in cost units
  int max_evaluations = 200;
  /// Failed runs in a row before the optimizer gives up (each time it is told the point is bad
  /// and backtracks).
  int max_consecutive_failures = 5;
  /// Called after every evaluation (progress reports).
  std::function<void(const OptimizeIterate&)> on_iterate;
};

struct OptimizeResult {
  std::string algorithm;          ///< "L-BFGS (NLopt LD_LBFGS)" or "CCSAQ (NLopt LD_CCSAQ)"
  std::vector<std::string> names; ///< the varied parameters
  Eigen::VectorXd optimum;        ///< best feasible x found; without one, the least infeasible
  Eigen::VectorXd parameters;     ///< the full parameter vector at the optimum, n_p
  double cost = 0.0;              ///< psi_c at the optimum
  Eigen::VectorXd gradient;       ///< d psi_c / dx at the optimum
  double projected_gradient_norm = 0.0;
  Eigen::VectorXd constraint_values;
  int evaluations = 0;
  std::vector<OptimizeIterate> history;
  /// Stopped by a tolerance at a point that passed it (with constraints: a KKT point), not by a
  /// limit, a failure or a failed point asked for again.
  bool converged = false;
  std::string stop_reason;
};

/// Throws InputError naming the field for an unknown cost or parameter, a parameter varied
/// twice, empty, inverted or non-finite bounds, a nominal value outside its bounds, a
/// non-positive tolerance or evaluation limit. Run by optimize().
void validate(const Problem& problem, const OptimizeOptions& options);

/// Runs the optimization from the problem's nominal parameter values. Throws InputError for bad
/// options, Error if the run at the starting point fails (there is nothing to optimize from),
/// Interrupted if interrupted. A failure at a later iterate makes the optimizer backtrack; if it
/// cannot, the result reports the best point found and why it stopped.
OptimizeResult optimize(const Problem& problem, const OptimizeOptions& options);

/// "NAME=LO:HI" (the command's --vary) -> DesignVariable; throws InputError on bad syntax.
DesignVariable parse_design_variable(const std::string& text);
/// "NAME<=VALUE" or "NAME>=VALUE" (the command's --constraint); throws InputError on bad syntax.
CostConstraint parse_cost_constraint(const std::string& text);

}  // namespace saltus
