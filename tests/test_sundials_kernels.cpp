// The compiled SUNDIALS kernels against SUNDIALS' own code, bit for bit: the serial vector
// operations (src/solvers/serial_vector_kernels.hpp) for every coefficient case they distinguish
// (+-1, 0, equal and opposite coefficients), with the output aliasing an input, and the fused and
// vector-array operations over several vector counts; the dense LU, the dense linear solver and
// the dense matrix operations (src/solvers/dense_kernels.hpp), with pivoting and a singular
// matrix.
#include "../src/solvers/dense_kernels.hpp"
#include "../src/solvers/serial_vector_kernels.hpp"

#include <gtest/gtest.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sundials/sundials_dense.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace {

constexpr sunindextype kLength = 37;  // odd: the vectorized loops' remainder is exercised
constexpr int kVectors = 8;

/// kVectors vectors of kLength random entries (some exactly zero, some negative, magnitudes over
/// five decades), cloned from a template whose operation table the set shares.
class VectorSet {
 public:
  VectorSet(SUNContext ctx, bool compiled, unsigned seed) {
    like_ = N_VNew_Serial(kLength, ctx);
    N_VEnableFusedOps_Serial(like_, SUNTRUE);
    if (compiled) saltus::detail::use_compiled_vector_kernels(like_);
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(-3.0, 3.0);
    for (int k = 0; k < kVectors; ++k) {
      N_Vector v = N_VClone(like_);
      for (sunindextype i = 0; i < kLength; ++i) {
        const double value = uniform(random) * std::pow(10.0, static_cast<double>(i % 5) - 2.0);
        NV_Ith_S(v, i) = i % 7 == 3 ? 0.0 : value;
      }
      vectors_.push_back(v);
    }
    mask_ = N_VClone(like_);
    for (sunindextype i = 0; i < kLength; ++i) NV_Ith_S(mask_, i) = i % 3 == 0 ? 0.0 : 1.0;
  }
  ~VectorSet() {
    for (N_Vector v : vectors_) N_VDestroy(v);
    N_VDestroy(mask_);
    N_VDestroy(like_);
  }
  VectorSet(const VectorSet&) = delete;
  VectorSet& operator=(const VectorSet&) = delete;

  N_Vector operator[](int k) const { return vectors_[static_cast<size_t>(k)]; }
  N_Vector* array(int first) { return vectors_.data() + first; }
  N_Vector mask() const { return mask_; }

 private:
  N_Vector like_ = nullptr;
  N_Vector mask_ = nullptr;
  std::vector<N_Vector> vectors_;
};

class SundialsKernels : public ::testing::Test {
 protected:
  SundialsKernels() { SUNContext_Create(nullptr, &ctx_); }
  ~SundialsKernels() override { SUNContext_Free(&ctx_); }

  /// Runs `operation` on a SUNDIALS set and on a compiled set with the same data, then asserts
  /// that every vector and the returned scalars agree bit for bit.
  void expect_identical(const std::function<std::vector<double>(VectorSet&)>& operation, const char* what) {
    VectorSet reference(ctx_, false, 17), compiled(ctx_, true, 17);
    const std::vector<double> expected = operation(reference);
    const std::vector<double> actual = operation(compiled);
    ASSERT_EQ(expected.size(), actual.size()) << what;
    if (!expected.empty()) {  // memcmp takes no null pointer, even for zero bytes
      EXPECT_EQ(0, std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(double))) << what;
    }
    for (int k = 0; k < kVectors; ++k) {
      EXPECT_EQ(0, std::memcmp(NV_DATA_S(reference[k]), NV_DATA_S(compiled[k]), kLength * sizeof(double)))
          << what << ": vector " << k;
    }
  }

  SUNContext ctx_ = nullptr;
};

const std::vector<double> kCoefficients = {1.0, -1.0, 0.0, 0.3, -0.3, 2.5};

TEST_F(SundialsKernels, LinearSumInEveryCoefficientCaseAndAliasing) {
  for (double a : kCoefficients) {
    for (double b : kCoefficients) {
      for (int output : {2, 0, 1}) {  // a third vector, x itself, y itself
        expect_identical(
            [&](VectorSet& v) {
              N_VLinearSum(a, v[0], b, v[1], v[output]);
              return std::vector<double>{};
            },
            "N_VLinearSum");
      }
    }
  }
}

