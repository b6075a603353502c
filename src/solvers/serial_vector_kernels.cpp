#include "serial_vector_kernels.hpp"

#include "vector_clones.hpp"

#include <algorithm>
#include <cmath>

// Every kernel below computes each element with the same expression, and each reduction in the
// same order, as SUNDIALS' serial vector (src/nvector/serial), so results are bit-identical: the
// special cases SUNDIALS takes for coefficients of +-1 (copy, negation, sum, difference, axpy)
// equal the general expression exactly, because multiplying by +-1 is exact in IEEE arithmetic;
// the cases that round differently (c (x + y), c (x - y), a x - y) are kept. Reductions add in
// index order (no reassociation), as SUNDIALS does.

namespace saltus::detail {
namespace {

using Index = sunindextype;

double* data(N_Vector v) { return NV_DATA_S(v); }
Index length(N_Vector v) { return NV_LENGTH_S(v); }

// ---- element kernels on raw arrays ----

/// z = a x + y.
void axpy_into(double a, const double* x, const double* y, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = a * x[i] + y[i];
}

/// z = a x - y.
void axmy_into(double a, const double* x, const double* y, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = a * x[i] - y[i];
}

/// z = c (x + y) or c (x - y).
void scaled_sum_into(double c, const double* x, const double* y, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = c * (x[i] + y[i]);
}
void scaled_difference_into(double c, const double* x, const double* y, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = c * (x[i] - y[i]);
}

/// z = a x + b y.
void general_sum_into(double a, const double* x, double b, const double* y, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = a * x[i] + b * y[i];
}

void scale_into(double c, const double* x, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = c * x[i];
}

void fill(double c, double* z, Index n) {
  for (Index i = 0; i < n; ++i) z[i] = c;
}

/// z = a x + b y, choosing the expression SUNDIALS' N_VLinearSum_Serial uses for (a, b).
void linear_sum(double a, const double* x, double b, const double* y, double* z, Index n) {
  if (b == 1.0) return axpy_into(a, x, y, z, n);   // y + a x: axpy, sum, difference, lin1
  if (a == 1.0) return axpy_into(b, y, x, z, n);   // x + b y
  if (a == -1.0) return axmy_into(b, y, x, z, n);  // b y - x
  if (b == -1.0) return axmy_into(a, x, y, z, n);  // a x - y
  if (a == b) return scaled_sum_into(a, x, y, z, n);
  if (a == -b) return scaled_difference_into(a, x, y, z, n);
  general_sum_into(a, x, b, y, z, n);
}

/// z = sum_i c_i x_i, x_i = vector(i), accumulated from x_0 on (the first vector may be z).
template <class VectorOf>
void linear_combination(int count, const double* c, VectorOf vector, N_Vector z) {
  const Index n = length(z);
  double* zd = data(z);
  if (count == 1) return scale_into(c[0], data(vector(0)), zd, n);
  if (count == 2) return linear_sum(c[0], data(vector(0)), c[1], data(vector(1)), zd, n);
  if (vector(0) != z || c[0] != 1.0) scale_into(c[0], data(vector(0)), zd, n);
  for (int k = 1; k < count; ++k) axpy_into(c[k], data(vector(k)), zd, zd, n);
}

double weighted_square_sum(const double* x, const double* w, Index n) {
  double sum = 0.0;
  for (Index i = 0; i < n; ++i) {
    const double product = x[i] * w[i];
    sum += product * product;
  }
  return sum;
}

double masked_weighted_square_sum(const double* x, const double* w, const double* mask, Index n) {
  double sum = 0.0;
  for (Index i = 0; i < n; ++i) {
    if (mask[i] > 0.0) {
      const double product = x[i] * w[i];
      sum += product * product;
    }
  }
  return sum;
}

double dot(const double* x, const double* y, Index n) {
  double sum = 0.0;
  for (Index i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// ---- the operation table's entries ----

void op_linear_sum(double a, N_Vector x, double b, N_Vector y, N_Vector z) {
  linear_sum(a, data(x), b, data(y), data(z), length(z));
}
void op_const(double c, N_Vector z) { fill(c, data(z), length(z)); }
void op_prod(N_Vector x, N_Vector y, N_Vector z) {
  const double *xd = data(x), *yd = data(y);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = xd[i] * yd[i];
}
void op_div(N_Vector x, N_Vector y, N_Vector z) {
  const double *xd = data(x), *yd = data(y);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = xd[i] / yd[i];
}
void op_scale(double c, N_Vector x, N_Vector z) { scale_into(c, data(x), data(z), length(z)); }
void op_abs(N_Vector x, N_Vector z) {
  const double* xd = data(x);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = std::fabs(xd[i]);
}
void op_inv(N_Vector x, N_Vector z) {
  const double* xd = data(x);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = 1.0 / xd[i];
}
void op_add_const(N_Vector x, double b, N_Vector z) {
  const double* xd = data(x);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = xd[i] + b;
}
double op_dot(N_Vector x, N_Vector y) { return dot(data(x), data(y), length(x)); }
double op_max_norm(N_Vector x) {
  double largest = 0.0;
  const double* xd = data(x);
  for (Index i = 0, n = length(x); i < n; ++i) {
    if (std::fabs(xd[i]) > largest) largest = std::fabs(xd[i]);
  }
  return largest;
}
double op_weighted_square_sum(N_Vector x, N_Vector w) { return weighted_square_sum(data(x), data(w), length(x)); }
double op_masked_weighted_square_sum(N_Vector x, N_Vector w, N_Vector mask) {
  return masked_weighted_square_sum(data(x), data(w), data(mask), length(x));
}
double op_wrms_norm(N_Vector x, N_Vector w) {
  return std::sqrt(op_weighted_square_sum(x, w) / static_cast<double>(length(x)));
}
double op_wrms_norm_mask(N_Vector x, N_Vector w, N_Vector mask) {
  return std::sqrt(op_masked_weighted_square_sum(x, w, mask) / static_cast<double>(length(x)));
}
double op_min(N_Vector x) {
  const double* xd = data(x);
  double smallest = xd[0];
  for (Index i = 1, n = length(x); i < n; ++i) {
    if (xd[i] < smallest) smallest = xd[i];
  }
  return smallest;
}
double op_weighted_l2_norm(N_Vector x, N_Vector w) { return std::sqrt(op_weighted_square_sum(x, w)); }
double op_l1_norm(N_Vector x) {
  double sum = 0.0;
  const double* xd = data(x);
  for (Index i = 0, n = length(x); i < n; ++i) sum += std::fabs(xd[i]);
  return sum;
}
void op_compare(double c, N_Vector x, N_Vector z) {
  const double* xd = data(x);
  double* zd = data(z);
  for (Index i = 0, n = length(z); i < n; ++i) zd[i] = std::fabs(xd[i]) >= c ? 1.0 : 0.0;
}

int op_linear_combination(int count, double* c, N_Vector* x, N_Vector z) {
  linear_combination(count, c, [x](int k) { return x[k]; }, z);
  return 0;
}
int op_scale_add_multi(int count, double* a, N_Vector x, N_Vector* y, N_Vector* z) {
  const Index n = length(x);
  for (int k = 0; k < count; ++k) axpy_into(a[k], data(x), data(y[k]), data(z[k]), n);
  return 0;
}
int op_dot_multi(int count, N_Vector x, N_Vector* y, double* dots) {
  const Index n = length(x);
  for (int k = 0; k < count; ++k) dots[k] = dot(data(x), data(y[k]), n);
  return 0;
}

int op_linear_sum_array(int count, double a, N_Vector* x, double b, N_Vector* y, N_Vector* z) {
  for (int k = 0; k < count; ++k) op_linear_sum(a, x[k], b, y[k], z[k]);
  return 0;
}
int op_scale_array(int count, double* c, N_Vector* x, N_Vector* z) {
  for (int k = 0; k < count; ++k) op_scale(c[k], x[k], z[k]);
  return 0;
}
int op_const_array(int count, double c, N_Vector* z) {
  for (int k = 0; k < count; ++k) op_const(c, z[k]);
  return 0;
}
int op_wrms_norm_array(int count, N_Vector* x, N_Vector* w, double* norms) {
  for (int k = 0; k < count; ++k) norms[k] = op_wrms_norm(x[k], w[k]);
  return 0;
}
int op_wrms_norm_mask_array(int count, N_Vector* x, N_Vector* w, N_Vector mask, double* norms) {
  for (int k = 0; k < count; ++k) norms[k] = op_wrms_norm_mask(x[k], w[k], mask);
  return 0;
}
/// Z[j][i] = a[j] X[i] + Y[j][i].
int op_scale_add_multi_array(int count, int sums, double* a, N_Vector* x, N_Vector** y, N_Vector** z) {
  for (int i = 0; i < count; ++i) {
    const Index n = length(x[i]);
    for (int j = 0; j < sums; ++j) axpy_into(a[j], data(x[i]), data(y[j][i]), data(z[j][i]), n);
  }
  return 0;
}
/// Z[i] = sum_j c[j] X[j][i].
int op_linear_combination_array(int count, int sums, double* c, N_Vector** x, N_Vector* z) {
  for (int i = 0; i < count; ++i) linear_combination(sums, c, [x, i](int j) { return x[j][i]; }, z[i]);
  return 0;
}

/// Sets `slot` to `kernel` where SUNDIALS has set it: an operation left unset stays unset.
template <class Slot, class Kernel>
void replace(Slot& slot, Kernel kernel) {
  if (slot != nullptr) slot = kernel;
}

}  // namespace

void use_compiled_vector_kernels(N_Vector v) {
  N_Vector_Ops ops = v->ops;
  replace(ops->nvclone, clone_from_store);
  replace(ops->nvcloneempty, clone_without_data);
  replace(ops->nvlinearsum, op_linear_sum);
  replace(ops->nvconst, op_const);
  replace(ops->nvprod, op_prod);
  replace(ops->nvdiv, op_div);
  replace(ops->nvscale, op_scale);
  replace(ops->nvabs, op_abs);
  replace(ops->nvinv, op_inv);
  replace(ops->nvaddconst, op_add_const);
  replace(ops->nvdotprod, op_dot);
  replace(ops->nvmaxnorm, op_max_norm);
  replace(ops->nvwrmsnorm, op_wrms_norm);
  replace(ops->nvwrmsnormmask, op_wrms_norm_mask);
  replace(ops->nvmin, op_min);
  replace(ops->nvwl2norm, op_weighted_l2_norm);
  replace(ops->nvl1norm, op_l1_norm);
  replace(ops->nvcompare, op_compare);

  replace(ops->nvlinearcombination, op_linear_combination);
  replace(ops->nvscaleaddmulti, op_scale_add_multi);
  replace(ops->nvdotprodmulti, op_dot_multi);

  replace(ops->nvlinearsumvectorarray, op_linear_sum_array);
  replace(ops->nvscalevectorarray, op_scale_array);
  replace(ops->nvconstvectorarray, op_const_array);
  replace(ops->nvwrmsnormvectorarray, op_wrms_norm_array);
  replace(ops->nvwrmsnormmaskvectorarray, op_wrms_norm_mask_array);
  replace(ops->nvscaleaddmultivectorarray, op_scale_add_multi_array);
  replace(ops->nvlinearcombinationvectorarray, op_linear_combination_array);

  replace(ops->nvdotprodlocal, op_dot);
  replace(ops->nvmaxnormlocal, op_max_norm);
  replace(ops->nvminlocal, op_min);
  replace(ops->nvl1normlocal, op_l1_norm);
  replace(ops->nvwsqrsumlocal, op_weighted_square_sum);
  replace(ops->nvwsqrsummasklocal, op_masked_weighted_square_sum);
  replace(ops->nvdotprodmultilocal, op_dot_multi);
}

}  // namespace saltus::detail
