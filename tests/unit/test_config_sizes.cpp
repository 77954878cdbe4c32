#include <gtest/gtest.h>
#include "config/load.hpp"
TEST(ConfigSizes, Placeholder) { EXPECT_EQ(shakedown::parse_size("4K", "x"), 4096u); }
