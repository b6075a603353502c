// CVODES's linear solvers (Options::linear_solver): matrix-free GMRES against the closed form of
// a large linear system, and which solver Automatic takes for the planar mechanisms.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

using namespace saltus;

namespace {

constexpr int kOscillators = 40;  // 80 states: above Options::krylov_min_states
constexpr double kHorizon = 2.0;

/// Oscillators x_i'' = -w_i^2 x_i, w_i = k (1 + 0.02 i), from x_i = a, v_i = 0; a falling
/// crossing of x_0 through a / 2 adds v_0 there (an event cost) and G = sum_i x_i(T).
Problem oscillators() {
  Problem pb("oscillators", "independent oscillators with a common frequency scale k");
  std::vector<std::string> names;
  for (int i = 0; i < kOscillators; ++i) {
    names.push_back("x" + std::to_string(i));
    names.push_back("v" + std::to_string(i));
  }
  pb.set_states(names);
  pb.add_parameter("k", 1.3);
  pb.add_parameter("a", 0.8);
  pb.set_initial_state([](const auto& p, auto x0) {
    for (int i = 0; i < kOscillators; ++i) {
      x0[2 * i] = p[1];
      x0[2 * i + 1] = 0.0 * p[1];
    }
  });
  pb.add_mode("free", [](auto, const auto& x, const auto& p, auto xdot) {
    for (int i = 0; i < kOscillators; ++i) {
      const auto w = p[0] * (1.0 + 0.02 * i);
      xdot[2 * i] = x[2 * i + 1];
      xdot[2 * i + 1] = -w * w * x[2 * i];
    }
  });
  const int half = pb.add_event("half", Direction::Falling,
                                [](auto, const auto& x, const auto& p) { return x[0] - 0.5 * p[1]; })
                       .index();
  pb.add_event_cost("v_half", half, [](auto, const auto& x, const auto&) { return x[1]; });
  pb.add_terminal_cost("G", [](const auto& x, const auto&) {
    auto sum = x[0];
    for (int i = 1; i < kOscillators; ++i) sum += x[2 * i];
    return sum;
  });
  pb.options().tf = kHorizon;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// (G, dG/dk, dG/da) and (v_half, its derivatives): x_i(T) = a cos(w_i T); x_0 = a/2 at
/// w_0 t = pi/3, where v_0 = -a w_0 sin(pi/3).
struct Closed {
  double G, G_k, G_a, v, v_k, v_a;
};
Closed closed_form(double k, double a) {
  Closed c{0, 0, 0, 0, 0, 0};
  for (int i = 0; i < kOscillators; ++i) {
    const double s = 1.0 + 0.02 * i, w = k * s;
    c.G += a * std::cos(w * kHorizon);
    c.G_k += -a * s * kHorizon * std::sin(w * kHorizon);
    c.G_a += std::cos(w * kHorizon);
  }
  c.v = -a * k * std::sin(M_PI / 3.0);
  c.v_k = -a * std::sin(M_PI / 3.0);
  c.v_a = -k * std::sin(M_PI / 3.0);
  return c;
}

/// The costs and gradients of `s` against the closed form `c`.
void expect_closed_form(const Problem& pb, const Solution& s, const Closed& c, const std::string& what) {
  const int g = pb.cost_index("G"), v = pb.cost_index("v_half");
  EXPECT_NEAR(s.costs[g], c.G, 1e-7) << what;
  EXPECT_NEAR(s.costs[v], c.v, 1e-8) << what;
  EXPECT_NEAR(s.cost_gradient(g, 0), c.G_k, 1e-6 * std::abs(c.G_k)) << what;
  EXPECT_NEAR(s.cost_gradient(g, 1), c.G_a, 1e-7) << what;
  EXPECT_NEAR(s.cost_gradient(v, 0), c.v_k, 1e-7) << what;
  EXPECT_NEAR(s.cost_gradient(v, 1), c.v_a, 1e-7) << what;
}

}  // namespace

// GMRES (no n x n matrix; f_x v by forward AD) gives the closed form through an event, forward
// and adjoint, as the dense LU does; Automatic takes it at 80 states only when asked (with
// forward sensitivities, from krylov_min_states_with_sensitivities: lowered to 64 here).
TEST(LinearSolvers, MatrixFreeGmresMatchesTheClosedForm) {
  const Problem pb = oscillators();
  const Closed c = closed_form(1.3, 0.8);
  for (const LinearSolver solver : {LinearSolver::Krylov, LinearSolver::Automatic, LinearSolver::Dense}) {
    Options o = pb.options();
    o.linear_solver = solver;
    o.krylov_min_states_with_sensitivities = o.krylov_min_states;
    const Solution fwd = forward_sensitivity(pb, pb.nominal_parameters(), o);
    const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
    const std::string what = solver == LinearSolver::Dense ? "dense" : "krylov";
    EXPECT_EQ(fwd.stats.linear_solver, solver == LinearSolver::Dense ? "dense" : "GMRES (matrix-free)") << what;
    if (solver != LinearSolver::Dense) {
      EXPECT_GT(fwd.stats.linear_iterations, 0) << what;
      EXPECT_EQ(fwd.stats.jacobian_evals, 0) << what;
    }
    for (const Solution* s : {&fwd, &adj}) expect_closed_form(pb, *s, c, what);
  }
  // At the default threshold a forward run of 80 states takes the dense LU (one factorization
  // for the state's and the sensitivities' systems), a simulation GMRES.
  Options o = pb.options();
  o.linear_solver = LinearSolver::Automatic;
  ASSERT_LT(pb.n_states(), o.krylov_min_states_with_sensitivities);
  EXPECT_EQ(forward_sensitivity(pb, pb.nominal_parameters(), o).stats.linear_solver, "dense");
  EXPECT_EQ(simulate(pb, pb.nominal_parameters(), o).stats.linear_solver, "GMRES (matrix-free)");
}

// Fixed-point iteration (no linear solver, no Jacobian, no Krylov products) gives the closed form
// through an event, forward with either corrector and adjoint (whose backward pass iterates so
// too); Automatic takes it at 80 states when the linear solver is Automatic too.
TEST(LinearSolvers, FixedPointIterationMatchesTheClosedForm) {
  const Problem pb = oscillators();
  const Closed c = closed_form(1.3, 0.8);
  for (const auto& [nonlinear, corrector] :
       {std::pair{NonlinearSolver::FixedPoint, SensitivityCorrector::Staggered},
        std::pair{NonlinearSolver::FixedPoint, SensitivityCorrector::Simultaneous},
        std::pair{NonlinearSolver::Automatic, SensitivityCorrector::Staggered}}) {
    Options o = pb.options();
    o.nonlinear_solver = nonlinear;
    o.linear_solver = LinearSolver::Automatic;
    o.corrector = corrector;
    const Solution fwd = forward_sensitivity(pb, pb.nominal_parameters(), o);
    const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
    const std::string what = std::string(nonlinear == NonlinearSolver::Automatic ? "automatic" : "fixed point") +
                             (corrector == SensitivityCorrector::Simultaneous ? ", simultaneous" : ", staggered");
    for (const Solution* s : {&fwd, &adj}) {
      EXPECT_EQ(s->stats.linear_solver, "none (fixed-point iteration)") << what;
      EXPECT_EQ(s->stats.jacobian_evals, 0) << what;
      EXPECT_GT(s->stats.nonlinear_iterations, 0) << what;
    }
    EXPECT_EQ(fwd.stats.linear_iterations, 0) << what;
    // The backward pass iterates as the forward one: no GMRES products.
    EXPECT_EQ(adj.adjoint.backward.linear_solver, "none (fixed-point iteration)") << what;
    EXPECT_EQ(adj.adjoint.backward.linear_iterations, 0) << what;
    EXPECT_GT(adj.adjoint.backward.nonlinear_iterations, 0) << what;
    for (const Solution* s : {&fwd, &adj}) expect_closed_form(pb, *s, c, what);
  }
  // Below krylov_min_states, or with a linear solver that is not Automatic, Automatic is Newton.
  Options o = pb.options();
  o.nonlinear_solver = NonlinearSolver::Automatic;
  o.linear_solver = LinearSolver::Dense;
  EXPECT_EQ(simulate(pb, pb.nominal_parameters(), o).stats.linear_solver, "dense");
}

// Fixed-point iteration is a CVODES corrector: IDAS and the Runge-Kutta integrators refuse it as
// bad input naming the problem.
TEST(LinearSolvers, FixedPointIsRefusedOutsideCvodes) {
  const Problem pb = oscillators();
  for (const Integrator integrator : {Integrator::Idas, Integrator::Dopri5}) {
    Options o = pb.options();
    o.nonlinear_solver = NonlinearSolver::FixedPoint;
    o.integrator = integrator;
    try {
      simulate(pb, pb.nominal_parameters(), o);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("the fixed-point nonlinear solver is for CVODES runs"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("oscillators"), std::string::npos) << e.what();
    }
  }
}

// The planar index-1 and Maggi mechanisms take Automatic (GMRES from 64 states), the penalty one
// the dense LU; a small mechanism runs dense either way.
TEST(LinearSolvers, MechanismsChooseBySizeAndFormulation) {
  const std::string source = std::string(SALTUS_SOURCE_DIR) + "/examples/chain8.yaml";
  const multibody::Model model = multibody::load_model(source);
  for (const auto& [type, expected] : {std::pair{multibody::FormulationType::Index1, LinearSolver::Automatic},
                                       std::pair{multibody::FormulationType::Maggi, LinearSolver::Automatic},
                                       std::pair{multibody::FormulationType::Penalty, LinearSolver::Dense}}) {
    multibody::FormulationSettings settings;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    EXPECT_EQ(pb.options().linear_solver, expected);
    EXPECT_EQ(pb.options().nonlinear_solver, expected == LinearSolver::Automatic ? NonlinearSolver::Automatic
                                                                                 : NonlinearSolver::Newton);
  }
  multibody::FormulationSettings settings;
  settings.type = multibody::FormulationType::Index1;
  const Problem pb = multibody::make_problem(model, settings);
  ASSERT_LT(pb.n_states(), pb.options().krylov_min_states);
  EXPECT_EQ(simulate(pb).stats.linear_solver, "dense");
  // The report's description names the formulation's matrix and its path (8 rods: 24 rows).
  EXPECT_NE(pb.description().find("KKT matrix 24 x 24 dense (LU)"), std::string::npos) << pb.description();
}

// Compliant contacts are stiff: a mechanism with one keeps Newton (GMRES from 64 states), since
// fixed-point iteration would cut every step to the contacts' time scale.
TEST(LinearSolvers, CompliantContactsKeepNewtonAndCostSizedAdjointTolerances) {
  const multibody::Model vehicle = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/vehicle.yaml");
  const Problem pb = multibody::make_problem(vehicle);
  ASSERT_GE(pb.n_states(), pb.options().krylov_min_states);
  EXPECT_EQ(pb.options().linear_solver, LinearSolver::Automatic);
  EXPECT_EQ(pb.options().nonlinear_solver, NonlinearSolver::Newton);
  // Their adjoint's lambda is held to each cost's size, at a tenth of rtol (multibody.md).
  EXPECT_TRUE(pb.options().adjoint_atol_from_costs);
  EXPECT_EQ(pb.options().adjoint_rtol_scale, 0.1);
  // The penalty form keeps its own: the dense LU, and lambda held to the costs at rtol.
  multibody::FormulationSettings penalty;
  penalty.type = multibody::FormulationType::Penalty;
  const Problem stiff = multibody::make_problem(vehicle, penalty);
  EXPECT_EQ(stiff.options().linear_solver, LinearSolver::Dense);
  EXPECT_TRUE(stiff.options().adjoint_atol_from_costs);
  EXPECT_EQ(stiff.options().adjoint_rtol_scale, 1.0);
  Options o = pb.options();
  o.tf = 0.05;  // a few steps suffice to see the solver
  EXPECT_EQ(simulate(pb, pb.nominal_parameters(), o).stats.linear_solver, "GMRES (matrix-free)");
  // Forward sensitivities take the dense LU below krylov_min_states_with_sensitivities: one
  // factorization serves every parameter's systems (the vehicle in maggi: 12.4 s against 29 s).
  ASSERT_LT(pb.n_states(), o.krylov_min_states_with_sensitivities);
  EXPECT_EQ(forward_sensitivity(pb, pb.nominal_parameters(), o).stats.linear_solver, "dense");
  o.krylov_min_states_with_sensitivities = pb.n_states();
  EXPECT_EQ(forward_sensitivity(pb, pb.nominal_parameters(), o).stats.linear_solver, "GMRES (matrix-free)");
}

namespace {

/// A chain of `rods` uniform rods pinned at the origin (as bench/multibody_bench's).
std::string chain_yaml(int rods) {
  std::string points, elements;
  for (int k = 1; k <= rods; ++k) {
    points += "  p" + std::to_string(k) + ": {position: [\"" + std::to_string(k) + "*L/" + std::to_string(rods) + "\", 0]}\n";
    const std::string from = k == 1 ? "O" : "p" + std::to_string(k - 1);
    elements += "  - {type: bar, from: " + from + ", to: p" + std::to_string(k) + ", length: L/" + std::to_string(rods) +
                ", mass: m/" + std::to_string(rods) + "}\n";
  }
  return "name: chain\nhorizon: 1\nformulation: index1\nparameters: {L: 2, m: 1}\ngravity: [0, -9.81]\n"
         "ground: {O: [0, 0]}\npoints:\n" +
         points + "elements:\n" + elements + "costs:\n  tip: {terminal: [{signal: y, of: p" + std::to_string(rods) + "}]}\n";
}

}  // namespace

// A right-hand side is a function of its arguments alone, bit for bit, whatever the factorization
// caches hold: CVODES's adjoint recomputes stretches of the forward solution from check points
// and overruns its step store when they take other steps (a crash in CVodeB, seen on the adjoint
// of this chain with KLU refactorizations). The chain's KKT matrix (72 rows) goes to KLU; the right-hand sides at x_a, at six other states (more than the
// caches hold), then at x_a again (double and dual) must repeat exactly, with reverse
// recordings (whose solves keep their factors) in between.
TEST(LinearSolvers, MechanismRightHandSidesArePureFunctions) {
  const multibody::Model model = multibody::parse_model(chain_yaml(24), "chain24");
  const Problem pb = multibody::make_problem(model);
  ASSERT_NE(pb.description().find("KKT matrix 72 x 72 sparse (KLU)"), std::string::npos) << pb.description();
  const Eigen::VectorXd p = pb.nominal_parameters();
  Eigen::VectorXd x_a(pb.n_states());
  pb.initial_state().real(p, x_a);
  const Mode& mode = pb.mode(pb.initial_mode());
  const auto real_rhs = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd xdot(x.size());
    mode.rhs.real(0.1, x, p, xdot);
    return xdot;
  };
  const auto dual_rhs = [&](const Eigen::VectorXd& x) {
    VectorX<Dual> xd(x.size()), pd(p.size()), xdot(x.size());
    for (Eigen::Index i = 0; i < x.size(); ++i) xd[i] = make_dual(x[i], std::cos(static_cast<double>(i)));
    for (Eigen::Index i = 0; i < p.size(); ++i) pd[i] = Dual(p[i]);
    mode.rhs.dual(Dual(0.1), xd, pd, xdot);
    Eigen::MatrixXd out(x.size(), 2);
    for (Eigen::Index i = 0; i < x.size(); ++i) out.row(i) << xdot[i].a, xdot[i].v[0];
    return out;
  };
  const auto record_reverse = [&](const Eigen::VectorXd& x) {
    ReverseTape::clear();
    VectorX<Reverse> xr(x.size()), pr(p.size()), xdot(x.size());
    for (Eigen::Index i = 0; i < x.size(); ++i) xr[i] = Reverse::independent(x[i]);
    for (Eigen::Index i = 0; i < p.size(); ++i) pr[i] = Reverse::independent(p[i]);
    mode.rhs.reverse(Reverse(0.1), xr, pr, xdot);
  };
  const Eigen::VectorXd first = real_rhs(x_a);
  const Eigen::MatrixXd first_dual = dual_rhs(x_a);
  for (int k = 1; k <= 6; ++k) {
    Eigen::VectorXd x_b = x_a;
    for (Eigen::Index i = 0; i < x_b.size(); ++i) x_b[i] += 1e-3 * k * std::sin(1.0 + static_cast<double>(i));
    record_reverse(x_b);
    real_rhs(x_b);
    dual_rhs(x_b);
  }
  record_reverse(x_a);
  EXPECT_EQ(real_rhs(x_a), first);
  EXPECT_EQ(dual_rhs(x_a), first_dual);
  ReverseTape::clear();
}

