#include <saltus/core/interrupt.hpp>

#include <fmt/format.h>

#include <atomic>

namespace saltus {

namespace {
// Lock-free, so that a signal handler may store to it (std::atomic<bool> is on every target).
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);
}  // namespace

void request_interrupt() noexcept { stop_requested.store(true, std::memory_order_relaxed); }
void clear_interrupt() noexcept { stop_requested.store(false, std::memory_order_relaxed); }
bool interrupt_requested() noexcept { return stop_requested.load(std::memory_order_relaxed); }

void throw_if_interrupted(double t) {
  if (interrupt_requested()) throw Interrupted(fmt::format("interrupted at t = {:.17g}", t));
}

}  // namespace saltus
