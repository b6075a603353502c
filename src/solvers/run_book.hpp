#pragma once
// What every real hybrid run records beside its integrator, written once for the run on CVODES
// (HybridRun) and the run on IDAS (DaeRun): the solution it fills (outputs, event log, costs,
// gradient), the cost integrals and their sensitivities carried across segments, and the
// watches on event cascades and Zeno accumulations. The runs differ in how they integrate, not
// in what they record.
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solution.hpp>

#include <algorithm>
#include <optional>

#include "run_support.hpp"
#include "segment_driver.hpp"

namespace saltus::detail {

class RunBook {
 public:
  /// `problem`, `p` and `options` must outlive the book (the run owns them).
  /// `phase` names the run in progress reports (RunProgress::phase).
  RunBook(const Problem& problem, const Eigen::VectorXd& p, const Options& options, bool sensitivities,
          const char* phase);

  /// Sizes the outputs for `n_outputs` times and zeroes the cost integrals.
  void start(size_t n_outputs);
  /// The output row at t: state, mode, S (with sensitivities) and every cost to date from
  /// `integrals` (the running integrals at t with the event terms so far, n_c); reports progress.
  void record_output(double t, int mode, In<double> x, const Eigen::MatrixXd& S, In<double> integrals);

  /// A firing: adds its point costs to the integrals and returns its log entry.
  EventRecord open_event(const EventValues& event, const std::optional<Accumulation>& rest);
  /// Adds the firing's sensitivity transfer to its entry and to the integrals' sensitivities.
  void book_sensitivities(EventRecord& record, const SensitivityTransfer& transfer, const Eigen::MatrixXd& s_before,
                          const std::optional<Accumulation>& rest);
  /// Appends the entry to the event log and watches the cascade (ZenoError past its limits).
  void close_event(EventRecord record, double t);

  /// Applies the events whose guards fired at one root at t (`fired[i]` for the watched event
  /// `watched.events[i]`, for_each_fired_event's order and skipping): `resolve(k, rest)` returns
  /// the event to apply for a firing of k (its resting variant where the motion comes to rest,
  /// with `rest` set), `apply(k, rest)` applies it. Records every firing in the Zeno watch
  /// (ZenoError where the firings of an event without a resting variant accumulate).
  /// Returns the events applied.
  template <class Mode, class Resolve, class Apply>
  std::vector<int> apply_fired_events(const WatchedEvents& watched, const std::vector<int>& fired, double t,
                                      const Mode& mode, const Resolve& resolve, const Apply& apply) {
    std::vector<int> applied;
    const auto fired_before = [this](int k) {
      return std::any_of(sol_.events.begin(), sol_.events.end(), [k](const EventRecord& e) { return e.event == k; });
    };
    for_each_fired_event(pb_, watched, fired, mode, t, p_, fired_before, [&](int fired_event) {
      zeno_.refuse_accumulation(pb_, fired_event, t);
      std::optional<Accumulation> rest;
      const int k = resolve(fired_event, rest);
      apply(k, rest);
      applied.push_back(k);
      zeno_.record(fired_event, t, static_cast<long>(sol_.events.size()) - 1);
    });
    return applied;
  }

  /// The costs, final state and mode, and with sensitivities S(tf) and the gradient, at tf from
  /// the integrals; throws ModelError if a cost is not finite.
  void finish(double tf, In<double> x, int mode, const Eigen::MatrixXd& S, TangentWorkspace& ws);

  Solution& solution() { return sol_; }
  const std::vector<EventRecord>& events() const { return sol_.events; }
  Eigen::VectorXd& cost_integral() { return cost_integral_; }
  const Eigen::VectorXd& cost_integral() const { return cost_integral_; }
  Eigen::MatrixXd& cost_integral_sensitivity() { return cost_integral_sens_; }
  ZenoWatch& zeno() { return zeno_; }

 private:
  const Problem& pb_;
  const Eigen::VectorXd& p_;
  const Options& opt_;
  bool sens_;
  const char* phase_;
  int nc_, np_;
  Eigen::MatrixXd identity_p_;
  Eigen::VectorXd cost_integral_;       // running integrals with the event terms so far, n_c
  Eigen::MatrixXd cost_integral_sens_;  // their sensitivities, n_c x n_p
  CascadeGuard cascade_;
  ZenoWatch zeno_;
  Solution sol_;
};

}  // namespace saltus::detail
