#pragma once
// The point a rate-reading guard reads where IDAS hands one (its root function, the excursion
// sentinel, the adjoint recording's roots at tf).
#include <saltus/core/error.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/dae_transfer.hpp>

#include <type_traits>

#include "run_support.hpp"

namespace saltus::detail {

/// The state and rates that the watched guards of a mode read at a point of an IDAS run: the
/// ones a restart at that point holds, so that a root is located on the guard values the run
/// reads after the event. IDAS hands the state and rates of its interpolating polynomial, which
/// differ from those by the integration error: a guard der(x) located on them and read after the
/// restart (an event whose jump left the state as it was) crossed zero again at once, firing 2
/// to 14 times for one crossing or stopping as Zeno.
///   Explicit mode: x as handed and x-dot = f(t, x, p).
///   Implicit mode: the consistent point through the differential states of x (consistent_point,
///   which the run also makes at an event): the rates and the algebraic states solved again, by
///   Newton's method at every evaluation of the root function (only where a guard reads rates).
template <class S>
class GuardPoint {
 public:
  /// True when x() and rates() hold the point to read at (t, x, x-dot) as IDAS hands it. False
  /// when no watched guard reads rates (the values as handed are read, uncopied), and where f
  /// or the residual fails there (not finite, a model error, Newton not converging: a trial
  /// state past a singularity, which is the integrator's to report, not a guard's): the values
  /// as handed are read then too.
  bool read(const Problem& problem, const WatchedEvents& watched, int mode, double t, In<S> x, In<S> xdot, In<S> p,
            TangentWorkspace& ws) {
    if (!reads_rates(problem, watched)) return false;
    const Mode& m = problem.mode(mode);
    try {
      if (!m.implicit()) {
        x_ = x;
        rates_.resize(x.size());
        if constexpr (std::is_same_v<S, double>) {
          m.rhs.real(t, x, p, rates_);
        } else {
          m.rhs.complex(S(t), x, p, rates_);
        }
        return finite(rates_);
      }
      if constexpr (std::is_same_v<S, double>) {
        const ConsistentPoint point = consistent_point(problem, mode, t, x, xdot, p, "where a guard reads rates", ws);
        x_ = point.x;
        rates_ = point.xdot;
      } else {
        const ComplexConsistentPoint point = consistent_point_complex(
            problem, mode, S(t), VectorX<S>(x), VectorX<S>(xdot), VectorX<S>(p), "where a guard reads rates", ws);
        x_ = point.x;
        rates_ = point.xdot;
      }
      return true;
    } catch (const ModelError&) {
      return false;  // f, the residual or their derivatives not finite there
    } catch (const InputError&) {
      return false;  // Newton did not converge there, or the mode is singular there
    }
  }

  const VectorX<S>& x() const { return x_; }
  const VectorX<S>& rates() const { return rates_; }

 private:
  static bool reads_rates(const Problem& problem, const WatchedEvents& watched) {
    for (const int k : watched.events) {
      if (problem.event(k).reads_rates()) return true;
    }
    return false;
  }
  static bool finite(const VectorX<S>& v) {
    if constexpr (std::is_same_v<S, double>) {
      return v.allFinite();
    } else {
      return v.real().allFinite() && v.imag().allFinite();
    }
  }

  VectorX<S> x_, rates_;
};

}  // namespace saltus::detail
