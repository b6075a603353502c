#include <saltus/core/heap_settings.hpp>

#include <cstdlib>  // defines __GLIBC__ on the GNU C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace saltus {

bool retain_freed_heap_memory() {
#if defined(__GLIBC__)
  // Setting the trim threshold turns off glibc's adaptive mmap threshold, so blocks from 128 kB
  // up would be mapped and unmapped on every call instead: raise that threshold too (32 MB is
  // glibc's largest).
  constexpr int kRetainedBytes = 128 * 1024 * 1024;
  constexpr int kMappedFromBytes = 32 * 1024 * 1024;
  const bool trim = mallopt(M_TRIM_THRESHOLD, kRetainedBytes) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kMappedFromBytes) == 1;
  return trim && mmap;
#else
  return false;
#endif
}

}  // namespace saltus
