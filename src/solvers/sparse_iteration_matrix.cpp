// The sparse IDAS Newton matrix by probed pattern and column colouring: sparse_iteration_matrix.hpp.
#include "sparse_iteration_matrix.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>

#include <sunmatrix/sunmatrix_sparse.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <random>
#include <vector>

namespace saltus::detail {

bool uses_sparse_iteration_matrix(const Options& options, int n) {
  switch (options.linear_solver) {
    case LinearSolver::Sparse:
      return true;
    case LinearSolver::Automatic:
      return n >= options.sparse_min_states;
    case LinearSolver::Dense:
    case LinearSolver::Krylov:
      break;
  }
  return false;
}

namespace {

/// The weight of dG/dy-dot while probing: irrational, so that no entry of dG/dy cancels one of
/// dG/dy-dot by accident.
constexpr double kProbeRateWeight = 0.7548776662466927;

/// A check whose difference is below this fraction of the row's |values| |d| is round-off.
constexpr double kCheckTolerance = 1e-10;

/// Checks whose new probe found no new entry (round-off above kCheckTolerance, or an entry the
/// probes cannot see) before a pattern is no longer checked at every evaluation (a probe costs
/// one tangent per column); segment starts check it always.
constexpr int kMaxFalseAlarms = 3;

/// Entries of size 0.5 to 1 with random signs.
Eigen::VectorXd random_signs(Eigen::Index n, std::mt19937& random) {
  std::uniform_real_distribution<double> size(0.5, 1.0);
  Eigen::VectorXd out(n);
  for (Eigen::Index i = 0; i < n; ++i) out[i] = ((random() & 1U) ? 1.0 : -1.0) * size(random);
  return out;
}

/// v moved off by a relative 1e-3 in a random direction per entry (a fixed seed: the pattern is
/// the same at every run), so that entries which vanish at v itself (terms in a velocity at
/// rest, a sine at zero) show up.
Eigen::VectorXd moved_off(In<double> v, std::mt19937& random) {
  return v + 1e-3 * random_signs(v.size(), random).cwiseProduct((1.0 + v.array().abs()).matrix());
}

}  // namespace

SparseIterationMatrix::SparseIterationMatrix(const Problem& problem, int n_cost_integrals,
                                             bool grow_between_segments_only)
    : pb_(problem),
      nx_(problem.n_states()),
      nq_(n_cost_integrals),
      grow_between_segments_only_(grow_between_segments_only),
      rate_direction_(Eigen::VectorXd::Zero(problem.n_states())),
      zero_p_(Eigen::VectorXd::Zero(problem.n_parameters())),
      cost_tangents_(Eigen::VectorXd::Zero(problem.n_costs())),
      check_product_(Eigen::VectorXd::Zero(nx_ + nq_)),
      check_values_(Eigen::VectorXd::Zero(nx_ + nq_)),
      check_scale_(Eigen::VectorXd::Zero(nx_ + nq_)) {}

void SparseIterationMatrix::product(int mode, double t, In<double> x, In<double> xdot, In<double> p, double w,
                                    const Eigen::VectorXd& d, Eigen::Ref<Eigen::VectorXd> out) {
  const auto dx = d.head(nx_);
  rate_direction_ = w * dx;
  residual_tangent(pb_, mode, t, x, xdot, p, 0.0, dx, rate_direction_, zero_p_, out.head(nx_), ws_);
  if (nq_ > 0) {
    running_cost_tangents_at_rate(pb_, t, x, xdot, p, 0.0, dx, rate_direction_, zero_p_, cost_tangents_, ws_);
    out.tail(nq_) = w * d.tail(nq_) - cost_tangents_.head(nq_);
  }
}

void SparseIterationMatrix::products(int mode, double t, In<double> x, In<double> xdot, In<double> p, double w,
                                     const Eigen::MatrixXd& d, Eigen::Ref<Eigen::MatrixXd> out) {
  const auto dx = d.topRows(nx_);
  rate_directions_ = w * dx;
  if (zero_p_block_.cols() != d.cols()) zero_p_block_.setZero(pb_.n_parameters(), d.cols());
  residual_tangents(pb_, mode, t, x, xdot, p, dx, rate_directions_, zero_p_block_, out.topRows(nx_), ws_);
  for (Eigen::Index j = 0; nq_ > 0 && j < d.cols(); ++j) {
    running_cost_tangents_at_rate(pb_, t, x, xdot, p, 0.0, dx.col(j), rate_directions_.col(j), zero_p_, cost_tangents_,
                                  ws_);
    out.col(j).tail(nq_) = w * d.col(j).tail(nq_) - cost_tangents_.head(nq_);
  }
}

SparsePattern SparseIterationMatrix::probe(int mode, double t, In<double> x, In<double> xdot, In<double> p) {
  std::mt19937 random(20261126U + static_cast<unsigned>(mode));
  const Eigen::VectorXd x0 = x, xdot0 = xdot, p0 = p;
  const std::vector<Eigen::VectorXd> xs{x0, moved_off(x0, random), moved_off(x0, random)};
  const std::vector<Eigen::VectorXd> xdots{xdot0, moved_off(xdot0, random), moved_off(xdot0, random)};
  // The moved points move in time too (entries in sin(w t) at t = 0), forwards and backwards.
  const double dt = 1e-3 * (1.0 + std::abs(t));
  const std::vector<double> ts{t, t + dt, t - dt};
  std::vector<JacobianProduct> probes;
  for (size_t k = 0; k < xs.size(); ++k) {
    probes.emplace_back([this, mode, tk = ts[k], &x = xs[k], &xdot = xdots[k], &p0](const Eigen::VectorXd& d,
                                                                                     Eigen::Ref<Eigen::VectorXd> out) {
      product(mode, tk, x, xdot, p0, kProbeRateWeight, d, out);
    });
  }
  return probe_pattern(nx_ + nq_, nx_ + nq_, probes);
}

int SparseIterationMatrix::add_pattern(int mode, SparsePattern pattern) {
  std::mt19937 random(7U + static_cast<unsigned>(patterns_.size()));
  patterns_.push_back(ModePattern{mode, ColouredJacobian(std::move(pattern)), random_signs(nx_ + nq_, random), 0, {}});
  return static_cast<int>(patterns_.size()) - 1;
}

int SparseIterationMatrix::add(int mode, SparsePattern pattern) {
  const int id = add_pattern(mode, std::move(pattern));
  latest_[mode] = id;
  return id;
}

bool SparseIterationMatrix::misses(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p, double w,
                                   const double* values) {
  product(m.mode, t, x, xdot, p, w, m.check_direction, check_product_);
  check_values_.setZero();
  check_scale_.setZero();
  const SparsePattern& pattern = m.jacobian.pattern();
  for (int j = 0; j < pattern.cols; ++j) {
    const double d = m.check_direction[j];
    for (int e = pattern.starts[static_cast<size_t>(j)]; e < pattern.starts[static_cast<size_t>(j) + 1]; ++e) {
      const auto row = static_cast<Eigen::Index>(pattern.indices[static_cast<size_t>(e)]);
      check_values_[row] += values[e] * d;
      check_scale_[row] += std::abs(values[e] * d);
    }
  }
  for (Eigen::Index i = 0; i < check_product_.size(); ++i) {
    const double scale = std::max(check_scale_[i], std::abs(check_product_[i]));
    if (std::abs(check_product_[i] - check_values_[i]) > kCheckTolerance * scale) return true;
  }
  return false;
}

SparsePattern SparseIterationMatrix::grown(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p,
                                           double w, const double* values, bool segment_start) {
  if (!segment_start && m.false_alarms >= kMaxFalseAlarms) return {};
  if (!misses(m, t, x, xdot, p, w, values)) return {};
  SparsePattern merged = merge_patterns(m.jacobian.pattern(), probe(m.mode, t, x, xdot, p));
  if (merged.nonzeros() == m.jacobian.pattern().nonzeros()) {
    ++m.false_alarms;
    return {};
  }
  return merged;
}

int SparseIterationMatrix::select(int mode, double t, In<double> x, In<double> xdot, In<double> p) {
  const auto latest = latest_.find(mode);
  if (latest == latest_.end()) {
    active_ = add(mode, probe(mode, t, x, xdot, p));
    return active_;
  }
  ModePattern& m = patterns_[static_cast<size_t>(latest->second)];
  scratch_values_.resize(static_cast<size_t>(m.jacobian.pattern().nonzeros()));
  m.jacobian.evaluate(
      [&](const Eigen::MatrixXd& d, Eigen::Ref<Eigen::MatrixXd> out) {
        products(mode, t, x, xdot, p, kProbeRateWeight, d, out);
      },
      scratch_values_.data());
  SparsePattern bigger = grown(m, t, x, xdot, p, kProbeRateWeight, scratch_values_.data(), true);
  active_ = bigger.cols > 0 ? add(mode, std::move(bigger)) : latest->second;
  return active_;
}

void SparseIterationMatrix::activate(int id) {
  if (id < 0 || id >= static_cast<int>(patterns_.size())) {
    throw SolverError(fmt::format("no sparse Newton pattern {} (there are {})", id, patterns_.size()));
  }
  active_ = id;
}

const ColouredJacobian& SparseIterationMatrix::active() const {
  if (active_ < 0) throw SolverError("no sparse Newton pattern selected");
  return patterns_[static_cast<size_t>(active_)].jacobian;
}

int SparseIterationMatrix::nonzeros() const { return std::max(1, active().pattern().nonzeros()); }

void SparseIterationMatrix::write(ModePattern& m, double t, In<double> x, In<double> xdot, In<double> p, double cj,
                                  SUNMatrix J) {
  const SparsePattern& pattern = m.jacobian.pattern();
  if (SM_COLUMNS_S(J) != pattern.cols) {
    throw SolverError(fmt::format("the sparse Newton matrix has {} columns; mode '{}' has {}", SM_COLUMNS_S(J),
                                  pb_.mode(m.mode).name, pattern.cols));
  }
  if (SM_NNZ_S(J) < pattern.nonzeros()) {
    // SUNSparseMatrix_Reallocate reports success even when realloc fails: check the arrays.
    if (SUNSparseMatrix_Reallocate(J, pattern.nonzeros()) != SUNMAT_SUCCESS || !SM_DATA_S(J) || !SM_INDEXVALS_S(J)) {
      throw SolverError(fmt::format("SUNDIALS could not reallocate the sparse Newton matrix to {} nonzeros",
                                    pattern.nonzeros()));
    }
  }
  sunindextype* starts = SM_INDEXPTRS_S(J);
  sunindextype* rows = SM_INDEXVALS_S(J);
  for (int j = 0; j <= pattern.cols; ++j) starts[j] = pattern.starts[static_cast<size_t>(j)];
  for (int e = 0; e < pattern.nonzeros(); ++e) rows[e] = pattern.indices[static_cast<size_t>(e)];
  m.jacobian.evaluate(
      [&](const Eigen::MatrixXd& d, Eigen::Ref<Eigen::MatrixXd> out) { products(m.mode, t, x, xdot, p, cj, d, out); },
      SM_DATA_S(J));
}

bool SparseIterationMatrix::fill(double t, In<double> x, In<double> xdot, In<double> p, double cj, SUNMatrix J) {
  if (active_ < 0) throw SolverError("no sparse Newton pattern selected");
  ModePattern& m = patterns_[static_cast<size_t>(active_)];
  write(m, t, x, xdot, p, cj, J);
  if (!finite_values(m, J)) return false;
  if (grow_between_segments_only_) return fill_recorded(active_, t, x, xdot, p, cj, J);
  SparsePattern bigger = grown(m, t, x, xdot, p, cj, SM_DATA_S(J), false);
  if (bigger.cols == 0) return true;
  m.jacobian = ColouredJacobian(std::move(bigger));
  write(m, t, x, xdot, p, cj, J);
  return finite_values(m, J);
}

bool SparseIterationMatrix::finite_values(const ModePattern& m, SUNMatrix J) {
  return std::all_of(SM_DATA_S(J), SM_DATA_S(J) + m.jacobian.pattern().nonzeros(),
                     [](double v) { return std::isfinite(v); });
}

bool SparseIterationMatrix::fill_recorded(int base, double t, In<double> x, In<double> xdot, In<double> p, double cj,
                                          SUNMatrix J) {
  if (!misses(patterns_[static_cast<size_t>(base)], t, x, xdot, p, cj, SM_DATA_S(J))) return true;
  // The segment's pattern misses entries here. A point met again (the backward pass recomputing
  // steps from a check point) takes the pattern it took when recorded.
  const std::uint64_t key = point_key(base, t, x, xdot, cj);
  if (const auto known = recorded_choice_.find(key); known != recorded_choice_.end()) {
    if (known->second == base) return true;
    write(patterns_[static_cast<size_t>(known->second)], t, x, xdot, p, cj, J);
    return finite_values(patterns_[static_cast<size_t>(known->second)], J);
  }
  const int use = recorded_extension(base, t, x, xdot, p, cj, J);
  recorded_choice_.emplace(key, use);
  return finite_values(patterns_[static_cast<size_t>(use)], J);
}

int SparseIterationMatrix::recorded_extension(int base, double t, In<double> x, In<double> xdot, In<double> p, double cj,
                                              SUNMatrix J) {
  const auto chosen = [&](int id) {
    write(patterns_[static_cast<size_t>(id)], t, x, xdot, p, cj, J);
    return id;
  };
  // A copy: adding an extension below reallocates patterns_.
  const std::vector<int> extensions = patterns_[static_cast<size_t>(base)].extensions;
  for (const int id : extensions) {
    write(patterns_[static_cast<size_t>(id)], t, x, xdot, p, cj, J);
    if (!misses(patterns_[static_cast<size_t>(id)], t, x, xdot, p, cj, SM_DATA_S(J))) return id;  // J holds it
  }
  ModePattern& b = patterns_[static_cast<size_t>(base)];
  if (b.false_alarms >= kMaxFalseAlarms) return chosen(base);  // round-off the probes cannot resolve
  SparsePattern merged = merge_patterns(b.jacobian.pattern(), probe(b.mode, t, x, xdot, p));
  if (merged.nonzeros() == b.jacobian.pattern().nonzeros()) {
    ++b.false_alarms;
    return chosen(base);
  }
  const auto same = std::find_if(extensions.begin(), extensions.end(), [&](int id) {
    const SparsePattern& e = patterns_[static_cast<size_t>(id)].jacobian.pattern();
    return e.starts == merged.starts && e.indices == merged.indices;
  });
  if (same != extensions.end()) return chosen(*same);
  const int id = add_pattern(b.mode, std::move(merged));
  patterns_[static_cast<size_t>(base)].extensions.push_back(id);
  return chosen(id);
}

std::uint64_t SparseIterationMatrix::point_key(int base, double t, In<double> x, In<double> xdot, double cj) const {
  // FNV-1a over the bits: recomputed steps repeat the recorded points bit for bit.
  std::uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](const void* data, size_t bytes) {
    const auto* c = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ c[i]) * 1099511628211ULL;
  };
  mix(&base, sizeof base);
  mix(&t, sizeof t);
  mix(&cj, sizeof cj);
  mix(x.data(), sizeof(double) * static_cast<size_t>(x.size()));
  mix(xdot.data(), sizeof(double) * static_cast<size_t>(xdot.size()));
  return h;
}

}  // namespace saltus::detail
