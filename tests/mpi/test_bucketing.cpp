// Bucketing: many small buckets give the same training result as the default ones, the
// all-reduce of the first finished bucket starts before backward ends (overlap), and each step's
// gradients are that step's alone although zero_grad() only marks the slots (ddp/reducer.hpp).
#include <gtest/gtest.h>

#include "comm/mpi_comm.hpp"
#include "ddp/data_parallel.hpp"
#include "models/cpu_gemm.hpp"
#include "models/linear.hpp"
#include "support/autograd_hooks.hpp"
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

// Summed by MPI, the first bucket's all-reduce starts on the communication thread while backward
// goes on. Summed in node-shared memory, the first bucket is handed over (arrived) while backward
// goes on, and summed by whichever of the node's threads is free: a helper at the lowest priority
// starts only on cycles the ranks' compute leaves over (comm/node_all_reduce.hpp), which an
// oversubscribed machine may not have before backward ends, so there the hand-over is what is
// checked.
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
  const torch::Tensor inputs = torch::randn({1024, 512});
  for (const bool shared_memory : {false, true}) {
    DataParallelOptions options{256.0 / 1024, 256.0 / 1024};  // ~1 layer per bucket
    options.shared_memory = shared_memory;
    DataParallel engine(params, {}, comm, options);
    ASSERT_GE(engine.reducer().buckets().size(), 3u);
    const bool summed_by_mpi = !engine.reducer().buckets_in_shared_memory();
    ASSERT_EQ(summed_by_mpi, !shared_memory || comm.size() == 1);

    engine.zero_grad();
    engine.backward(net->forward(inputs).square().mean(), BackwardKind::kStepEnd);
    const ReducerTrace& trace = engine.reducer().last_trace();
    if (summed_by_mpi) {
      EXPECT_LT(trace.bucket_started.front(), trace.backward_end)
          << "the first bucket's all-reduce started only after backward had finished";
    } else {
      EXPECT_LT(trace.bucket_launched.front(), trace.backward_end)
          << "the first bucket was handed over only after backward had finished";
    }
    for (size_t b = 1; b < trace.bucket_launched.size(); ++b) {
      EXPECT_LE(trace.bucket_launched[b - 1], trace.bucket_launched[b]) << "launched out of order";
    }
    for (const auto& p : params) {
      EXPECT_TRUE(p.tensor.grad().defined());
      EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0) << p.name << " has no gradient";
    }
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
  engine.backward(loss, BackwardKind::kStepEnd);
  EXPECT_EQ(unused->weight.grad().abs().sum().item<double>(), 0.0);
  // used.bias gradient: 16 per output on even ranks, 0 on odd ranks; averaged over all ranks.
  const int even_ranks = (comm.size() + 1) / 2;
  const double expected = 16.0 * even_ranks / comm.size();
  EXPECT_NEAR(used->bias.grad()[0].item<double>(), expected, 1e-5);
}

// zero_grad() on CPU buckets only marks the slots, and the next backward writes them: a pre hook
// copies a parameter's first gradient in, ddpt::linear's weight product writes itself there, and
// finalize_backward() zeroes a slot that got nothing. Whatever wrote them, each step's gradients
// must be that step's: a parameter left out of a step reads zero, one that gets two gradients
// (from the product and from another use) their sum, and micro-steps without sync add up.
TEST(Bucketing, EachStepHasItsOwnGradientsWhoeverWritesThem) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(4);  // the same on every rank, so the average over ranks is every rank's own
  Linear first(16, 32), second(32, 8);
  const torch::Tensor extra = torch::randn({8}).requires_grad_(true);
  const std::vector<torch::Tensor> tensors{first->weight, first->bias, second->weight, second->bias,
                                           extra};
  std::vector<NamedTensor> params;
  for (size_t i = 0; i < tensors.size(); ++i)
    params.push_back({"p" + std::to_string(i), tensors[i]});
  // Added before the reducer's pre hook (which hands on nothing once it has copied a gradient
  // in), so it sees what the operations left for the accumulator.
  const auto accumulator = torch::autograd::impl::grad_accumulator(first->weight);
  int received = -1;
  accumulator->add_pre_hook(std::make_unique<ReceivedGradient>(&received));
  DataParallel engine(params, {}, comm, {1.0 / 1024, 2.0 / 1024});
  ASSERT_GE(engine.reducer().buckets().size(), 2u);

  auto loss_of = [&](const torch::Tensor& x, int64_t step) {
    const torch::Tensor h = torch::relu(first(x));
    torch::Tensor y = second(h);
    // Even steps: `extra` takes part and first.weight gets a second gradient beside its product's.
    if (step % 2 == 0) y = y * extra + 0.01 * first->weight.square().sum();
    // Every step: second.weight's product twice (the second one is added, not written).
    return y.square().mean() + ddpt::linear(h, second->weight).mean();
  };
  for (int64_t step = 0; step < 4; ++step) {
    std::vector<torch::Tensor> expected(tensors.size());
    for (auto& e : expected) e = torch::zeros({0});
    engine.zero_grad();
    for (int micro = 0; micro < 2; ++micro) {
      const torch::Tensor x = torch::randn({6, 16});
      // The reference: autograd::grad leaves .grad alone.
      const auto grads = torch::autograd::grad({loss_of(x, step)}, tensors, {}, false, false,
                                               /*allow_unused=*/true);
      for (size_t i = 0; i < tensors.size(); ++i) {
        const torch::Tensor g = grads[i].defined() ? grads[i] : torch::zeros_like(tensors[i]);
        expected[i] = micro == 0 ? g.clone() : expected[i] + g;
      }
      engine.backward(loss_of(x, step),
                      micro == 1 ? BackwardKind::kStepEnd : BackwardKind::kMicroStep);
      if (step % 2 == 1 && cpu_gemm_available()) {
        // Odd steps: first.weight's gradient is its product's alone, written into the empty
        // slot at the first micro-step and handed to the accumulator at the second.
        EXPECT_EQ(received, micro) << "step " << step << ", micro-step " << micro;
      }
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const double scale = std::max(expected[i].abs().max().item<double>(), 1e-12);
      EXPECT_LT((tensors[i].grad() - expected[i]).abs().max().item<double>() / scale, 1e-5)
          << "parameter " << i << " at step " << step;
    }
  }
}

