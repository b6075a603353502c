// The kept-pattern assembly of the KKT and penalty matrices (src/multibody/patterned_assembly.hpp):
// the matrix is always the sum of the contributions handed, against a dense sum written here;
// a sequence that differs from every kept one (another structure, a longer or a shorter one)
// rebuilds rather than reusing a stale pattern; a structure seen before is found again among
// the kept ones, also past the number kept; a contribution outside the matrix, or a scatter
// whose sequence changes between two runs, is refused; no contribution at all is the zero
// matrix; and a Dual's tangents come through
// like its values.
#include "../src/multibody/patterned_assembly.hpp"

#include <saltus/core/scalar.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>
#include <vector>

namespace {

using saltus::multibody::detail::PatternedAssembly;
using Contribution = std::tuple<int, int, double>;

template <class S>
auto scatter_of(const std::vector<Contribution>& contributions, double scale) {
  return [&contributions, scale](auto&& put) {
    for (const auto& [i, j, v] : contributions) put(i, j, S(scale * v));
  };
}

Eigen::MatrixXd dense_sum(int rows, int cols, const std::vector<Contribution>& contributions, double scale) {
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(rows, cols);
  for (const auto& [i, j, v] : contributions) sum(i, j) += scale * v;
  return sum;
}

// Two contributions to (0, 0) and to (2, 1), handed out of order.
const std::vector<Contribution> kFirst = {{2, 1, 1.5}, {0, 0, 2.0}, {1, 2, -1.0}, {0, 0, 0.25}, {2, 1, 3.0}, {1, 0, 4.0}};
// The same entries but one, which moves: the sequence differs at its fourth call.
const std::vector<Contribution> kMoved = {{2, 1, 1.5}, {0, 0, 2.0}, {1, 2, -1.0}, {2, 2, 0.25}, {2, 1, 3.0}, {1, 0, 4.0}};
// kFirst with one more contribution at its end, and with its last one left out.
const std::vector<Contribution> kLonger = {{2, 1, 1.5}, {0, 0, 2.0}, {1, 2, -1.0}, {0, 0, 0.25}, {2, 1, 3.0}, {1, 0, 4.0}, {0, 2, 7.0}};
const std::vector<Contribution> kShorter = {{2, 1, 1.5}, {0, 0, 2.0}, {1, 2, -1.0}, {0, 0, 0.25}, {2, 1, 3.0}};

TEST(PatternedAssembly, EachCallHoldsTheSumOfItsOwnContributions) {
  PatternedAssembly<double> assembly;
  for (double scale : {1.0, -2.0, 0.5}) {  // the same pattern refilled with new values
    const auto& m = assembly.assemble(3, 3, scatter_of<double>(kFirst, scale));
    ASSERT_EQ(m.rows(), 3);
    ASSERT_EQ(m.cols(), 3);
    EXPECT_EQ(m.nonZeros(), 4);
    EXPECT_EQ(Eigen::MatrixXd(m), dense_sum(3, 3, kFirst, scale));
  }
  for (const auto* contributions : {&kMoved, &kLonger, &kShorter, &kFirst, &kMoved}) {
    const auto& m = assembly.assemble(3, 3, scatter_of<double>(*contributions, 3.0));
    ASSERT_EQ(m.cols(), 3);
    EXPECT_EQ(Eigen::MatrixXd(m), dense_sum(3, 3, *contributions, 3.0));
  }
  // Another size with the same sequence is another matrix.
  const auto& wide = assembly.assemble(3, 4, scatter_of<double>(kFirst, 1.0));
  ASSERT_EQ(wide.cols(), 4);
  EXPECT_EQ(Eigen::MatrixXd(wide), dense_sum(3, 4, kFirst, 1.0));
}

TEST(PatternedAssembly, MoreStructuresThanKeptPatternsStayExact) {
  PatternedAssembly<double> assembly;
  std::vector<std::vector<Contribution>> structures;  // 7 distinct sequences, 4 kept
  for (int s = 0; s < 7; ++s) structures.push_back({{s / 3, s % 3, 1.0 + s}, {2, 2, 0.5}, {s / 3, s % 3, 0.25}});
  for (int round = 0; round < 3; ++round) {
    for (const auto& contributions : structures) {
      const auto& m = assembly.assemble(3, 3, scatter_of<double>(contributions, 1.0 + round));
      ASSERT_EQ(m.rows(), 3);
      ASSERT_EQ(m.cols(), 3);
      EXPECT_EQ(Eigen::MatrixXd(m), dense_sum(3, 3, contributions, 1.0 + round));
    }
  }
}

TEST(PatternedAssembly, AnEntryOutsideOrASequenceThatChangesIsAnError) {
  PatternedAssembly<double> assembly;
  const std::vector<Contribution> outside = {{0, 0, 1.0}, {3, 0, 1.0}};
  EXPECT_THROW(assembly.assemble(3, 3, scatter_of<double>(outside, 1.0)), std::logic_error);
  int calls = 0;
  const auto changing = [&calls](auto&& put) { put(0, (calls++) % 2, 1.0); };
  EXPECT_THROW(assembly.assemble(2, 2, changing), std::logic_error);
  // The assembly still serves a well-formed scatter.
  const auto& m = assembly.assemble(3, 3, scatter_of<double>(kFirst, 1.0));
  EXPECT_EQ(Eigen::MatrixXd(m), dense_sum(3, 3, kFirst, 1.0));
}

TEST(PatternedAssembly, NoContributionsIsAMatrixWithoutEntries) {
  // A mechanism without constraints or forces in some mode hands nothing: that is the zero
  // matrix, kept and found again like any other structure.
  PatternedAssembly<double> assembly;
  const std::vector<Contribution> none;
  for (int round = 0; round < 2; ++round) {
    const auto& m = assembly.assemble(2, 3, scatter_of<double>(none, 1.0));
    ASSERT_EQ(m.rows(), 2);
    ASSERT_EQ(m.cols(), 3);
    EXPECT_EQ(m.nonZeros(), 0);
    const auto& full = assembly.assemble(3, 3, scatter_of<double>(kFirst, 1.0));
    EXPECT_EQ(Eigen::MatrixXd(full), dense_sum(3, 3, kFirst, 1.0));
  }
}

saltus::Dual dual(double value, double tangent) {
  saltus::Dual d(value);
  d.v[0] = tangent;
  return d;
}

TEST(PatternedAssembly, ADualsTangentsAddAsItsValues) {
  PatternedAssembly<saltus::Dual> assembly;
  const auto scatter = [](auto&& put) {
    put(1, 1, dual(2.0, 1.0));
    put(0, 1, dual(-1.0, 0.5));
    put(1, 1, dual(3.0, -4.0));
  };
  for (int repeat = 0; repeat < 2; ++repeat) {
    const auto& m = assembly.assemble(2, 2, scatter);
    ASSERT_EQ(m.nonZeros(), 2);
    EXPECT_EQ(m.coeff(1, 1).a, 5.0);
    EXPECT_EQ(m.coeff(1, 1).v[0], -3.0);
    EXPECT_EQ(m.coeff(0, 1).a, -1.0);
    EXPECT_EQ(m.coeff(0, 1).v[0], 0.5);
  }
}

}  // namespace
