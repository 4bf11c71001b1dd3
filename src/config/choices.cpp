#include "config/choices.hpp"

namespace ddpt {

template <>
const ChoiceList<DataType>& choices() {
  static const ChoiceList<DataType> list{{"synthetic", DataType::kSynthetic},
                                         {"synthetic_regression", DataType::kSyntheticRegression},
                                         {"synthetic_images", DataType::kSyntheticImages},
                                         {"synthetic_tokens", DataType::kSyntheticTokens},
                                         {"hdf5", DataType::kHdf5},
                                         {"tokens", DataType::kTokens}};
  return list;
}

template <>
const ChoiceList<ModelType>& choices() {
  static const ChoiceList<ModelType> list{{"mlp", ModelType::kMlp},
                                          {"cnn", ModelType::kCnn},
                                          {"gpt", ModelType::kGpt},
                                          {"torchscript", ModelType::kTorchScript}};
  return list;
}

template <>
const ChoiceList<OptimizerType>& choices() {
  static const ChoiceList<OptimizerType> list{{"sgd", OptimizerType::kSgd},
                                              {"adamw", OptimizerType::kAdamW}};
  return list;
}

template <>
const ChoiceList<LrScheduleType>& choices() {
  static const ChoiceList<LrScheduleType> list{{"constant", LrScheduleType::kConstant},
                                               {"cosine", LrScheduleType::kCosine},
                                               {"step", LrScheduleType::kStep}};
  return list;
}

template <>
const ChoiceList<WirePrecision>& choices() {
  static const ChoiceList<WirePrecision> list{{"none", WirePrecision::kNone},
                                              {"bf16", WirePrecision::kBf16},
                                              {"fp16", WirePrecision::kFp16}};
  return list;
}

template <>
const ChoiceList<Precision>& choices() {
  static const ChoiceList<Precision> list{
      {"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}};
  return list;
}

template <>
const ChoiceList<Backend>& choices() {
  static const ChoiceList<Backend> list{
      {"auto", Backend::kAuto}, {"mpi", Backend::kMpi}, {"nccl", Backend::kNccl}};
  return list;
}

template <>
const ChoiceList<ProgressChoice>& choices() {
  static const ChoiceList<ProgressChoice> list{{"auto", ProgressChoice::kAuto},
                                               {"bar", ProgressChoice::kBar},
                                               {"lines", ProgressChoice::kLines}};
  return list;
}

template <>
const ChoiceList<Prefetch>& choices() {
  static const ChoiceList<Prefetch> list{
      {"auto", Prefetch::kAuto}, {"on", Prefetch::kOn}, {"off", Prefetch::kOff}};
  return list;
}

template <>
const ChoiceList<StepChecks>& choices() {
  static const ChoiceList<StepChecks> list{
      {"auto", StepChecks::kAuto}, {"host", StepChecks::kHost}, {"device", StepChecks::kDevice}};
  return list;
}

}  // namespace ddpt
