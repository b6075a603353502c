// The vector store (src/solvers/vector_store.hpp) and the clones that take their data from it
// (src/solvers/vector_clones.hpp): zeroed and aligned blocks, reuse of released ones (zeroed
// again), blocks past one mapping and past the largest stored size, the in-use count, two
// threads at once; clones that SUNDIALS' generic operations create, use and destroy, with and
// without data, with a caller's array set in, sharing one operation table per kind.
#include "../src/solvers/serial_vector_kernels.hpp"
#include "../src/solvers/vector_clones.hpp"
#include "../src/solvers/vector_store.hpp"

#include <gtest/gtest.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>

#include <algorithm>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

namespace {

using saltus::detail::acquire_vector_data;
using saltus::detail::release_vector_data;
using saltus::detail::vector_data_bytes;
using saltus::detail::vector_data_in_use;

bool all_zero(const double* data, std::size_t length) {
  return std::all_of(data, data + length, [](double x) { return x == 0.0; });
}

bool aligned(const double* data) { return reinterpret_cast<std::uintptr_t>(data) % 64 == 0; }

TEST(VectorStore, BlocksAreZeroedAlignedAndCounted) {
  EXPECT_EQ(vector_data_bytes(1), 64u);
  EXPECT_EQ(vector_data_bytes(8), 64u);
  EXPECT_EQ(vector_data_bytes(9), 128u);
  EXPECT_EQ(acquire_vector_data(0), nullptr);
  const std::size_t before = vector_data_in_use();
  double* a = acquire_vector_data(37);
  double* b = acquire_vector_data(37);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(aligned(a));
  EXPECT_TRUE(aligned(b));
  EXPECT_TRUE(all_zero(a, 37));
  EXPECT_TRUE(all_zero(b, 37));
  EXPECT_EQ(vector_data_in_use(), before + 2 * vector_data_bytes(37));
  std::fill_n(a, 37, 1.5);
  EXPECT_TRUE(all_zero(b, 37));  // the blocks do not overlap
  release_vector_data(a, 37);
  EXPECT_EQ(vector_data_in_use(), before + vector_data_bytes(37));
  // A released block comes back zeroed, whatever its last user left in it.
  double* c = acquire_vector_data(37);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(all_zero(c, 37));
  release_vector_data(b, 37);
  release_vector_data(c, 37);
  release_vector_data(nullptr, 37);  // nothing, as free(nullptr)
  EXPECT_EQ(vector_data_in_use(), before);
}

TEST(VectorStore, BlocksPastOneMappingAndPastTheLargestStoredSize) {
  const std::size_t before = vector_data_in_use();
  // 100 blocks of 1 MiB: more than one 64 MiB mapping. Each is written whole (block k with
  // k + 1, nowhere zero), and each keeps its own values.
  constexpr std::size_t kLength = (std::size_t{1} << 20) / sizeof(double);
  std::vector<double*> blocks;
  for (int k = 0; k < 100; ++k) {
    double* block = acquire_vector_data(kLength);
    ASSERT_NE(block, nullptr);
    ASSERT_TRUE(all_zero(block, kLength)) << k;
    std::fill_n(block, kLength, static_cast<double>(k + 1));
    blocks.push_back(block);
  }
  for (int k = 0; k < 100; ++k) {
    const double* block = blocks[static_cast<std::size_t>(k)];
    EXPECT_EQ(block[0], k + 1);
    EXPECT_EQ(block[kLength - 1], k + 1);
  }
  EXPECT_EQ(vector_data_in_use(), before + 100 * vector_data_bytes(kLength));
  for (int k = 0; k < 100; ++k) release_vector_data(blocks[static_cast<std::size_t>(k)], kLength);
  EXPECT_EQ(vector_data_in_use(), before);
  // The mappings start over once empty: new blocks, where the old ones were written, are zero
  // again (the store hands them out without zeroing them).
  std::vector<double*> again;
  for (int k = 0; k < 100; ++k) {
    again.push_back(acquire_vector_data(kLength));
    ASSERT_NE(again.back(), nullptr);
    ASSERT_TRUE(all_zero(again.back(), kLength)) << k;
  }
  for (double* block : again) release_vector_data(block, kLength);
  // 16 MiB: from the heap, zeroed and counted the same way.
  constexpr std::size_t kLarge = (std::size_t{16} << 20) / sizeof(double);
  double* large = acquire_vector_data(kLarge);
  ASSERT_NE(large, nullptr);
  EXPECT_TRUE(aligned(large));
  EXPECT_TRUE(all_zero(large, kLarge));
  EXPECT_EQ(vector_data_in_use(), before + vector_data_bytes(kLarge));
  release_vector_data(large, kLarge);
  EXPECT_EQ(vector_data_in_use(), before);
}

TEST(VectorStore, TwoThreadsAtOnceKeepTheirOwnValues) {
  const std::size_t before = vector_data_in_use();
  auto work = [](double mark, bool* ok) {
    std::vector<std::pair<double*, std::size_t>> held;
    for (int round = 0; round < 2000; ++round) {
      const std::size_t length = 1 + static_cast<std::size_t>(round % 97);
      double* block = acquire_vector_data(length);
      if (block == nullptr || !all_zero(block, length)) {
        *ok = false;
        return;
      }
      std::fill_n(block, length, mark);
      held.emplace_back(block, length);
      if (round % 3 == 2) {  // release an older block
        const auto [old, old_length] = held[held.size() / 2];
        if (!std::all_of(old, old + old_length, [mark](double x) { return x == mark; })) *ok = false;
        release_vector_data(old, old_length);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(held.size() / 2));
      }
    }
    for (const auto& [block, length] : held) {
      if (!std::all_of(block, block + length, [mark](double x) { return x == mark; })) *ok = false;
      release_vector_data(block, length);
    }
  };
  bool first = true, second = true;
  std::thread a(work, 1.0, &first), b(work, 2.0, &second);
  a.join();
  b.join();
  EXPECT_TRUE(first);
  EXPECT_TRUE(second);
  EXPECT_EQ(vector_data_in_use(), before);
}

