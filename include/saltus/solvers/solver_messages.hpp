#pragma once
// Warnings of the integrators (SUNDIALS' "t + h = t on the next step", ...) are routed here
// instead of flooding stderr: while a SolverMessageScope is alive, the first `shown` warnings
// are printed as one line each and the rest are counted; when the outermost scope ends it prints
// one summary line ("saltus: 51,000 more solver warnings suppressed"). Integrator errors are not
// printed at all: they become saltus exceptions with their own message. Every solver opens a
// scope, so the cap holds per run; the `saltus` command opens one for the whole command, so it
// holds across the methods of `--method all` too. Scopes nest per thread.
#include <iosfwd>
#include <string>

namespace saltus {

class SolverMessageScope {
 public:
  /// Opens a scope writing to `out` (only the outermost scope's stream and cap are used).
  explicit SolverMessageScope(std::ostream& out, int shown = 3);
  /// A scope on std::cerr.
  SolverMessageScope();
  ~SolverMessageScope();
  SolverMessageScope(const SolverMessageScope&) = delete;
  SolverMessageScope& operator=(const SolverMessageScope&) = delete;

  /// Warnings received by the outermost scope so far (shown and suppressed).
  static long warnings();

 private:
  bool outermost_ = false;
};

namespace detail {
/// Hands one integrator message to the active scope (or prints it if there is none).
/// error_code < 0 is an error (dropped before any string is built: the errors become
/// exceptions with their own message, and a recording's one-step calls report CV_TOO_MUCH_WORK
/// at every step), > 0 a warning. Null texts read as empty.
void report_solver_message(int error_code, const char* function, const char* message);
}  // namespace detail

}  // namespace saltus