// A model of 64 coordinates takes the sparse path everywhere it exists: KLU for the index-1 KKT
// matrix (96 rows), the penalty matrix and Maggi's [Phi_q; B] (64 rows), KLU in Maggi's
// position Newton. The three formulations integrate the same motion (0.1 s of the 32-rod chain
// falling, no impact) and agree on the tip's height; index-1's forward gradient agrees with its
// adjoint (the tape's sparse solve operation).
TEST(LinearSolvers, SparsePathsAgreeAcrossFormulationsOnALargeChain) {
  std::string text = chain_yaml(32);
  text.replace(text.find("horizon: 1"), 10, "horizon: 0.1\ntolerances: {rtol: 1.0e-9, atol: 1.0e-11}");
  const multibody::Model model = multibody::parse_model(text, "chain32");
  std::map<std::string, double> tip;
  for (const auto& [type, path] :
       {std::pair{multibody::FormulationType::Index1, "KKT matrix 96 x 96 sparse (KLU)"},
        std::pair{multibody::FormulationType::Maggi, "matrix [Phi_q; B] 64 x 64 sparse (KLU)"},
        std::pair{multibody::FormulationType::Penalty, "penalty matrix 64 x 64 sparse (KLU)"}}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    EXPECT_NE(pb.description().find(path), std::string::npos) << pb.description();
    tip[multibody::to_string(type)] = simulate(pb).costs[0];
  }
  EXPECT_NEAR(tip["maggi"], tip["index1"], 1e-7);
  EXPECT_NEAR(tip["penalty"], tip["index1"], 1e-5);  // penalty holds the constraints to about alpha^-1
  const Problem pb = multibody::make_problem(model);
  const Solution fwd = forward_sensitivity(pb);
  EXPECT_EQ(fwd.stats.linear_solver, "none (fixed-point iteration)");  // 128 states: Automatic
  const auto adj = adjoint(pb, pb.nominal_parameters(), pb.options());
  for (Eigen::Index k = 0; k < fwd.cost_gradient.cols(); ++k) {
    EXPECT_NEAR(adj.cost_gradient(0, k), fwd.cost_gradient(0, k), 1e-6 * (1.0 + std::abs(fwd.cost_gradient(0, k))))
        << "parameter " << k;
  }
}

