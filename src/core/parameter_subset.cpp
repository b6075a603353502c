#include <saltus/core/parameter_subset.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <type_traits>

namespace saltus {

namespace {

template <class X>
using ScalarOf = typename std::decay_t<X>::Scalar;

/// The full parameter vector from the free ones: fixed values, with the free ones placed.
struct Embedding {
  Eigen::VectorXd fixed;     ///< every parameter at its nominal value, n_p
  std::vector<int> free;     ///< indices of the free parameters in the full vector

  /// Small problems fill a vector on the stack (no allocation per model-function call).
  template <class S>
  using Buffer = Eigen::Matrix<S, Eigen::Dynamic, 1, 0, 32, 1>;

  template <class S, class Use>
  decltype(auto) with_full(In<S> p_free, Use&& use) const {
    const auto n = fixed.size();
    auto fill = [&](auto& full) -> decltype(auto) {
      for (Eigen::Index i = 0; i < n; ++i) full[i] = S(fixed[i]);
      for (size_t k = 0; k < free.size(); ++k) full[free[k]] = p_free[static_cast<Eigen::Index>(k)];
      return use(In<S>(full));
    };
    if (n <= 32) {
      Buffer<S> full(n);
      return fill(full);
    }
    VectorX<S> full(n);
    return fill(full);
  }

