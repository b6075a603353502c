// The discrete adjoint of a Runge-Kutta run: its tangent-linear model transposed step by step
// (discrete_adjoint.hpp).
#include "discrete_adjoint.hpp"

#include <saltus/core/interrupt.hpp>
#include <saltus/derivatives/reverse.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include "../run_support.hpp"
#include "discrete_run.hpp"

namespace saltus::detail {

namespace {

/// The adjoints of a step's inputs (one column per weight column).
struct StepAdjoint {
  Eigen::MatrixXd x;     ///< of x_n, n_x x m
  Eigen::RowVectorXd t;  ///< of t_n, 1 x m
  Eigen::RowVectorXd h;  ///< of h, 1 x m
  Eigen::MatrixXd p;     ///< of p, n_p x m
};

/// Evaluates the map stages of a logged step from x as the forward pass did (the same Newton
/// matrix and iterations for implicit stages, so the same numbers bitwise).
void recompute_stages(const RungeKuttaTableau& tab, const Problem& problem, const DiscreteStep& step, In<double> x,
                      In<double> p, StageValues<double>& st, StageNewton& newton, TangentWorkspace& ws,
                      Eigen::MatrixXd& J) {
  if (tab.factors_jacobian()) {
    const int n_x = problem.n_states();
    J.resize(n_x, n_x);
    rhs_state_jacobian(problem, step.mode, step.t, x, p, J, ws);
    newton.lu.compute(Eigen::MatrixXd::Identity(n_x, n_x) - (step.h * tab.matrix_gamma()) * J);
  }
  const StageStatus status = evaluate_stages<double>(tab, problem, step.mode, step.t, step.h, x, p, 0, tab.map_stages,
                                                      st, &newton);
  if (status != StageStatus::Solved) {
    throw SolverError(fmt::format("the discrete adjoint could not repeat the step at t = {:.17g} (h = {:.3g})",
                                  step.t, step.h));
  }
}

/// What transposing a step needs besides the step: the reverse recordings of the stages and
/// scratch sized once for the run.
struct TransposeScratch {
  TransposeScratch(const Problem& problem, const Eigen::VectorXd& p) : products(problem, p) {}
  StageProducts products;
  TransposedProducts stage, through;
  std::vector<Eigen::MatrixXd> v;
  Eigen::MatrixXd k_bar, g_weights, fx, through_weights, zero_costs;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;
  Eigen::VectorXd increment, cost_increment, direction;
  Eigen::RowVectorXd t_bar;
  // Rosenbrock steps: the step in Dual numbers along one input direction.
  StageValues<Dual> dual;
  VectorX<Dual> x, p, x_next, q;
  Eigen::VectorXd dx_next, dq;
  Eigen::RowVectorXd row;
};

/// Transposes one step (t, h) from x with its stages `st` (map stages evaluated): `lambda`
/// (n_x x m) and `nu` (1 x m) are the adjoints of x_{n+1} and t_{n+1}; with `with_costs` (m =
/// n_c) column c also carries the weight 1 on the running integral of cost c. Writes `out`.
void transpose_step(const RungeKuttaTableau& tab, const Problem& problem, int mode, double t, double h,
                    In<double> p, const StageValues<double>& st, const Eigen::MatrixXd& lambda,
                    const Eigen::RowVectorXd& nu, bool with_costs, TransposeScratch& w, TangentWorkspace& ws,
                    StepAdjoint& out) {
  const int s = tab.map_stages, m = static_cast<int>(lambda.cols());
  const int n_x = problem.n_states(), n_c = problem.n_costs();
  out.x = lambda;
  out.t = nu;
  out.h = nu;
  out.p.setZero(p.size(), m);
  // v_i: the adjoint of z_i = x_n + h sum_{j<i} a_ij K_j (of Y_i itself for explicit stages).
  w.v.resize(static_cast<size_t>(s));
  w.k_bar.resize(n_x, m);
  w.g_weights.resize(n_c, m);
  for (int i = s - 1; i >= 0; --i) {
    w.k_bar = (h * tab.b[i]) * lambda;
    for (int k = i + 1; k < s; ++k) {
      if (tab.a(k, i) != 0.0) w.k_bar += (h * tab.a(k, i)) * w.v[static_cast<size_t>(k)];
    }
    w.g_weights.setZero();
    if (with_costs) w.g_weights.diagonal().setConstant(h * tab.b[i]);
    auto& vi = w.v[static_cast<size_t>(i)];
    if (w.k_bar.isZero(0.0) && w.g_weights.isZero(0.0)) {
      vi.setZero(n_x, m);
      continue;
    }
    const double ti = t + tab.c[i] * h;
    w.products.record(mode, ti, st.Y.col(i));
    w.products.sweep(w.k_bar, w.g_weights, w.stage);
    w.t_bar = w.stage.t.transpose();
    out.p += w.stage.p;
    if (!tab.implicit_stage(i)) {
      vi = w.stage.x;
    } else {
      // Y_i = z_i + h g f(T_i, Y_i): v = (I - h g f_x)^-T a, and z, T, h, p see v through it.
      const double gamma = tab.a(i, i);
      w.fx.resize(n_x, n_x);
      rhs_state_jacobian(problem, mode, ti, st.Y.col(i), p, w.fx, ws);
      w.lu.compute(Eigen::MatrixXd::Identity(n_x, n_x) - (h * gamma) * w.fx);
      vi = w.lu.transpose().solve(w.stage.x);
      w.through_weights = (h * gamma) * vi;
      w.zero_costs.setZero(n_c, m);
      w.products.sweep(w.through_weights, w.zero_costs, w.through);
      w.t_bar += w.through.t.transpose();
      out.p += w.through.p;
      out.h += gamma * (st.K.col(i).transpose() * vi);
    }
    out.x += vi;
    out.t += w.t_bar;
    out.h += tab.c[i] * w.t_bar;
  }
  // d/dh of x_{n+1} = x_n + h sum b_i K_i, of the running integrals, and of the stage points.
  w.increment.setZero(n_x);
  w.cost_increment.setZero(n_c);
  for (int i = 0; i < s; ++i) {
    w.increment += tab.b[i] * st.K.col(i);
    w.cost_increment += tab.b[i] * st.G.col(i);
  }
  out.h += w.increment.transpose() * lambda;
  if (with_costs) out.h += w.cost_increment.transpose();
  for (int k = 1; k < s; ++k) {
    w.direction.setZero(n_x);
    for (int j = 0; j < k; ++j) w.direction += tab.a(k, j) * st.K.col(j);
    out.h += w.direction.transpose() * w.v[static_cast<size_t>(k)];
  }
}

/// Transposes a Rosenbrock step (t, h) from x by its tangents: one Dual evaluation of the step
/// per input direction (x_n, t_n, h, p), each giving one row of the outputs (as transpose_step).
/// Its Jacobian products need second derivatives of f, which Saltus has in forward mode
/// (HyperDual) only: the transpose costs n_x + n_p + 2 tangent steps, the order of forming the
/// step's own Jacobian f_x (n_x directional derivatives). `newton` holds the step's matrix.
void transpose_by_tangents(const RungeKuttaTableau& tab, const Problem& problem, int mode, double t, double h,
                           In<double> x, In<double> p, StageNewton& newton, const Eigen::MatrixXd& lambda,
                           const Eigen::RowVectorXd& nu, bool with_costs, TransposeScratch& w, StepAdjoint& out) {
  const int n_x = problem.n_states(), n_p = static_cast<int>(p.size()), n_c = problem.n_costs();
  const int m = static_cast<int>(lambda.cols());
  if (w.x.size() != n_x) {  // once per run
    w.dual.resize(n_x, n_c, tab.stages);
    w.x.resize(n_x);
    w.p.resize(n_p);
    w.dx_next.resize(n_x);
    w.dq.resize(n_c);
  }
  out.x.resize(n_x, m);
  out.t = nu;
  out.h = nu;
  out.p.resize(n_p, m);
  // Direction d: x_d (d < n_x), then t_n, h, then p_(d - n_x - 2).
  for (int d = 0; d < n_x + 2 + n_p; ++d) {
    for (int k = 0; k < n_x; ++k) w.x[k] = make_dual(x[k], k == d ? 1.0 : 0.0);
    for (int k = 0; k < n_p; ++k) w.p[k] = make_dual(p[k], k == d - n_x - 2 ? 1.0 : 0.0);
    const Dual td = make_dual(t, d == n_x ? 1.0 : 0.0), hd = make_dual(h, d == n_x + 1 ? 1.0 : 0.0);
    if (evaluate_stages<Dual>(tab, problem, mode, td, hd, w.x, w.p, 0, tab.map_stages, w.dual, &newton) !=
        StageStatus::Solved) {
      throw SolverError(fmt::format("the discrete adjoint could not differentiate the step at t = {:.17g} (h = {:.3g})",
                                    t, h));
    }
    propagate<Dual>(tab, hd, w.x, w.dual, w.x_next, w.q);
    for (int k = 0; k < n_x; ++k) w.dx_next[k] = w.x_next[k].v[0];
    for (int c = 0; c < n_c; ++c) w.dq[c] = w.q[c].v[0];
    Eigen::RowVectorXd& row = w.row;
    row.noalias() = w.dx_next.transpose() * lambda;
    if (with_costs) row += w.dq.transpose();
    if (d < n_x) {
      out.x.row(d) = row;
    } else if (d == n_x) {
      out.t += row;
    } else if (d == n_x + 1) {
      out.h += row;
    } else {
      out.p.row(d - n_x - 2) = row;
    }
  }
}

/// The states x_n of a logged run for the backward pass: stored ones, or recomputed a block of
/// StepLog::stride steps at a time from the block's stored first state (the steps repeat
/// bitwise; after a step with events, the state is the last event's x+ from the event log).
class StepStates {
 public:
  StepStates(const RungeKuttaTableau& tab, const Problem& problem, In<double> p, const StepLog& log,
             const std::vector<EventRecord>& events)
      : tab_(tab), pb_(problem), p_(p), log_(log), events_(events) {
    st_.resize(problem.n_states(), problem.n_costs(), tab.stages);
  }
  const Eigen::VectorXd& at(size_t n) {
    if (log_.states[n].size() > 0) return log_.states[n];
    const size_t first = n - n % log_.stride;
    if (block_first_ != first) recompute(first);
    return block_[n - first];
  }
  long recomputed_steps() const { return recomputed_; }

