#pragma once
// One run of a hybrid ODE on CVODES, segment by segment: simulation, forward sensitivities, or
// the forward pass of the adjoint (every segment recorded by a CVODES session of its own, with
// check points that end at its event, so that the backward pass never interpolates across an
// event; within Options::adjoint_memory_budget, older recordings are released and recomputed
// from their snapshot for the backward pass).
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/solution.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvodes_session.hpp"
#include "guard_excursions.hpp"
#include "memory_ledger.hpp"
#include "run_book.hpp"
#include "run_support.hpp"
#include "segment_driver.hpp"

namespace saltus::detail {

/// A smooth piece of an adjoint recording: [t_start, t_end] in `mode`, integrated by its own
/// CVODES session. The events applied at t_start (before the segment) are
/// Solution::events[events_begin, events_end).
struct RecordedSegment {
  /// The recording (level 2 of the check points: CVODES' own). Null once released to stay
  /// within the memory budget; the backward pass then recomputes it from the snapshot.
  std::unique_ptr<CvodesSession> session;
  int mode = 0;
  double t_start = 0.0;
  double t_end = 0.0;
  size_t events_begin = 0;
  size_t events_end = 0;
  bool advanced = false;  ///< CVODES took at least one step
  // The snapshot (level 1): with it a fresh session repeats the segment's steps.
  Eigen::VectorXd x_start;    ///< state at t_start
  Eigen::VectorXd q_start;    ///< cost quadratures at t_start (their error weights shape steps)
  double initial_step = 0.0;  ///< CVODES' first step (it was sized from the next output time)
  long steps = 0;             ///< steps of the forward pass
  /// Recoverable evaluation failures of the forward pass in this segment, over all its
  /// advances: its recomputation repeats the same steps in one advance, and meets them again.
  long recovered_failures = 0;
  long checkpoint_steps = 0;  ///< its check points' spacing (checkpoint_interval), recorded or not
  long accounted_bytes = 0;   ///< what the run's MemoryLedger holds for this segment

  bool recorded() const { return session && session->recording(); }
};

class HybridRun : private SegmentIntegrator {
 public:
  HybridRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options,
            RunKind kind);
  /// x0, the initial mode and the start off the guards (simulate.hpp, check_start).
  void check_start();
  Solution run();
  /// Segments of an AdjointRecording run (after run()).
  std::vector<RecordedSegment>& segments() { return segments_; }
  /// The recording of a segment for its backward integration: the one kept from the forward
  /// pass, or a recomputation from the segment's snapshot (Throws like run(), and Interrupted).
  CvodesSession& recording(RecordedSegment& segment);
  /// Accounts what a segment holds now (after its backward problem was created).
  void account(RecordedSegment& segment);
  /// Frees a segment's recording once the backward pass is done with it.
  void release(RecordedSegment& segment);
  /// What the adjoint held for its backward pass, against Options::adjoint_memory_budget.
  const MemoryLedger& ledger() const { return ledger_; }
  int recomputed_segments() const { return recomputed_; }
  /// The mode whose right-hand side the forward callbacks evaluate; the backward pass sets it
  /// to the segment it integrates, because CVODES recomputes forward steps from check points.
  void set_mode(int mode) { mode_ = mode; }

