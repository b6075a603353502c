#pragma once
// Allocator settings for long runs.

namespace saltus {

/// Asks the C library's allocator (glibc) to keep up to 128 MB of freed memory at the top of the
/// heap rather than handing it back to the kernel after each free, and to serve blocks up to
/// 32 MB from the heap rather than from fresh memory mappings. The dense multibody
/// formulations allocate and free matrices of a few hundred kB on every right-hand side; with
/// glibc's default trim threshold each cycle returns those pages and faults them back in, which
/// made the 32-rod chain's forward run 4.6 times slower (25.1 s against 5.4 s, measured).
/// Process-wide, so Saltus never calls it on its own: the `saltus` command and the Python
/// module call it at start, and a C++ program may. Does nothing on other C libraries. Returns
/// whether the setting was applied.
bool retain_freed_heap_memory();

}  // namespace saltus
