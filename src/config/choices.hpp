// The options whose value is one of a few words, as enums: parsed once, by the option table, and
// compared as enums everywhere below (never as strings in a hot loop or in parallel if-chains).
// Each enum's words live in one list (choices<E>()), which the parser, `--help` validation, the
// resolved deck and every message use.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ddpt {

enum class DataType {
  kSynthetic,
  kSyntheticRegression,
  kSyntheticImages,
  kSyntheticTokens,
  kHdf5,
  kTokens
};
enum class ModelType { kMlp, kCnn, kGpt, kTorchScript };
enum class OptimizerType { kSgd, kAdamW };
enum class LrScheduleType { kConstant, kCosine, kStep };
enum class WirePrecision { kNone, kBf16, kFp16 };   // ddp.compress
enum class Precision { kFp32, kBf16, kFp16 };       // train.precision
enum class Backend { kAuto, kMpi, kNccl };          // ddp.backend
enum class ProgressChoice { kAuto, kBar, kLines };  // log.progress
enum class StepChecks { kAuto, kHost, kDevice };    // train.step_checks
enum class Prefetch { kAuto, kOn, kOff };           // ddp.prefetch

template <class E>
using ChoiceList = std::vector<std::pair<const char*, E>>;

// The words of each enum, in --help order.
template <class E>
const ChoiceList<E>& choices();

template <>
const ChoiceList<DataType>& choices();
template <>
const ChoiceList<ModelType>& choices();
template <>
const ChoiceList<OptimizerType>& choices();
template <>
const ChoiceList<LrScheduleType>& choices();
template <>
const ChoiceList<WirePrecision>& choices();
template <>
const ChoiceList<Precision>& choices();
template <>
const ChoiceList<Backend>& choices();
template <>
const ChoiceList<ProgressChoice>& choices();
template <>
const ChoiceList<StepChecks>& choices();
template <>
const ChoiceList<Prefetch>& choices();

// The deck's word for `value`.
template <class E>
const char* choice_name(E value) {
  for (const auto& [name, choice] : choices<E>()) {
    if (choice == value) return name;
  }
  return "?";
}

}  // namespace ddpt
