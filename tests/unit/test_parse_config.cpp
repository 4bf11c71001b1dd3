#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/deck_text.hpp"
#include "config/parse_config.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

class ParseConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ddptrain_config_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string deck(const std::string& text) {
    const auto path = dir_ / "deck.cfg";
    std::ofstream(path) << text;
    return path.string();
  }
  // The ConfigError message for `args`, or "" if parsing succeeded.
  static std::string error_of(const std::vector<std::string>& args) {
    try {
      parse_config(args);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage);
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(ParseConfig, DeckValuesAndCommandLineOverrides) {
  const std::string path =
      deck("# comment\n[train]\nbatch_size = 48\nsteps = 7\n[optim]\ntype = sgd\n");
  const Config c = parse_config({path, "--train.steps=9", "--optim.lr", "0.5"});
  EXPECT_EQ(c.train.batch_size, 48);  // from the deck
  EXPECT_EQ(c.train.steps, 9);        // the command line wins
  EXPECT_EQ(c.optim.type, OptimizerType::kSgd);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.5);
  EXPECT_EQ(c.train.grad_accum, 1);  // default
  EXPECT_NE(c.resolved_text.find("batch_size = 48"), std::string::npos);
  EXPECT_NE(c.resolved_text.find("[ddp]\nbucket_mb = 25"), std::string::npos);
}

TEST_F(ParseConfig, ResolvedDeckParsesBackToTheSameValues) {
  const Config first = parse_config({deck("[train]\nbatch_size = 3\n[optim]\nlr = 0.123\n")});
  const Config second = parse_config({deck(first.resolved_text)});
  EXPECT_EQ(second.resolved_text, first.resolved_text);
}

// Words are checked once, here: below the parser, options like model.type are enums.
TEST_F(ParseConfig, AnUnknownWordNamesTheOptionAndTheChoices) {
  EXPECT_NE(error_of({deck(""), "--model.type=transformer-xl"})
                .find("option 'model.type' = transformer-xl: must be one of: mlp, cnn, gpt, "
                      "torchscript"),
            std::string::npos);
  EXPECT_NE(error_of({deck(""), "--optim.schedule=linear"})
                .find("must be one of: constant, cosine, step"),
            std::string::npos);
  const Config c =
      parse_config({deck(""), "--optim.schedule=cosine", "--data.type=tokens", "--data.path=x.h5"});
  EXPECT_EQ(c.optim.schedule, LrScheduleType::kCosine);
  EXPECT_EQ(c.data.type, DataType::kTokens);
  EXPECT_NE(c.resolved_text.find("schedule = cosine"), std::string::npos);
}

TEST_F(ParseConfig, UnknownKeyInDeckNamesIt) {
  EXPECT_NE(error_of({deck("[train]\nbatchsize = 4\n")}).find("train.batchsize"),
            std::string::npos);
}

TEST_F(ParseConfig, UnknownCommandLineOptionNamesIt) {
  EXPECT_NE(error_of({deck(""), "--train.bogus=1"}).find("train.bogus"), std::string::npos);
}

TEST_F(ParseConfig, MalformedValueNamesTheOption) {
  const std::string message = error_of({deck("[train]\nbatch_size = lots\n")});
  EXPECT_NE(message.find("batch_size"), std::string::npos) << message;
  EXPECT_NE(message.find("lots"), std::string::npos) << message;
}

TEST_F(ParseConfig, NegativeBatchSizeIsRejected) {
  const std::string message = error_of({deck(""), "--train.batch_size=-4"});
  EXPECT_NE(message.find("train.batch_size"), std::string::npos) << message;
  EXPECT_NE(message.find("at least 1"), std::string::npos) << message;
}

TEST_F(ParseConfig, BatchSizeIsANumberOrAuto) {
  const Config automatic = parse_config({deck("[train]\nbatch_size = auto\n")});
  EXPECT_TRUE(automatic.train.batch_size_auto);
  EXPECT_EQ(automatic.train.batch_size, 0);  // until train finds it
  EXPECT_NE(automatic.resolved_text.find("batch_size = auto\n"), std::string::npos);
  const Config number =
      parse_config({deck("[train]\nbatch_size = auto\n"), "--train.batch_size=12"});
  EXPECT_FALSE(number.train.batch_size_auto);
  EXPECT_EQ(number.train.batch_size, 12);
  EXPECT_NE(number.resolved_text.find("batch_size = 12\n"), std::string::npos);
  for (const char* bad : {"12x", "Auto", "1.5", "0"}) {
    const std::string message = error_of({deck(""), std::string("--train.batch_size=") + bad});
    EXPECT_NE(message.find("a whole number of at least 1, or auto"), std::string::npos) << message;
  }
  EXPECT_NE(error_of({deck(""), "--train.batch_size=auto", "--train.global_batch=64"})
                .find("exclude each other"),
            std::string::npos);
}

