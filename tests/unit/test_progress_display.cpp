// The live progress display (log.progress): the rendered bar text, durations, the choice of bar
// or lines, and what reaches the console and log.txt in each mode, including a message printed
// while the bar is shown (it must erase the bar, print on a clean line and draw the bar again).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/parse_config.hpp"
#include "run/progress_display.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace ddpt {
namespace {

ProgressState state(int64_t step, int64_t total, double loss, double rate, double eta) {
  ProgressState s;
  s.step = step;
  s.total = total;
  s.loss = loss;
  s.samples_per_s = rate;
  s.eta_s = eta;
  return s;
}

TEST(ProgressDisplay, FormatsDurationsAsMinutesOrHours) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(245), "4:05");
  EXPECT_EQ(format_duration(59.6), "1:00");  // rounded to the second
  EXPECT_EQ(format_duration(3599.4), "59:59");
  EXPECT_EQ(format_duration(3600), "1:00:00");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(100 * 3600 + 5), "100:00:05");
  EXPECT_EQ(format_duration(-1), "--:--");  // not known yet
  EXPECT_EQ(format_duration(std::nan("")), "--:--");
  EXPECT_EQ(format_duration(INFINITY), "--:--");
}

TEST(ProgressDisplay, AutoPicksTheBarOnATerminalOnlyAndAnExplicitChoiceWins) {
  EXPECT_EQ(choose_progress_style(ProgressChoice::kAuto, /*terminal=*/true), ProgressStyle::kBar);
  EXPECT_EQ(choose_progress_style(ProgressChoice::kAuto, false), ProgressStyle::kLines);
  EXPECT_EQ(choose_progress_style(ProgressChoice::kBar, false), ProgressStyle::kBar);
  EXPECT_EQ(choose_progress_style(ProgressChoice::kBar, true), ProgressStyle::kBar);
  EXPECT_EQ(choose_progress_style(ProgressChoice::kLines, true), ProgressStyle::kLines);
  EXPECT_EQ(choose_progress_style(ProgressChoice::kLines, false), ProgressStyle::kLines);
  // Words end at the parser: below it log.progress is an enum.
  try {
    parse_config({"--log.progress=fancy"}, /*deck_optional=*/true);
    ADD_FAILURE() << "log.progress = fancy was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("'log.progress' = fancy: must be one of: auto, bar, lines"),
        std::string::npos)
        << e.what();
  }
}

TEST(ProgressDisplay, RendersBarCountPercentLossRateAndEta) {
  // 80 columns: 79 characters, the bar takes what the text leaves (24 here), 30% of it filled.
  EXPECT_EQ(render_bar(state(120, 400, 0.73541, 45857.3, 3.2), 80),
            "120/400 [=======>                ]  30%  loss 0.7354  45857 samples/s  ETA 0:03");
  // Wide terminals: the bar stops growing at 40.
  EXPECT_EQ(render_bar(state(120, 400, 0.73541, 45857.3, 3.2), 200),
            "120/400 [============>                           ]  30%  loss 0.7354  45857 "
            "samples/s  ETA 0:03");
  // Complete: full bar, 100%.
  EXPECT_EQ(render_bar(state(400, 400, 0.58982, 44770, 0), 80),
            "400/400 [========================] 100%  loss 0.5898  44770 samples/s  ETA 0:00");
}

TEST(ProgressDisplay, ShowsUnknownValuesAsDashesAndPadsTheStepCount) {
  EXPECT_EQ(render_bar(state(0, 400, std::nan(""), -1, -1), 80),
            "  0/400 [>                          ]   0%  loss -       - samples/s  ETA --:--");
  // The bar keeps its width while the loss changes.
  EXPECT_EQ(render_bar(state(5, 400, 0.5, 1, 1), 80).find("]"),
            render_bar(state(5, 400, 0.4812, 1, 1), 80).find("]"));
  // Percent is floored: 399 of 400 is not yet 100%.
  EXPECT_NE(render_bar(state(399, 400, 1, 1, 1), 80).find(" 99%"), std::string::npos);
  EXPECT_NE(render_bar(state(7, 12000, 1, 1, 1), 80).find("    7/12000 ["), std::string::npos);
}

