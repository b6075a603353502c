#include "dense_kernels.hpp"

#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <cmath>
#include <utility>

// Each kernel follows SUNDIALS' loop order and expressions (sundials_dense.c, sunmatrix_dense.c,
// sunlinsol_dense.c), so every rounding is the same: results are bit-identical.

namespace saltus::detail {

sunindextype dense_lu_factor(sunrealtype** columns, sunindextype m, sunindextype n, sunindextype* pivots) {
  for (sunindextype k = 0; k < n; ++k) {
    sunrealtype* column_k = columns[k];
    sunindextype pivot = k;  // the first row of largest magnitude at or below the diagonal
    for (sunindextype i = k + 1; i < m; ++i) {
      if (std::fabs(column_k[i]) > std::fabs(column_k[pivot])) pivot = i;
    }
    pivots[k] = pivot;
    if (column_k[pivot] == 0.0) return k + 1;
    if (pivot != k) {
      for (sunindextype j = 0; j < n; ++j) std::swap(columns[j][pivot], columns[j][k]);
    }
    const sunrealtype inverse = 1.0 / column_k[k];
    for (sunindextype i = k + 1; i < m; ++i) column_k[i] *= inverse;
    for (sunindextype j = k + 1; j < n; ++j) {
      sunrealtype* column_j = columns[j];
      const sunrealtype a_kj = column_j[k];
      if (a_kj == 0.0) continue;
      for (sunindextype i = k + 1; i < m; ++i) column_j[i] -= a_kj * column_k[i];
    }
  }
  return 0;
}

void dense_lu_solve(sunrealtype* const* columns, sunindextype n, const sunindextype* pivots, sunrealtype* b) {
  for (sunindextype k = 0; k < n; ++k) {
    if (pivots[k] != k) std::swap(b[k], b[pivots[k]]);
  }
  for (sunindextype k = 0; k + 1 < n; ++k) {  // L y = b (unit diagonal)
    const sunrealtype* column_k = columns[k];
    for (sunindextype i = k + 1; i < n; ++i) b[i] -= column_k[i] * b[k];
  }
  for (sunindextype k = n - 1; k > 0; --k) {  // U x = y
    const sunrealtype* column_k = columns[k];
    b[k] /= column_k[k];
    for (sunindextype i = 0; i < k; ++i) b[i] -= column_k[i] * b[k];
  }
  b[0] /= columns[0][0];
}

namespace {

int matrix_zero(SUNMatrix a) {
  sunrealtype* data = SM_DATA_D(a);
  for (sunindextype i = 0, n = SM_LDATA_D(a); i < n; ++i) data[i] = 0.0;
  return SUNMAT_SUCCESS;
}

bool same_shape(SUNMatrix a, SUNMatrix b) {
  return SUNMatGetID(b) == SUNMATRIX_DENSE && SM_ROWS_D(a) == SM_ROWS_D(b) && SM_COLUMNS_D(a) == SM_COLUMNS_D(b);
}

/// B = A.
int matrix_copy(SUNMatrix a, SUNMatrix b) {
  if (!same_shape(a, b)) return SUNMAT_ILL_INPUT;
  const sunrealtype* from = SM_DATA_D(a);
  sunrealtype* to = SM_DATA_D(b);
  for (sunindextype i = 0, n = SM_ROWS_D(a) * SM_COLUMNS_D(a); i < n; ++i) to[i] = from[i];
  return SUNMAT_SUCCESS;
}

/// A = c A + B.
int matrix_scale_add(sunrealtype c, SUNMatrix a, SUNMatrix b) {
  if (!same_shape(a, b)) return SUNMAT_ILL_INPUT;
  sunrealtype* ad = SM_DATA_D(a);
  const sunrealtype* bd = SM_DATA_D(b);
  for (sunindextype i = 0, n = SM_ROWS_D(a) * SM_COLUMNS_D(a); i < n; ++i) ad[i] = c * ad[i] + bd[i];
  return SUNMAT_SUCCESS;
}

/// A = c A + I.
int matrix_scale_add_identity(sunrealtype c, SUNMatrix a) {
  const sunindextype rows = SM_ROWS_D(a), cols = SM_COLUMNS_D(a);
  for (sunindextype j = 0; j < cols; ++j) {
    sunrealtype* column = SM_COLUMN_D(a, j);
    for (sunindextype i = 0; i < rows; ++i) column[i] *= c;
    if (j < rows) column[j] += 1.0;
  }
  return SUNMAT_SUCCESS;
}

/// y = A x.
int matrix_vector(SUNMatrix a, N_Vector x, N_Vector y) {
  const sunindextype rows = SM_ROWS_D(a), cols = SM_COLUMNS_D(a);
  if (N_VGetLength(x) != cols || N_VGetLength(y) != rows) return SUNMAT_ILL_INPUT;
  const sunrealtype* xd = N_VGetArrayPointer(x);
  sunrealtype* yd = N_VGetArrayPointer(y);
  if (xd == nullptr || yd == nullptr || xd == yd) return SUNMAT_MEM_FAIL;
  for (sunindextype i = 0; i < rows; ++i) yd[i] = 0.0;
  for (sunindextype j = 0; j < cols; ++j) {
    const sunrealtype* column = SM_COLUMN_D(a, j);
    for (sunindextype i = 0; i < rows; ++i) yd[i] += column[i] * xd[j];
  }
  return SUNMAT_SUCCESS;
}

/// A dense matrix of A's shape with these kernels too (CVODES clones its Newton matrix to keep the
/// Jacobian between updates).
SUNMatrix matrix_clone(SUNMatrix a) {
  SUNMatrix b = SUNDenseMatrix(SM_ROWS_D(a), SM_COLUMNS_D(a), a->sunctx);
  if (b != nullptr) use_compiled_dense_kernels(b);
  return b;
}

SUNLinearSolverContent_Dense dense_content(SUNLinearSolver s) {
  return static_cast<SUNLinearSolverContent_Dense>(s->content);
}

int solver_setup(SUNLinearSolver s, SUNMatrix a) {
  if (a == nullptr || s == nullptr) return SUNLS_MEM_NULL;
  SUNLinearSolverContent_Dense c = dense_content(s);
  if (SUNMatGetID(a) != SUNMATRIX_DENSE) return static_cast<int>(c->last_flag = SUNLS_ILL_INPUT);
  if (SM_COLS_D(a) == nullptr || c->pivots == nullptr) return static_cast<int>(c->last_flag = SUNLS_MEM_FAIL);
  c->last_flag = dense_lu_factor(SM_COLS_D(a), SM_ROWS_D(a), SM_COLUMNS_D(a), c->pivots);
  return c->last_flag > 0 ? SUNLS_LUFACT_FAIL : SUNLS_SUCCESS;
}

int solver_solve(SUNLinearSolver s, SUNMatrix a, N_Vector x, N_Vector b, sunrealtype) {
  if (a == nullptr || s == nullptr || x == nullptr || b == nullptr) return SUNLS_MEM_NULL;
  SUNLinearSolverContent_Dense c = dense_content(s);
  if (SUNMatGetID(a) != SUNMATRIX_DENSE) return static_cast<int>(c->last_flag = SUNLS_ILL_INPUT);
  N_VScale(1.0, b, x);
  sunrealtype* xd = N_VGetArrayPointer(x);
  if (SM_COLS_D(a) == nullptr || c->pivots == nullptr || xd == nullptr) {
    return static_cast<int>(c->last_flag = SUNLS_MEM_FAIL);
  }
  dense_lu_solve(SM_COLS_D(a), SM_ROWS_D(a), c->pivots, xd);
  return static_cast<int>(c->last_flag = SUNLS_SUCCESS);
}

}  // namespace

void use_compiled_dense_kernels(SUNMatrix matrix) {
  matrix->ops->clone = matrix_clone;
  matrix->ops->zero = matrix_zero;
  matrix->ops->copy = matrix_copy;
  matrix->ops->scaleadd = matrix_scale_add;
  matrix->ops->scaleaddi = matrix_scale_add_identity;
  matrix->ops->matvec = matrix_vector;
}

void use_compiled_dense_kernels(SUNLinearSolver solver) {
  solver->ops->setup = solver_setup;
  solver->ops->solve = solver_solve;
}

SUNMatrix compiled_dense_matrix(sunindextype n, SUNContext ctx) {
  SUNMatrix matrix = SUNDenseMatrix(n, n, ctx);
  if (matrix != nullptr) use_compiled_dense_kernels(matrix);
  return matrix;
}

SUNLinearSolver compiled_dense_solver(N_Vector y, SUNMatrix matrix, SUNContext ctx) {
  SUNLinearSolver solver = SUNLinSol_Dense(y, matrix, ctx);
  if (solver != nullptr) use_compiled_dense_kernels(solver);
  return solver;
}

}  // namespace saltus::detail
