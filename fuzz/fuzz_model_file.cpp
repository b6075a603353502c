// libFuzzer target for the model-file reader (docs/fuzzing.md).
//
// Each input is a model file, read both ways: as an equation model (parse_equation_problem) and
// as a mechanism (parse_model, then if it parses validate and make_problem in each formulation:
// penalty, index1, maggi); each problem made gets one evaluation of every model function at its
// initial state: the initial state, the right-hand side or the residual (in double, Dual,
// Complex and Reverse; a residual with zero rates), guards, jumps, costs and monitors. Nothing is integrated, so every input
// stays fast.
//
// A saltus::Error is the expected outcome for bad input. Anything else is a finding: a crash,
// an ASan/UBSan report, an exception that is not a saltus::Error, a hang (-timeout) or a memory
// blow-up (-rss_limit_mb).
#include <saltus/core/error.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

namespace {

using namespace saltus;

/// Larger inputs are not model files a person writes; the reader's own bounds apply below this.
constexpr std::size_t kMaxInput = 64 * 1024;
/// Models with more coordinates skip the Dual, Complex and Reverse evaluations (see below).
constexpr int kMaxCoordinatesForAd = 32;
/// Events and costs evaluated per problem.
constexpr int kMaxEvaluated = 16;

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "fuzz_model_file: FINDING: %s: %s\n", what, message);
  std::fflush(stderr);
  std::abort();
}

/// SALTUS_FUZZ_VERBOSE=1 prints each stage with its outcome and duration (why a seed stops early,
/// which stage is slow).
const bool kVerbose = [] {
  const char* v = std::getenv("SALTUS_FUZZ_VERBOSE");
  return v != nullptr && *v != '\0' && *v != '0';
}();

/// Runs `f`; a saltus::Error is an accepted outcome (bad input), anything else propagates.
/// `stage` names it in the verbose output, with its duration.
template <class F>
bool accepted(const F& f, const char* stage = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  auto report = [&](const char* outcome, const char* what) {
    if (!kVerbose || stage == nullptr) return;
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::fprintf(stderr, "fuzz_model_file: %s: %s after %.3f s%s%s\n", stage, outcome, took.count(),
                 what[0] != '\0' ? ": " : "", what);
  };
  try {
    f();
    report("ok", "");
    return true;
  } catch (const Error& e) {
    report("rejected", e.what());
    return false;
  }
}

template <class S>
VectorX<S> seeded(const Eigen::VectorXd& v) {
  VectorX<S> out(v.size());
  for (Eigen::Index i = 0; i < v.size(); ++i) out[i] = S(v[i]);
  return out;
}

/// One evaluation of mode 0 in the scalar type S: its right-hand side, or its residual at zero
/// rates.
template <class S>
void rhs_in(const Problem& pb, double t0, const Eigen::VectorXd& x0, const Eigen::VectorXd& p) {
  const VectorX<S> x = seeded<S>(x0), pp = seeded<S>(p);
  VectorX<S> out(x.size());
  if (pb.mode(0).implicit()) {
    const VectorX<S> xdot = VectorX<S>::Zero(x.size());
    accepted([&] { pb.mode(0).residual.template get<S>()(S(t0), x, xdot, pp, out); });
    return;
  }
  accepted([&] { pb.mode(0).rhs.template get<S>()(S(t0), x, pp, out); });
}

template <>
void rhs_in<Reverse>(const Problem& pb, double t0, const Eigen::VectorXd& x0, const Eigen::VectorXd& p) {
  ReverseTape::clear();
  VectorX<Reverse> x(x0.size()), pp(p.size());
  for (Eigen::Index i = 0; i < x0.size(); ++i) x[i] = Reverse::independent(x0[i]);
  for (Eigen::Index i = 0; i < p.size(); ++i) pp[i] = Reverse::independent(p[i]);
  VectorX<Reverse> out(x.size());
  if (pb.mode(0).implicit()) {
    VectorX<Reverse> xdot(x.size());
    for (Eigen::Index i = 0; i < x0.size(); ++i) xdot[i] = Reverse::independent(0.0);
    accepted([&] { pb.mode(0).residual.reverse(Reverse(t0), x, xdot, pp, out); });
  } else {
    accepted([&] { pb.mode(0).rhs.reverse(Reverse(t0), x, pp, out); });
  }
  ReverseTape::clear();
}