TEST_F(SundialsKernels, ElementwiseOperationsAndReductions) {
  for (double c : kCoefficients) {
    for (int output : {2, 0}) {
      expect_identical([&](VectorSet& v) { N_VScale(c, v[0], v[output]); return std::vector<double>{}; }, "N_VScale");
    }
    expect_identical([&](VectorSet& v) { N_VConst(c, v[2]); return std::vector<double>{}; }, "N_VConst");
    expect_identical([&](VectorSet& v) { N_VAddConst(v[0], c, v[2]); return std::vector<double>{}; }, "N_VAddConst");
    expect_identical([&](VectorSet& v) { N_VCompare(std::fabs(c), v[0], v[2]); return std::vector<double>{}; },
                     "N_VCompare");
  }
  expect_identical([](VectorSet& v) { N_VProd(v[0], v[1], v[2]); return std::vector<double>{}; }, "N_VProd");
  expect_identical([](VectorSet& v) { N_VDiv(v[0], v[1], v[2]); return std::vector<double>{}; }, "N_VDiv");
  expect_identical([](VectorSet& v) { N_VAbs(v[0], v[2]); return std::vector<double>{}; }, "N_VAbs");
  expect_identical([](VectorSet& v) { N_VInv(v[1], v[2]); return std::vector<double>{}; }, "N_VInv");
  expect_identical(
      [](VectorSet& v) {
        return std::vector<double>{N_VDotProd(v[0], v[1]),        N_VMaxNorm(v[0]),
                                   N_VWrmsNorm(v[0], v[1]),       N_VWrmsNormMask(v[0], v[1], v.mask()),
                                   N_VMin(v[0]),                  N_VWL2Norm(v[0], v[1]),
                                   N_VL1Norm(v[0]),               N_VDotProdLocal(v[0], v[1]),
                                   N_VMaxNormLocal(v[0]),         N_VMinLocal(v[0]),
                                   N_VL1NormLocal(v[0]),          N_VWSqrSumLocal(v[0], v[1]),
                                   N_VWSqrSumMaskLocal(v[0], v[1], v.mask())};
      },
      "reductions");
}

TEST_F(SundialsKernels, FusedOperations) {
  std::vector<double> c = {0.7, 1.0, -1.0, 0.25, -2.0};
  for (int count = 1; count <= 5; ++count) {
    for (double first : kCoefficients) {
      c[0] = first;
      expect_identical(
          [&](VectorSet& v) { N_VLinearCombination(count, c.data(), v.array(0), v[7]); return std::vector<double>{}; },
          "N_VLinearCombination");
      expect_identical(  // the output is the first vector combined
          [&](VectorSet& v) { N_VLinearCombination(count, c.data(), v.array(0), v[0]); return std::vector<double>{}; },
          "N_VLinearCombination into X[0]");
    }
    expect_identical(
        [&](VectorSet& v) { N_VScaleAddMulti(count, c.data(), v[7], v.array(0), v.array(0)); return std::vector<double>{}; },
        "N_VScaleAddMulti in place");
    if (count <= 3) {  // Y and Z apart
      expect_identical(
          [&](VectorSet& v) {
            N_VScaleAddMulti(count, c.data(), v[7], v.array(0), v.array(3));
            return std::vector<double>{};
          },
          "N_VScaleAddMulti");
    }
    expect_identical(
        [&](VectorSet& v) {
          std::vector<double> dots(static_cast<size_t>(count));
          N_VDotProdMulti(count, v[7], v.array(0), dots.data());
          return dots;
        },
        "N_VDotProdMulti");
  }
}

TEST_F(SundialsKernels, VectorArrayOperations) {
  std::vector<double> c = {0.7, 1.0, -1.0};
  for (int count = 1; count <= 3; ++count) {
    for (double a : kCoefficients) {
      for (double b : kCoefficients) {
        expect_identical(
            [&](VectorSet& v) {
              N_VLinearSumVectorArray(count, a, v.array(0), b, v.array(3), v.array(3));
              return std::vector<double>{};
            },
            "N_VLinearSumVectorArray");
      }
      c[0] = a;
      expect_identical(
          [&](VectorSet& v) { N_VScaleVectorArray(count, c.data(), v.array(0), v.array(3)); return std::vector<double>{}; },
          "N_VScaleVectorArray");
      expect_identical([&](VectorSet& v) { N_VConstVectorArray(count, a, v.array(3)); return std::vector<double>{}; },
                       "N_VConstVectorArray");
    }
    expect_identical(
        [&](VectorSet& v) {
          std::vector<double> norms(static_cast<size_t>(2 * count));
          N_VWrmsNormVectorArray(count, v.array(0), v.array(3), norms.data());
          N_VWrmsNormMaskVectorArray(count, v.array(0), v.array(3), v.mask(), norms.data() + count);
          return norms;
        },
        "N_VWrmsNormVectorArray");
  }
}

