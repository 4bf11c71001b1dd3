#include "io/metrics_writer.hpp"

#include <algorithm>
#include <ctime>
#include <filesystem>

namespace ddpt {
namespace {

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::vector<double> row_of(const StepRecord& r) {
  return {static_cast<double>(r.step),
          static_cast<double>(r.epoch),
          r.loss,
          r.lr,
          r.grad_norm,
          r.samples_per_s,
          r.step_time_s,
          r.comm_wait_s};
}

}  // namespace

const std::vector<std::string>& MetricsWriter::train_columns() {
  static const std::vector<std::string> columns{
      "step", "epoch", "loss", "lr", "grad_norm", "samples_per_s", "step_time_s", "comm_wait_s"};
  return columns;
}

MetricsWriter::MetricsWriter(const std::string& path, const RunDescription& run)
    : file_(H5File::create(path)) {
  const hid_t root = file_.id();
  write_attribute(root, "ddptrain_version", run.version);
  write_attribute(root, "created", utc_now_iso8601());
  write_attribute(root, "world_size", run.world_size);
  write_attribute(root, "nodes", run.nodes);
  write_attribute(root, "device", run.device);
  write_attribute(root, "backend", run.backend);
  write_attribute(root, "config", run.config);
  train_ = create_group(root, "train");
  for (const auto& column : train_columns()) {
    const bool integer = column == "step" || column == "epoch";
    train_series_.push_back(H5Series::create(
        train_.get(), column, integer ? H5Series::Type::kInt64 : H5Series::Type::kFloat64));
  }
  // /eval has its layout from the start; rows arrive once evaluation runs.
  eval_ = create_group(root, "eval");
  H5Series::create(eval_.get(), "step", H5Series::Type::kInt64);
  H5Series::create(eval_.get(), "loss", H5Series::Type::kFloat64);
  file_.flush();
}

MetricsWriter::MetricsWriter(H5File file, int64_t resume_step) : file_(std::move(file)) {
  train_ = open_group(file_.id(), "train");
  eval_ = open_group(file_.id(), "eval");
  const std::vector<double> steps = H5Series::read_all(train_.get(), "step");
  const auto kept = std::count_if(steps.begin(), steps.end(),
                                  [&](double s) { return s <= static_cast<double>(resume_step); });
  for (const auto& column : train_columns()) {
    train_series_.push_back(H5Series::open(train_.get(), column));
    train_series_.back().truncate(kept);
  }
  file_.flush();
}

std::unique_ptr<MetricsWriter> MetricsWriter::create_or_resume(const std::string& path,
                                                               const RunDescription& run,
                                                               int64_t resume_step) {
  if (resume_step > 0 && std::filesystem::exists(path)) {
    return std::unique_ptr<MetricsWriter>(new MetricsWriter(H5File::open_write(path), resume_step));
  }
  return std::make_unique<MetricsWriter>(path, run);
}

void MetricsWriter::append(const StepRecord& record) {
  const std::vector<double> row = row_of(record);
  for (size_t c = 0; c < train_series_.size(); ++c) train_series_[c].append(row[c]);
  file_.flush();
}

}  // namespace ddpt