 private:
  void recompute(size_t first) {
    const size_t end = std::min(first + log_.stride, log_.steps.size());
    block_.resize(end - first);
    block_[0] = log_.states[first];
    Eigen::VectorXd x_next, cost_increment;
    for (size_t n = first; n + 1 < end; ++n) {
      const DiscreteStep& step = log_.steps[n];
      recompute_stages(tab_, pb_, step, block_[n - first], p_, st_, newton_, ws_, jacobian_);
      propagate(tab_, step.h, block_[n - first], st_, x_next, cost_increment);
      block_[n + 1 - first] = step.events_end > step.events_begin ? events_[step.events_end - 1].state_after : x_next;
      ++recomputed_;
    }
    block_first_ = first;
  }

  const RungeKuttaTableau& tab_;
  const Problem& pb_;
  Eigen::VectorXd p_;
  const StepLog& log_;
  const std::vector<EventRecord>& events_;
  StageValues<double> st_;
  StageNewton newton_;
  TangentWorkspace ws_;
  Eigen::MatrixXd jacobian_;
  std::vector<Eigen::VectorXd> block_;
  size_t block_first_ = static_cast<size_t>(-1);
  long recomputed_ = 0;
};

/// The transpose of DiscreteRun::add_own_time_shift: an event at the instant a step ended at
/// whose own time is not the step's end (delta = -(r_t dt + r_x S + r_p) / r-dot) passes
/// kappa_c = c_e . lambda+_c + (g- - g+)_c + c-dot-_c through delta's gradient: x (n_x x n_c) to
/// lambda-, t (n_c) to the time adjoint, p (n_p x n_c) to the gradient.
TransposedProducts own_time_shift_products(const Problem& problem, const EventRecord& record, In<double> p,
                                           const Eigen::MatrixXd& lambda_plus, TangentWorkspace& ws) {
  const EventValues v = recorded_event(problem, record, p);
  const Eigen::VectorXd c_e = reset_defect(problem, v, p, ws);
  const Eigen::VectorXd cost_jump = running_cost_jump(problem, v, p);
  const ScalarGradient r = guard_gradient(problem, v.event, v.time, v.x_minus, p);
  const Eigen::Index n_c = lambda_plus.cols();
  Eigen::RowVectorXd kappa = c_e.transpose() * lambda_plus + cost_jump.transpose();
  for (int c = 0; c < n_c; ++c) {
    if (!problem.cost(c).has_terms_for(problem, v.event)) continue;
    const ScalarGradient point = event_cost_gradient(problem, c, v.event, v.time, v.x_minus, p);
    kappa[c] += point.t + point.x.dot(v.f_minus);
  }
  kappa /= -v.guard_rate;
  return TransposedProducts{(r.t * kappa).transpose(), r.x.transpose() * kappa, r.p.transpose() * kappa};
}

}  // namespace

Solution discrete_adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  const SolverMessageScope messages;
  DiscreteRun run(problem, p, options, RunKind::AdjointRecording);
  Solution sol = run.run();
  const StepLog& log = run.log();
  const RungeKuttaTableau& tab = run.tableau();
  const int n_x = problem.n_states(), n_p = problem.n_parameters(), n_c = problem.n_costs();
  const double tf = sol.times.back();

