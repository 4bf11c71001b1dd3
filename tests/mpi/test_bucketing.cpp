// Bucketing: many small buckets give the same training result as the default ones, and the
// all-reduce of the first finished bucket starts before backward ends (overlap).
#include <gtest/gtest.h>

#include "comm/mpi_comm.hpp"
#include "ddp/data_parallel.hpp"
#include "support/training_fixture.hpp"

namespace ddpt::testing {
namespace {

TEST(Bucketing, TinyBucketsGiveTheSameResult) {
  Config many = small_config(OptimizerType::kSgd);
  many.ddp.first_bucket_mb = 1.0 / 1024;  // 1 KiB: one bucket per parameter or so
  many.ddp.bucket_mb = 2.0 / 1024;
  Config usual = small_config(OptimizerType::kSgd);
  const auto with_many = train_and_get_parameters(many, MPI_COMM_WORLD);
  const auto with_usual = train_and_get_parameters(usual, MPI_COMM_WORLD);
  EXPECT_LT(max_relative_difference(with_many, with_usual), 1e-6);
}

TEST(Bucketing, TinyBucketCapMakesManyBuckets) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(1);
  torch::nn::Sequential net(torch::nn::Linear(32, 64), torch::nn::ReLU(), torch::nn::Linear(64, 64),
                            torch::nn::ReLU(), torch::nn::Linear(64, 5));
  std::vector<NamedTensor> params;
  for (const auto& p : net->named_parameters()) params.push_back({p.key(), p.value()});
  // Parameters 0..5: w0 8 KiB, b0, w1 16 KiB, b1, w2 1280 B, b2. Caps: 1 KiB first, then 2 KiB.
  DataParallel engine(params, {}, comm, {1.0 / 1024, 2.0 / 1024});
  const auto& buckets = engine.reducer().buckets();
  ASSERT_EQ(buckets.size(), 3u);  // versus 1 bucket at the default caps
  // Reverse parameter order: the last layer's bias opens the first bucket.
  EXPECT_EQ(buckets[0].params, (std::vector<size_t>{5, 4}));
  EXPECT_EQ(buckets[1].params, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(buckets[2].params, (std::vector<size_t>{1, 0}));
  DataParallel usual(params, {}, comm, {});
  EXPECT_EQ(usual.reducer().buckets().size(), 1u);
}

TEST(Bucketing, FirstBucketAllReduceStartsBeforeBackwardEnds) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::set_num_threads(1);
  torch::manual_seed(2);
  // Wide layers and a large batch: backward of the lower layers takes tens of milliseconds,
  // much longer than it takes the communication thread to pick up the first bucket.
  torch::nn::Sequential net;
  for (int layer = 0; layer < 5; ++layer) {
    net->push_back(torch::nn::Linear(512, 512));
    net->push_back(torch::nn::ReLU());
  }
  std::vector<NamedTensor> params;
  for (const auto& p : net->named_parameters()) params.push_back({p.key(), p.value()});
  DataParallel engine(params, {}, comm, {256.0 / 1024, 256.0 / 1024});  // ~1 layer per bucket
  ASSERT_GE(engine.reducer().buckets().size(), 3u);

  const torch::Tensor inputs = torch::randn({1024, 512});
  engine.zero_grad();
  engine.backward(net->forward(inputs).square().mean(), /*sync=*/true);
  const ReducerTrace& trace = engine.reducer().last_trace();
  EXPECT_LT(trace.bucket_started.front(), trace.backward_end)
      << "the first bucket's all-reduce started only after backward had finished";
  for (size_t b = 1; b < trace.bucket_launched.size(); ++b) {
    EXPECT_LE(trace.bucket_launched[b - 1], trace.bucket_launched[b]) << "launched out of order";
  }
  for (const auto& p : params) {
    EXPECT_TRUE(p.tensor.grad().defined());
    EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0) << p.name << " has no gradient";
  }
}

TEST(Bucketing, UnusedParameterIsReducedAsZerosWithoutHanging) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(3);
  torch::nn::Linear used(8, 4), unused(8, 4);
  std::vector<NamedTensor> params{{"used.weight", used->weight},
                                  {"used.bias", used->bias},
                                  {"unused.weight", unused->weight},
                                  {"unused.bias", unused->bias}};
  DataParallel engine(params, {}, comm, {1.0 / 1024, 1.0 / 1024});
  // Every rank leaves `unused` out; on odd ranks `used` is also skipped (multiplied by zero
  // would still make a gradient, so it is left out of the graph entirely).
  const torch::Tensor x = torch::randn({16, 8});
  engine.zero_grad();
  torch::Tensor loss =
      comm.rank() % 2 == 0 ? used->forward(x).sum() : (x.sum() * 0).requires_grad_();
  engine.backward(loss, true);
  EXPECT_EQ(unused->weight.grad().abs().sum().item<double>(), 0.0);
  // used.bias gradient: 16 per output on even ranks, 0 on odd ranks; averaged over all ranks.
  const int even_ranks = (comm.size() + 1) / 2;
  const double expected = 16.0 * even_ranks / comm.size();
  EXPECT_NEAR(used->bias.grad()[0].item<double>(), expected, 1e-5);
}

}  // namespace
}  // namespace ddpt::testing
