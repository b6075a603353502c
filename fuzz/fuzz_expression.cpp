// libFuzzer target for the expression parser (docs/fuzzing.md): each input is the text of an
// expression over the parameters a, b and c. It is parsed and, if it parses, evaluated in
// double, Complex, Dual and Reverse. An ExpressionError is the expected outcome for bad input;
// a crash, a sanitizer report, another exception or a hang is a finding.
#include <saltus/core/expression.hpp>
#include <saltus/core/reverse_scalar.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace saltus;

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "fuzz_expression: FINDING: %s: %s\n", what, message);
  std::fflush(stderr);
  std::abort();
}

void evaluate_everywhere(const Expression& e) {
  Eigen::VectorXd p(3);
  p << 0.7, -1.3, 2.0;
  (void)e.evaluate<double>(p);
  (void)e.evaluate<Complex>(VectorX<Complex>(p.cast<Complex>()));
  VectorX<Dual> pd = p.cast<Dual>();
  pd[0] = make_dual(p[0], 1.0);
  (void)e.evaluate<Dual>(pd);
  ReverseTape::clear();
  VectorX<Reverse> pr(3);
  for (int k = 0; k < 3; ++k) pr[k] = Reverse::independent(p[k]);
  (void)e.evaluate<Reverse>(pr);
  ReverseTape::clear();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return -1;  // not an expression a person writes
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> names = {"a", "b", "c"};
  try {
    const Expression e = Expression::parse(text, names);
    evaluate_everywhere(e);
  } catch (const ExpressionError&) {
    return 0;
  } catch (const std::exception& e) {
    finding("an exception that is not an ExpressionError", e.what());
  } catch (...) {
    finding("an exception that is not a std::exception", "(unknown type)");
  }
  return 0;
}