 private:
  static int rhs_cb(sunrealtype t, N_Vector y, N_Vector ydot, void* self);
  static int jacobian_cb(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix J, void* self,
                         N_Vector, N_Vector, N_Vector);
  /// f_x v by forward AD (the matrix-free Krylov solver, Options::linear_solver).
  static int jacobian_times_cb(N_Vector v, N_Vector Jv, sunrealtype t, N_Vector y, N_Vector fy, void* self,
                               N_Vector tmp);
  static int roots_cb(sunrealtype t, N_Vector y, sunrealtype* g, void* self);
  static int quadrature_cb(sunrealtype t, N_Vector y, N_Vector q, void* self);
  static int sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector ydot, N_Vector* yS,
                            N_Vector* ySdot, void* self, N_Vector, N_Vector);
  static int quadrature_sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector* yS,
                                       N_Vector q, N_Vector* qS, void* self, N_Vector,
                                       N_Vector);

  // The segment loop's steps (segment_driver.hpp).
  void begin_segment(double t) override;
  Reached advance(double tout, double& t) override;
  void record_output(double t, bool integrated) override;
  bool apply_roots(double t) override;
  void finish(double t) override;
  void end_segment(double t);
  void close_segment(double t);
  // Adjoint recording within the memory budget.
  void start_recording(double t);
  void keep_within_budget();
  void make_room(long extra);
  void finish_recording();
  long headroom() const;
  long recomputation_checkpoint_steps(const RecordedSegment& segment) const;
  void recompute(RecordedSegment& segment);
  [[noreturn]] void fail_recomputation(const RecordedSegment& segment, int flag, double t);
  void apply_event(int k, double t, const std::optional<Accumulation>& rest = std::nullopt);
  /// Keeps `message` (what was not finite, where) and returns the callback's flag: recoverable
  /// up to kRecoverableFailures times in an advance (a trial step may leave the model's
  /// domain), then fatal (a model that keeps returning NaN would make CVODES creep towards the
  /// bad point).
  int non_finite(std::string message);
  int non_finite(const char* what, double t, const Eigen::Ref<const Eigen::VectorXd>& x);
  int non_finite_cost_sensitivities(double t, const Eigen::Ref<const Eigen::VectorXd>& x);
  /// The current mode's right-hand side at (t, x); the last point's value when it is the same
  /// point (see LastRate).
  void evaluate_rate(double t, const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> xdot);
  [[noreturn]] void fail(int flag, double t);
  /// Runs `read` (a read of the integrator's solution at t: outputs, sensitivities,
  /// quadratures); when CVODES refuses it after stepping past a non-finite evaluation
  /// (recovered_error_), the failure names that evaluation instead of the read.
  template <class Read>
  void read_solution(double t, Read&& read);
  /// S_ from CVODES's sensitivities at t (read_solution).
  void read_sensitivities(double t);

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  RunKind kind_;
  bool sens_;
  int nx_, np_, nc_;
  RunBook book_;  // outputs, event log, cost integrals, costs and gradient
  bool has_running_cost_ = false;

  int mode_ = 0;
  Eigen::VectorXd x_;
  Eigen::MatrixXd S_;  // n_x x n_p
  bool segment_advanced_ = false;

  Eigen::MatrixXd identity_p_;
  Eigen::VectorXd zero_p_;
  Eigen::VectorXd xdot_;
  /// The last right-hand side evaluated, kept when a running cost reads the rates: CVODES
  /// evaluates the quadrature at each step's converged state and then, with staggered
  /// sensitivities, f at the same point for the sensitivities, which then costs nothing.
  struct LastRate {
    bool kept = false;  ///< a running cost reads the rates (set once per run)
    bool valid = false;
    int mode = 0;
    double t = 0.0;
    Eigen::VectorXd x, xdot;
  } last_rate_;
  Eigen::MatrixXd fx_, fp_;
  /// The sensitivities and their rates as n_x x n_p matrices, for block tangents.
  Eigen::MatrixXd sensitivities_, sensitivity_rates_;
  Eigen::MatrixXd cost_tangents_;  ///< the running costs' tangents, n_c x n_p
  TangentWorkspace ws_;
  WatchedEvents watched_;
  // The crossing pairs inside one step that the guards' values at its ends do not show, marked
  // by a sentinel root function after the guards' (guard_excursions.hpp).
  GuardExcursions excursions_;
  std::string model_error_;
  // The last non-finite evaluation CVODES reported as recovered from (advance). A running cost
  // that is NaN past some time (sqrt(x) with x = 1 - t) let CVode return success at the output
  // time while its quadrature interpolation then failed with CV_BAD_T.
  std::string recovered_error_;
  int failed_evaluations_ = 0;  // recoverable failures in this advance (recoverable_callback)
  CvodesCallbacks callbacks_;
  std::unique_ptr<CvodesSession> session_;  // simulation and forward runs
  std::vector<RecordedSegment> segments_;            // adjoint recordings
  CvodesSession* cv_ = nullptr;                      // the session of the current segment
  // The roots that advance stopped at, per watched event: the integrator's, or a recording's at
  // tf (roots_at_the_final_time).
  std::vector<int> fired_;
  RootMemory roots_;  // what the last root leaves for the segment that starts there
  // Adjoint recordings: the ledger, the oldest segment that may still hold its recording, the
  // quadratures a recording integrates, and what one backward problem will need.
  MemoryLedger ledger_;
  size_t oldest_kept_ = 0;
  int recorded_quadratures_ = 0;
  long backward_bytes_ = 0;
  int recomputed_ = 0;
};

}  // namespace saltus::detail