class Clones : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(SUNContext_Create(nullptr, &ctx_), 0);
    like_ = N_VNew_Serial(5, ctx_);
    saltus::detail::use_compiled_vector_kernels(like_);
    for (sunindextype i = 0; i < 5; ++i) NV_Ith_S(like_, i) = static_cast<double>(i + 1);
  }
  void TearDown() override {
    N_VDestroy(like_);
    SUNContext_Free(&ctx_);
  }
  SUNContext ctx_ = nullptr;
  N_Vector like_ = nullptr;
};

TEST_F(Clones, ComeZeroedShareOneTableAndReleaseTheirData) {
  const std::size_t before = vector_data_in_use();
  N_Vector a = N_VClone(like_);
  ASSERT_NE(a, nullptr);
  N_Vector b = N_VClone(a);  // a clone of a clone
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(N_VGetLength(a), 5);
  EXPECT_EQ(N_VGetLength(b), 5);
  EXPECT_TRUE(all_zero(NV_DATA_S(a), 5));
  EXPECT_TRUE(all_zero(NV_DATA_S(b), 5));
  EXPECT_NE(NV_DATA_S(a), NV_DATA_S(b));
  EXPECT_EQ(a->ops, b->ops);      // one table for the clones of a kind
  EXPECT_NE(a->ops, like_->ops);  // which is not the original's: it destroys clones
  EXPECT_EQ(vector_data_in_use(), before + 2 * vector_data_bytes(5));
  // The generic operations work on them: a = 2 like + 0 a, b = a - like.
  N_VLinearSum(2.0, like_, 0.0, a, a);
  N_VLinearSum(1.0, a, -1.0, like_, b);
  for (sunindextype i = 0; i < 5; ++i) {
    EXPECT_EQ(NV_Ith_S(a, i), 2.0 * static_cast<double>(i + 1));
    EXPECT_EQ(NV_Ith_S(b, i), static_cast<double>(i + 1));
  }
  EXPECT_EQ(N_VMaxNorm(b), 5.0);
  N_VDestroy(a);
  N_VDestroy(b);
  EXPECT_EQ(vector_data_in_use(), before);
}

