#include "vector_store.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SALTUS_VECTOR_STORE_ON_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SALTUS_VECTOR_STORE_ON_HEAP 1
#endif
#endif

namespace saltus::detail {

namespace {

constexpr std::size_t kAlignment = 64;

std::size_t block_bytes(std::size_t length) {
  return (length * sizeof(double) + kAlignment - 1) & ~(kAlignment - 1);
}

/// Bytes of the blocks that came from the heap (all of them under AddressSanitizer).
std::atomic<std::size_t> heap_in_use{0};

double* heap_block(std::size_t bytes) {
  void* p = std::aligned_alloc(kAlignment, bytes);
  if (p == nullptr) return nullptr;
  std::memset(p, 0, bytes);
  heap_in_use += bytes;
  return static_cast<double*>(p);
}

void release_heap_block(double* data, std::size_t bytes) {
  heap_in_use -= bytes;
  std::free(data);
}

#if !defined(SALTUS_VECTOR_STORE_ON_HEAP)
/// Address space per mapping. Reserved, not committed (MAP_NORESERVE): only the pages written
/// take memory.
constexpr std::size_t kMappingBytes = std::size_t{64} << 20;
/// Larger blocks (vectors of more than half a million entries) come from the heap: one such
/// block would hold most of a mapping.
constexpr std::size_t kLargestStoredBlock = kMappingBytes / 8;

/// One anonymous mapping: blocks are cut from its start in order (`used`), released ones kept
/// by size for reuse.
struct Mapping {
  char* base = nullptr;
  std::size_t used = 0;
  std::size_t live = 0;  // blocks handed out and not released
  std::unordered_map<std::size_t, std::vector<char*>> released;

  bool holds(const char* p) const { return p >= base && p < base + kMappingBytes; }
};

class Store {
 public:
  /// A zeroed block, or nullptr where the system has no memory left.
  double* acquire(std::size_t bytes) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    char* block = reused(bytes);
    if (block != nullptr) {
      std::memset(block, 0, bytes);  // released blocks hold their last user's values
    } else {
      block = fresh(bytes);  // never written since mapped (or since reset): zero
      if (block == nullptr) return nullptr;
    }
    in_use_ += bytes;
    return reinterpret_cast<double*>(block);
  }

  /// Called from N_VDestroy, from destructors: never throws.
  void release(double* data, std::size_t bytes) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    char* block = reinterpret_cast<char*>(data);
    const auto it = std::find_if(mappings_.begin(), mappings_.end(), [&](const auto& m) { return m->holds(block); });
    if (it == mappings_.end()) std::abort();  // not the store's: a release without its acquire
    Mapping& m = **it;
    in_use_ -= bytes;
    if (--m.live > 0) {
      try {
        m.released[bytes].push_back(block);
      } catch (const std::bad_alloc&) {
        // Not kept for reuse: its room comes back when the mapping's last block does.
      }
      return;
    }
    // Every block of the mapping is back: one empty mapping is kept for the next recording, its
    // pages given back to the system (zero-filled again on the next write); another is unmapped.
    const bool another_is_empty =
        std::any_of(mappings_.begin(), mappings_.end(), [&](const auto& o) { return o.get() != &m && o->live == 0; });
    if (another_is_empty) {
      munmap(m.base, kMappingBytes);
      mappings_.erase(it);
      return;
    }
    // fresh() hands out this memory as zero: where the pages cannot be dropped (locked memory),
    // zero them here.
    if (madvise(m.base, m.used, MADV_DONTNEED) != 0) std::memset(m.base, 0, m.used);
    m.used = 0;
    m.released.clear();
  }

  std::size_t in_use() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return in_use_;
  }

 private:
  char* reused(std::size_t bytes) noexcept {
    for (auto& m : mappings_) {
      const auto it = m->released.find(bytes);
      if (it == m->released.end() || it->second.empty()) continue;
      char* block = it->second.back();
      it->second.pop_back();
      ++m->live;
      return block;
    }
    return nullptr;
  }

  char* fresh(std::size_t bytes) noexcept {
    for (auto& m : mappings_) {
      if (m->used + bytes <= kMappingBytes) return cut(*m, bytes);
    }
    void* base = mmap(nullptr, kMappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED) return nullptr;
    // Transparent huge pages where the system offers them on request (a hint: without them the
    // mapping works the same): a recording's buffer is written point after point, and a fault
    // per 2 MiB instead of per 4 KiB made the 64-rod chain's adjoint a further 6 % faster.
    madvise(base, kMappingBytes, MADV_HUGEPAGE);
    try {
      mappings_.push_back(std::make_unique<Mapping>());
    } catch (const std::bad_alloc&) {
      munmap(base, kMappingBytes);
      return nullptr;
    }
    mappings_.back()->base = static_cast<char*>(base);
    return cut(*mappings_.back(), bytes);
  }

  static char* cut(Mapping& m, std::size_t bytes) noexcept {
    char* block = m.base + m.used;
    m.used += bytes;
    ++m.live;
    return block;
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Mapping>> mappings_;
  std::size_t in_use_ = 0;
};

/// The process's store, never destroyed: vectors may be destroyed during static destruction.
Store& store() {
  static Store* s = new Store;
  return *s;
}

/// SALTUS_VECTORS_ON_HEAP set: every block from the heap (for valgrind, which checks the heap's
/// blocks but not the store's). Read once: a block goes back where it came from.
bool every_block_on_heap() {
  static const bool on_heap = std::getenv("SALTUS_VECTORS_ON_HEAP") != nullptr;
  return on_heap;
}

/// Whether a block of `bytes` comes from the store.
bool stored(std::size_t bytes) { return bytes <= kLargestStoredBlock && !every_block_on_heap(); }
#endif

}  // namespace

std::size_t vector_data_bytes(std::size_t length) { return block_bytes(length); }

double* acquire_vector_data(std::size_t length) noexcept {
  if (length == 0) return nullptr;
  const std::size_t bytes = block_bytes(length);
#if !defined(SALTUS_VECTOR_STORE_ON_HEAP)
  if (stored(bytes)) return store().acquire(bytes);
#endif
  return heap_block(bytes);
}

void release_vector_data(double* data, std::size_t length) noexcept {
  if (data == nullptr) return;
  const std::size_t bytes = block_bytes(length);
#if !defined(SALTUS_VECTOR_STORE_ON_HEAP)
  if (stored(bytes)) return store().release(data, bytes);
#endif
  release_heap_block(data, bytes);
}

std::size_t vector_data_in_use() { return vector_data_in_mappings() + heap_in_use; }

std::size_t vector_data_in_mappings() {
#if !defined(SALTUS_VECTOR_STORE_ON_HEAP)
  return store().in_use();
#else
  return 0;
#endif
}

}  // namespace saltus::detail
