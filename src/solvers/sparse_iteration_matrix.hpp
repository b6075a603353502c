#pragma once
// The sparse Newton (iteration) matrix of an IDAS run, dG/dy + cj dG/dy-dot, for the system the
// run integrates: G = (F(t, x, x-dot, p); q-dot - g(t, x, x-dot, p)) with the mode's residual F
// and the running-cost integrals q (none if no cost has a running part). Per mode its pattern
// is probed (sparse_columns.hpp: one tangent per column at the point and at two points moved
// off it) and coloured; each evaluation then costs one residual tangent per colour, and KLU
// factors it (IdasSession with sparse_nonzeros).
//
// A mode's equations can change inside it: a model may switch an equation on a state that jumps
// only at events (a persistent contact's "active" flag turns its multiplier's row from lambda = 0
// into the contact constraint). So every segment checks its mode's pattern at its start with one
// more tangent in a fixed random direction d: if J d differs from the pattern's values times d,
// the pattern is probed again there and merged with the old one. Each evaluation checks too (a
// residual that branches on a continuous state, such as a compliant contact that touches): a
// plain run grows the pattern for good; an adjoint recording, whose matrix must be a function
// of the point alone, takes the first of the segment's extensions that holds there, or probes
// a new one (fill_recorded). The SUNDIALS matrix stays here, in src/solvers.
#include <saltus/core/options.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/sparse_columns.hpp>
#include <saltus/derivatives/tangent.hpp>

#include <sundials/sundials_matrix.h>

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace saltus::detail {

/// Whether an IDAS run of n components takes the sparse Newton matrix (Options::linear_solver:
/// Sparse always, Automatic from Options::sparse_min_states on; Dense and Krylov never).
bool uses_sparse_iteration_matrix(const Options& options, int n);

class SparseIterationMatrix {
 public:
  /// For a problem whose IDAS system has its n_x states and `n_cost_integrals` integrals after
  /// them. `grow_between_segments_only` (adjoint recordings): a segment's own pattern changes
  /// only in select(); where it misses entries inside the segment, fill() takes an extension
  /// chosen as a function of the point alone (fill_recorded), so that the adjoint's
  /// recomputation of forward steps repeats the recording's.
  SparseIterationMatrix(const Problem& problem, int n_cost_integrals, bool grow_between_segments_only);

  /// Chooses the pattern of a segment of `mode` starting at (t, x, x-dot): the mode's latest,
  /// checked there, or probed there (the first segment of the mode, or a check that found
  /// entries missing: merged with the latest). Makes it the active pattern and returns its id.
  int select(int mode, double t, In<double> x, In<double> xdot, In<double> p);
  /// Makes pattern `id` (from select) the active one again.
  void activate(int id);
  int active_id() const { return active_; }
  /// The active pattern's nonzeros.
  int nonzeros() const;
  /// The active pattern (the last segment's, for the report).
  const ColouredJacobian& active() const;

  /// Writes the pattern and the values of the active pattern's dG/dy + cj dG/dy-dot at
  /// (t, x, x-dot) into J, a compressed-column SUNMatrix of n_x + n_cost_integrals columns
  /// (reallocated if the pattern needs more room). Returns false if a value is not finite.
  bool fill(double t, In<double> x, In<double> xdot, In<double> p, double cj, SUNMatrix J);

 private:
  struct ModePattern {
    int mode = 0;
    ColouredJacobian jacobian;
    Eigen::VectorXd check_direction;  // random, fixed per pattern
    int false_alarms = 0;             // checks whose new probe found nothing new
    // Adjoint recordings: supersets of this pattern probed where it missed entries, in the
    // order found (fill_recorded).
    std::vector<int> extensions;
  };

  /// Writes (dG/dy + w dG/dy-dot) d into `product` at (t, x, x-dot).
  void product(int mode, double t, In<double> x, In<double> xdot, In<double> p, double w,
               const Eigen::VectorXd& d, Eigen::Ref<Eigen::VectorXd> product);
  /// product() for each column of `d` into the same column of `out`: the residual's rows
  /// from residual_tangents (one evaluation per block of columns where the mode has block
  /// tangents).
  void products(int mode, double t, In<double> x, In<double> xdot, In<double> p, double w, const Eigen::MatrixXd& d,
                Eigen::Ref<Eigen::MatrixXd> out);
  /// The pattern of mode's matrix probed around (t, x, x-dot).
  SparsePattern probe(int mode, double t, In<double> x, In<double> xdot, In<double> p);
  /// A new pattern of `mode` (its id), with its random check direction.
  int add_pattern(int mode, SparsePattern pattern);
  /// add_pattern, made the mode's latest.
  int add(int mode, SparsePattern pattern);
  /// Whether J's values of m's pattern are all finite.
  static bool finite_values(const ModePattern& m, SUNMatrix J);
  /// Whether m's pattern misses entries at (t, x, x-dot): one tangent in m's random direction
  /// against its values (`values`, pattern order, for weight w) times that direction.
  bool misses(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p, double w, const double* values);
  /// m's pattern grown where it misses entries (misses, then a probe merged in). A miss
  /// that a new probe does not confirm counts as a false alarm; after a few, only segment starts
  /// check m. Returns the grown pattern (empty if none).
  SparsePattern grown(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p, double w,
                      const double* values, bool segment_start);
  /// fill() in an adjoint recording, where the matrix at a point must be the same whenever the
  /// backward pass recomputes forward steps from a check point: the segment's pattern `base`
  /// where it misses nothing (one check tangent), else the choice recorded for this exact point,
  /// else recorded_extension's (remembered by point_key).
  bool fill_recorded(int base, double t, In<double> x, In<double> xdot, In<double> p, double cj, SUNMatrix J);
  /// Where `base` misses entries: its first extension that misses nothing there, else one probed
  /// there (added to its extensions), else `base` (the probe found nothing new: a false alarm;
  /// after kMaxFalseAlarms of them base's misses are not probed again). J holds its values.
  int recorded_extension(int base, double t, In<double> x, In<double> xdot, In<double> p, double cj, SUNMatrix J);
  /// A hash of the exact bits of (base, t, x, x-dot, cj).
  std::uint64_t point_key(int base, double t, In<double> x, In<double> xdot, double cj) const;
  /// Pattern and values of m into J.
  void write(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p, double cj, SUNMatrix J);

  const Problem& pb_;
  int nx_, nq_;
  bool grow_between_segments_only_;
  std::vector<ModePattern> patterns_;
  std::map<int, int> latest_;  // mode -> id of its latest pattern
  std::unordered_map<std::uint64_t, int> recorded_choice_;  // point_key -> pattern, where a base missed
  int active_ = -1;
  std::vector<double> scratch_values_;
  Eigen::VectorXd rate_direction_, zero_p_, cost_tangents_, check_product_, check_values_, check_scale_;
  Eigen::MatrixXd rate_directions_, zero_p_block_;  // products()'s, per colour
  TangentWorkspace ws_;
};

}  // namespace saltus::detail