TEST_F(SundialsKernels, SumsOverVectorArrays) {
  // Vector arrays of two vectors each, apart from each other.
  std::vector<double> a = {0.7, 1.0, -1.0};
  for (int sums = 1; sums <= 3; ++sums) {
    for (double first : kCoefficients) {
      a[0] = first;
      expect_identical(
          [&](VectorSet& v) {
            N_Vector y0[] = {v[2], v[3]}, y1[] = {v[4], v[5]}, y2[] = {v[6], v[7]};
            N_Vector* y[] = {y0, y1, y2};
            N_VScaleAddMultiVectorArray(2, sums, a.data(), v.array(0), y, y);
            return std::vector<double>{};
          },
          "N_VScaleAddMultiVectorArray");
      expect_identical(
          [&](VectorSet& v) {
            N_Vector x0[] = {v[0], v[1]}, x1[] = {v[2], v[3]}, x2[] = {v[4], v[5]};
            N_Vector* x[] = {x0, x1, x2};
            N_VLinearCombinationVectorArray(2, sums, a.data(), x, x0);  // into X[0]
            return std::vector<double>{};
          },
          "N_VLinearCombinationVectorArray into X[0]");
      expect_identical(
          [&](VectorSet& v) {
            N_Vector x0[] = {v[0], v[1]}, x1[] = {v[2], v[3]}, x2[] = {v[4], v[5]}, z[] = {v[6], v[7]};
            N_Vector* x[] = {x0, x1, x2};
            N_VLinearCombinationVectorArray(2, sums, a.data(), x, z);
            return std::vector<double>{};
          },
          "N_VLinearCombinationVectorArray");
    }
  }
}

TEST_F(SundialsKernels, OperationsSundialsLeavesUnsetStayUnset) {
  N_Vector plain = N_VNew_Serial(kLength, ctx_);  // fused operations not enabled
  saltus::detail::use_compiled_vector_kernels(plain);
  EXPECT_EQ(plain->ops->nvlinearcombination, nullptr);
  EXPECT_EQ(plain->ops->nvwrmsnormvectorarray, nullptr);
  EXPECT_NE(plain->ops->nvlinearsum, nullptr);
  N_VDestroy(plain);
}

// ---- dense kernels ----

constexpr sunindextype kOrder = 9;

void zero_column(SUNMatrix a, sunindextype column) {
  for (sunindextype i = 0; i < kOrder; ++i) SM_ELEMENT_D(a, i, column) = 0.0;
}

/// A random kOrder x kOrder dense matrix; `singular_column` >= 0 makes that column zero (an
/// exactly zero pivot where the factorization reaches it).
SUNMatrix random_matrix(SUNContext ctx, bool compiled, unsigned seed, sunindextype singular_column = -1) {
  SUNMatrix a = compiled ? saltus::detail::compiled_dense_matrix(kOrder, ctx) : SUNDenseMatrix(kOrder, kOrder, ctx);
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  for (sunindextype j = 0; j < kOrder; ++j) {
    for (sunindextype i = 0; i < kOrder; ++i) SM_ELEMENT_D(a, i, j) = (i + j) % 4 == 1 ? 0.0 : uniform(random);
  }
  if (singular_column >= 0) zero_column(a, singular_column);
  return a;
}

bool same_bits(const double* a, const double* b, sunindextype n) {
  return std::memcmp(a, b, static_cast<size_t>(n) * sizeof(double)) == 0;
}

TEST_F(SundialsKernels, DenseLuFactorsAndSolvesAsSundials) {
  for (unsigned seed : {3u, 4u, 5u}) {
    SUNMatrix reference = random_matrix(ctx_, false, seed), compiled = random_matrix(ctx_, false, seed);
    std::vector<sunindextype> p_reference(kOrder), p_compiled(kOrder);
    ASSERT_EQ(0, SUNDlsMat_denseGETRF(SM_COLS_D(reference), kOrder, kOrder, p_reference.data()));
    ASSERT_EQ(0, saltus::detail::dense_lu_factor(SM_COLS_D(compiled), kOrder, kOrder, p_compiled.data()));
    EXPECT_EQ(p_reference, p_compiled);
    EXPECT_TRUE(same_bits(SM_DATA_D(reference), SM_DATA_D(compiled), kOrder * kOrder)) << "factors, seed " << seed;
    std::vector<double> b_reference(kOrder), b_compiled(kOrder);
    for (sunindextype i = 0; i < kOrder; ++i) b_reference[static_cast<size_t>(i)] = 0.5 - 0.25 * static_cast<double>(i);
    b_compiled = b_reference;
    SUNDlsMat_denseGETRS(SM_COLS_D(reference), kOrder, p_reference.data(), b_reference.data());
    saltus::detail::dense_lu_solve(SM_COLS_D(compiled), kOrder, p_compiled.data(), b_compiled.data());
    EXPECT_TRUE(same_bits(b_reference.data(), b_compiled.data(), kOrder)) << "solution, seed " << seed;
    SUNMatDestroy(reference);
    SUNMatDestroy(compiled);
  }
  SUNMatrix singular = random_matrix(ctx_, false, 6, 4), copy = random_matrix(ctx_, false, 6, 4);
  std::vector<sunindextype> p(kOrder);
  const sunindextype expected = SUNDlsMat_denseGETRF(SM_COLS_D(singular), kOrder, kOrder, p.data());
  EXPECT_EQ(expected, 5);  // the zero column's pivot
  EXPECT_EQ(expected, saltus::detail::dense_lu_factor(SM_COLS_D(copy), kOrder, kOrder, p.data()));
  SUNMatDestroy(singular);
  SUNMatDestroy(copy);
}

