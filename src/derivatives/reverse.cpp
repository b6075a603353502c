// Reverse-mode products of the model functions on the Reverse tape (core/reverse_scalar.hpp):
// one recording per point, one sweep (one pass over the tape) for all the weight vectors there.
// Seeds are added, so an output that is an input (xdot[0] = x[1]) or shared by two outputs is
// handled.
#include <saltus/derivatives/reverse.hpp>

#include <fmt/format.h>

namespace saltus {

namespace {

/// Starts a new recording; earlier recordings (and cached ones) become invalid.
void begin_recording() { ReverseTape::clear(); }

VectorX<Reverse> independents(In<double> values) {
  VectorX<Reverse> v(values.size());
  for (Eigen::Index i = 0; i < values.size(); ++i) v[i] = Reverse::independent(values[i]);
  return v;
}

/// Sweeps the tape with adjoint seeds on outputs (added, so shared nodes are seeded right), for
/// `columns` weight vectors at once (ReverseTape::sweep). The adjoints live in `storage` so that
/// repeated sweeps do not allocate.
class Sweeper {
 public:
  explicit Sweeper(std::vector<double>& storage, Eigen::Index columns = 1)
      : adjoint_(storage), columns_(static_cast<size_t>(columns)) {}
  void seed_clear() { adjoint_.assign(static_cast<size_t>(ReverseTape::size()) * columns_, 0.0); }
  void seed(const Reverse& output, double weight, Eigen::Index column = 0) {
    if (!output.is_constant()) adjoint_[at(output, column)] += weight * output.coefficient();
  }
  void run() { ReverseTape::sweep(adjoint_, static_cast<int>(columns_)); }
  /// One sweep of every column: seed(c) seeds column c, then read(c) reads it.
  template <class Seed, class Read>
  void sweep_columns(Seed&& seed, Read&& read) {
    const auto m = static_cast<Eigen::Index>(columns_);
    seed_clear();
    for (Eigen::Index c = 0; c < m; ++c) seed(c);
    run();
    for (Eigen::Index c = 0; c < m; ++c) read(c);
  }
  /// The adjoint of an independent variable (one with a node of its own).
  double adjoint(const Reverse& v, Eigen::Index column = 0) const {
    return v.is_constant() ? 0.0 : adjoint_[at(v, column)];
  }
  void adjoints(const VectorX<Reverse>& v, Eigen::Ref<Eigen::VectorXd> out, Eigen::Index column = 0) const {
    for (Eigen::Index i = 0; i < v.size(); ++i) out[i] = adjoint(v[i], column);
  }