// IDAS with the sparse Newton matrix (Options::linear_solver Sparse) on the oscillators as
// x' - f = 0: block-diagonal, so a handful of tangents per matrix however many states; the
// costs and gradients (forward and adjoint, whose recording and recomputation use it) against
// the closed form. CVODES refuses Sparse by name.
TEST(LinearSolvers, SparseIdasNewtonMatrixMatchesTheClosedForm) {
  const Problem pb = oscillators();
  const Closed c = closed_form(1.3, 0.8);
  Options o = pb.options();
  o.integrator = Integrator::Idas;
  o.linear_solver = LinearSolver::Sparse;
  const Solution fwd = forward_sensitivity(pb, pb.nominal_parameters(), o);
  const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
  // 80 columns, each state's residual row reads x_i, v_i and their rates: 160 nonzeros, 2 colours.
  EXPECT_EQ(fwd.stats.linear_solver, "KLU on the sparse Newton matrix (80 x 80, 160 nonzeros, 2 tangents per evaluation)");
  const int g = pb.cost_index("G"), v = pb.cost_index("v_half");
  for (const Solution* s : {&fwd, &adj}) {
    EXPECT_NEAR(s->costs[g], c.G, 1e-7);
    EXPECT_NEAR(s->costs[v], c.v, 1e-8);
    EXPECT_NEAR(s->cost_gradient(g, 0), c.G_k, 1e-6 * std::abs(c.G_k));
    EXPECT_NEAR(s->cost_gradient(g, 1), c.G_a, 1e-7);
    EXPECT_NEAR(s->cost_gradient(v, 0), c.v_k, 1e-7);
    EXPECT_NEAR(s->cost_gradient(v, 1), c.v_a, 1e-7);
  }
  o.integrator = Integrator::Cvodes;
  try {
    simulate(pb, pb.nominal_parameters(), o);
    ADD_FAILURE() << "CVODES ran with the sparse IDAS solver";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("linear solver 'sparse' is for IDAS runs"), std::string::npos) << e.what();
  }
}

