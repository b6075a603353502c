#pragma once
// Integration settings of a run: horizon, output times, tolerances, the CVODES method and the
// event safeguards. Every problem carries defaults; the solvers take an Options explicitly.
#include <functional>
#include <vector>

namespace saltus {

/// Where a run is, for progress displays (Options::on_progress).
struct RunProgress {
  const char* phase = "";  ///< "simulation", "forward", "adjoint forward", "adjoint backward"
  double t = 0.0;          ///< the time reached [s] (going down in the backward pass)
  double t0 = 0.0, tf = 0.0;
  long events = 0;         ///< events so far (of the forward pass)
};

/// The smallest relative tolerance a run accepts (about 4.5 times double precision's epsilon
/// 2.2e-16): below it no integrator can resolve a relative error, and CVODES would silently
/// integrate at its own floor instead of the tolerance asked for.
inline constexpr double kMinRtol = 1e-15;

/// The most output times a run keeps (the trajectory, its sensitivities and the named outputs
/// are held at every one: a billion asked for ran the process out of memory).
inline constexpr int kMaxOutputTimes = 1000000;

/// Linear multistep family used by CVODES on each smooth segment.
enum class LinearMultistep { BDF, Adams };

/// How CVODES solves the corrector equation of each step (and, in a forward sensitivity run,
/// the sensitivities' corrector equations).
enum class NonlinearSolver {
  /// FixedPoint when Options::linear_solver is Automatic too and the problem has at least
  /// Options::krylov_min_states states (where a simulation's linear solver would take Krylov;
  /// a forward run's too, though its Newton iterations would take the dense LU below
  /// krylov_min_states_with_sensitivities), Newton otherwise.
  Automatic,
  /// Newton iterations with the linear solver of Options::linear_solver.
  Newton,
  /// Plain fixed-point (functional) iteration, SUNDIALS' SUNNonlinSol_FixedPoint without
  /// Anderson acceleration: one right-hand side per iteration and no linear solver, hence no
  /// Jacobian and no Krylov products. For non-stiff models only (the iteration converges when
  /// the step times the Jacobian's norm is below about 1): the planar index-1 and Maggi
  /// mechanisms, whose constraints are solved inside the right-hand side. A stiff model (stiff
  /// springs, the penalty formulation) is still integrated correctly, but with steps cut to the
  /// iteration's convergence limit. The adjoint's backward pass then iterates so too (its
  /// problem has the forward one's eigenvalues): one reverse sweep per iteration, no linear
  /// solver. CVODES only: IDAS runs refuse it.
  FixedPoint,
};

/// The integrator of the smooth segments.
enum class Integrator {
  Automatic,  ///< CVODES for explicit problems, IDAS for problems with residual modes
  Cvodes,     ///< explicit problems only
  Idas,       ///< any problem; explicit modes run as the residual x-dot - f (docs/dae.md)
  /// Explicit problems only: Dormand and Prince's 5(4) Runge-Kutta pair with error control,
  /// whose forward and adjoint sensitivities are those of the computed steps, exact to
  /// round-off (discrete; docs/discrete-sensitivities.md).
  Dopri5,
  /// As Dopri5 with Hairer and Wanner's L-stable SDIRK of order 4 (5 implicit stages, embedded
  /// order 3, cubic Hermite outputs) for stiff problems.
  Sdirk,
  /// As Dopri5 with the L-stable Rosenbrock method RODAS3 (order 3, embedded order 2, 4 stages
  /// with one LU factorization of I - h J / 2 per step) for stiff problems.
  Rosenbrock,
};

/// Whether the integrator is a discrete Runge-Kutta one (Dopri5, Sdirk, Rosenbrock).
inline bool is_discrete(Integrator integrator) {
  return integrator == Integrator::Dopri5 || integrator == Integrator::Sdirk || integrator == Integrator::Rosenbrock;
}

/// The linear solver of the integrator's Newton iterations.
enum class LinearSolver {
  /// CVODES: Dense below Options::krylov_min_states states (with forward sensitivities below
  /// Options::krylov_min_states_with_sensitivities), Krylov from there on. IDAS: Dense below
  /// Options::sparse_min_states components, Sparse from there on.
  Automatic,
  /// Dense LU of the n x n Newton matrix I - gamma f_x, f_x from the model (forward AD, or the
  /// mode's analytic Jacobian): O(n^2) memory, O(n^3) per factorization.
  Dense,
  /// Matrix-free GMRES (SUNDIALS SPGMR, no preconditioner) with the products f_x v by forward
  /// AD, one right-hand side in dual numbers each: no n x n matrix is formed. For large models
  /// whose Newton matrix is well conditioned (non-stiff: mechanisms with constraints solved in
  /// the right-hand side). A stiff model (stiff springs, a penalty formulation) may need many
  /// Krylov iterations; Dense is the choice there. IDAS takes it as Dense, but for the backward
  /// pass of an adjoint through a completion (docs/dae.md), which takes GMRES on reverse sweeps
  /// of the completion from krylov_min_states states on with every choice but Dense.
  Krylov,
  /// IDAS only: KLU on the sparse Newton matrix F_x + c_j F_xdot, whose nonzero pattern is
  /// probed once per mode (one AD tangent per column at a few points) and whose columns are
  /// grouped into structurally orthogonal colours, so that an evaluation costs one tangent per
  /// colour instead of one per column. For large models whose residual couples few states per
  /// equation (the DAE mechanism formulations). CVODES runs refuse it; the Runge-Kutta
  /// integrators (dopri5, sdirk, rosenbrock) keep their own dense solves.
  Sparse,
};

/// How CVODES corrects the forward sensitivities (CV_STAGGERED or CV_SIMULTANEOUS).
enum class SensitivityCorrector { Staggered, Simultaneous };

/// The range of the default parameter scales (Options::parameter_scales): a sensitivity's
/// absolute tolerance is atol / pbar_k, which for |p_k| = 1e300 would be subnormal.
inline constexpr double kSmallestParameterScale = 1e-100;
inline constexpr double kLargestParameterScale = 1e100;

/// The smallest Options::adjoint_memory_budget: room for one recorded segment of a small
/// model with its backward problem.
inline constexpr long kMinAdjointMemoryBudget = 1L << 20;
/// The largest Options::adjoint_memory_budget (2^50 bytes, 1024 TiB): beyond it byte counts
/// would no longer be exact in a double.
inline constexpr long kMaxAdjointMemoryBudget = 1L << 50;
/// The largest Options::checkpoint_steps: a user's interval is allocated whole as a Hermite
/// buffer of that many points, so it must also fit in adjoint_memory_budget (checked when the
/// adjoint starts); 2^62 steps overflowed its byte count and crashed the run.
inline constexpr long kMaxCheckpointSteps = 1'000'000'000;

struct Options {
  double t0 = 0.0;  ///< initial time [s]
  double tf = 1.0;  ///< final time [s], > t0
  /// Output times, strictly increasing inside [t0, tf]. Empty: `n_outputs` uniform points from t0
  /// to tf. tf is always reported. At an output time that coincides with an event the state
  /// after the event is reported.
  std::vector<double> output_times;
  int n_outputs = 201;

