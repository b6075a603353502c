// `build/bench/saltus_equations_bench [repetitions] [examples-dir]`: forward sensitivity of an
// equation model file (examples/equations/) against the same problem in C++ (the built-in
// example), interleaved in one run; the ratio file / C++ is the cost of evaluating expression
// trees instead of compiled lambdas (target <= 3).
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "timing.hpp"

int main(int argc, char** argv) {
  using namespace saltus;
  const int repetitions = argc > 1 ? std::max(3, std::atoi(argv[1])) : 21;
  const std::string dir = argc > 2 ? argv[2] : SALTUS_EXAMPLES_DIR "/equations";
  fmt::print("equation model files vs the built-in C++ problems ({} repetitions, medians)\n", repetitions);
  fmt::print("  {:<12} {:<10} {:>10} {:>10} {:>8}\n", "example", "solver", "file [ms]", "C++ [ms]", "ratio");
  for (const std::string name : {"ball1d", "galan", "hiskens"}) {
    const Problem file = equations::load_equation_problem(dir + "/" + name + ".yaml");
    const Problem builtin = examples::make_example(name);
    const auto row = [&](const char* solver, Solution (*run)(const Problem&)) {
      double t_file = 0.0, t_builtin = 0.0;
      std::vector<double> tf, tb;
      for (int i = 0; i < repetitions; ++i) {  // interleaved: the machine is shared and noisy
        tf.push_back(bench::seconds([&] { (void)run(file); }));
        tb.push_back(bench::seconds([&] { (void)run(builtin); }));
      }
      std::sort(tf.begin(), tf.end());
      std::sort(tb.begin(), tb.end());
      t_file = tf[tf.size() / 2];
      t_builtin = tb[tb.size() / 2];
      fmt::print("  {:<12} {:<10} {:>10.3f} {:>10.3f} {:>8.2f}\n", name, solver, 1e3 * t_file, 1e3 * t_builtin,
                 t_file / t_builtin);
    };
    row("simulate", static_cast<Solution (*)(const Problem&)>(simulate));
    row("forward", static_cast<Solution (*)(const Problem&)>(forward_sensitivity));
    row("adjoint", static_cast<Solution (*)(const Problem&)>(adjoint));
  }
  return 0;
}
