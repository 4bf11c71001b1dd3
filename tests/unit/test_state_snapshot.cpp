#include <gtest/gtest.h>

#include <map>

#include "io/state_snapshot.hpp"

namespace ddpt {
namespace {

// A StateWriter that keeps what a replay hands it.
class TensorsWritten : public StateWriter {
 public:
  std::unique_ptr<StateWriter> group(const std::string&) override {
    return std::make_unique<TensorsWritten>();
  }
  void tensor(const std::string& name, const torch::Tensor& value) override {
    tensors[name] = value.clone();
  }
  void rank_row(const std::string&, const torch::Tensor&) override {}
  void tensor_part(const std::string&, const std::vector<int64_t>&, int64_t,
                   const torch::Tensor&) override {}
  void scalar(const std::string&, int64_t) override {}
  void scalar(const std::string&, double) override {}
  void scalar(const std::string&, const std::string&) override {}
  std::map<std::string, torch::Tensor> tensors;
};

void save(StateWriter& writer, const torch::Tensor& weights, const torch::Tensor& steps) {
  writer.tensor("weights", weights);
  writer.scalar("step", int64_t{3});
  writer.tensor("steps", steps);
}

// checkpoint.async's first snapshot copies into memory allocated ahead of it from the layout of
// a non-copying snapshot; later snapshots into the previous one's. The copies are the values at
// the time of the snapshot, whatever happens to the sources afterwards.
TEST(StateSnapshot, CopiesIntoHostMemoryAllocatedAheadFromItsLayout) {
  torch::Tensor weights = torch::randn({4, 5});
  torch::Tensor steps = torch::arange(7, torch::kLong);
  StateSnapshot layout(/*rank=*/0, /*copy=*/false);
  save(layout, weights, steps);
  const std::vector<TensorLayout> shapes = layout.host_memory_layout();
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].sizes, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(shapes[1].dtype, torch::kLong);
  EXPECT_FALSE(shapes[0].pinned);

  std::vector<torch::Tensor> memory = allocate_host_memory(shapes);
  const void* first = memory[0].data_ptr();
  StateSnapshot snapshot(/*rank=*/0, /*copy=*/true, std::move(memory));
  save(snapshot, weights, steps);
  const torch::Tensor expected = weights.clone();
  weights.add_(1.0);  // training goes on

  TensorsWritten written;
  snapshot.replay(written);
  EXPECT_TRUE(torch::equal(written.tensors.at("weights"), expected));
  EXPECT_TRUE(torch::equal(written.tensors.at("steps"), steps));

  std::vector<torch::Tensor> reused = snapshot.release_host_memory();
  ASSERT_EQ(reused.size(), 2u);
  EXPECT_EQ(reused[0].data_ptr(), first);  // copied into the memory allocated ahead
  StateSnapshot next(/*rank=*/0, /*copy=*/true, std::move(reused));
  save(next, weights, steps);
  TensorsWritten written_next;
  next.replay(written_next);
  EXPECT_EQ(next.release_host_memory()[0].data_ptr(), first);
  EXPECT_TRUE(torch::equal(written_next.tensors.at("weights"), weights));
}

// Memory of another shape is not used: the copy gets fresh memory and the right values.
TEST(StateSnapshot, HostMemoryOfAnotherShapeIsNotUsed) {
  const torch::Tensor weights = torch::randn({3, 3});
  std::vector<torch::Tensor> memory = allocate_host_memory({{{9}, torch::kFloat, false}});
  const void* wrong = memory[0].data_ptr();
  StateSnapshot snapshot(/*rank=*/0, /*copy=*/true, std::move(memory));
  snapshot.tensor("weights", weights);
  TensorsWritten written;
  snapshot.replay(written);
  EXPECT_TRUE(torch::equal(written.tensors.at("weights"), weights));
  EXPECT_NE(snapshot.release_host_memory()[0].data_ptr(), wrong);
}

// Of a replicated tensor only rank kReplicatedTensorRank's value lands in the file: another
// rank's snapshot copies none (it asks for no host memory and replays a stand-in of the shape and
// dtype), while its rows and parts, which it does write, are copied as on rank 0.
TEST(StateSnapshot, AnotherRankCopiesNoReplicatedTensor) {
  const int other = kReplicatedTensorRank + 1;
  const torch::Tensor weights = torch::randn({4, 5});
  const torch::Tensor steps = torch::arange(7, torch::kLong);
  const torch::Tensor row = torch::arange(3, torch::kByte);
  StateSnapshot layout(other, /*copy=*/false);
  save(layout, weights, steps);
  layout.rank_row("rng", row);
  const std::vector<TensorLayout> shapes = layout.host_memory_layout();
  ASSERT_EQ(shapes.size(), 1u);  // the row only
  EXPECT_EQ(shapes[0].dtype, torch::kByte);

  std::vector<torch::Tensor> memory = allocate_host_memory(shapes);
  const void* row_memory = memory[0].data_ptr();
  StateSnapshot snapshot(other, /*copy=*/true, std::move(memory));
  save(snapshot, weights, steps);
  snapshot.rank_row("rng", row);
  TensorsWritten written;
  snapshot.replay(written);
  const torch::Tensor& stand_in = written.tensors.at("weights");
  EXPECT_EQ(stand_in.sizes(), weights.sizes());
  EXPECT_EQ(stand_in.scalar_type(), torch::kFloat);
  EXPECT_EQ(written.tensors.at("steps").scalar_type(), torch::kLong);
  // What the file holds over 2 ranks: both tensors in full, and two rows.
  EXPECT_EQ(snapshot.file_data_bytes(/*world_size=*/2), 4 * 5 * 4 + 7 * 8 + 2 * 3);
  const std::vector<torch::Tensor> reusable = snapshot.release_host_memory();
  ASSERT_EQ(reusable.size(), 1u);  // the row's copy, in the memory allocated for it
  EXPECT_EQ(reusable[0].data_ptr(), row_memory);
  EXPECT_TRUE(torch::equal(reusable[0], row));
}

}  // namespace
}  // namespace ddpt