 private:
  size_t at(const Reverse& v, Eigen::Index column) const {
    return static_cast<size_t>(v.node()) * columns_ + static_cast<size_t>(column);
  }
  std::vector<double>& adjoint_;
  size_t columns_;
};

/// Sweeps a recorded vector function y for every column of `weights` (one pass over the tape).
TransposedProducts products(const VectorX<Reverse>& y, const Reverse& t,
                            const VectorX<Reverse>& x, const VectorX<Reverse>& p,
                            const Eigen::MatrixXd& weights) {
  const Eigen::Index m = weights.cols();
  TransposedProducts out;
  out.t.resize(m);
  out.x.resize(x.size(), m);
  out.p.resize(p.size(), m);
  if (m == 0) return out;
  std::vector<double> storage;
  Sweeper sweeper(storage, m);
  sweeper.sweep_columns(
      [&](Eigen::Index c) {
        for (Eigen::Index i = 0; i < y.size(); ++i) sweeper.seed(y[i], weights(i, c), c);
      },
      [&](Eigen::Index c) {
        out.t[c] = sweeper.adjoint(t, c);
        sweeper.adjoints(x, out.x.col(c), c);
        sweeper.adjoints(p, out.p.col(c), c);
      });
  return out;
}

ScalarGradient scalar_gradient(const Reverse& y, const Reverse& t, const VectorX<Reverse>& x,
                               const VectorX<Reverse>& p) {
  std::vector<double> storage;
  Sweeper sweeper(storage);
  sweeper.seed_clear();
  sweeper.seed(y, 1.0);
  sweeper.run();
  ScalarGradient g{sweeper.adjoint(t), Eigen::RowVectorXd(x.size()), Eigen::RowVectorXd(p.size())};
  sweeper.adjoints(x, g.x.transpose());
  sweeper.adjoints(p, g.p.transpose());
  return g;
}

}  // namespace

ScalarGradient guard_gradient(const Problem& problem, int event, double t, In<double> x,
                              In<double> p) {
  if (problem.event(event).reads_rates()) {
    throw Error("guard_gradient: the guard of event '" + problem.event(event).name +
                "' reads rates; call the overload with x-dot");
  }
  begin_recording();
  const Reverse t_ad = Reverse::independent(t);
  const VectorX<Reverse> x_ad = independents(x);
  const VectorX<Reverse> p_ad = independents(p);
  const Reverse r = problem.event(event).guard.reverse(t_ad, x_ad, p_ad);
  return scalar_gradient(r, t_ad, x_ad, p_ad);
}

GuardGradient guard_gradient(const Problem& problem, int event, double t, In<double> x, In<double> xdot,
                             In<double> p) {
  const Event& e = problem.event(event);
  if (!e.reads_rates()) return {guard_gradient(problem, event, t, x, p), Eigen::RowVectorXd::Zero(x.size())};
  begin_recording();
  const Reverse t_ad = Reverse::independent(t);
  const VectorX<Reverse> x_ad = independents(x);
  const VectorX<Reverse> xdot_ad = independents(xdot);
  const VectorX<Reverse> p_ad = independents(p);
  const Reverse r = e.rate_guard.reverse(t_ad, x_ad, xdot_ad, p_ad);
  std::vector<double> storage;
  Sweeper sweeper(storage);
  sweeper.seed_clear();
  sweeper.seed(r, 1.0);
  sweeper.run();
  GuardGradient g{{sweeper.adjoint(t_ad), Eigen::RowVectorXd(x.size()), Eigen::RowVectorXd(p.size())},
                  Eigen::RowVectorXd(x.size())};
  sweeper.adjoints(x_ad, g.state.x.transpose());
  sweeper.adjoints(xdot_ad, g.xdot.transpose());
  sweeper.adjoints(p_ad, g.state.p.transpose());
  return g;
}

TransposedProducts jump_products(const Problem& problem, int event, double t, In<double> x,
                                 In<double> p, const Eigen::MatrixXd& weights) {
  const Event& ev = problem.event(event);
  if (!ev.jump) {  // identity: phi_x = I, phi_t = 0, phi_p = 0
    return {Eigen::VectorXd::Zero(weights.cols()), weights,
            Eigen::MatrixXd::Zero(p.size(), weights.cols())};
  }
  begin_recording();
  const Reverse t_ad = Reverse::independent(t);
  const VectorX<Reverse> x_ad = independents(x);
  const VectorX<Reverse> p_ad = independents(p);
  VectorX<Reverse> y = VectorX<Reverse>::Zero(x.size());
  ev.jump.reverse(t_ad, x_ad, p_ad, y);
  return products(y, t_ad, x_ad, p_ad, weights);
}

namespace {

/// A recorded completion: the independents and the completed state and rates.
struct RecordedCompletion {
  Reverse t;
  VectorX<Reverse> guess, p, x, xdot;
};

RecordedCompletion record_completion(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p) {
  const Eigen::Index n = x_guess.size();
  begin_recording();
  RecordedCompletion r{Reverse::independent(t), independents(x_guess), independents(p), VectorX<Reverse>::Zero(n),
                       VectorX<Reverse>::Zero(n)};
  problem.mode(mode).completion.reverse(r.t, r.guess, r.p, r.x, r.xdot);
  return r;
}

}  // namespace

TransposedProducts completion_products(const Problem& problem, int mode, double t, In<double> x_guess,
                                       In<double> p, const Eigen::MatrixXd& weights) {
  const RecordedCompletion r = record_completion(problem, mode, t, x_guess, p);
  VectorX<Reverse> outputs(2 * x_guess.size());
  outputs << r.x, r.xdot;
  return products(outputs, r.t, r.guess, r.p, weights);
}

ScalarGradient terminal_cost_gradient(const Problem& problem, int cost, double t, In<double> x,
                                      In<double> p) {
  const auto& w = problem.cost(cost).terminal;
  if (!w) {
    return {0.0, Eigen::RowVectorXd::Zero(x.size()), Eigen::RowVectorXd::Zero(p.size())};
  }
  begin_recording();
  const VectorX<Reverse> x_ad = independents(x);
  const VectorX<Reverse> p_ad = independents(p);
  const Reverse t_ad = Reverse::independent(t);
  const Reverse value = w.reverse(t_ad, x_ad, p_ad);
  return scalar_gradient(value, t_ad, x_ad, p_ad);
}

ScalarGradient event_cost_gradient(const Problem& problem, int cost, int event, double t, In<double> x,
                                   In<double> p) {
  const Cost& c = problem.cost(cost);
  if (!c.has_terms_for(problem, event)) {
    return {0.0, Eigen::RowVectorXd::Zero(x.size()), Eigen::RowVectorXd::Zero(p.size())};
  }
  begin_recording();
  const VectorX<Reverse> x_ad = independents(x);
  const VectorX<Reverse> p_ad = independents(p);
  const Reverse t_ad = Reverse::independent(t);
  Reverse sum(0.0);
  for (const EventCostTerm& term : c.at_events) {
    if (term.applies_to(problem, event)) {
      sum = sum + term.value.reverse(t_ad, x_ad, p_ad);
    }
  }
  return scalar_gradient(sum, t_ad, x_ad, p_ad);
}

Eigen::MatrixXd initial_state_products(const Problem& problem, In<double> p,
                                       const Eigen::MatrixXd& weights) {
  begin_recording();
  const VectorX<Reverse> x_ad(0);  // x0 depends on p only
  const VectorX<Reverse> p_ad = independents(p);
  VectorX<Reverse> y = VectorX<Reverse>::Zero(weights.rows());
  problem.initial_state().reverse(p_ad, y);
  return products(y, Reverse(0.0), x_ad, p_ad, weights).p;
}

StageProducts::StageProducts(const Problem& problem, const Eigen::VectorXd& p)
    : problem_(problem), p_(p), n_x_(problem.n_states()), n_c_(problem.n_costs()) {}

void StageProducts::record(int mode, double t, In<double> x) {
  begin_recording();
  ++recordings_;
  generation_ = ReverseTape::generation();
  t_ad_ = Reverse::independent(t);
  x_ad_.resize(n_x_);
  for (int i = 0; i < n_x_; ++i) x_ad_[i] = Reverse::independent(x[i]);
  p_ad_.resize(p_.size());
  for (Eigen::Index k = 0; k < p_.size(); ++k) p_ad_[k] = Reverse::independent(p_[k]);
  f_ad_.setZero(n_x_);
  problem_.mode(mode).rhs.reverse(t_ad_, x_ad_, p_ad_, f_ad_);
  g_ad_.setZero(n_c_);
  for (int c = 0; c < n_c_; ++c) {
    const auto& g = problem_.cost(c).running;
    if (g) g_ad_[c] = g.reverse(t_ad_, x_ad_, f_ad_, p_ad_);
  }
}

void StageProducts::sweep(const Eigen::MatrixXd& f_weights, const Eigen::MatrixXd& g_weights, TransposedProducts& out) {
  if (generation_ != ReverseTape::generation()) {
    throw Error("StageProducts::sweep: the recording was recycled; call record() first");
  }
  const Eigen::Index m = f_weights.cols();
  out.t.resize(m);
  out.x.resize(n_x_, m);
  out.p.resize(p_.size(), m);
  if (m == 0) return;
  Sweeper sweeper(adjoint_, m);
  sweeper.sweep_columns(
      [&](Eigen::Index c) {
        for (int i = 0; i < n_x_; ++i) sweeper.seed(f_ad_[i], f_weights(i, c), c);
        for (int k = 0; k < n_c_; ++k) sweeper.seed(g_ad_[k], g_weights(k, c), c);
      },
      [&](Eigen::Index c) {
        out.t[c] = sweeper.adjoint(t_ad_, c);
        sweeper.adjoints(x_ad_, out.x.col(c), c);
        sweeper.adjoints(p_ad_, out.p.col(c), c);
      });
}

CompletionRateProducts::CompletionRateProducts(const Problem& problem, const Eigen::VectorXd& p)
    : problem_(problem), p_(p), n_x_(problem.n_states()), n_c_(problem.n_costs()) {}

void CompletionRateProducts::record(int mode, double t, In<double> x_guess) {
  if (point_.holds(mode, t, x_guess)) return;
  begin_recording();
  const Reverse t_ad(t);  // passive: the backward problem needs no time derivative
  x_ad_ = independents(x_guess);
  p_ad_ = independents(p_);
  completed_x_ = VectorX<Reverse>::Zero(n_x_);
  completed_xdot_ = VectorX<Reverse>::Zero(n_x_);
  const Mode& m = problem_.mode(mode);
  if (m.rate_completion) {
    m.rate_completion(t_ad, x_ad_, p_ad_, completed_x_, completed_xdot_);
  } else {
    m.completion.reverse(t_ad, x_ad_, p_ad_, completed_x_, completed_xdot_);
  }
  costs_ = VectorX<Reverse>::Zero(n_c_);
  for (int c = 0; c < n_c_; ++c) {
    const auto& g = problem_.cost(c).running;
    if (g) costs_[c] = g.reverse(t_ad, completed_x_, completed_xdot_, p_ad_);
  }
  point_.remember(mode, t, x_guess);  // only a finished recording is reused
}

void CompletionRateProducts::sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, TransposedProducts& out) {
  sweep(rate_weights, false, out);
}

