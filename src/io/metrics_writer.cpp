#include "io/metrics_writer.hpp"

#include "io/metrics_schema.hpp"
#include "io/staged_file.hpp"
#include "util/error.hpp"

#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>

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
          r.comm_wait_s,
          r.data_wait_s,
          static_cast<double>(r.skipped_steps)};
}

std::vector<double> eval_row_of(Task task, int64_t step, const EvalResult& r) {
  std::vector<double> row{static_cast<double>(step), r.loss};
  if (task == Task::kClassification) row.push_back(r.accuracy);
  if (task == Task::kNextToken) {
    row.push_back(std::exp(r.loss));
    row.push_back(r.accuracy);
  }
  return row;
}

bool is_integer_column(const std::string& name) {
  return name == "step" || name == "epoch" || name == "skipped_steps";
}

std::vector<H5Series> create_series(const H5Node& group, const std::vector<std::string>& columns) {
  std::vector<H5Series> series;
  for (const auto& column : columns) {
    series.push_back(group.create_series(
        column, is_integer_column(column) ? H5SeriesType::kInt64 : H5SeriesType::kFloat64));
  }
  return series;
}

// Rows of `group` in an existing metrics file whose step is at most `last_step`, column by column.
std::vector<std::vector<double>> rows_up_to(const H5File& file, const std::string& group,
                                            const std::vector<std::string>& columns,
                                            int64_t last_step) {
  std::vector<std::vector<double>> kept(columns.size());
  if (!file.has(group)) return kept;
  const H5Group g = file.open_group(group);
  const std::vector<double> steps = g.read_series(metrics_schema::kStep);
  for (size_t c = 0; c < columns.size(); ++c) {
    if (!g.has(columns[c])) continue;
    const std::vector<double> values = g.read_series(columns[c]);
    for (size_t r = 0; r < values.size() && r < steps.size(); ++r) {
      if (steps[r] <= static_cast<double>(last_step)) kept[c].push_back(values[r]);
    }
  }
  return kept;
}

// A column the old file lacked (written by an older ddptrain) gets NaN in its old rows (0 if it is
// an integer column), so the datasets of a group keep one length.
void append_rows(std::vector<H5Series>& series, const std::vector<std::string>& names,
                 const std::vector<std::vector<double>>& columns) {
  const size_t rows = columns[0].size();
  for (size_t c = 0; c < series.size(); ++c) {
    if (columns[c].size() == rows) {
      for (const double v : columns[c]) series[c].append(v);
    } else {
      const double missing =
          is_integer_column(names[c]) ? 0.0 : std::numeric_limits<double>::quiet_NaN();
      for (size_t r = 0; r < rows; ++r) series[c].append(missing);
    }
  }
}

// /ranks rows of an existing metrics file up to `last_step`, where it was written by as many ranks
// (a run resumed on another rank count starts /ranks afresh).
struct RankRows {
  std::vector<double> steps;
  std::vector<std::vector<double>> compute_s;
};
RankRows rank_rows_up_to(const H5File& file, int64_t world_size, int64_t last_step) {
  RankRows kept;
  if (world_size < 2 || !file.has(metrics_schema::kRanks)) return kept;
  const H5Group g = file.open_group(metrics_schema::kRanks);
  if (!g.has(metrics_schema::kStep) || !g.has(metrics_schema::kComputeS)) return kept;
  const std::vector<double> steps = g.read_series(metrics_schema::kStep);
  const std::vector<std::vector<double>> rows = g.read_row_series(metrics_schema::kComputeS);
  for (size_t r = 0; r < steps.size() && r < rows.size(); ++r) {
    if (steps[r] > static_cast<double>(last_step)) continue;
    if (static_cast<int64_t>(rows[r].size()) != world_size) return RankRows();
    kept.steps.push_back(steps[r]);
    kept.compute_s.push_back(rows[r]);
  }
  return kept;
}

}  // namespace

const std::vector<std::string>& MetricsWriter::train_columns() {
  static const std::vector<std::string> columns{
      "step",          "epoch",       "loss",        "lr",          "grad_norm",
      "samples_per_s", "step_time_s", "comm_wait_s", "data_wait_s", "skipped_steps"};
  return columns;
}

std::vector<std::string> MetricsWriter::eval_columns(Task task) {
  switch (task) {
    case Task::kClassification:
      return {"step", "loss", "accuracy"};
    case Task::kNextToken:
      return {"step", "loss", "perplexity", "accuracy"};
    case Task::kRegression:
      return {"step", "loss"};
  }
  return {"step", "loss"};
}