  double rtol = 1e-8;                 ///< relative tolerance (states, costs, sensitivities); >= kMinRtol
  double atol = 1e-10;                ///< absolute tolerance, in the units of each state
  std::vector<double> atol_per_state; ///< if not empty (size n_x), replaces atol per state
  double cost_atol = -1.0;            ///< absolute tolerance of cost quadratures; < 0: atol
  Integrator integrator = Integrator::Automatic;
  LinearMultistep method = LinearMultistep::BDF;  ///< CVODES only (IDAS is BDF)
  SensitivityCorrector corrector = SensitivityCorrector::Staggered;
  /// CVODES's linear solver (the adjoint's backward problem takes GMRES too when its forward
  /// pass does, with products f_x^T v from the reverse recording). Dense by
  /// default: GMRES without a preconditioner suits only well-conditioned Newton matrices, which
  /// the planar index-1 and Maggi formulations have (they set Automatic).
  LinearSolver linear_solver = LinearSolver::Dense;
  /// CVODES's corrector iteration: Newton by default; the mechanisms' index-1 and Maggi
  /// formulations set Automatic, which takes fixed-point iteration from krylov_min_states
  /// states on (docs/benchmarks.md: the 64-rod chain's simulation 1.17 s -> 0.68 s).
  NonlinearSolver nonlinear_solver = NonlinearSolver::Newton;
  /// LinearSolver::Automatic takes Krylov from this many states on: the crossover measured on
  /// the chain of rods (docs/benchmarks.md, the chain of rods; 32 states: dense 0.018 s, Krylov
  /// 0.022 s; 64 states: 0.108 s, 0.098 s). Also where the backward pass of an adjoint through a
  /// completion takes GMRES (with every LinearSolver but Dense; docs/dae.md).
  int krylov_min_states = 64;
  /// As krylov_min_states for a run with forward sensitivities under Newton iteration: the dense
  /// LU serves the state and every sensitivity's linear systems with one factorization, where
  /// GMRES iterates for each. Measured (docs/benchmarks.md, "The linear solver of forward
  /// runs"): the chain of 32 rods, 128 states, dense 0.74 s against GMRES 0.82 s; 64 rods, 256
  /// states, 5.10 s against 3.25 s; the vehicle in maggi 12.4 s against 29.0 s.
  int krylov_min_states_with_sensitivities = 192;
  /// LinearSolver::Automatic on IDAS takes Sparse from this many components (states and cost
  /// integrals) on, unless the colouring needs more than half as many tangents as columns: the
  /// sparse matrix was as fast or faster on every mechanism from 14 components (paddle) up
  /// (docs/benchmarks.md, the chain in the DAE formulations).
  int sparse_min_states = 14;
  /// Parameter scales for the sensitivity error weights (CVODES pbar); empty: |p_k| within
  /// [kSmallestParameterScale, kLargestParameterScale], or 1 where p_k = 0 (the bounds keep
  /// atol / pbar a normal double).
  std::vector<double> parameter_scales;
  bool cost_error_control = true;        ///< quadratures of costs take part in step control
  /// Sensitivities take part in step control. Off, the cost quadratures' sensitivities leave it
  /// too on CVODES (whose first-step estimate would read sensitivities it has not formed).
  bool sensitivity_error_control = true;
  /// Forward sensitivities on CVODES: raise the absolute tolerance of sensitivity k from
  /// atol_i / pbar_k (CVODES' default) to max(atol_i, rtol * scale) / pbar_k (the state's
  /// scale at the start, Problem::state_scale: max(1, |x0|_inf) by default), and that
  /// of the cost quadratures' sensitivities to the largest of those state tolerances / pbar_k,
  /// so that components far below rtol times the state's size are not resolved. The penalty
  /// multibody formulation sets it: the sensitivities' stiff constraint directions made the
  /// five-bar's forward run take 36,482 steps (1.41 s) where the simulation took 5,632; with it
  /// 14,024 steps (0.51 s), the gradient within 8e-8 of a tight reference (5e-8 before).
  /// The index1 formulation sets it for mechanisms with compliant contacts (the vehicle's forward
  /// run: 6,304 steps, 7.2 s; with it 2,844 steps, 2.9 s, its gradient within 1.1e-5 of a tight
  /// reference). A mechanism's scale is its velocities' and its extent's, not its distance from
  /// the origin (multibody::Model::motion_scale).
  bool sensitivity_atol_from_states = false;
  /// DAE runs in a mode with a completion take the motion's scale as their first step
  /// (completed_first_step in src/solvers/run_support.hpp) at every restart after an event, not
  /// only at the run's start. Set by the index-3 formulation: IDAS's own first step after an
  /// impact, about rtol |q| / |v|, is where its Newton matrix's condition grows like h^-3, and
  /// index3's forward sensitivities through impacts were off by up to 7e-3 relative there.
  bool motion_first_step_at_restarts = false;
  long max_steps = 500000;               ///< CVODES steps allowed between two outputs

