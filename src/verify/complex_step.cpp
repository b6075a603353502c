#include <saltus/solvers/complex_simulation.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <limits>

namespace saltus {

GradientEstimate complex_step(const Problem& problem, const Eigen::VectorXd& p,
                              const Options& options, double step) {
  const int np = problem.n_parameters();
  GradientEstimate est;
  est.method = "complex step";
  est.cost_gradient.resize(problem.n_costs(), np);
  est.final_sensitivity.resize(problem.n_states(), np);
  // The real run: the costs when nothing is differentiated, and the events every complex run is
  // compared with. A complex run that fires others (its real parts decide as the real run does,
  // so only a fault would) is reported as a changed sequence, not taken as a derivative.
  const Solution real = simulate(problem, p, options);
  if (np == 0) {
    est.costs = real.costs;
    return est;
  }
  std::vector<int> nominal_events;
  for (const EventRecord& e : real.events) nominal_events.push_back(e.event);
  est.event_time_gradient.setConstant(static_cast<Eigen::Index>(nominal_events.size()), np,
                                      std::numeric_limits<double>::quiet_NaN());
  for (int k = 0; k < np; ++k) {
    VectorX<Complex> pc = p.cast<Complex>();
    pc[k] += Complex(0.0, step);
    const ComplexSolution run = simulate_complex(problem, pc, options, step);
    if (k == 0) est.costs = run.costs.real();
    est.cost_gradient.col(k) = run.costs.imag() / step;
    est.final_sensitivity.col(k) = run.final_state.imag() / step;
    const bool same_events = run.event_ids == nominal_events;
    est.event_sequence_changed.push_back(!same_events);
    if (same_events) {
      for (size_t e = 0; e < run.event_times.size(); ++e) {
        est.event_time_gradient(static_cast<Eigen::Index>(e), k) = run.event_times[e].imag() / step;
      }
    }
  }
  return est;
}

}  // namespace saltus