// A stiff coupling that switches on inside a segment (when the clock y = t passes 0.5): the
// pattern probed at t = 0 has no entries between a and b. A plain run grows it at an
// evaluation; the adjoint's recording, whose matrix must be a function of the point alone (its
// backward pass recomputes forward steps), takes an extension probed where the segment's
// pattern misses entries. Without one its Newton iteration lacks the coupling, converges at the
// rate 1 / (1 + cj / k) and forces steps of about 1 / k. After the switch a + b = 1 + r holds
// and a - b decays as exp(-2 k (t - 0.5)): a(1) = (1 + r) / 2 to e^-100.
TEST(LinearSolvers, SparseAdjointRecordingFindsEntriesThatAppearInsideASegment) {
  Problem pb("switched_coupling", "a, b coupled with rate k once the clock y passes 0.5");
  pb.set_states({"y", "a", "b"});
  pb.add_parameter("k", 1e5);
  pb.add_parameter("r", 0.3);
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = 0.0 * p[1];
    x0[1] = 1.0 + 0.0 * p[1];
    x0[2] = p[1];
  });
  pb.add_mode("run", [](auto, const auto& x, const auto& p, auto xdot) {
    const double on = real_part(x[0]) > 0.5 ? 1.0 : 0.0;
    xdot[0] = 1.0 + 0.0 * x[0];
    xdot[1] = -on * p[0] * (x[1] - x[2]);
    xdot[2] = -on * p[0] * (x[2] - x[1]);
  });
  pb.add_terminal_cost("a_end", [](const auto& x, const auto&) { return x[1]; });
  Options o = pb.options();
  o.integrator = Integrator::Idas;
  o.linear_solver = LinearSolver::Sparse;
  o.rtol = 1e-8;
  o.atol = 1e-10;
  const Solution sim = simulate(pb, pb.nominal_parameters(), o);
  const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
  EXPECT_NEAR(adj.costs[0], 0.65, 1e-7);
  EXPECT_NEAR(adj.cost_gradient(0, 1), 0.5, 1e-6);
  EXPECT_NEAR(adj.cost_gradient(0, 0), 0.0, 1e-9);
  // The recording steps as the plain run does (the same matrices), not at 1 / k = 1e-5 s.
  EXPECT_LT(adj.stats.steps, 2 * sim.stats.steps + 50) << sim.stats.steps;
}

