#include "hostperf/base/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace hostperf {
namespace {

Result<int> Half(int value) {
  if (value % 2 != 0) return Failure{"odd", std::to_string(value) + " is odd"};
  return value / 2;
}

Result<void> Check(bool good) {
  if (!good) return Result<void>::Error("not_good", "it was not good");
  return {};
}

TEST(ResultTest, ValueOrFailureWithReasonAndMessage) {
  const auto half = Half(8);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(*half, 4);

  const auto odd = Half(7);
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.reason(), "odd");
  EXPECT_EQ(odd.error(), "7 is odd");
}

TEST(ResultTest, MessageOnlyErrorsCarryTheInvalidReason) {
  const auto error = Result<std::string>::Error("bad input");
  EXPECT_EQ(error.reason(), kInvalidReason);
  EXPECT_EQ(error.error(), "bad input");
}

TEST(ResultTest, VoidFormIsOkByDefaultAndCarriesFailures) {
  EXPECT_TRUE(Check(true).ok());
  const auto failed = Check(false);
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.reason(), "not_good");
  EXPECT_EQ(failed.failure().message, "it was not good");
}

TEST(ResultTest, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> owned(std::make_unique<int>(3));
  std::unique_ptr<int> taken = std::move(owned).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 3);
}

}  // namespace
}  // namespace hostperf