/// Evaluates every model function of `pb` once at its initial state; with `ad` also the
/// right-hand side in Dual, Complex and Reverse.
void exercise(const Problem& pb, bool ad) {
  pb.validate();
  const Eigen::VectorXd p = pb.nominal_parameters();
  pb.check_domains(p);
  const double t0 = pb.options().t0;
  Eigen::VectorXd x0(pb.n_states());
  pb.initial_state().real(p, x0);
  Eigen::VectorXd xdot = Eigen::VectorXd::Zero(pb.n_states());
  if (pb.mode(0).implicit()) {
    Eigen::VectorXd residual(pb.n_states());
    if (!accepted([&] { pb.mode(0).residual.real(t0, x0, xdot, p, residual); })) return;
  } else if (!accepted([&] { pb.mode(0).rhs.real(t0, x0, p, xdot); })) {
    return;
  }
  if (ad) {
    rhs_in<Dual>(pb, t0, x0, p);
    rhs_in<Complex>(pb, t0, x0, p);
    rhs_in<Reverse>(pb, t0, x0, p);
  }
  // Each jump and each cost with reactions is a dense solve: the first few stand for the rest.
  for (int i = 0; i < std::min(pb.n_events(), kMaxEvaluated); ++i) {
    const Event& e = pb.event(i);
    accepted([&] { (void)e.guard.real(t0, x0, p); });
    if (e.jump) {
      Eigen::VectorXd x_plus(x0.size());
      accepted([&] { e.jump.real(t0, x0, p, x_plus); });
    }
  }
  for (int i = 0; i < std::min(pb.n_costs(), kMaxEvaluated); ++i) {
    const Cost& c = pb.cost(i);
    if (c.running) accepted([&] { (void)c.running.real(t0, x0, xdot, p); });
    if (c.terminal) accepted([&] { (void)c.terminal.real(t0, x0, p); });
  }
  for (const Monitor& m : pb.monitors()) accepted([&] { (void)m.value(t0, x0, p); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) return -1;  // not kept in the corpus
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::optional<Problem> equations;
    if (accepted([&] { equations.emplace(equations::parse_equation_problem(text, "fuzz.yaml")); },
                 "parse_equation_problem")) {
      accepted([&] { exercise(*equations, true); }, "evaluations at the initial state");
    }
    multibody::Model model;
    if (!accepted([&] { model = multibody::parse_model(text, "fuzz.yaml"); }, "parse_model")) return 0;
    if (!accepted([&] { model.validate(); }, "validate")) return 0;
    // The dense solves of a formulation cost (n + m)^3 operations, and in Reverse as many tape
    // nodes: beyond a few dozen coordinates the AD evaluations would dominate every input.
    const bool cheap_ad = model.n_coordinates() <= kMaxCoordinatesForAd;
    const char* names[] = {"make_problem (penalty)", "make_problem (index1)", "make_problem (maggi)"};
    for (const multibody::FormulationType type :
         {multibody::FormulationType::Penalty, multibody::FormulationType::Index1, multibody::FormulationType::Maggi}) {
      multibody::FormulationSettings settings = model.formulation;
      settings.type = type;
      std::optional<Problem> pb;
      if (!accepted([&] { pb.emplace(multibody::make_problem(model, settings)); }, names[static_cast<int>(type)])) continue;
      accepted([&] { exercise(*pb, cheap_ad); }, "evaluations at the initial state");
    }
  } catch (const std::exception& e) {
    finding("an exception that is not a saltus::Error", e.what());
  } catch (...) {
    finding("an exception that is not a std::exception", "(unknown type)");
  }
  return 0;
}
