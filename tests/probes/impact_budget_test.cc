#include "hostperf/probes/impact_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "hostperf/probes/probe.h"
#include "hostperf/probes/probe_cpu.h"

namespace hostperf::probes {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

class ImpactBudgetTest : public ::testing::Test {
 protected:
  steady_clock::time_point now_ = steady_clock::time_point(1000h);
  ImpactBudget budget_{[this] { return now_; }};
};

TEST_F(ImpactBudgetTest, SpendsUntilTheLimitThenRefusesWithTheReason) {
  budget_.SetLimit(BudgetResource::kDiskBytes, 3 * 1048576.0);
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kDiskBytes, 2 * 1048576.0).has_value());
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kDiskBytes, 1048576.0).has_value());  // exactly the limit
  const auto refused = budget_.TrySpend(BudgetResource::kDiskBytes, 1.0);
  ASSERT_TRUE(refused.has_value());
  EXPECT_THAT(*refused, HasSubstr("disk_bytes budget of 3.0 MiB per hour (3.0 MiB used in the last hour)"));
  EXPECT_EQ(budget_.Used(BudgetResource::kDiskBytes), 3 * 1048576.0);
  EXPECT_TRUE(budget_.Exhausted(BudgetResource::kDiskBytes));
  // Other resources keep their own ledgers.
  budget_.SetLimit(BudgetResource::kNetBytes, 10);
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kNetBytes, 10).has_value());
}

TEST_F(ImpactBudgetTest, TheWindowSlides) {
  budget_.SetLimit(BudgetResource::kNetBytes, 100);
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kNetBytes, 60).has_value());
  now_ += 30min;
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kNetBytes, 40).has_value());
  EXPECT_TRUE(budget_.TrySpend(BudgetResource::kNetBytes, 1).has_value());
  now_ += 30min;  // the first 60 leave the window
  EXPECT_EQ(budget_.Used(BudgetResource::kNetBytes), 40);
  EXPECT_FALSE(budget_.TrySpend(BudgetResource::kNetBytes, 60).has_value());
  now_ += 2h;
  EXPECT_EQ(budget_.Used(BudgetResource::kNetBytes), 0);
}

TEST_F(ImpactBudgetTest, RefundSettlesAReservationAndChargeRecordsMeasuredUse) {
  budget_.SetLimit(BudgetResource::kNetBytes, 100);
  ASSERT_FALSE(budget_.TrySpend(BudgetResource::kNetBytes, 80).has_value());
  budget_.Refund(BudgetResource::kNetBytes, 50);  // the burst was cut short
  EXPECT_EQ(budget_.Used(BudgetResource::kNetBytes), 30);
  budget_.SetLimit(BudgetResource::kCpuSeconds, 36);
  budget_.Charge(BudgetResource::kCpuSeconds, 40);  // measured after the fact: may overshoot
  EXPECT_TRUE(budget_.Exhausted(BudgetResource::kCpuSeconds));
}

// Records the budget each run was given.
class BudgetProbe final : public Probe {
 public:
  std::string_view Name() const override { return "budget"; }
  ImpactBudget* seen = nullptr;
  double disk_limit = 0;

 protected:
  ProbeOutcome MeasureScheduled(const ScheduledContext& context) override { return Record(context); }
  ProbeOutcome MeasureFull(const FullRunContext& context) override { return Record(context); }
  ProbeOutcome Record(const RunContext& context) {
    seen = context.budget;
    disk_limit = context.budget->Limit(BudgetResource::kDiskBytes);
    return ProbeOutcome::Success({});
  }
};

TEST_F(ImpactBudgetTest, RunUsesTheSchedulersBudgetAndElseLendsOneWithTheConfigLimits) {
  BudgetProbe probe;
  ScheduledContext context;
  context.budget_limits.disk_bytes_per_hour = 1234;
  probe.RunScheduled(context);
  ASSERT_NE(probe.seen, nullptr);
  EXPECT_NE(probe.seen, &budget_);
  EXPECT_EQ(probe.disk_limit, 1234);
  context.budget = &budget_;
  probe.RunScheduled(context);
  EXPECT_EQ(probe.seen, &budget_);
}

// Burns about `cpu` of this thread's CPU time.
void Burn(std::chrono::milliseconds cpu) {
  timespec start{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile std::uint64_t sink = 0;
  for (;;) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<std::uint64_t>(i);
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= cpu.count()) return;
  }
}

// The CPU budget is charged with the probes' own threads,
// not the whole process (scrapes, the responder, bcrypt checks).
TEST(ProbeCpuScopeTest, OnlyThreadsInsideAScopeAreCharged) {
  const double before = ProbeCpuSeconds();
  std::thread([] { Burn(100ms); }).join();  // a scrape, a password check, the responder...
  EXPECT_LT(ProbeCpuSeconds() - before, 0.02) << "work outside any probe scope costs the budget nothing";
  std::thread([] {
    const ProbeCpuScope probe_work;
    Burn(100ms);
    const ProbeCpuScope nested;  // counted once
    Burn(20ms);
  }).join();
  const double charged = ProbeCpuSeconds() - before;
  EXPECT_GE(charged, 0.11);
  EXPECT_LT(charged, 0.5);
}

}  // namespace
}  // namespace hostperf::probes
