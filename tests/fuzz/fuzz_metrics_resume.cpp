// Fuzz target: the metrics file of a run that train.resume continues. Rank 0 keeps the rows of
// the old metrics.h5 up to the checkpoint's step in a new file, then appends. Input: the old
// file's bytes (seeds: metrics.h5 of short runs with evaluation, tests/fuzz/corpus/metrics_resume).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuzz_support.hpp"
#include "io/metrics_writer.hpp"

namespace {

// The seeds' runs log every 10 steps and evaluate every 10; resuming at 25 keeps rows on both
// sides of the cut and re-writes the row in progress.
constexpr int64_t kResumeStep = 25;
constexpr int64_t kLogEvery = 10;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ddpt::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ddpt::fuzz::write_input(data, size, "metrics.h5");
  ddpt::fuzz::run_under_contract([&] {
    ddpt::MetricsHeader run;
    run.version = "fuzz";
    run.device = "cpu";
    run.backend = "mpi";
    run.config = "[run]\n";
    run.task = ddpt::Task::kClassification;
    const std::unique_ptr<ddpt::MetricsWriter> writer =
        ddpt::MetricsWriter::create_or_resume(path, run, kResumeStep, kLogEvery);
    ddpt::StepRecord record;
    record.step = kResumeStep + 5;
    writer->append(record);
    writer->append_eval(kResumeStep + 5, ddpt::EvalResult{});
  });
  return 0;
}
