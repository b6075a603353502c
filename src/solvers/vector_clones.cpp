#include "vector_clones.hpp"

#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "vector_store.hpp"

namespace saltus::detail {

namespace {

/// A clone's header. `vector` comes first: the N_Vector SUNDIALS holds points at it.
struct ClonedVector {
  _generic_N_Vector vector;
  _N_VectorContent_Serial content;
  /// The store's block (nullptr for a clone without data): N_VSetArrayPointer may point
  /// content.data elsewhere.
  double* block;
};

ClonedVector* cloned(N_Vector v) { return reinterpret_cast<ClonedVector*>(v); }

void destroy_clone(N_Vector v) {
  if (v == nullptr) return;
  ClonedVector* c = cloned(v);
  release_vector_data(c->block, static_cast<std::size_t>(c->content.length));
  delete c;
}

/// The operation table of w's clones: w's own if w is a clone, else w's with the clone
/// operations, one per distinct table, kept for the process's lifetime (a few per process).
N_Vector_Ops shared_table(N_Vector w) {
  if (w->ops->nvdestroy == destroy_clone) return w->ops;
  _generic_N_Vector_Ops wanted = *w->ops;
  wanted.nvclone = clone_from_store;
  wanted.nvcloneempty = clone_without_data;
  wanted.nvdestroy = destroy_clone;
  static std::mutex mutex;
  static auto* tables = new std::vector<std::unique_ptr<_generic_N_Vector_Ops>>;  // never destroyed
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& t : *tables) {
    // The table holds function pointers only: no padding, so bytes compare as members.
    if (std::memcmp(t.get(), &wanted, sizeof wanted) == 0) return t.get();
  }
  tables->push_back(std::make_unique<_generic_N_Vector_Ops>(wanted));
  return tables->back().get();
}

}  // namespace

N_Vector clone_without_data(N_Vector w) {
  if (w == nullptr) return nullptr;
  auto* c = new (std::nothrow) ClonedVector{};
  if (c == nullptr) return nullptr;
  try {
    c->vector.ops = shared_table(w);
  } catch (const std::exception&) {  // no memory for a new table, or the mutex failed
    delete c;
    return nullptr;
  }
  c->vector.content = &c->content;
  c->vector.sunctx = w->sunctx;
  c->content.length = NV_LENGTH_S(w);
  c->content.own_data = SUNFALSE;  // the store's block, released by destroy_clone
  c->content.data = nullptr;
  c->block = nullptr;
  return &c->vector;
}

N_Vector clone_from_store(N_Vector w) {
  N_Vector v = clone_without_data(w);
  if (v == nullptr) return nullptr;
  ClonedVector* c = cloned(v);
  if (c->content.length > 0) {
    c->block = acquire_vector_data(static_cast<std::size_t>(c->content.length));
    if (c->block == nullptr) {
      delete c;
      return nullptr;
    }
  }
  c->content.data = c->block;
  return v;
}

CloneBytes clone_bytes(long n) {
  return {static_cast<long>(sizeof(ClonedVector)),
          n > 0 ? static_cast<long>(vector_data_bytes(static_cast<std::size_t>(n))) : 0L};
}

}  // namespace saltus::detail
