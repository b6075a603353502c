// The compiled serial vector kernels (src/solvers/serial_vector_kernels.hpp) against SUNDIALS'
// own serial vector operations: every result must be bit-identical, for every coefficient case
// the operations distinguish (+-1, 0, equal and opposite coefficients), with the output aliasing
// an input, and for the fused and vector-array operations over several vector counts.
#include "../src/solvers/serial_vector_kernels.hpp"

#include <gtest/gtest.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>

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

class SerialVectorKernels : public ::testing::Test {
 protected:
  SerialVectorKernels() { SUNContext_Create(nullptr, &ctx_); }
  ~SerialVectorKernels() override { SUNContext_Free(&ctx_); }

  /// Runs `operation` on a SUNDIALS set and on a compiled set with the same data, then asserts
  /// that every vector and the returned scalars agree bit for bit.
  void expect_identical(const std::function<std::vector<double>(VectorSet&)>& operation, const char* what) {
    VectorSet reference(ctx_, false, 17), compiled(ctx_, true, 17);
    const std::vector<double> expected = operation(reference);
    const std::vector<double> actual = operation(compiled);
    ASSERT_EQ(expected.size(), actual.size()) << what;
    EXPECT_EQ(0, std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(double))) << what;
    for (int k = 0; k < kVectors; ++k) {
      EXPECT_EQ(0, std::memcmp(NV_DATA_S(reference[k]), NV_DATA_S(compiled[k]), kLength * sizeof(double)))
          << what << ": vector " << k;
    }
  }

  SUNContext ctx_ = nullptr;
};

const std::vector<double> kCoefficients = {1.0, -1.0, 0.0, 0.3, -0.3, 2.5};

TEST_F(SerialVectorKernels, LinearSumInEveryCoefficientCaseAndAliasing) {
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

TEST_F(SerialVectorKernels, ElementwiseOperationsAndReductions) {
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

TEST_F(SerialVectorKernels, FusedOperations) {
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

TEST_F(SerialVectorKernels, VectorArrayOperations) {
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

TEST_F(SerialVectorKernels, SumsOverVectorArrays) {
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

TEST_F(SerialVectorKernels, OperationsSundialsLeavesUnsetStayUnset) {
  N_Vector plain = N_VNew_Serial(kLength, ctx_);  // fused operations not enabled
  saltus::detail::use_compiled_vector_kernels(plain);
  EXPECT_EQ(plain->ops->nvlinearcombination, nullptr);
  EXPECT_EQ(plain->ops->nvwrmsnormvectorarray, nullptr);
  EXPECT_NE(plain->ops->nvlinearsum, nullptr);
  N_VDestroy(plain);
}

}  // namespace
