#include "rdmalab/units.h"

#include <gtest/gtest.h>

namespace rdmalab::units {
namespace {

TEST(Units, SizesInDecimalAndBinaryUnits) {
  EXPECT_EQ(*parse_size("64KiB"), 65536u);
  EXPECT_EQ(*parse_size("1MB"), 1000000u);
  EXPECT_EQ(*parse_size("1.5KiB"), 1536u);
  EXPECT_EQ(*parse_size("8 MiB"), 8u << 20);
  EXPECT_EQ(*parse_size("2B"), 2u);
}

TEST(Units, SizesWithoutAUnitAreRefusedWithAHint) {
  auto r = parse_size("65536");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("65536B"), std::string::npos) << r.status().message();
  EXPECT_FALSE(parse_size("12 parsecs").is_ok());
  EXPECT_FALSE(parse_size("KiB").is_ok());
  EXPECT_FALSE(parse_size("0.3B").is_ok()) << "not a whole number of bytes";
}

TEST(Units, BandwidthBitsAndBytes) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth("100Gbps"), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("12.5GB/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("1GiB/s"), 1073741824.0);
  EXPECT_FALSE(parse_bandwidth("100").is_ok());
  EXPECT_FALSE(parse_bandwidth("100Gb").is_ok());
  EXPECT_FALSE(parse_bandwidth("0Gbps").is_ok());
}

TEST(Units, Times) {
  EXPECT_DOUBLE_EQ(*parse_time("1us"), 1e-6);
  EXPECT_DOUBLE_EQ(*parse_time("250ns"), 250e-9);
  EXPECT_DOUBLE_EQ(*parse_time("1.5us"), 1.5e-6);
  EXPECT_DOUBLE_EQ(*parse_time("2s"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_time("1e3ns"), 1e-6);
  auto r = parse_time("5 minutes");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("allowed"), std::string::npos);
}

TEST(Units, FormatsReadBack) {
  EXPECT_EQ(format_size(65536), "64KiB");
  EXPECT_EQ(format_size(1000), "1000B");
  EXPECT_EQ(format_bandwidth(12.5e9), "100Gbps");
  EXPECT_EQ(format_time(1.5e-6), "1.5us");
}

}  // namespace
}  // namespace rdmalab::units