  // At t_f: lambda = w_x^T, grad = w_p^T (the final time is fixed: no adjoint of t there).
  Eigen::MatrixXd lambda(n_x, n_c), grad(n_p, n_c);
  for (int c = 0; c < n_c; ++c) {
    const ScalarGradient w = terminal_cost_gradient(problem, c, tf, sol.final_state, p);
    lambda.col(c) = w.x.transpose();
    grad.col(c) = w.p.transpose();
  }
  Eigen::RowVectorXd nu = Eigen::RowVectorXd::Zero(n_c);
  if (!log.steps.empty() && log.steps.back().kind == StepKind::EventCut) {
    // The transpose of DiscreteRun::hold_final_time: S(t_f) = S - f dt, the integrals' - g dt.
    Eigen::VectorXd f(n_x);
    problem.mode(sol.final_mode).rhs.real(tf, sol.final_state, p, f);
    for (int c = 0; c < n_c; ++c) {
      nu[c] = -f.dot(lambda.col(c)) - running_cost(problem, c, sol.final_mode, tf, sol.final_state, p);
    }
  }
  StageValues<double> st;
  st.resize(n_x, n_c, tab.stages);
  Eigen::VectorXd x_end, cost_increment;
  StageNewton newton;
  TangentWorkspace ws;
  TransposeScratch scratch(problem, p);
  StepAdjoint a, root;
  StepStates states(tab, problem, p, log, sol.events);
  for (size_t n = log.steps.size(); n-- > 0;) {
    const DiscreteStep& step = log.steps[n];
    throw_if_interrupted(step.t);
    if (n % 64 == 0) report_progress(options, "adjoint backward", step.t, static_cast<long>(sol.events.size()));
    for (size_t e = step.events_end; e-- > step.events_begin;) {
      const EventRecord& rec = sol.events[e];
      const TransposedProducts jump = jump_products(problem, rec.event, rec.time, rec.state_before, p, lambda);
      if (!event_cut_the_step(problem, step, rec.event)) {
        const TransposedProducts shift = own_time_shift_products(problem, rec, p, lambda, ws);
        lambda = jump.x + shift.x;
        nu += (jump.t + shift.t).transpose();
        grad += jump.p + shift.p;
      } else {
        lambda = jump.x;
        nu += jump.t.transpose();
        grad += jump.p;
      }
      for (int c = 0; c < n_c; ++c) {
        if (!problem.cost(c).has_terms_for(problem, rec.event)) continue;
        const ScalarGradient point = event_cost_gradient(problem, c, rec.event, rec.time, rec.state_before, p);
        lambda.col(c) += point.x.transpose();
        nu[c] += point.t;
        grad.col(c) += point.p.transpose();
      }
    }
    const Eigen::VectorXd& x = states.at(n);
    recompute_stages(tab, problem, step, x, p, st, newton, ws, scratch.fx);
    const auto transpose = [&](const Eigen::MatrixXd& weights, const Eigen::RowVectorXd& time_weight, bool with_costs,
                               StepAdjoint& out) {
      if (tab.rosenbrock) {
        transpose_by_tangents(tab, problem, step.mode, step.t, step.h, x, p, newton, weights, time_weight, with_costs,
                              scratch, out);
      } else {
        transpose_step(tab, problem, step.mode, step.t, step.h, p, st, weights, time_weight, with_costs, scratch, ws,
                       out);
      }
    };
    transpose(lambda, nu, true, a);
    if (step.kind == StepKind::Final) a.t -= a.h;
    if (step.kind == StepKind::EventCut) {
      // h solves R = r(t_n + h, Phi(t_n, h, x_n, p), p) = 0: spread hbar by -hbar / R_h over R's gradient.
      propagate(tab, step.h, x, st, x_end, cost_increment);
      const ScalarGradient r = guard_gradient(problem, step.root_event, step.t + step.h, x_end, p);
      transpose(r.x.transpose(), Eigen::RowVectorXd::Constant(1, r.t), false, root);
      const Eigen::RowVectorXd spread = -a.h / root.h[0];
      a.x += root.x * spread;
      a.t += root.t[0] * spread;
      a.p += (root.p + r.p.transpose()) * spread;
    }
    std::swap(lambda, a.x);
    nu = a.t;
    grad += a.p;
  }
  grad += initial_state_products(problem, p, lambda);

  sol.cost_gradient = grad.transpose();
  sol.initial_state_gradient = lambda.transpose();
  const long bytes = StepLog::state_bytes(n_x);
  sol.adjoint.checkpoint_steps = static_cast<long>(log.stride);
  sol.adjoint.checkpoints = log.stored;
  sol.adjoint.stored_bytes = static_cast<long>(log.steps.size()) * bytes;
  sol.adjoint.peak_stored_bytes = (log.stored + static_cast<long>(log.stride)) * bytes;
  sol.adjoint.recomputed_segments = states.recomputed_steps();
  sol.adjoint.memory_budget = options.adjoint_memory_budget;
  sol.adjoint.tape_recordings = scratch.products.recordings();
  sol.adjoint.backward.integrator = tab.name;
  sol.adjoint.backward.discrete = true;
  sol.adjoint.backward.steps = static_cast<long>(log.steps.size());
  sol.adjoint.backward.rhs_evals = static_cast<long>(log.steps.size()) * tab.map_stages *
                                   (tab.rosenbrock ? n_x + n_p + 2 : 1);
  return sol;
}

}  // namespace saltus::detail