MetricsWriter::MetricsWriter(const std::string& path, const MetricsHeader& run)
    : file_(H5File::create_for_swmr(path)), task_(run.task) {
  const H5Node& root = file_;
  root.write_attribute(metrics_schema::kVersion, run.version);
  root.write_attribute(metrics_schema::kCreated, utc_now_iso8601());
  root.write_attribute(metrics_schema::kWorldSize, run.world_size);
  root.write_attribute(metrics_schema::kNodes, run.nodes);
  root.write_attribute(metrics_schema::kDevice, run.device);
  root.write_attribute(metrics_schema::kBackend, run.backend);
  root.write_attribute(metrics_schema::kConfig, run.config);
  root.write_attribute(metrics_schema::kTask, std::string(task_name(run.task)));
  const H5Group train = root.create_group(metrics_schema::kTrain);
  train_series_ = create_series(train, train_columns());
  const H5Group eval = root.create_group(metrics_schema::kEval);
  eval_series_ = create_series(eval, eval_columns(run.task));
  if (run.world_size > 1) {
    const H5Group ranks = root.create_group(metrics_schema::kRanks);
    ranks_step_ = ranks.create_series(metrics_schema::kStep, H5SeriesType::kInt64);
    ranks_compute_ = ranks.create_row_series(metrics_schema::kComputeS, run.world_size);
  }
}

std::unique_ptr<MetricsWriter> MetricsWriter::create_or_resume(const std::string& path,
                                                               const MetricsHeader& run,
                                                               int64_t resume_step,
                                                               int64_t log_every) {
  try {
    return create_or_resume_file(path, run, resume_step, log_every);
  } catch (const Error& e) {
    throw e.on_this_rank();  // rank 0 alone opens metrics.h5: peers know nothing of it
  }
}

std::unique_ptr<MetricsWriter> MetricsWriter::create_or_resume_file(const std::string& path,
                                                                    const MetricsHeader& run,
                                                                    int64_t resume_step,
                                                                    int64_t log_every) {
  namespace fs = std::filesystem;
  if (resume_step == 0 || !fs::exists(path)) {
    std::unique_ptr<MetricsWriter> writer(new MetricsWriter(path, run));
    writer->file_.start_swmr_write();
    return writer;
  }
  std::vector<std::vector<double>> train_rows;
  std::vector<std::vector<double>> eval_rows;
  RankRows rank_rows;
  const int64_t last_row = resume_step - resume_step % log_every;
  {
    const H5File old = H5File::open_read(path);  // also a killed job's file, still in SWMR mode
    train_rows = rows_up_to(old, metrics_schema::kTrain, train_columns(), last_row);
    eval_rows = rows_up_to(old, metrics_schema::kEval, eval_columns(run.task), resume_step);
    rank_rows = rank_rows_up_to(old, run.world_size, last_row);
  }
  std::unique_ptr<MetricsWriter> writer(new MetricsWriter(staging_path(path).string(), run));
  writer->file_.write_attribute(metrics_schema::kResumedAtStep, resume_step);
  append_rows(writer->train_series_, train_columns(), train_rows);
  append_rows(writer->eval_series_, eval_columns(run.task), eval_rows);
  if (writer->ranks_compute_) {
    for (size_t r = 0; r < rank_rows.steps.size(); ++r) {
      writer->ranks_step_->append(rank_rows.steps[r]);
      writer->ranks_compute_->append(rank_rows.compute_s[r]);
    }
  }
  writer->file_.start_swmr_write();  // flushes everything written so far
  publish_staged(path);              // the old file until now, the new one after
  return writer;
}

void MetricsWriter::append(const StepRecord& record) {
  const std::vector<double> row = row_of(record);
  for (size_t c = 0; c < train_series_.size(); ++c) train_series_[c].append(row[c]);
  if (ranks_compute_) {
    // A row of the wrong width throws (H5RowSeries::append): /ranks/step stays /train/step.
    ranks_compute_->append(record.rank_compute_s);
    ranks_step_->append(static_cast<double>(record.step));
  }
  file_.flush();
}

void MetricsWriter::append_eval(int64_t step, const EvalResult& result) {
  const std::vector<double> row = eval_row_of(task_, step, result);
  for (size_t c = 0; c < eval_series_.size(); ++c) eval_series_[c].append(row[c]);
  file_.flush();
}

}  // namespace ddpt
