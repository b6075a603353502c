#pragma once
// One run of a hybrid DAE (or of any problem, written as residuals) on IDAS, segment by
// segment: simulation or forward sensitivities. The segment loop is segment_driver.hpp's, the
// event maps are dae_transfer.hpp's (built on event_transfer.hpp), the log entries
// event_log.hpp's: this file is the IDAS adapter only.
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/solution.hpp>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "guard_excursions.hpp"
#include "guard_point.hpp"
#include "idas_session.hpp"
#include "run_book.hpp"
#include "run_support.hpp"
#include "segment_driver.hpp"
#include "sparse_iteration_matrix.hpp"

namespace saltus::detail {

/// A smooth piece of an adjoint recording: [t_start, t_end] in `mode`, recorded by an IDAS
/// session of its own (check points that end at its event). The events applied at t_start
/// (before the segment) are Solution::events[events_begin, events_end).
struct DaeSegment {
  std::unique_ptr<IdasSession> session;
  int mode = 0;
  double t_start = 0.0;
  double t_end = 0.0;
  size_t events_begin = 0;
  size_t events_end = 0;
  bool advanced = false;  ///< IDAS took at least one step
  int sparse_pattern = -1;  ///< its sparse Newton matrix's pattern (SparseIterationMatrix::select)
  long steps = 0;             ///< IDAS steps of the forward pass
  long hermite_bytes = 0;     ///< its recording's Hermite buffer (0 if it does not record)
  ConsistentPoint start, end;  ///< the consistent points at t_start and t_end
};

class DaeRun : private SegmentIntegrator {
 public:
  DaeRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options, RunKind kind);
  /// The consistent initial point, the initial mode and the start off the guards.
  void check_start();
  Solution run();
  /// Segments of an AdjointRecording run (after run()).
  std::vector<DaeSegment>& segments() { return segments_; }
  /// The mode whose residual the forward callbacks evaluate; the backward pass sets it to the
  /// segment it integrates, because IDAS recomputes forward steps from check points.
  /// The segment's sparse Newton pattern too.
  void recompute_segment(const DaeSegment& segment);

 private:
  static int residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void* self);
  static int jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector r, SUNMatrix J,
                         void* self, N_Vector, N_Vector, N_Vector);
  static int roots_cb(sunrealtype t, N_Vector y, N_Vector yp, sunrealtype* g, void* self);
  static int sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, N_Vector* yS,
                            N_Vector* ypS, N_Vector* rS, void* self, N_Vector, N_Vector, N_Vector);

  // The segment loop's steps (segment_driver.hpp).
  void begin_segment(double t) override;
  Reached advance(double tout, double& t) override;
  void record_output(double t, bool integrated) override;
  bool apply_roots(double t) override;
  void finish(double t) override;
  void end_segment(double t);
  /// Reads the state and sensitivities IDAS returned at t and makes them exactly consistent.
  void take_integrator_state(double t, const char* when);
  void apply_event(int k, double t, const std::optional<Accumulation>& rest);
  /// The event applied for a firing of k: k, or its resting variant (as event_log.hpp resolve_rest for explicit modes).
  int resolve_rest(int k, double t, std::optional<Accumulation>& rest);
  /// Starts the failed segment again with the step taken before its event (RestartStep).
  int start_again(double tout, double& t);
  /// A forward-sensitivity run whose segment failed before its first output: takes its cost integrals'
  /// sensitivities out of the error test for the rest of the run, once (they follow the steps
  /// the states and their sensitivities choose). Their rates read x-dot (a cost on an
  /// acceleration) through IDAS's BDF formula, whose sensitivities right after an impact carry an
  /// error that the integrals' absolute tolerance (from zero, for a parameter that acts only
  /// from the impact on) met at no step: ggl at rtol 1e-11 stopped with IDA_ERR_FAIL at the
  /// impact. Returns whether it did (the segment is then to be started again).
  bool release_cost_sensitivities();
  [[noreturn]] void fail(int flag, double t);
  /// The IDAS components: the states, then the running-cost integrals (differential).
  std::vector<bool> differential_components() const;
  std::vector<double> component_atol() const;
  /// Selects the sparse Newton pattern of a segment starting at t in the current mode
  /// (SparseIterationMatrix::select) and returns its nonzeros; 0 for a dense run.
  int select_sparse_pattern(double t);

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  RunKind kind_;
  bool sens_;
  int nx_, np_, nc_;
  RunBook book_;  // outputs, event log, cost integrals, costs and gradient
  bool has_running_cost_ = false;
  int nq_ = 0;  // running-cost integrals integrated as IDAS states after the n_x states

  int mode_ = 0;
  ConsistentPoint point_;   // x and x-dot at the current time
  Eigen::MatrixXd S_;       // n_x x n_p
  Eigen::MatrixXd S_dot_;   // n_x x n_p

  Eigen::MatrixXd identity_p_;
  std::array<Eigen::MatrixXd, 3> sensitivity_block_;  // sensitivity_cb's S, S-dot and residual rows
  Eigen::VectorXd ones_, cj_weights_, unit_x_, unit_xdot_, zero_p_, cost_values_;
  GuardPoint<double> guard_point_;  // the state and rates the guards read (guard_point.hpp)
  TangentWorkspace ws_;
  WatchedEvents watched_;
  GuardExcursions excursions_;            // a crossing pair inside one step (guard_excursions.hpp)
  std::string model_error_;
  int failed_evaluations_ = 0;  // recoverable failures in this advance (recoverable_callback)
  bool cost_sensitivities_released_ = false;  ///< release_cost_sensitivities took them out
  std::unique_ptr<SparseIterationMatrix> sparse_;  // a sparse Newton matrix (Options::linear_solver)
  IdasCallbacks callbacks_;
  std::unique_ptr<IdasSession> session_;  // simulation and forward runs
  std::vector<DaeSegment> segments_;      // adjoint recordings
  long hermite_bytes_ = 0;                // their Hermite buffers (checkpoint_interval)
  IdasSession* ida_ = nullptr;            // the session of the current segment
  // The roots that advance stopped at (HybridRun::fired_).
  std::vector<int> fired_;
  RootMemory roots_;  // what the last root leaves for the segment that starts there
  RestartStep restart_;                   // the first step after an event (docs/dae.md, "Restarts")
};

}  // namespace saltus::detail
