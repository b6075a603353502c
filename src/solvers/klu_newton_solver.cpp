// KLU with a fresh factorization per matrix: klu_newton_solver.hpp.
#include "klu_newton_solver.hpp"

#include "custom_direct_solver.hpp"

#include <klu.h>
#include <nvector/nvector_serial.h>
#include <sunmatrix/sunmatrix_sparse.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

namespace saltus::detail {

static_assert(std::is_same_v<sunindextype, SuiteSparse_long>,
              "KLU's 64-bit interface reads SUNDIALS's index arrays in place");

namespace {

struct KluNewtonContent;
void free_factors(KluNewtonContent& c);

struct KluNewtonContent {
  KluNewtonContent() { klu_l_defaults(&common); }
  ~KluNewtonContent() { free_factors(*this); }
  KluNewtonContent(const KluNewtonContent&) = delete;
  KluNewtonContent& operator=(const KluNewtonContent&) = delete;

  klu_l_common common{};
  klu_l_symbolic* symbolic = nullptr;
  klu_l_numeric* numeric = nullptr;
  std::vector<sunindextype> starts, rows;  // the pattern the symbolic analysis is of
  sunindextype last_flag = 0;
};

KluNewtonContent& content(SUNLinearSolver s) { return *static_cast<KluNewtonContent*>(s->content); }

void free_factors(KluNewtonContent& c) {
  if (c.numeric) klu_l_free_numeric(&c.numeric, &c.common);
  if (c.symbolic) klu_l_free_symbolic(&c.symbolic, &c.common);
}

/// Whether A's pattern is the one analysed (a new mode brings another).
bool same_pattern(const KluNewtonContent& c, SUNMatrix a) {
  const sunindextype n = SM_COLUMNS_S(a);
  if (static_cast<sunindextype>(c.starts.size()) != n + 1) return false;
  const sunindextype* starts = SM_INDEXPTRS_S(a);
  const sunindextype nonzeros = starts[n];
  return static_cast<sunindextype>(c.rows.size()) == nonzeros && std::equal(c.starts.begin(), c.starts.end(), starts) &&
         std::equal(c.rows.begin(), c.rows.end(), SM_INDEXVALS_S(a));
}

int setup(SUNLinearSolver s, SUNMatrix a) {
  KluNewtonContent& c = content(s);
  const sunindextype n = SM_COLUMNS_S(a);
  sunindextype* starts = SM_INDEXPTRS_S(a);
  sunindextype* rows = SM_INDEXVALS_S(a);
  double* values = SM_DATA_S(a);
  if (!std::all_of(values, values + starts[n], [](double v) { return std::isfinite(v); })) {
    return c.last_flag = SUNLS_LUFACT_FAIL;
  }
  if (c.symbolic && !same_pattern(c, a)) free_factors(c);
  if (!c.symbolic) {
    c.symbolic = klu_l_analyze(n, starts, rows, &c.common);
    if (!c.symbolic) return c.last_flag = SUNLS_PACKAGE_FAIL_UNREC;
    c.starts.assign(starts, starts + n + 1);
    c.rows.assign(rows, rows + starts[n]);
  }
  if (c.numeric) klu_l_free_numeric(&c.numeric, &c.common);
  c.numeric = klu_l_factor(starts, rows, values, c.symbolic, &c.common);
  return c.last_flag = c.numeric ? SUNLS_SUCCESS : SUNLS_LUFACT_FAIL;
}

int solve(SUNLinearSolver s, SUNMatrix a, N_Vector x, N_Vector b, double) {
  KluNewtonContent& c = content(s);
  if (!c.numeric) return c.last_flag = SUNLS_MEM_FAIL;
  N_VScale(1.0, b, x);
  const sunindextype n = SM_COLUMNS_S(a);
  if (!klu_l_solve(c.symbolic, c.numeric, n, 1, N_VGetArrayPointer(x), &c.common)) {
    return c.last_flag = SUNLS_PACKAGE_FAIL_REC;
  }
  return c.last_flag = SUNLS_SUCCESS;
}

}  // namespace

SUNLinearSolver make_klu_newton_solver(SUNContext context) {
  return custom_direct_solver(context, std::make_unique<KluNewtonContent>(), setup, solve);
}

}  // namespace saltus::detail