TEST_F(SundialsKernels, DenseSolverAndMatrixOperationsAsSundials) {
  for (sunindextype singular_column : {-1, 5}) {
    SUNMatrix reference = random_matrix(ctx_, false, 8);
    SUNMatrix compiled = random_matrix(ctx_, true, 8);
    // The Newton matrix as CVODES forms it: keep a copy (a clone), then I - gamma J.
    SUNMatrix saved_reference = SUNMatClone(reference), saved_compiled = SUNMatClone(compiled);
    EXPECT_EQ(saved_compiled->ops->scaleaddi, compiled->ops->scaleaddi);  // the clone has the kernels
    SUNMatCopy(reference, saved_reference);
    SUNMatCopy(compiled, saved_compiled);
    SUNMatScaleAddI(-0.37, reference);
    SUNMatScaleAddI(-0.37, compiled);
    SUNMatScaleAdd(0.5, saved_reference, reference);
    SUNMatScaleAdd(0.5, saved_compiled, compiled);
    EXPECT_TRUE(same_bits(SM_DATA_D(reference), SM_DATA_D(compiled), kOrder * kOrder));
    EXPECT_TRUE(same_bits(SM_DATA_D(saved_reference), SM_DATA_D(saved_compiled), kOrder * kOrder));

    VectorSet vectors(ctx_, false, 11);
    N_Vector b = N_VNew_Serial(kOrder, ctx_), x_reference = N_VClone(b), x_compiled = N_VClone(b);
    for (sunindextype i = 0; i < kOrder; ++i) NV_Ith_S(b, i) = NV_Ith_S(vectors[0], i);
    SUNMatMatvec(reference, b, x_reference);
    SUNMatMatvec(compiled, b, x_compiled);
    EXPECT_TRUE(same_bits(NV_DATA_S(x_reference), NV_DATA_S(x_compiled), kOrder));

    if (singular_column >= 0) {
      zero_column(reference, singular_column);
      zero_column(compiled, singular_column);
    }
    SUNLinearSolver solver_reference = SUNLinSol_Dense(b, reference, ctx_);
    SUNLinearSolver solver_compiled = saltus::detail::compiled_dense_solver(b, compiled, ctx_);
    const int setup_reference = SUNLinSolSetup(solver_reference, reference);
    EXPECT_EQ(setup_reference, SUNLinSolSetup(solver_compiled, compiled));
    EXPECT_EQ(SUNLinSolLastFlag(solver_reference), SUNLinSolLastFlag(solver_compiled));
    EXPECT_EQ(singular_column >= 0 ? SUNLS_LUFACT_FAIL : SUNLS_SUCCESS, setup_reference);
    if (setup_reference == SUNLS_SUCCESS) {
      EXPECT_EQ(SUNLS_SUCCESS, SUNLinSolSolve(solver_reference, reference, x_reference, b, 0.0));
      EXPECT_EQ(SUNLS_SUCCESS, SUNLinSolSolve(solver_compiled, compiled, x_compiled, b, 0.0));
      EXPECT_TRUE(same_bits(NV_DATA_S(x_reference), NV_DATA_S(x_compiled), kOrder));
    }
    SUNLinSolFree(solver_reference);
    SUNLinSolFree(solver_compiled);
    N_VDestroy(x_compiled);
    N_VDestroy(x_reference);
    N_VDestroy(b);
    for (SUNMatrix m : {reference, compiled, saved_reference, saved_compiled}) SUNMatDestroy(m);
  }
}

}  // namespace
