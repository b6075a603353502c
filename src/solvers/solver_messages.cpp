#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <iostream>

namespace saltus {

namespace {

struct MessageLog {
  std::ostream* out = nullptr;
  int shown = 3;
  long warnings = 0;
};

thread_local MessageLog* active = nullptr;

/// SUNDIALS messages span several lines; a report line is one.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  const auto first = text.find_first_not_of(' ');
  const auto last = text.find_last_not_of(' ');
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

/// 51733 -> "51,733".
std::string with_separators(long n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

}  // namespace

SolverMessageScope::SolverMessageScope() : SolverMessageScope(std::cerr) {}

SolverMessageScope::SolverMessageScope(std::ostream& out, int shown) {
  if (active != nullptr) return;
  active = new MessageLog{&out, shown, 0};
  outermost_ = true;
}

SolverMessageScope::~SolverMessageScope() {
  if (!outermost_) return;
  const long suppressed = active->warnings - active->shown;
  if (suppressed > 0) {
    fmt::print(*active->out, "saltus: {} more solver warning{} suppressed\n", with_separators(suppressed),
               suppressed == 1 ? "" : "s");
  }
  delete active;
  active = nullptr;
}

long SolverMessageScope::warnings() { return active != nullptr ? active->warnings : 0; }

namespace detail {

void report_solver_message(int error_code, const char* function, const char* message) {
  if (error_code < 0) return;
  if (message == nullptr) message = "";
  if (active == nullptr) {
    fmt::print(std::cerr, "saltus: solver warning: {}: {}\n", function, one_line(message));
    return;
  }
  if (++active->warnings <= active->shown) {
    fmt::print(*active->out, "saltus: solver warning: {}: {}\n", function, one_line(message));
  }
}

}  // namespace detail

}  // namespace saltus
