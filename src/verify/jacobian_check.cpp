#include <saltus/derivatives/tangent.hpp>
#include <saltus/verify/derivative_check.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace saltus {

namespace {

/// A model function of (t, x, p) with vector values, in complex arithmetic and as a tangent.
struct Probe {
  std::string name;
  std::function<VectorX<Complex>(Complex, const VectorX<Complex>&, const VectorX<Complex>&)>
      complex;
  std::function<Eigen::VectorXd(double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp)>
      tangent;
};

struct Comparison {
  std::vector<double> ad, cs;
  std::vector<std::string> labels;
};

void probe_all_directions(const Probe& probe, double t, const Eigen::VectorXd& x,
                          const Eigen::VectorXd& p, double h, Comparison& out) {
  const auto nx = x.size(), np = p.size();
  const VectorX<Complex> xc = x.cast<Complex>(), pc = p.cast<Complex>();
  for (Eigen::Index d = 0; d < 1 + nx + np; ++d) {
    Eigen::VectorXd dx = Eigen::VectorXd::Zero(nx), dp = Eigen::VectorXd::Zero(np);
    double dt = 0.0;
    Complex tc(t);
    VectorX<Complex> xcd = xc, pcd = pc;
    std::string wrt;
    if (d == 0) {
      dt = 1.0;
      tc += Complex(0.0, h);
      wrt = "t";
    } else if (d <= nx) {
      dx[d - 1] = 1.0;
      xcd[d - 1] += Complex(0.0, h);
      wrt = fmt::format("x[{}]", d - 1);
    } else {
      dp[d - 1 - nx] = 1.0;
      pcd[d - 1 - nx] += Complex(0.0, h);
      wrt = fmt::format("p[{}]", d - 1 - nx);
    }
    const Eigen::VectorXd ad = probe.tangent(dt, dx, dp);
    const Eigen::VectorXd cs = probe.complex(tc, xcd, pcd).imag() / h;
    for (Eigen::Index i = 0; i < ad.size(); ++i) {
      out.ad.push_back(ad[i]);
      out.cs.push_back(cs[i]);
      out.labels.push_back(fmt::format("{} [{}] w.r.t. {}", probe.name, i, wrt));
    }
  }
}

}  // namespace

DerivativeCheck check_model_derivatives(const Problem& pb, double t, const Eigen::VectorXd& x,
                                        const Eigen::VectorXd& p, double h) {
  if (pb.kind() != ProblemKind::Explicit) {
    throw InputError(fmt::format("check_model_derivatives: problem '{}' is a DAE (a residual mode, an algebraic "
                                 "state, an implicit transition or a guard that reads rates); it checks explicit "
                                 "problems only",
                                 pb.name()));
  }
  TangentWorkspace ws;
  std::vector<Probe> probes;
  const auto nx = pb.n_states();
  for (int m = 0; m < pb.n_modes(); ++m) {
    probes.push_back(
        {fmt::format("f of mode '{}'", pb.mode(m).name),
         [&pb, m, nx](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
           VectorX<Complex> f(nx);
           pb.mode(m).rhs.complex(tc, xc, pc, f);
           return f;
         },
         [&, m](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
           Eigen::VectorXd out(nx);
           const auto& mode = pb.mode(m);
           if (mode.jacobian && mode.jacobian->state && mode.jacobian->parameters && dt == 0.0) {
             Eigen::MatrixXd fx(nx, nx), fp(nx, pb.n_parameters());
             rhs_jacobians(pb, m, t, x, p, fx, fp, ws);
             return Eigen::VectorXd(fx * dx + fp * dp);
           }
           rhs_tangent(pb, m, t, x, p, dt, dx, dp, out, ws);
           return out;
         }});
  }
  for (int m = 0; m < pb.n_modes(); ++m) {
    if (!pb.mode(m).rhs_tangents) continue;
    // Block tangents have no time direction: both sides hold t.
    probes.push_back(
        {fmt::format("block tangents of f of mode '{}'", pb.mode(m).name),
         [&pb, m, nx](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
           VectorX<Complex> f(nx);
           pb.mode(m).rhs.complex(Complex(tc.real()), xc, pc, f);
           return f;
         },
         [&, m](double, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
           // The mode's block function itself: rhs_tangents takes a lone direction in a Dual.
           Eigen::MatrixXd out(nx, 1);
           pb.mode(m).rhs_tangents(t, x, p, dx, dp, out);
           return Eigen::VectorXd(out.col(0));
         }});
  }
  for (int k = 0; k < pb.n_events(); ++k) {
    probes.push_back(
        {fmt::format("guard of event '{}'", pb.event(k).name),
         [&pb, k](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
           VectorX<Complex> r(1);
           r[0] = pb.event(k).guard.complex(tc, xc, pc);
           return r;
         },
         [&, k](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
           Eigen::VectorXd r(1);
           r[0] = guard_tangent(pb, k, t, x, p, dt, dx, dp, ws);
           return r;
         }});
    if (!pb.event(k).jump) continue;
    probes.push_back(
        {fmt::format("jump of event '{}'", pb.event(k).name),
         [&pb, k, nx](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
           VectorX<Complex> xp(nx);
           pb.event(k).jump.complex(tc, xc, pc, xp);
           return xp;
         },
         [&, k](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
           Eigen::VectorXd out(nx);
           jump_tangent(pb, k, t, x, p, dt, dx, dp, out, ws);
           return out;
         }});
  }
  for (int c = 0; c < pb.n_costs(); ++c) {
    for (int m = 0; m < pb.n_modes() && pb.cost(c).running; ++m) {
      probes.push_back(
          {fmt::format("running cost '{}' in mode '{}'", pb.cost(c).name, pb.mode(m).name),
           [&pb, c, m, nx](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
             VectorX<Complex> f(nx), g(1);
             pb.mode(m).rhs.complex(tc, xc, pc, f);
             g[0] = pb.cost(c).running.complex(tc, xc, f, pc);
             return g;
           },
           [&, c, m](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
             Eigen::VectorXd g(1);
             g[0] = running_cost_tangent(pb, c, m, t, x, p, dt, dx, dp, ws);
             return g;
           }});
    }
    if (!pb.cost(c).terminal) continue;
    probes.push_back(
        {fmt::format("terminal cost '{}'", pb.cost(c).name),
         [&pb, c](Complex tc, const VectorX<Complex>& xc, const VectorX<Complex>& pc) {
           VectorX<Complex> w(1);
           w[0] = pb.cost(c).terminal.complex(tc, xc, pc);
           return w;
         },
         [&, c](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
           Eigen::VectorXd w(1);
           w[0] = terminal_cost_tangent(pb, c, t, x, p, dt, dx, dp, ws);
           return w;
         }});
  }

  DerivativeCheck result;
  for (const Probe& probe : probes) {
    Comparison cmp;
    probe_all_directions(probe, t, x, p, h, cmp);
    double scale = 0.0;
    for (double v : cmp.cs) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < cmp.ad.size(); ++i) {
      const double denom = std::max({std::abs(cmp.cs[i]), 1e-8 * scale, 1e-300});
      const double err = std::abs(cmp.ad[i] - cmp.cs[i]) / denom;
      ++result.entries_checked;
      if (!(err <= result.max_relative_error)) {
        result.max_relative_error = std::isnan(err) ? INFINITY : err;
        result.worst = fmt::format("{}: AD {:.17g}, complex step {:.17g}", cmp.labels[i],
                                   cmp.ad[i], cmp.cs[i]);
      }
    }
  }
  return result;
}

}  // namespace saltus