TEST(ProgressDisplay, FitsAnyWidthDroppingTheBarOnNarrowTerminals) {
  const ProgressState s = state(120, 400, 0.73541, 45857.3, 3725);
  for (int width = 0; width <= 240; ++width) {
    const std::string line = render_bar(s, width);
    EXPECT_LE(static_cast<int>(line.size()), std::max(width - 1, 0)) << "width " << width;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\r'), std::string::npos);
  }
  EXPECT_EQ(render_bar(s, 64), "120/400  30%  loss 0.7354  45857 samples/s  ETA 1:02:05");
  EXPECT_EQ(render_bar(s, 20), "120/400  30%  loss ");  // cut, as a last resort
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rank 0's logger with a log.txt in a scratch directory; restores a plain logger after.
class ConsoleOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ddptrain_progress_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    init_logging(0, "host");
    add_log_file((dir_ / "log.txt").string());
  }
  void TearDown() override {
    init_logging(0, "host");  // closes log.txt
    std::filesystem::remove_all(dir_);
  }
  std::string log_txt() const { return read_file(dir_ / "log.txt"); }

  std::filesystem::path dir_;
};

TEST_F(ConsoleOutput, AMessageErasesTheStatusLineAndDrawsItAgainBelow) {
  ::testing::internal::CaptureStdout();
  show_status_line("1/9 [>  ]");
  show_status_line("2/9 [=> ]");
  spdlog::info("eval at step 2");
  show_status_line("3/9");  // shorter: blanks cover the rest of the previous one
  end_status_line();
  spdlog::info("summary");
  end_status_line();  // none shown: nothing
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "\r1/9 [>  ]"
            "\r2/9 [=> ]"
            "\r         \r"  // erased
            "eval at step 2\n"
            "2/9 [=> ]"  // drawn again under the message
            "\r3/9      "
            "\n"
            "summary\n");
  EXPECT_NE(log_txt().find("] eval at step 2\n"), std::string::npos);
  EXPECT_EQ(log_txt().find("2/9"), std::string::npos);  // the bar never reaches log.txt
}

TEST_F(ConsoleOutput, LogToFileOnlyWritesTheFileAndNotTheConsole) {
  ::testing::internal::CaptureStdout();
  log_to_file_only("step 10/100  loss 1.0");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_NE(log_txt().find("] step 10/100  loss 1.0\n"), std::string::npos);
}

TEST_F(ConsoleOutput, LinesModePrintsTheProgressLinesAsBefore) {
  ::testing::internal::CaptureStdout();
  {
    ProgressDisplay display(ProgressStyle::kLines, 0, 20, 64, 2);
    for (int64_t done = 1; done <= 20; ++done) {
      display.step_done(done);
      if (done % 10 == 0) display.record(0.5, "step " + std::to_string(done) + "/20");
    }
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "step 10/20\nstep 20/20\n");
  EXPECT_NE(log_txt().find("] step 20/20\n"), std::string::npos);
}

TEST_F(ConsoleOutput, BarModeDrawsInPlaceSendsLinesToTheFileAndEndsOnAFreshLine) {
  ::testing::internal::CaptureStdout();
  {
    ProgressDisplay display(ProgressStyle::kBar, /*first_step=*/10, /*total_steps=*/30, 64, 2);
    for (int64_t done = 11; done <= 30; ++done) {
      display.step_done(done);  // the first draws, the others within 1/8 s do not
      if (done % 10 == 0) display.record(0.25, "step " + std::to_string(done) + "/30");
    }
    display.finish();
    display.finish();  // idempotent
  }
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.rfind("\r11/30 [", 0), 0u) << out;  // a resumed run starts at its own step
  const size_t last = out.rfind("\r30/30 [");       // the final state, drawn by finish()
  ASSERT_NE(last, std::string::npos) << out;
  EXPECT_NE(out.find("=] 100%  loss 0.25  ", last), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find("step 20/30"), std::string::npos);  // the lines go to log.txt only
  EXPECT_NE(log_txt().find("] step 20/30\n"), std::string::npos);
  EXPECT_NE(log_txt().find("] step 30/30\n"), std::string::npos);
}

}  // namespace
}  // namespace ddpt
