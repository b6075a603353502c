// The adjoints' block linear solver (src/solvers/block_dense_solver.hpp): solutions of stacked
// backward Newton systems against Eigen's LU of the whole matrix, with and without the
// structure it exploits, and a singular block reported as SUNDIALS's dense LU reports it.
#include "../src/solvers/block_dense_solver.hpp"

#include <saltus/core/error.hpp>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunmatrix/sunmatrix_dense.h>

namespace {

using saltus::detail::block_dense_solver;

/// SUNDIALS objects for one system of order n, freed at the end of the test.
class System {
 public:
  explicit System(sunindextype n) {
    SUNContext_Create(nullptr, &ctx_);
    A_ = SUNDenseMatrix(n, n, ctx_);
    x_ = N_VNew_Serial(n, ctx_);
    b_ = N_VNew_Serial(n, ctx_);
  }
  ~System() {
    if (solver_ != nullptr) SUNLinSolFree(solver_);
    N_VDestroy(b_);
    N_VDestroy(x_);
    SUNMatDestroy(A_);
    SUNContext_Free(&ctx_);
  }
  System(const System&) = delete;
  System& operator=(const System&) = delete;

  /// Copies `m` into the SUNMatrix and sets up a block solver for it (the same solver on a
  /// second call, as an integrator sets one solver up again); returns setup's flag.
  int setup(const Eigen::MatrixXd& m, sunindextype block, sunindextype blocks) {
    Eigen::Map<Eigen::MatrixXd>(SM_DATA_D(A_), m.rows(), m.cols()) = m;
    if (solver_ == nullptr) {
      solver_ = block_dense_solver(m.rows(), block, blocks, ctx_);
      EXPECT_EQ(SUNLinSolGetType(solver_), SUNLINEARSOLVER_DIRECT);
      EXPECT_EQ(SUNLinSolInitialize(solver_), SUNLS_SUCCESS);
    }
    return SUNLinSolSetup(solver_, A_);
  }
  bool structured() const { return saltus::detail::block_dense_solver_structured(solver_); }
  /// The flag of a solve (after a failed setup: refused, not run on missing factors).
  int solve_flag() { return SUNLinSolSolve(solver_, A_, x_, b_, 0.0); }
  Eigen::VectorXd solve(const Eigen::VectorXd& rhs) {
    Eigen::Map<Eigen::VectorXd>(N_VGetArrayPointer(b_), rhs.size()) = rhs;
    EXPECT_EQ(SUNLinSolSolve(solver_, A_, x_, b_, 0.0), SUNLS_SUCCESS);
    EXPECT_EQ((Eigen::Map<Eigen::VectorXd>(N_VGetArrayPointer(b_), rhs.size()) - rhs).norm(), 0.0)
        << "the right-hand side was overwritten";
    return Eigen::Map<Eigen::VectorXd>(N_VGetArrayPointer(x_), rhs.size());
  }