TEST_F(ParseConfig, ChoicesAreChecked) {
  EXPECT_NE(error_of({deck("[optim]\ntype = lamb\n")}).find("sgd, adamw"), std::string::npos);
}

TEST_F(ParseConfig, MissingDeck) {
  EXPECT_NE(error_of({(dir_ / "nope.cfg").string()}).find("not found"), std::string::npos);
  EXPECT_NE(error_of({}).find("no deck"), std::string::npos);
}

TEST_F(ParseConfig, HiddenWidthsMustBePositiveIntegers) {
  EXPECT_EQ(parse_int_list("model.hidden", "8, 16,4"), (std::vector<int64_t>{8, 16, 4}));
  EXPECT_NE(error_of({deck(""), "--model.hidden=8,x"}).find("model.hidden"), std::string::npos);
  EXPECT_NE(error_of({deck(""), "--model.hidden=8,0"}).find("model.hidden"), std::string::npos);
}

TEST_F(ParseConfig, TorchScriptNeedsAPath) {
  EXPECT_NE(error_of({deck("[model]\ntype = torchscript\n")}).find("model.path"),
            std::string::npos);
}

// Issue 18's bad edits: each a one-line error with exit code 2 naming the option.
TEST_F(ParseConfig, BadEditsNameTheOption) {
  struct Case {
    std::string deck;
    std::vector<std::string> overrides;
    std::vector<std::string> expected;  // parts of the message
  };
  const std::vector<Case> cases = {
      {"[train]\nsteps = 5\nsteps = 6\n", {}, {"train.steps", "more than once"}},
      {"[model]\nbatch_size = 8\n", {}, {"model.batch_size", "did you mean 'train.batch_size'"}},
      {"[train]\nbatchsize = 8\n", {}, {"train.batchsize", "did you mean 'train.batch_size'"}},
      {"[optim]\nlr = 1e-3x\n", {}, {"optim.lr", "1e-3x"}},
      {"[train]\nbatch_size = 10000000000000000000000\n", {}, {"train.batch_size"}},
      {"[train]\nbatch_size = -4\n", {}, {"train.batch_size", "at least 1"}},
      {"[optim]\nlr = inf\n", {}, {"optim.lr", "finite positive"}},
      {"[optim]\nlr = nan\n", {}, {"optim.lr", "finite positive"}},
      {"[optim]\nweight_decay = inf\n", {}, {"optim.weight_decay", "finite"}},
      {"[run]\ndir = runs/caf\xe9\n", {}, {"line 2", "option 'run.dir'", "0xe9", "UTF-8"}},
      {"", {"--train.stepz=5"}, {"--train.stepz", "did you mean 'train.steps'"}},
      {"", {"--run.dir=caf\xe9"}, {"--run.dir=caf\\xe9", "not UTF-8"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {deck(c.deck)};
    args.insert(args.end(), c.overrides.begin(), c.overrides.end());
    const std::string message = error_of(args);
    ASSERT_FALSE(message.empty()) << "accepted: " << c.deck << " "
                                  << ::testing::PrintToString(c.overrides);
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(first_invalid_utf8(message), std::nullopt) << "raw bytes printed: " << message;
    for (const std::string& part : c.expected) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
  }
}

TEST(DeckText, Utf8IsCheckedByTheStandardsRules) {
  EXPECT_EQ(first_invalid_utf8("plain ascii = 1"), std::nullopt);
  EXPECT_EQ(first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            std::nullopt);  // é € 😀
  EXPECT_EQ(first_invalid_utf8("ab\xff"), 2u);
  EXPECT_EQ(first_invalid_utf8("\xc0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(first_invalid_utf8("x\xed\xa0\x80"), 1u);     // a surrogate
  EXPECT_EQ(first_invalid_utf8("\xf5\x80\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(first_invalid_utf8("\xe2\x82"), 0u);          // cut short
  EXPECT_EQ(escape_bytes("a\xff"
                         "b\n"),
            "a\\xffb\\x0a");
}

TEST(OptionsHelp, ListsEveryOptionWithItsDefault) {
  const std::string help = options_help();
  for (const char* option : {"--run.dir", "--train.batch_size", "--train.grad_accum",
                             "--ddp.bucket_mb", "--ddp.first_bucket_mb", "--optim.type"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option;
  }
  EXPECT_NE(help.find("(=25)"), std::string::npos);
}

}  // namespace
}  // namespace ddpt