// The DAE mechanism formulations take Automatic, which on IDAS is the sparse Newton matrix from
// Options::sparse_min_states components: the ladder's persistent contacts switch their
// multipliers' equations at events inside one mode, so its pattern grows when the top lands (a
// check at the segment's start finds entries missing and probes again). Sparse and dense agree
// on the events, the costs and the forward and adjoint gradients.
TEST(LinearSolvers, DaeMechanismsTakeTheSparseNewtonMatrix) {
  for (const char* file : {"ladder.yaml", "fivebar_floor.yaml"}) {
    const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/" + file);
    multibody::FormulationSettings settings = model.formulation;
    settings.type = multibody::FormulationType::GGL;
    const Problem pb = multibody::make_problem(model, settings);
    EXPECT_EQ(pb.options().linear_solver, LinearSolver::Automatic);
    ASSERT_GE(pb.n_states(), pb.options().sparse_min_states);
    Options dense = pb.options();
    dense.linear_solver = LinearSolver::Dense;
    const Solution reference = forward_sensitivity(pb, pb.nominal_parameters(), dense);
    const Solution fwd = forward_sensitivity(pb);
    const Solution adj = adjoint(pb, pb.nominal_parameters(), pb.options());
    EXPECT_EQ(reference.stats.linear_solver, "dense") << file;
    EXPECT_NE(fwd.stats.linear_solver.find("KLU on the sparse Newton matrix"), std::string::npos) << file;
    ASSERT_EQ(fwd.events.size(), reference.events.size()) << file;
    for (size_t i = 0; i < fwd.events.size(); ++i) {
      EXPECT_NEAR(fwd.events[i].time, reference.events[i].time, 1e-6) << file << " event " << i;
    }
    const Eigen::ArrayXXd scale = reference.cost_gradient.array().abs().max(1.0);
    for (const Solution* s : {&fwd, &adj}) {
      for (int c = 0; c < pb.n_costs(); ++c) {
        EXPECT_NEAR(s->costs[c], reference.costs[c], 1e-6 * std::max(1.0, std::abs(reference.costs[c]))) << file;
      }
      EXPECT_LT(((s->cost_gradient - reference.cost_gradient).array().abs() / scale).maxCoeff(), 1e-4) << file;
    }
  }
}

