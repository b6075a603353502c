#include "block_dense_solver.hpp"

#include <saltus/core/error.hpp>

#include "custom_direct_solver.hpp"
#include "dense_kernels.hpp"
#include "sundials_footprint.hpp"

#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <algorithm>
#include <memory>
#include <new>
#include <vector>

namespace saltus::detail {

namespace {

/// Column-major storage of a square matrix with SUNDIALS's column pointers and pivots.
struct Factors {
  std::vector<sunrealtype> values;
  std::vector<sunrealtype*> columns;
  std::vector<sunindextype> pivots;

  void resize(sunindextype order) {
    const auto n = static_cast<size_t>(order);
    values.assign(n * n, 0.0);
    columns.resize(n);
    for (size_t j = 0; j < n; ++j) columns[j] = values.data() + j * n;
    pivots.assign(n, 0);
  }
};

struct Content {
  sunindextype n = 0, block = 0, blocks = 0;
  sunindextype tail_start = 0;  // blocks * block: the first row of the diagonal tail
  bool structured = false;      // the last setup's matrix had the structure (else `whole`)
  bool factored = false;        // the last setup succeeded: solve has factors to use
  Factors first;                // LU of the first diagonal block
  Factors whole;                // LU of the whole matrix, sized at the first matrix without it
  long last_flag = SUNLS_SUCCESS;
};

Content& content(SUNLinearSolver s) { return *static_cast<Content*>(s->content); }

/// A(i, j) of a dense SUNMatrix of order n (column-major).
sunrealtype entry(const sunrealtype* a, sunindextype n, sunindextype i, sunindextype j) { return a[j * n + i]; }

/// Equal diagonal blocks, zeros between them and above the tail, a diagonal tail block.
bool has_structure(const Content& c, const sunrealtype* a) {
  const sunindextype n = c.n, b = c.block, m = c.tail_start;
  for (sunindextype j = 0; j < m; ++j) {
    const sunindextype first = (j / b) * b;  // the first row and column of j's block
    for (sunindextype i = 0; i < m; ++i) {
      const sunrealtype v = entry(a, n, i, j);
      if (i < first || i >= first + b) {
        if (v != 0.0) return false;
      } else if (first > 0 && v != entry(a, n, i - first, j - first)) {
        return false;
      }
    }
  }
  for (sunindextype j = m; j < n; ++j) {
    for (sunindextype i = 0; i < n; ++i) {
      if (i != j && entry(a, n, i, j) != 0.0) return false;
    }
  }
  return true;
}

int setup(SUNLinearSolver s, SUNMatrix A) {
  Content& c = content(s);
  if (SUNMatGetID(A) != SUNMATRIX_DENSE || SM_ROWS_D(A) != c.n || SM_COLUMNS_D(A) != c.n) {
    return static_cast<int>(c.last_flag = SUNLS_ILL_INPUT);
  }
  c.factored = false;
  const sunrealtype* a = SM_DATA_D(A);
  c.structured = has_structure(c, a);
  if (c.structured) {
    for (sunindextype j = 0; j < c.block; ++j) {
      std::copy_n(a + j * c.n, c.block, c.first.columns[static_cast<size_t>(j)]);
    }
    if (dense_lu_factor(c.first.columns.data(), c.block, c.block, c.first.pivots.data()) != 0) {
      return static_cast<int>(c.last_flag = SUNLS_LUFACT_FAIL);
    }
    for (sunindextype i = c.tail_start; i < c.n; ++i) {
      if (entry(a, c.n, i, i) == 0.0) return static_cast<int>(c.last_flag = SUNLS_LUFACT_FAIL);
    }
    c.factored = true;
    return static_cast<int>(c.last_flag = SUNLS_SUCCESS);
  }
  if (c.whole.columns.empty()) {
    try {  // SUNDIALS's C frames must not see an exception
      c.whole.resize(c.n);
    } catch (const std::bad_alloc&) {
      c.whole = Factors{};
      return static_cast<int>(c.last_flag = SUNLS_MEM_FAIL);
    }
  }
  std::copy_n(a, static_cast<size_t>(c.n) * static_cast<size_t>(c.n), c.whole.values.data());
  if (dense_lu_factor(c.whole.columns.data(), c.n, c.n, c.whole.pivots.data()) != 0) {
    return static_cast<int>(c.last_flag = SUNLS_LUFACT_FAIL);
  }
  c.factored = true;
  return static_cast<int>(c.last_flag = SUNLS_SUCCESS);
}

int solve(SUNLinearSolver s, SUNMatrix A, N_Vector x, N_Vector b, sunrealtype) {
  Content& c = content(s);
  if (!c.factored) return static_cast<int>(c.last_flag = SUNLS_ILL_INPUT);  // no successful setup
  N_VScale(1.0, b, x);
  sunrealtype* xd = N_VGetArrayPointer(x);
  if (!c.structured) {
    dense_lu_solve(c.whole.columns.data(), c.n, c.whole.pivots.data(), xd);
    return static_cast<int>(c.last_flag = SUNLS_SUCCESS);
  }
  for (sunindextype k = 0; k < c.blocks; ++k) {
    dense_lu_solve(c.first.columns.data(), c.block, c.first.pivots.data(), xd + k * c.block);
  }
  // The tail rows: their couplings to the blocks' unknowns, then their diagonal.
  const sunrealtype* a = SM_DATA_D(A);
  for (sunindextype i = c.tail_start; i < c.n; ++i) {
    sunrealtype r = xd[i];
    for (sunindextype j = 0; j < c.tail_start; ++j) r -= entry(a, c.n, i, j) * xd[j];
    xd[i] = r / entry(a, c.n, i, i);
  }
  return static_cast<int>(c.last_flag = SUNLS_SUCCESS);
}

}  // namespace

SUNLinearSolver block_dense_solver(sunindextype n, sunindextype block, sunindextype blocks, SUNContext ctx) {
  if (block < 1 || blocks < 1 || blocks * block > n) {
    throw Error("block_dense_solver: the blocks do not fit the matrix");
  }
  auto c = std::make_unique<Content>();
  c->n = n;
  c->block = block;
  c->blocks = blocks;
  c->tail_start = blocks * block;
  c->first.resize(block);
  SUNLinearSolver s = custom_direct_solver(ctx, std::move(c), setup, solve);
  if (s == nullptr) throw std::bad_alloc();
  return s;
}

bool block_dense_solver_structured(SUNLinearSolver solver) {
  const Content& c = content(solver);
  return c.factored && c.structured;
}

long block_dense_solver_bytes(sunindextype block) {
  return footprint::block_dense_solver(static_cast<long>(block), static_cast<long>(sizeof(Content)));
}

}  // namespace saltus::detail
