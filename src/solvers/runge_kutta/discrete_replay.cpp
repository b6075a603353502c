// The complex-step replay of a discrete Runge-Kutta run's frozen steps (discrete_adjoint.hpp).
#include <saltus/core/interrupt.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include "discrete_adjoint.hpp"
#include "discrete_run.hpp"

namespace saltus::detail {

namespace {

/// The Newton matrix of a step's implicit stages at the real parts (t, x, h): the real run's.
void prepare_newton(const RungeKuttaTableau& tab, const Problem& problem, int mode, double t, double h,
                    const Eigen::VectorXd& x, const Eigen::VectorXd& p, StageNewton& newton) {
  if (!tab.factors_jacobian()) return;
  const int n_x = problem.n_states();
  Eigen::MatrixXd J(n_x, n_x);
  TangentWorkspace ws;
  rhs_state_jacobian(problem, mode, t, x, p, J, ws);
  newton.lu.compute(Eigen::MatrixXd::Identity(n_x, n_x) - (h * tab.matrix_gamma()) * J);
}

/// dR/dh of R(h) = r(t + h, Phi(t, h, x, p), p) at the real step (forward AD along h).
double guard_rate_along_step(const RungeKuttaTableau& tab, const Problem& problem, const DiscreteStep& step,
                             const VectorX<Complex>& x, const VectorX<Complex>& p) {
  const int n_x = problem.n_states(), n_c = problem.n_costs();
  const VectorX<Dual> xd = x.real().cast<Dual>(), pd = p.real().cast<Dual>();
  const Dual t(step.t), h = make_dual(step.h, 1.0);
  StageValues<Dual> st;
  st.resize(n_x, n_c, tab.stages);
  StageNewton newton;
  prepare_newton(tab, problem, step.mode, step.t, step.h, x.real(), p.real(), newton);
  if (evaluate_stages(tab, problem, step.mode, t, h, xd, pd, 0, tab.map_stages, st, &newton) != StageStatus::Solved) {
    throw SolverError(fmt::format("the complex-step replay could not repeat the step at t = {:.17g}", step.t));
  }
  VectorX<Dual> x_end, cost_increment;
  propagate(tab, h, xd, st, x_end, cost_increment);
  return problem.event(step.root_event).guard.dual(t + h, x_end, pd).v[0];
}

}  // namespace

ComplexSolution simulate_complex_discrete(const Problem& problem, const VectorX<Complex>& p, const Options& options) {
  const SolverMessageScope messages;
  DiscreteRun run(problem, p.real(), options, RunKind::Simulation);
  const Solution real_run = run.run();
  const RungeKuttaTableau& tab = run.tableau();
  const int n_x = problem.n_states(), n_c = problem.n_costs();

  ComplexSolution out;
  VectorX<Complex> x(n_x);
  problem.initial_state().complex(p, x);
  VectorX<Complex> costs = VectorX<Complex>::Zero(n_c), x_end, cost_increment;
  StageValues<Complex> st;
  st.resize(n_x, n_c, tab.stages);
  Complex t(options.t0);
  StageNewton newton;
  const Eigen::VectorXd p_real = p.real();
  for (const DiscreteStep& step : run.log().steps) {
    throw_if_interrupted(step.t);
    prepare_newton(tab, problem, step.mode, step.t, step.h, x.real(), p_real, newton);
    const auto advance = [&](const Complex& h) {
      if (evaluate_stages(tab, problem, step.mode, t, h, x, p, 0, tab.map_stages, st, &newton) != StageStatus::Solved) {
        throw SolverError(fmt::format("the complex-step replay could not repeat the step at t = {:.17g}", step.t));
      }
      propagate(tab, h, x, st, x_end, cost_increment);
    };
    Complex h(step.h);
    if (step.kind == StepKind::Final) h = Complex(options.tf) - t;
    if (step.kind == StepKind::EventCut) {
      // Newton's method on R(h) = 0 from the real root; R_h is real to first order in Im(p).
      const double rate = guard_rate_along_step(tab, problem, step, x, p);
      const auto& guard = problem.event(step.root_event).guard.complex;
      for (int iteration = 0; iteration < 3; ++iteration) {
        advance(h);
        h -= guard(t + h, x_end, p) / rate;
      }
    }
    advance(h);
    x = x_end;
    costs += cost_increment;
    t = step.kind == StepKind::Final ? Complex(options.tf) : t + h;
    for (size_t e = step.events_begin; e < step.events_end; ++e) {
      const EventRecord& rec = real_run.events[e];
      if (!event_cut_the_step(problem, step, rec.event)) {
        // An event whose time is its own, not the step's end (DiscreteRun::add_own_time_shift):
        // carried to its complex time as in a continuous run.
        const ComplexTransfer shifted = transfer_complex(problem, rec.event, rec.mode_before, t, x, p, rec.guard_rate);
        costs += shifted.cost_integral_jump;
        x = shifted.x_plus;
        out.event_times.push_back(shifted.time);
        out.event_ids.push_back(rec.event);
        continue;
      }
      const Event& event = problem.event(rec.event);
      for (int c = 0; c < n_c; ++c) {
        for (const EventCostTerm& term : problem.cost(c).at_events) {
          if (term.applies_to(problem, rec.event)) costs[c] += term.value.complex(t, x, p);
        }
      }
      if (event.jump) {
        VectorX<Complex> x_plus(n_x);
        event.jump.complex(t, x, p, x_plus);
        x = x_plus;
      }
      out.event_times.push_back(t);
      out.event_ids.push_back(rec.event);
    }
  }
  if (!run.log().steps.empty() && run.log().steps.back().kind == StepKind::EventCut) {
    // The last step ended at an event at t_f (DiscreteRun::hold_final_time): back to t_f.
    const Complex shift = t - Complex(options.tf);
    VectorX<Complex> f(n_x);
    problem.mode(real_run.final_mode).rhs.complex(t, x, p, f);
    for (int c = 0; c < n_c; ++c) {
      const auto& g = problem.cost(c).running;
      if (g) costs[c] -= g.complex(t, x, f, p) * shift;
    }
    x -= f * shift;
  }
  if (!x.allFinite()) throw ModelError(fmt::format("the complex-step replay of problem '{}' is not finite", problem.name()));
  for (int c = 0; c < n_c; ++c) {
    const auto& w = problem.cost(c).terminal;
    if (w) costs[c] += w.complex(Complex(options.tf), x, p);
  }
  out.costs = costs;
  out.final_state = x;
  out.stats = real_run.stats;
  return out;
}

}  // namespace saltus::detail