  /// use(full_p, full_dp) with the full parameters and the full n_p x k directions of the free
  /// ones' `dp` (the fixed parameters' rows zero), in a matrix of this call's own (subsets of
  /// subsets nest these calls), on the stack when it is small.
  template <class Use>
  void with_full_directions(In<double> p_free, const Eigen::Ref<const Eigen::MatrixXd>& dp, Use&& use) const {
    const auto call = [&](auto& full_dp) {
      full_dp.setZero(fixed.size(), dp.cols());
      for (size_t k = 0; k < free.size(); ++k) full_dp.row(free[k]) = dp.row(static_cast<Eigen::Index>(k));
      with_full<double>(p_free, [&](In<double> full) { use(full, full_dp); });
    };
    if (fixed.size() <= 32 && dp.cols() <= 16) {
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 32, 16> full_dp;
      call(full_dp);
    } else {
      Eigen::MatrixXd full_dp;
      call(full_dp);
    }
  }
};

using EmbeddingPtr = std::shared_ptr<const Embedding>;

}  // namespace

Problem with_free_parameters(const Problem& problem, const std::vector<std::string>& names) {
  auto e = std::make_shared<Embedding>();
  e->fixed = problem.nominal_parameters();
  for (const std::string& name : names) {
    const int k = problem.parameter_index(name);  // InputError listing the known names
    if (std::find(e->free.begin(), e->free.end(), k) != e->free.end()) {
      throw InputError(fmt::format("parameter '{}' is listed twice", name));
    }
    e->free.push_back(k);
  }
  const EmbeddingPtr embed = e;
  Problem q = problem;
  q.parameters_.clear();
  for (int k : embed->free) q.parameters_.push_back(problem.parameters_[static_cast<size_t>(k)]);

  const auto& ie = problem.initial_state_;
  q.initial_state_ = Instantiated<InitialStateFn>::from([ie, embed](const auto& p, auto x0) {
    using S = ScalarOf<decltype(p)>;
    embed->with_full<S>(p, [&](In<S> full) { ie.template get<S>()(full, x0); });
  });
  for (Mode& mode : q.modes_) {
    mode.jacobian.reset();  // its f_p has the full parameter count; AD takes over
    if (const auto rhs = mode.rhs; rhs) {
      mode.rhs = RhsFunctions::from([rhs, embed](auto t, const auto& x, const auto& p, auto xdot) {
        using S = ScalarOf<decltype(x)>;
        embed->with_full<S>(p, [&](In<S> full) { rhs.template get<S>()(t, x, full, xdot); });
      });
    }
    if (const auto tangents = mode.rhs_tangents; tangents) {
      mode.rhs_tangents = [tangents, embed](double t, In<double> x, In<double> p, const Eigen::Ref<const Eigen::MatrixXd>& dx,
                                            const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out) {
        embed->with_full_directions(p, dp, [&](In<double> full, const auto& full_dp) { tangents(t, x, full, dx, full_dp, out); });
      };
    }
    if (const auto tangents = mode.residual_tangents; tangents) {
      mode.residual_tangents = [tangents, embed](double t, In<double> x, In<double> xdot, In<double> p,
                                                 const Eigen::Ref<const Eigen::MatrixXd>& dx,
                                                 const Eigen::Ref<const Eigen::MatrixXd>& dxdot,
                                                 const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out) {
        embed->with_full_directions(
            p, dp, [&](In<double> full, const auto& full_dp) { tangents(t, x, xdot, full, dx, dxdot, full_dp, out); });
      };
    }
    if (const auto res = mode.residual; res) {
      mode.residual = Instantiated<ResidualFn>::from(
          [res, embed](auto t, const auto& x, const auto& xdot, const auto& p, auto r) {
            using S = ScalarOf<decltype(x)>;
            embed->with_full<S>(p, [&](In<S> full) { res.template get<S>()(t, x, xdot, full, r); });
          });
    }
    if (const auto tangents = mode.completion_tangents; tangents) {
      mode.completion_tangents = [tangents, embed](double t, In<double> x_guess, In<double> p,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& dx_guess,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& dp,
                                                   Eigen::Ref<Eigen::MatrixXd> x_out, Eigen::Ref<Eigen::MatrixXd> xdot_out) {
        embed->with_full_directions(p, dp, [&](In<double> full, const auto& full_dp) {
          tangents(t, x_guess, full, dx_guess, full_dp, x_out, xdot_out);
        });
      };
    }
    if (const auto c = mode.completion; c) {
      mode.completion = Instantiated<CompletionFn>::from(
          [c, embed](auto t, const auto& guess, const auto& p, auto x, auto xdot) {
            using S = ScalarOf<decltype(guess)>;
            embed->with_full<S>(p, [&](In<S> full) { c.template get<S>()(t, guess, full, x, xdot); });
          });
    }
    if (const auto rates = mode.rate_completion; rates) {
      mode.rate_completion = [rates, embed](Reverse t, In<Reverse> guess, In<Reverse> p, Out<Reverse> x,
                                            Out<Reverse> xdot) {
        embed->with_full<Reverse>(p, [&](In<Reverse> full) { rates(t, guess, full, x, xdot); });
      };
    }
  }
  const auto scalar_of_state = [embed](const Instantiated<GuardFn>& g) {
    return Instantiated<GuardFn>::from([g, embed](auto t, const auto& x, const auto& p) {
      using S = ScalarOf<decltype(x)>;
      return embed->with_full<S>(p, [&](In<S> full) { return g.template get<S>()(t, x, full); });
    });
  };
  for (Event& ev : q.events_) {
    if (const auto guard = ev.guard; guard) ev.guard = scalar_of_state(guard);
    if (const auto guard = ev.rate_guard; guard) {
      ev.rate_guard = Instantiated<RateGuardFn>::from([guard, embed](auto t, const auto& x, const auto& xdot,
                                                                    const auto& p) {
        using S = ScalarOf<decltype(x)>;
        return embed->with_full<S>(p, [&](In<S> full) { return guard.template get<S>()(t, x, xdot, full); });
      });
    }
    if (const auto jump = ev.jump; jump) {
      ev.jump = Instantiated<JumpFn>::from([jump, embed](auto t, const auto& x, const auto& p, auto x_plus) {
        using S = ScalarOf<decltype(x)>;
        embed->with_full<S>(p, [&](In<S> full) { jump.template get<S>()(t, x, full, x_plus); });
      });
    }
    if (const auto tr = ev.transition; tr) {
      ev.transition = Instantiated<TransitionFn>::from([tr, embed](auto t, const auto& x_plus, const auto& xdot_plus,
                                                                   const auto& x_minus, const auto& xdot_minus,
                                                                   const auto& p, auto residual) {
        using S = ScalarOf<decltype(x_plus)>;
        embed->with_full<S>(p, [&](In<S> full) {
          tr.template get<S>()(t, x_plus, xdot_plus, x_minus, xdot_minus, full, residual);
        });
      });
    }
  }
  for (Cost& cost : q.costs_) {
    if (const auto g = cost.running; g) {
      cost.running = RunningCostFunctions::from(
          [g, embed](auto t, const auto& x, const auto& xdot, const auto& p) {
            using S = ScalarOf<decltype(x)>;
            return embed->with_full<S>(p, [&](In<S> full) { return g.template get<S>()(t, x, xdot, full); });
          });
    }
    if (const auto w = cost.terminal; w) {
      cost.terminal = Instantiated<TerminalCostFn>::from([w, embed](auto t, const auto& x, const auto& p) {
        using S = ScalarOf<decltype(x)>;
        return embed->with_full<S>(p, [&](In<S> full) { return w.template get<S>()(t, x, full); });
      });
    }
    for (EventCostTerm& term : cost.at_events) term.value = scalar_of_state(term.value);
  }
  if (const auto h = problem.outputs_.value; h) {
    q.outputs_.value = Instantiated<OutputFn>::from([h, embed](auto t, const auto& x, const auto& p, auto y) {
      using S = ScalarOf<decltype(x)>;
      embed->with_full<S>(p, [&](In<S> full) { h.template get<S>()(t, x, full, y); });
    });
  }
  for (Monitor& m : q.monitors_) {
    m.value = [value = m.value, embed](double t, In<double> x, In<double> p) {
      return embed->with_full<double>(p, [&](In<double> full) { return value(t, x, full); });
    };
  }
  for (FailureDiagnosis& d : q.failure_diagnoses_) {
    d = [d, embed](double t, In<double> x, In<double> p) {
      return embed->with_full<double>(p, [&](In<double> full) { return d(t, x, full); });
    };
  }
  for (auto& check : q.parameter_checks_) {
    check = [check, embed](In<double> p) { embed->with_full<double>(p, [&](In<double> full) { check(full); }); };
  }
  for (auto& check : q.horizon_checks_) {
    check = [check, embed](In<double> p, double t0, double tf) {
      embed->with_full<double>(p, [&](In<double> full) { check(full, t0, tf); });
    };
  }
  if (const auto notes_at = problem.notes_at_; notes_at) {
    q.notes_at_ = [notes_at, embed](In<double> p) {
      return embed->with_full<double>(p, [&](In<double> full) { return notes_at(full); });
    };
  }
  if (const auto rule = problem.initial_mode_rule_; rule) {
    q.initial_mode_rule_ = [rule, embed](In<double> x0, In<double> p) {
      return embed->with_full<double>(p, [&](In<double> full) { return rule(x0, full); });
    };
  }
  return q;
}

}  // namespace saltus