// Automatic on IDAS keeps the dense LU where colouring saves little: every state's rate reads
// every state (20 columns that all clash), so the sparse matrix would cost as many tangents as
// the dense one and KLU on top.
TEST(LinearSolvers, AutomaticKeepsTheDenseLuForADenseResidual) {
  constexpr int n = 20;
  Problem pb("coupled", "x_i' = -k (x_i + 0.01 sum_j x_j)");
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("x" + std::to_string(i));
  pb.set_states(names);
  pb.add_parameter("k", 0.7);
  pb.set_initial_state([](const auto& p, auto x0) {
    for (int i = 0; i < n; ++i) x0[i] = 1.0 + 0.1 * i + 0.0 * p[0];
  });
  pb.add_mode("decay", [](auto, const auto& x, const auto& p, auto xdot) {
    auto sum = x[0];
    for (int i = 1; i < n; ++i) sum += x[i];
    for (int i = 0; i < n; ++i) xdot[i] = -p[0] * (x[i] + 0.01 * sum);
  });
  pb.add_terminal_cost("x0_end", [](const auto& x, const auto&) { return x[0]; });
  Options o = pb.options();
  o.integrator = Integrator::Idas;
  o.linear_solver = LinearSolver::Automatic;
  ASSERT_GE(n, o.sparse_min_states);
  const Solution automatic = forward_sensitivity(pb, pb.nominal_parameters(), o);
  EXPECT_EQ(automatic.stats.linear_solver, "dense");
  o.linear_solver = LinearSolver::Sparse;  // asked for, it runs (20 tangents per matrix)
  const Solution sparse = forward_sensitivity(pb, pb.nominal_parameters(), o);
  EXPECT_EQ(sparse.stats.linear_solver, "KLU on the sparse Newton matrix (20 x 20, 400 nonzeros, 20 tangents per evaluation)");
  EXPECT_NEAR(sparse.cost_gradient(0, 0), automatic.cost_gradient(0, 0), 1e-6 * std::abs(automatic.cost_gradient(0, 0)));
}
