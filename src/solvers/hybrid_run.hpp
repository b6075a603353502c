#pragma once
// One run of a hybrid ODE on CVODES, segment by segment: simulation, forward sensitivities, or
// the forward pass of the adjoint (every segment kept with its CVODES check points so that the
// backward pass never interpolates across an event).
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/solution.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvodes_session.hpp"
#include "run_support.hpp"

namespace saltus::detail {

enum class RunKind {
  Simulation,          ///< states, events, costs
  ForwardSensitivity,  ///< plus S = dx/dp through every event
  AdjointRecording,    ///< plus one CVODES session with check points per segment
};

/// A smooth piece of an adjoint recording: [t_start, t_end] in `mode`, integrated by its own
/// CVODES session. The events applied at t_start (before the segment) are
/// Solution::events[events_begin, events_end).
struct RecordedSegment {
  std::unique_ptr<CvodesSession> session;
  int mode = 0;
  double t_start = 0.0;
  double t_end = 0.0;
  size_t events_begin = 0;
  size_t events_end = 0;
  bool advanced = false;  ///< CVODES took at least one step
};

class HybridRun {
 public:
  HybridRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options,
            RunKind kind);
  Solution run();
  /// Segments of an AdjointRecording run (after run()).
  std::vector<RecordedSegment>& segments() { return segments_; }
  /// The mode whose right-hand side the forward callbacks evaluate; the backward pass sets it
  /// to the segment it integrates, because CVODES recomputes forward steps from check points.
  void set_mode(int mode) { mode_ = mode; }

 private:
  static int rhs_cb(sunrealtype t, N_Vector y, N_Vector ydot, void* self);
  static int jacobian_cb(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix J, void* self,
                         N_Vector, N_Vector, N_Vector);
  static int roots_cb(sunrealtype t, N_Vector y, sunrealtype* g, void* self);
  static int quadrature_cb(sunrealtype t, N_Vector y, N_Vector q, void* self);
  static int sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector ydot, N_Vector* yS,
                            N_Vector* ySdot, void* self, N_Vector, N_Vector);
  static int quadrature_sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector* yS,
                                       N_Vector q, N_Vector* qS, void* self, N_Vector,
                                       N_Vector);

  void begin_segment(double t);
  void end_segment(double t);
  void close_segment(double t);
  void handle_roots(double t);
  void apply_event(int k, double t, const std::optional<Accumulation>& rest = std::nullopt);
  /// The event applied for a firing of k: k, or its resting variant where the motion comes to
  /// rest (the firings accumulate, or k's jump would leave the state on its guard).
  int resolve_rest(int k, double t, std::optional<Accumulation>& rest);
  void record_output(double t);
  void finish();
  bool non_finite(const Eigen::Ref<const Eigen::VectorXd>& v, const char* what, double t);
  [[noreturn]] void fail(int flag, double t);

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  RunKind kind_;
  bool sens_;
  int nx_, np_, nc_;
  bool has_running_cost_ = false;

  int mode_ = 0;
  Eigen::VectorXd x_;
  Eigen::MatrixXd S_;  // n_x x n_p
  Eigen::VectorXd cost_integral_;
  Eigen::MatrixXd cost_integral_sens_;  // n_c x n_p
  bool segment_advanced_ = false;

  Eigen::MatrixXd identity_x_, identity_p_;
  Eigen::VectorXd zero_p_;
  Eigen::VectorXd xdot_;
  Eigen::MatrixXd fx_, fp_;
  TangentWorkspace ws_;
  WatchedEvents watched_;
  CascadeGuard cascade_;
  ZenoWatch zeno_;
  std::string model_error_;
  int non_finite_evaluations_ = 0;
  static constexpr int kMaxNonFiniteEvaluations = 50;
  Solution sol_;
  CvodesCallbacks callbacks_;
  std::unique_ptr<CvodesSession> session_;  // simulation and forward runs
  std::vector<RecordedSegment> segments_;            // adjoint recordings
  CvodesSession* cv_ = nullptr;                      // the session of the current segment
};

}  // namespace saltus::detail
