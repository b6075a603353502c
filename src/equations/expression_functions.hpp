#pragma once
// Model functions (problem.hpp's generic lambdas) made of parsed expressions. Each lambda
// points its expressions at the argument vectors it receives and evaluates them in place: no
// allocation per call, since a right-hand side runs at every integrator step.
//
// Every expression of an equation model is parsed with the name groups in this order, so that
// one array of pointers serves them all: parameters, states, time, rates of the states (the
// last only in residuals, running costs and guards, as der(name)).
#include <saltus/core/expression.hpp>

#include <memory>
#include <vector>

namespace saltus::equations {

enum Group : int { kParameters = 0, kStates = 1, kTime = 2, kRates = 3, kStatesBefore = 4, kRatesBefore = 5 };

/// The expressions of one vector-valued model function, shared by its four instantiations.
using ExpressionList = std::shared_ptr<const std::vector<Expression>>;

/// out = f(t, x, p), one expression per entry: a mode's right-hand side or an event's jump
/// (x is the pre-event state).
inline auto vector_function(ExpressionList list) {
  return [list](auto t, const auto& x, const auto& p, auto out) {
    using S = decltype(t);
    const S* values[] = {p.data(), x.data(), &t};
    for (size_t i = 0; i < list->size(); ++i) out[static_cast<Eigen::Index>(i)] = (*list)[i].evaluate_in<S>(values, 3);
  };
}

/// res = F(t, x, xdot, p), one expression per equation (n_x of them): a residual mode, whose
/// expressions read the rates of the states as der(name).
inline auto residual_function(ExpressionList list) {
  return [list](auto t, const auto& x, const auto& xdot, const auto& p, auto res) {
    using S = decltype(t);
    const S* values[] = {p.data(), x.data(), &t, xdot.data()};
    for (size_t i = 0; i < list->size(); ++i) res[static_cast<Eigen::Index>(i)] = (*list)[i].evaluate_in<S>(values, 4);
  };
}

/// T(t, x+, x-dot+, x-, x-dot-, p), one expression per differential state: an implicit
/// transition, whose expressions read x- as pre(name) and x-dot- as pre(der(name)).
inline auto transition_function(ExpressionList list) {
  return [list](auto t, const auto& x_plus, const auto& xdot_plus, const auto& x_minus, const auto& xdot_minus,
                const auto& p, auto res) {
    using S = decltype(t);
    const S* values[] = {p.data(), x_plus.data(), &t, xdot_plus.data(), x_minus.data(), xdot_minus.data()};
    for (size_t i = 0; i < list->size(); ++i) res[static_cast<Eigen::Index>(i)] = (*list)[i].evaluate_in<S>(values, 6);
  };
}

/// x0 = f(p), one expression per state.
inline auto initial_state_function(ExpressionList list) {
  return [list](const auto& p, auto x0) {
    using S = typename std::decay_t<decltype(x0)>::Scalar;
    const S* values[] = {p.data()};
    for (size_t i = 0; i < list->size(); ++i) x0[static_cast<Eigen::Index>(i)] = (*list)[i].evaluate_in<S>(values, 1);
  };
}

/// r(t, x, p): a guard, or a terminal cost w(t_f, x(t_f), p).
inline auto scalar_function(Expression e) {
  return [e](auto t, const auto& x, const auto& p) {
    using S = decltype(t);
    const S* values[] = {p.data(), x.data(), &t};
    return e.evaluate_in<S>(values, 3);
  };
}

/// The guard t - t_e(p) of a time event at t_e(p).
inline auto time_guard(Expression at) {
  return [at](auto t, const auto&, const auto& p) {
    using S = decltype(t);
    const S* values[] = {p.data()};
    return S(t - at.evaluate_in<S>(values, 1));
  };
}

/// g(t, x, xdot, p), a running cost that may read the rates of the states, or a guard that
/// reads them.
inline auto running_function(Expression e) {
  return [e](auto t, const auto& x, const auto& xdot, const auto& p) {
    using S = decltype(t);
    const S* values[] = {p.data(), x.data(), &t, xdot.data()};
    return e.evaluate_in<S>(values, 4);
  };
}

}  // namespace saltus::equations