void CompletionRateProducts::cost_sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, TransposedProducts& out) {
  if (rate_weights.cols() != n_c_) {
    throw Error(fmt::format("CompletionRateProducts::cost_sweep: {} weight columns for {} costs", rate_weights.cols(),
                            n_c_));
  }
  sweep(rate_weights, true, out);
}

void CompletionRateProducts::sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, bool with_costs,
                                   TransposedProducts& out) {
  if (!point_.current()) {
    throw Error("CompletionRateProducts::sweep: the recording was recycled; call record() first");
  }
  const Eigen::Index m = rate_weights.cols();
  out.t.resize(0);
  out.x.resize(n_x_, m);
  out.p.resize(p_.size(), m);
  if (m == 0) return;
  Sweeper sweeper(adjoint_, m);
  sweeper.sweep_columns(
      [&](Eigen::Index c) {
        for (int i = 0; i < n_x_; ++i) sweeper.seed(completed_xdot_[i], rate_weights(i, c), c);
        if (with_costs) sweeper.seed(costs_[c], 1.0, c);
      },
      [&](Eigen::Index c) {
        sweeper.adjoints(x_ad_, out.x.col(c), c);
        sweeper.adjoints(p_ad_, out.p.col(c), c);
      });
}

AdjointRhs::AdjointRhs(const Problem& problem, const Eigen::VectorXd& p)
    : problem_(problem), p_(p), n_x_(problem.n_states()), n_c_(problem.n_costs()) {}

