#pragma once
// Saltus errors. Every failure the library reports is a saltus::Error (or a subclass) whose
// message names what failed and where: the element, the time, the parameter, the value.
#include <stdexcept>
#include <string>

namespace saltus {

/// Base class of every error Saltus throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input from the user: unknown names, NaN parameters, negative tolerances, malformed files.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A model function misbehaved: NaN/Inf from a right-hand side, guard, jump or cost.
class ModelError : public Error {
 public:
  using Error::Error;
};

/// The integrator failed (step size underflow, repeated convergence failures, ...).
class SolverError : public Error {
 public:
  using Error::Error;
};

/// Events pile up without time advancing (Zeno behaviour) or a contact sticks.
class ZenoError : public Error {
 public:
  using Error::Error;
};

/// An event whose guard touches zero without crossing (r-dot = 0): its event time has no
/// derivative, so no sensitivity exists there.
class GrazingError : public Error {
 public:
  using Error::Error;
};

/// The run was stopped on request (saltus::request_interrupt, SIGINT/SIGTERM in the command).
class Interrupted : public Error {
 public:
  using Error::Error;
};

}  // namespace saltus
