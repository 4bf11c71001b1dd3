#pragma once
// What the watchdog's two files (watchdog.cpp: deadlines and reports; watchdog_questions.cpp: the
// questions the ranks ask each other) both need. Internal to comm/.

#include <chrono>

#include "comm/watchdog.hpp"

namespace ddpt::watchdog_detail {

constexpr int kQueryTag = 1;
constexpr int kAnswerTag = 2;
// How long a rank that asks collects answers; live ranks answer within one poll interval.
constexpr auto kAnswerGrace = std::chrono::seconds(2);
// How long a paced deadline that a rank's phase excused waits before peers are asked again.
constexpr auto kAskAgain = std::chrono::seconds(1);
// How often the silence question is asked while something waits past dist.hang_floor_s: first
// after a second, then twice as long each time every rank answered, up to kSilenceQuestionAtMost,
// so that a long healthy phase (a large checkpoint written on slow storage) costs a question
// every few seconds, not every second; a rank stopped after that is found within that much more.
constexpr auto kSilenceQuestionFirst = std::chrono::seconds(1);
constexpr auto kSilenceQuestionAtMost = std::chrono::seconds(8);

inline double seconds_since(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace ddpt::watchdog_detail