// ZeRO-2: a bucket borrows pooled buffers from its first gradient to the end of its reduction.
// Here the first bucket to launch holds a parameter no forward uses, so it cannot launch before
// backward ends, and every later bucket must borrow buffers of its own meanwhile (waiting for
// the first would never end). Each rank's shards then hold its blocks of the summed gradients,
// and no parameter holds a whole gradient; the second step's shards are that step's alone.
TEST(Bucketing, Zero2BucketsBorrowWhileAnEarlierBucketWaits) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(5);  // the same on every rank, so the sum over ranks is every rank's own
  std::vector<torch::nn::Linear> layers;
  std::vector<NamedTensor> params;
  for (int i = 0; i < 8; ++i) {
    layers.emplace_back(8, 8);
    params.push_back({"l" + std::to_string(i) + ".weight", layers.back()->weight});
    params.push_back({"l" + std::to_string(i) + ".bias", layers.back()->bias});
  }
  // Registered last: bucketed first (buckets take parameters in reverse order).
  const torch::Tensor unused = torch::randn({8}).requires_grad_(true);
  params.push_back({"unused", unused});
  // Caps of 100 floats: a weight (64) and a bias (8) and the next weight share a bucket, so every
  // bucket borrows from the pool (a parameter of a bucket of its own would not).
  DataParallelOptions options{100.0 * 4 / 1048576, 100.0 * 4 / 1048576};
  options.sharding.stage = ZeroStage::kGradients;
  options.sharding.shards = comm.size();
  // Each rank's parameters its own, as in a run with a moving average (ShardingPlan::
  // share_parameters): the shards' gradients are what is checked here.
  options.sharding.moving_average = true;
  DataParallel engine(params, {}, comm, options);
  const Reducer& reducer = engine.reducer();
  ASSERT_TRUE(reducer.gradients_sharded());
  ASSERT_GE(reducer.buckets().size(), 4u);
  for (const auto& spec : reducer.buckets()) ASSERT_GT(spec.params.size(), 1u);
  for (int step = 0; step < 2; ++step) {
    const torch::Tensor x = torch::randn({4, 8});
    auto loss_of = [&] {
      torch::Tensor h = x;
      for (auto& layer : layers) h = torch::tanh(layer(h));
      return h.square().sum() * (step + 1);
    };
    std::vector<torch::Tensor> tensors;
    for (const auto& p : params) tensors.push_back(p.tensor);
    const auto expected =
        torch::autograd::grad({loss_of()}, tensors, {}, false, false, /*allow_unused=*/true);
    engine.zero_grad();
    engine.backward(loss_of(), BackwardKind::kStepEnd);
    for (size_t b = 0; b < reducer.shards().size(); ++b) {
      for (const ShardPiece& piece : reducer.shards()[b].pieces) {
        const torch::Tensor& want = expected[piece.param];
        const torch::Tensor got =
            reducer.shard_gradient(b).narrow(0, piece.block_offset, piece.numel);
        if (!want.defined()) {
          EXPECT_EQ(got.abs().max().item<double>(), 0) << params[piece.param].name;
          continue;
        }
        const torch::Tensor part = want.reshape(-1).narrow(0, piece.param_offset, piece.numel);
        EXPECT_TRUE(torch::allclose(got, part, 1e-5, 1e-6))
            << params[piece.param].name << " at step " << step;
      }
    }
    for (const auto& p : params) EXPECT_FALSE(p.tensor.grad().defined()) << p.name;
  }
  // The waiting bucket's buffers, and one for each bucket that filled meanwhile.
  int64_t largest = 0;
  for (const auto& spec : reducer.buckets()) largest = std::max(largest, spec.numel);
  EXPECT_GE(reducer.held_bytes(), static_cast<int64_t>(reducer.buckets().size()) * largest * 4)
      << "the pool did not grow: a bucket waited for one that could not launch";
}

}  // namespace
}  // namespace ddpt::testing
