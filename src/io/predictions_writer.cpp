#include "io/predictions_writer.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "io/predictions_schema.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
#include "util/version.hpp"

namespace ddpt {

void write_predictions(const std::string& path, const PredictionsSource& source, int64_t rows,
                       int64_t first, const torch::Tensor& predictions, HostGroup& group) {
  const StagedOutput output{fmt::format("predictions '{}'", path)};
  const int64_t row_bytes = predictions.size(1) * int64_t{sizeof(float)} +
                            (source.task == Task::kClassification ? int64_t{sizeof(int64_t)} : 0);
  check_staged_space(path, rows * row_bytes + rows * row_bytes / 32 + kStagedMetadataBytes, group,
                     output);
  {
    // A failed write can leave HDF5's ranks in different collectives of its close, where the
    // watchdog sees none: the phase's deadline ends that.
    const Watchdog::Scope writing = group.phase("write of predictions " + path);
    write_staged_h5(path, group.comm(), output, [&](H5File& file) {
      const H5Node& root = file;
      root.write_attribute(predictions_schema::kVersion, ddptrain_version());
      root.write_attribute(predictions_schema::kCheckpoint,
                           std::filesystem::weakly_canonical(source.checkpoint).string());
      root.write_attribute(predictions_schema::kStep, source.step);
      root.write_attribute(predictions_schema::kInput,
                           std::filesystem::absolute(source.input).string());
      root.write_attribute(predictions_schema::kInputDataset, source.input_dataset);
      root.write_attribute(predictions_schema::kTask, std::string(task_name(source.task)));
      root.write_attribute(predictions_schema::kWorldSize, static_cast<int64_t>(group.size()));
      H5Dataset written = root.create_dataset(predictions_schema::kPredictions, torch::kFloat,
                                              {rows, predictions.size(1)});
      written.write_rows(first, predictions);
      if (source.task == Task::kClassification) {
        H5Dataset labels =
            root.create_dataset(predictions_schema::kPredictedClass, torch::kLong, {rows});
        labels.write_rows(first, predictions.argmax(1));
      }
    });
  }
  // On the disk before it is published (the collective sync is also the barrier before the
  // rename): a crash afterwards cannot leave an empty file under the output's name.
  sync_and_publish(path, group, output.description, output.kept);
}

}  // namespace ddpt
