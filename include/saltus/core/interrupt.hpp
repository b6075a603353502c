#pragma once
// A process-wide stop request. The `saltus` command sets it from its SIGINT/SIGTERM handler;
// every solver checks it at each integrator step (in its CVODES callbacks) and stops with
// saltus::Interrupted. Library users may call request_interrupt() from another thread or a
// signal handler: it only stores to a lock-free atomic.
#include <saltus/core/error.hpp>

namespace saltus {

/// Asks every running solver to stop at its next step. Async-signal-safe.
void request_interrupt() noexcept;
/// Withdraws a pending request (call before starting new work after an interrupt).
void clear_interrupt() noexcept;
/// True once request_interrupt() was called and not cleared.
bool interrupt_requested() noexcept;
/// Throws Interrupted ("interrupted at t = ...") if a stop was requested.
void throw_if_interrupted(double t);

}  // namespace saltus