  // Adjoint.
  /// Forward steps between two check points of a segment's recording (CVodeAdjInit's and
  /// IDAAdjInit's Nd); 0 (the default): chosen per segment so that a segment usually fits in
  /// one interval, within 1/32 of adjoint_memory_budget (docs/adjoint.md, "Check-point
  /// spacing"). The backward pass recomputes the forward steps of every interval of a segment
  /// but its last; larger: fewer recomputed steps, more memory for the interpolation buffer
  /// (allocated whole when the segment starts: (checkpoint_steps + 1) points of the state must
  /// fit in adjoint_memory_budget, or the adjoint refuses them; at most kMaxCheckpointSteps).
  long checkpoint_steps = 0;
  /// Bytes the adjoint may hold at once for its backward pass [B], at least
  /// kMinAdjointMemoryBudget: the CVODES sessions of the segments it keeps, with their check
  /// points and interpolation buffers, plus one backward problem. Past it the oldest segments
  /// keep only their start (time, mode, state) and are recomputed from it during the backward
  /// pass (docs/adjoint.md). The gradient does not depend on it; the run time does, a little.
  long adjoint_memory_budget = 256L << 20;
  double adjoint_rtol = -1.0;             ///< relative tolerance of lambda; < 0: rtol * adjoint_rtol_scale
  /// With adjoint_rtol < 0, lambda's relative tolerance is rtol times this (in (0, 1]): it follows
  /// a changed rtol. The multibody formulations but penalty set 0.1 with adjoint_atol_from_costs
  /// for mechanisms with compliant contacts (multibody.md, "Vehicle").
  double adjoint_rtol_scale = 1.0;
  /// Absolute tolerance of lambda = (dpsi/dx)^T, in cost units per state unit; < 0: atol, or
  /// with adjoint_atol_from_costs, for lambda_j of cost j, the largest of atol, lambda's
  /// relative tolerance times max(1, |psi_j|), and 1e-8 |psi_j| (lambda's round-off).
  double adjoint_atol = -1.0;
  /// Scales the default adjoint_atol of each cost's lambda with that cost from the forward pass,
  /// so that components of lambda far below the cost's own size are not resolved to the state
  /// tolerance. Per cost: one scale from the largest cost left the vehicle's comfort (3.5) held
  /// to its tyre load's 2.6e6 * rtol, and the gradient off by 2.3e-2. The penalty
  /// multibody formulation sets it: its stiff constraint directions carry near-zero adjoint
  /// components that the state atol made the backward pass resolve (the five-bar's backward
  /// pass took 68,066 steps against 2,853 forward; with it 8,213, and the gradient closer to a
  /// tight reference: 1.9e-8 against 1.0e-7). The index3 formulation sets it too: its backward
  /// pass, with the state atol 1e-12, gave up (IDA_TOO_MUCH_WORK) on a pendulum whose cost
  /// weighs its hinge reaction 100 times, and with it ran in 985 steps; elsewhere it halves
  /// index3's backward steps at the same accuracy. With adjoint_quadrature_atol unset, it scales
  /// each cost's gradient quadratures alike.
  bool adjoint_atol_from_costs = false;
  /// Absolute tolerance of the gradient quadratures in cost units; < 0: the cost quadrature
  /// tolerance (cost_atol, else atol), with adjoint_atol_from_costs for cost j the larger of
  /// that and lambda's relative tolerance times |psi_j|. Entry dpsi/dp_k uses it
  /// divided by the parameter scale of p_k (parameter_scales, else |p_k|), as CVODES does for
  /// forward sensitivities.
  double adjoint_quadrature_atol = -1.0;
  /// Whether the n_c x n_p gradient quadratures take part in the backward step control. On by
  /// default: without it a quadrature whose integrand the adjoint's steps do not resolve (e.g.
  /// d/d(drag) when the drag is zero) was off by 35 % in the tests.
  bool adjoint_quadrature_error_control = true;