 private:
  SUNContext ctx_ = nullptr;
  SUNMatrix A_ = nullptr;
  N_Vector x_ = nullptr, b_ = nullptr;
  SUNLinearSolver solver_ = nullptr;
};

/// `blocks` copies of a random well-conditioned block on the diagonal, then `tail` rows coupled
/// to the blocks' columns with a diagonal of their own (the IDAS gradient states).
Eigen::MatrixXd stacked(int block, int blocks, int tail) {
  const Eigen::MatrixXd d = Eigen::MatrixXd::Random(block, block) + 4.0 * Eigen::MatrixXd::Identity(block, block);
  const int n = block * blocks + tail;
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (int c = 0; c < blocks; ++c) m.block(c * block, c * block, block, block) = d;
  if (tail > 0) {
    m.bottomLeftCorner(tail, block * blocks) = Eigen::MatrixXd::Random(tail, block * blocks);
    m.bottomRightCorner(tail, tail).diagonal() = Eigen::VectorXd::Constant(tail, 2.5);
  }
  return m;
}

/// Solves with `m` against Eigen's LU of the whole matrix; `structured`: whether setup must take
/// the one-block path.
void expect_solves(System& s, const Eigen::MatrixXd& m, int block, int blocks, bool structured) {
  ASSERT_EQ(s.setup(m, block, blocks), SUNLS_SUCCESS);
  EXPECT_EQ(s.structured(), structured);
  for (int k = 0; k < 3; ++k) {
    const Eigen::VectorXd rhs = Eigen::VectorXd::Random(m.rows());
    const Eigen::VectorXd reference = m.fullPivLu().solve(rhs);
    EXPECT_LT((s.solve(rhs) - reference).cwiseAbs().maxCoeff(), 1e-12 * reference.cwiseAbs().maxCoeff());
  }
}

void expect_solves(const Eigen::MatrixXd& m, int block, int blocks, bool structured) {
  System s(m.rows());
  expect_solves(s, m, block, blocks, structured);
}

TEST(BlockDenseSolver, SolvesEqualDiagonalBlocks) { expect_solves(stacked(7, 3, 0), 7, 3, true); }

TEST(BlockDenseSolver, SolvesBlocksFollowedByADiagonalTail) { expect_solves(stacked(5, 4, 6), 5, 4, true); }

// One solver set up again, as an integrator does: with, without, then with the structure.
TEST(BlockDenseSolver, SetupSwitchesBetweenTheBlockAndTheWholeMatrix) {
  const Eigen::MatrixXd with = stacked(4, 3, 2);
  Eigen::MatrixXd without = with;
  without(0, 5) = 0.5;
  System s(with.rows());
  expect_solves(s, with, 4, 3, true);
  expect_solves(s, without, 4, 3, false);
  expect_solves(s, stacked(4, 3, 2), 4, 3, true);
}

// Unequal blocks, a coupling between two blocks, a tail coupled into a block's rows: each is
// factored whole, with the same answer.
TEST(BlockDenseSolver, FactorsAMatrixWithoutTheStructureWhole) {
  Eigen::MatrixXd unequal = stacked(4, 3, 2);
  unequal(5, 6) += 0.25;  // inside the second block only
  expect_solves(unequal, 4, 3, false);
  Eigen::MatrixXd coupled = stacked(4, 3, 0);
  coupled(1, 9) = 0.5;  // a block's row reading another block's unknown
  expect_solves(coupled, 4, 3, false);
  Eigen::MatrixXd tail_into_block = stacked(4, 2, 3);
  tail_into_block(2, 9) = -0.75;  // a block's row reading a tail unknown
  expect_solves(tail_into_block, 4, 2, false);
  Eigen::MatrixXd tail_not_diagonal = stacked(4, 2, 3);
  tail_not_diagonal(9, 10) = 0.3;
  expect_solves(tail_not_diagonal, 4, 2, false);
}

TEST(BlockDenseSolver, ASingularBlockIsARecoverableFailure) {
  Eigen::MatrixXd m = stacked(3, 2, 0);
  for (int c = 0; c < 2; ++c) m.block(c * 3, c * 3, 3, 1).setZero();  // a zero column in each block
  System s(m.rows());
  EXPECT_EQ(s.setup(m, 3, 2), SUNLS_LUFACT_FAIL);
  EXPECT_EQ(s.solve_flag(), SUNLS_ILL_INPUT);  // no factors to solve with
  Eigen::MatrixXd zero_tail = stacked(3, 2, 2);
  zero_tail(7, 7) = 0.0;
  System t(zero_tail.rows());
  EXPECT_EQ(t.setup(zero_tail, 3, 2), SUNLS_LUFACT_FAIL);
}

TEST(BlockDenseSolver, BlocksThatDoNotFitAreRefused) {
  SUNContext ctx = nullptr;
  SUNContext_Create(nullptr, &ctx);
  EXPECT_THROW(block_dense_solver(10, 4, 3, ctx), saltus::Error);
  EXPECT_THROW(block_dense_solver(10, 0, 3, ctx), saltus::Error);
  SUNContext_Free(&ctx);
}

}  // namespace
