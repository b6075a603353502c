// hysteretic (docs/benchmarks.md; theory/hybrid-dae.md section 7, seed 002 Sec. 5.2): an
// oscillator whose restoring force follows the exponential-model (EM) hysteresis law,
//   u' = v,  m v' = -A z + f(t),  z = sigma(u, u*, z*, p; xi),  f(t) = 0.5 t sin(2 pi t),
// with memory (u*, z*) of the last velocity reversal and xi = sign(v). The algebraic z is
// explicit, so this is a hybrid ODE with the memory as augmented states (theory 5.3): u* and z*
// have zero rates and are reset to (u, z) at each reversal. The two modes are the two signs of
// xi; a reversal (guard v) switches between them. sigma carries the corrected 2 sinh(beta u*)
// term of the starting point u_i* (errata SR-5). m = A = 1.
#include <saltus/examples/builtin.hpp>

#include <cmath>

namespace saltus::examples {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDelta = 1e-20;  // the EM law's closure tolerance delta

template <class S>
S sinh_of(const S& x) {
  using std::exp;
  return S(0.5) * (exp(x) - exp(-x));  // exp only: the same code for every scalar type
}

/// sigma(u, u*, z*, p; xi), p = (k_a, k_b, alpha, beta).
template <class S, class P>
S em_stress(const S& u, const S& u_star, const S& z_star, const P& p, double xi) {
  using std::exp, std::log;
  const S ka = p[0], kb = p[1], alpha = p[2], beta = p[3];
  const S dk = ka - kb;
  const S u0 = -log(S(kDelta) / dk) / (2.0 * alpha);
  const S e_2u0 = S(kDelta) / dk;  // exp(-2 alpha u0)
  const S f_bar = dk / (2.0 * alpha) * (1.0 - e_2u0);
  const S inner = -2.0 * beta * u_star + 2.0 * sinh_of(S(beta * u_star)) + kb * u_star + dk / alpha * xi * e_2u0 +
                  xi * f_bar - z_star;
  const S u_i = u_star + 2.0 * xi * u0 + xi / alpha * log(S(xi * alpha / dk * inner));
  return -2.0 * beta * u + 2.0 * sinh_of(S(beta * u)) + kb * u -
         xi * dk / alpha * (exp(S(-alpha * (u * xi - u_i * xi + 2.0 * u0))) - e_2u0) + xi * f_bar;
}

/// The right-hand side in the mode of sign xi: states (u, v, u*, z*).
auto motion(double xi) {
  return [xi](auto t, const auto& x, const auto& p, auto xdot) {
    using S = std::decay_t<decltype(t)>;
    using std::sin;
    const S z = em_stress(S(x[0]), S(x[2]), S(x[3]), p, xi);
    xdot[0] = x[1];
    xdot[1] = -z + 0.5 * t * sin(2.0 * kPi * t);
    xdot[2] = S(0.0);
    xdot[3] = S(0.0);
  };
}

/// At a reversal out of the mode of sign xi: the memory takes (u, z) there.
auto reversal(double xi) {
  return [xi](auto, const auto& x, const auto& p, auto x_plus) {
    using S = std::decay_t<decltype(x[0])>;
    x_plus[0] = x[0];
    x_plus[1] = x[1];
    x_plus[2] = x[0];
    x_plus[3] = em_stress(S(x[0]), S(x[2]), S(x[3]), p, xi);
  };
}

}  // namespace

Problem hysteretic() {
  Problem pb("hysteretic", "oscillator with exponential-model hysteresis and memory (seed 002 Sec. 5.2)");
  pb.set_states({"u", "v", "u_star", "z_star"});
  pb.add_parameter("ka", 32.0 * kPi * kPi, "EM law: initial stiffness k_a [N/m]");
  pb.add_parameter("kb", kPi * kPi, "EM law: final stiffness k_b [N/m]");
  pb.add_parameter("alpha", 205.0, "EM law: transition rate alpha [1/m]");
  pb.add_parameter("beta", 0.0, "EM law: cubic hardening beta [1/m]");
  pb.add_parameter_check([](In<double> p) {
    if (!(p[0] > p[1])) throw InputError("hysteretic needs ka > kb (the EM law's stiffness drop)");
    if (!(p[2] > 0.0)) throw InputError("hysteretic needs alpha > 0");
  });
  pb.set_initial_state([](const auto& p, auto x0) {
    for (int i = 0; i < 4; ++i) x0[i] = 0.0 * p[0];
  });
  const int loading = pb.add_mode("loading", motion(+1.0));      // v > 0, xi = +1
  const int unloading = pb.add_mode("unloading", motion(-1.0));  // v < 0, xi = -1
  const auto velocity = [](auto, const auto& x, const auto&) { return x[1]; };
  // It starts at rest at a reversal (v = v' = 0, then v ~ pi t^3 / 3 > 0): the root at t = 0 is
  // ignored (theory section 7).
  pb.add_event("to_unloading", Direction::Falling, velocity)
      .only_in({loading})
      .switch_to(unloading)
      .jump(reversal(+1.0))
      .starts_on_guard();
  pb.add_event("to_loading", Direction::Rising, velocity).only_in({unloading}).switch_to(loading).jump(reversal(-1.0));
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0] * x[0]; });
  pb.options().tf = 10.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