  // Event safeguards.
  /// Events closer in time than cascade_window * max(1, |t|) form a cascade (time does not
  /// advance); a cascade longer than max_event_cascade stops the run with a ZenoError.
  int max_event_cascade = 100;
  double cascade_window = 1e-9;
  long max_events = 100000;  ///< total events allowed in one run
  /// Resting (events with EventBuilder::rests_in): the motion comes to rest at a firing when
  /// the last `zeno_intervals` intervals between firings of that event shrink geometrically,
  /// their successive ratios rho lying in (0, 1) and agreeing within `zeno_ratio_tolerance`
  /// (relative), and the extrapolated remaining time Delta rho / (1 - rho) is at most
  /// `zeno_tail` * max(1, |t|) (docs/events.md). The firings of an event without a resting
  /// variant that accumulate so, before tf, stop the run with a ZenoError naming the limit.
  int zeno_intervals = 4;
  double zeno_ratio_tolerance = 1e-2;
  double zeno_tail = 1e-4;
  /// |r-dot| <= grazing_tolerance * (|r_t| + |r_x| |f|) (Euclidean norms) marks an event as
  /// grazing: the trajectory meets the guard surface (nearly) tangentially.
  double grazing_tolerance = 1e-6;

  /// Called at every output time of a forward pass and at every segment of the adjoint's
  /// backward pass (the command's progress line); empty: nothing. It must be cheap and must
  /// not throw.
  std::function<void(const RunProgress&)> on_progress;
};

/// Moves the final time to tf, dropping the output times beyond it (tf itself is always
/// reported). Throws InputError unless tf is finite and greater than t0.
void set_horizon(Options& options, double tf);

/// Throws InputError naming the offending field if `options` is unusable for a problem with
/// `n_states` states and `n_parameters` parameters.
void validate(const Options& options, int n_states, int n_parameters);

}  // namespace saltus