void AdjointRhs::record(int mode, double t, In<double> x) {
  if (point_.holds(mode, t, x)) return;
  begin_recording();
  const Reverse t_ad(t);  // passive: the adjoint needs no time derivative inside a mode
  x_ad_ = independents(x);
  p_ad_ = independents(p_);
  f_ad_ = VectorX<Reverse>::Zero(n_x_);
  problem_.mode(mode).rhs.reverse(t_ad, x_ad_, p_ad_, f_ad_);
  g_ad_ = VectorX<Reverse>::Zero(n_c_);
  for (int c = 0; c < n_c_; ++c) {
    const auto& g = problem_.cost(c).running;
    if (g) g_ad_[c] = g.reverse(t_ad, x_ad_, f_ad_, p_ad_);
  }
  point_.remember(mode, t, x);  // only a finished recording is reused
}

void AdjointRhs::apply_all(const Eigen::Ref<const Eigen::MatrixXd>& lambda, Eigen::Ref<Eigen::MatrixXd> dx,
                           Eigen::Ref<Eigen::MatrixXd> dp) {
  if (!point_.current()) {
    throw Error("AdjointRhs::apply_all: the recording was recycled; call record() first");
  }
  if (lambda.cols() != n_c_) {
    throw Error(fmt::format("AdjointRhs::apply_all: {} adjoint columns for {} costs", lambda.cols(), n_c_));
  }
  if (n_c_ == 0) return;
  Sweeper sweeper(adjoint_, n_c_);
  sweeper.sweep_columns(
      [&](Eigen::Index c) {
        for (int i = 0; i < n_x_; ++i) sweeper.seed(f_ad_[i], lambda(i, c), c);
        sweeper.seed(g_ad_[c], 1.0, c);
      },
      [&](Eigen::Index c) {
        sweeper.adjoints(x_ad_, dx.col(c), c);
        sweeper.adjoints(p_ad_, dp.col(c), c);
      });
}

void AdjointRhs::state_products(const Eigen::Ref<const Eigen::MatrixXd>& v, Eigen::Ref<Eigen::MatrixXd> out) {
  if (!point_.current()) {
    throw Error("AdjointRhs::state_products: the recording was recycled; call record() first");
  }
  const Eigen::Index m = v.cols();
  if (m == 0) return;
  Sweeper sweeper(adjoint_, m);
  sweeper.sweep_columns(
      [&](Eigen::Index c) {
        for (int i = 0; i < n_x_; ++i) sweeper.seed(f_ad_[i], v(i, c), c);
      },
      [&](Eigen::Index c) { sweeper.adjoints(x_ad_, out.col(c), c); });
}

}  // namespace saltus
