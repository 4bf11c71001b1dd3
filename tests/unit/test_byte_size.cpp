// Byte counts for people, both ways (util/byte_size.hpp).
#include <gtest/gtest.h>

#include "util/byte_size.hpp"

namespace ddpt {
namespace {

TEST(ByteSize, SizesAsPeopleTypeThem) {
  EXPECT_EQ(parse_byte_size("8"), 8);
  EXPECT_EQ(parse_byte_size("8B"), 8);
  EXPECT_EQ(parse_byte_size("64K"), 64 << 10);
  EXPECT_EQ(parse_byte_size("64KiB"), 64 << 10);
  EXPECT_EQ(parse_byte_size("256MiB"), int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("2G"), int64_t{2} << 30);
  for (const char* bad : {"", "MiB", "-8", "1.5MiB", "8 MiB", "8mb", "1x", "8KB",
                          "9999999999999999999", "9000000000GiB"}) {
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
  }
}

TEST(ByteSize, HumanBytesUsesBinaryPrefixes) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(int64_t{256} << 20), "256 MiB");
  EXPECT_EQ(human_bytes(1010 * 1024), "1010 KiB");  // four digits, not 1.01e+03
  EXPECT_EQ(human_bytes(int64_t{1023} << 20), "1023 MiB");
}

}  // namespace
}  // namespace ddpt
