#pragma once
// Signatures of the user's model functions and the holder that compiles one generic lambda for
// every scalar type Saltus needs (double, Complex, Dual, Reverse).
//
// Shapes: x, xdot, x_plus and x0 have n_x entries; p has n_p entries; t is time in seconds (it
// is a scalar of type S because the complex step evaluates jumps at a complex event time).
#include <saltus/core/hyper_dual.hpp>
#include <saltus/core/scalar.hpp>

#include <functional>
#include <type_traits>

namespace saltus {

/// Right-hand side of a mode: xdot = f(t, x, p).
template <class S>
using RhsFn = std::function<void(S t, In<S> x, In<S> p, Out<S> xdot)>;
/// Residual of a mode written implicitly: F(t, x, xdot, p) = 0 (n_x equations). The entries of
/// xdot that belong to algebraic states (Problem::set_algebraic_states) must not enter F.
template <class S>
using ResidualFn = std::function<void(S t, In<S> x, In<S> xdot, In<S> p, Out<S> residual)>;
/// Consistent completion of a residual mode that is not index 1 (a Hessenberg index-2 DAE):
/// from a state guess (t, x_guess, p) the consistent state x and its rate x-dot, the model's
/// own projection onto its constraints and its solve of the hidden constraints.
template <class S>
using CompletionFn = std::function<void(S t, In<S> x_guess, In<S> p, Out<S> x, Out<S> xdot)>;
/// Guard (event function) r(t, x, p); the event fires when r crosses zero.
template <class S>
using GuardFn = std::function<S(S t, In<S> x, In<S> p)>;
/// Guard of a DAE event that reads rates, r(t, x, x-dot, p) (a velocity reversal, a flow
/// changing sign). Like a residual, it must not read the rates of algebraic states.
template <class S>
using RateGuardFn = std::function<S(S t, In<S> x, In<S> xdot, In<S> p)>;
/// Jump (reset) map x+ = phi(t, x-, p).
template <class S>
using JumpFn = std::function<void(S t, In<S> x_minus, In<S> p, Out<S> x_plus)>;
/// Implicit transition of a DAE event, T(t, x+, x-dot+, x-, x-dot-, p) = 0: n_y equations (one
/// per differential state; into an index-2 mode n_y - n_c, the completion's constraints giving
/// the rest) between the values after and before the event (theory/hybrid-dae.md sections 1
/// and 4). Like a residual, T must not read the rates of algebraic states (they are passed
/// as zero).
template <class S>
using TransitionFn = std::function<void(S t, In<S> x_plus, In<S> xdot_plus, In<S> x_minus, In<S> xdot_minus, In<S> p,
                                        Out<S> residual)>;
/// Running cost integrand g(t, x, xdot, p); xdot is the current mode's right-hand side.
template <class S>
using RunningCostFn = std::function<S(S t, In<S> x, In<S> xdot, In<S> p)>;
/// Terminal cost w(t_f, x(t_f), p). Problem::add_terminal_cost also takes w(x, p).
template <class S>
using TerminalCostFn = std::function<S(S t, In<S> x, In<S> p)>;
/// Named outputs y = h(t, x, p) (Problem::set_outputs), n_y entries: quantities recorded at
/// the output times, such as a mechanism's point coordinates, reactions and energies.
template <class S>
using OutputFn = std::function<void(S t, In<S> x, In<S> p, Out<S> y)>;
/// Initial state x(t0) = x0(p).
template <class S>
using InitialStateFn = std::function<void(In<S> p, Out<S> x0)>;

/// A terminal cost given as w(x, p) or w(t, x, p), as w(t, x, p).
template <class W>
auto with_final_time(const W& w) {
  return [w](auto t, const auto& x, const auto& p) {
    if constexpr (std::is_invocable_v<const W&, decltype(t), decltype(x), decltype(p)>) {
      return w(t, x, p);
    } else {
      return w(x, p);
    }
  };
}

/// Stands in for the HyperDual instantiation of functions compiled without it.
struct NoSecondOrder {};

/// One model function compiled for double, Complex, Dual and Reverse from one generic lambda;
/// with `Second`, also for HyperDual (right-hand sides and running costs: the Rosenbrock
/// integrator differentiates their Jacobian-vector products, hyper_dual.hpp).
template <template <class> class Fn, bool Second = false>
struct Instantiated {
  Fn<double> real;
  Fn<Complex> complex;
  Fn<Dual> dual;
  Fn<Reverse> reverse;
  [[no_unique_address]] std::conditional_t<Second, Fn<HyperDual>, NoSecondOrder> second;

  template <class F>
  static Instantiated from(const F& f) {
    Instantiated in{Fn<double>(f), Fn<Complex>(f), Fn<Dual>(f), Fn<Reverse>(f), {}};
    if constexpr (Second) in.second = Fn<HyperDual>(f);
    return in;
  }

  template <class S>
  const Fn<S>& get() const {
    if constexpr (std::is_same_v<S, double>) {
      return real;
    } else if constexpr (std::is_same_v<S, Complex>) {
      return complex;
    } else if constexpr (std::is_same_v<S, Dual>) {
      return dual;
    } else if constexpr (std::is_same_v<S, HyperDual>) {
      static_assert(Second, "only right-hand sides and running costs are compiled for HyperDual");
      return second;
    } else {
      static_assert(std::is_same_v<S, Reverse>,
                    "Saltus scalars are double, Complex, Dual, Reverse and HyperDual");
      return reverse;
    }
  }

  explicit operator bool() const { return static_cast<bool>(real); }
};

/// Right-hand sides and running costs: compiled for HyperDual too.
using RhsFunctions = Instantiated<RhsFn, true>;
using RunningCostFunctions = Instantiated<RunningCostFn, true>;

}  // namespace saltus