TEST_F(Clones, ArraysAndEmptyClonesWithACallersData) {
  const std::size_t before = vector_data_in_use();
  N_Vector* array = N_VCloneVectorArray(3, like_);
  ASSERT_NE(array, nullptr);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(all_zero(NV_DATA_S(array[k]), 5));
  EXPECT_EQ(vector_data_in_use(), before + 3 * vector_data_bytes(5));
  N_VDestroyVectorArray(array, 3);
  EXPECT_EQ(vector_data_in_use(), before);

  // An empty clone holds no data until given an array, and leaves that array to its owner.
  std::vector<double> mine = {1, 2, 3, 4, 5};
  N_Vector empty = N_VCloneEmpty(like_);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(N_VGetArrayPointer(empty), nullptr);
  EXPECT_EQ(N_VGetLength(empty), 5);
  N_VSetArrayPointer(mine.data(), empty);
  EXPECT_EQ(N_VDotProd(empty, like_), 1 + 4 + 9 + 16 + 25);
  N_Vector from_empty = N_VClone(empty);  // a clone with data of an empty clone
  ASSERT_NE(from_empty, nullptr);
  EXPECT_TRUE(all_zero(NV_DATA_S(from_empty), 5));
  N_VDestroy(empty);
  N_VDestroy(from_empty);
  EXPECT_EQ(mine[4], 5.0);
  EXPECT_EQ(vector_data_in_use(), before);

  // A clone whose data is replaced by a caller's still gives its own block back.
  N_Vector replaced = N_VClone(like_);
  ASSERT_NE(replaced, nullptr);
  N_VSetArrayPointer(mine.data(), replaced);
  N_VScale(2.0, like_, replaced);
  EXPECT_EQ(mine[4], 10.0);
  N_VDestroy(replaced);
  EXPECT_EQ(vector_data_in_use(), before);
}

TEST_F(Clones, OfTwoVectorsWithTheSameOperationsShareOneTable) {
  N_Vector other = N_VNew_Serial(3, ctx_);
  saltus::detail::use_compiled_vector_kernels(other);
  N_Vector a = N_VClone(like_), b = N_VClone(other);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->ops, b->ops);
  EXPECT_EQ(N_VGetLength(b), 3);
  // Another kind (SUNDIALS' own kernels and fused operations) has a table of its own, whose
  // clones still come from the store.
  N_Vector fused = N_VNew_Serial(3, ctx_);
  N_VEnableFusedOps_Serial(fused, SUNTRUE);
  saltus::detail::use_compiled_vector_kernels(fused);
  N_Vector c = N_VClone(fused);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->ops, a->ops);
  EXPECT_NE(c->ops->nvlinearcombination, nullptr);
  EXPECT_EQ(a->ops->nvlinearcombination, nullptr);
  EXPECT_TRUE(all_zero(NV_DATA_S(c), 3));
  for (N_Vector v : {a, b, c, other, fused}) N_VDestroy(v);
}

// SALTUS_VECTORS_ON_HEAP (read once per process, so in a process of its own): every block from
// the heap, none in the store's mappings.
TEST(VectorStoreOnHeap, TheEnvironmentSendsEveryBlockToTheHeap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the setting is read once
  EXPECT_EXIT(
      {
        setenv("SALTUS_VECTORS_ON_HEAP", "1", 1);
        double* block = acquire_vector_data(100);
        const bool from_heap = block != nullptr && all_zero(block, 100) && aligned(block) &&
                               saltus::detail::vector_data_in_mappings() == 0 &&
                               vector_data_in_use() == vector_data_bytes(100);
        release_vector_data(block, 100);
        std::exit(from_heap && vector_data_in_use() == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CloneBytes, HeaderAndDataAsTheStoreTakesThem) {
  const saltus::detail::CloneBytes bytes = saltus::detail::clone_bytes(37);
  EXPECT_EQ(bytes.data, static_cast<long>(vector_data_bytes(37)));
  // The generic vector, the serial content and the block pointer: no operation table.
  EXPECT_EQ(bytes.header_request, static_cast<long>(sizeof(_generic_N_Vector) + sizeof(_N_VectorContent_Serial) +
                                                    sizeof(double*)));
  EXPECT_EQ(saltus::detail::clone_bytes(0).data, 0);
}

}  // namespace
