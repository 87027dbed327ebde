#include "hostperf/probes/probe.h"

#include <gtest/gtest.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <memory>

namespace hostperf::probes {
namespace {

TEST(RegistryForTest, TheDaemonsRegistryWhenGivenAndNotOwned) {
  auto daemon = std::make_shared<prometheus::Registry>();
  ProbeDeps deps;
  deps.registry = daemon.get();
  const auto registry = RegistryFor(deps);
  EXPECT_EQ(registry.get(), daemon.get());
  EXPECT_EQ(daemon.use_count(), 1);  // the probe's handle does not own it
  prometheus::BuildGauge().Name("g").Help("g").Register(*registry).Add({}).Set(1);
  EXPECT_EQ(daemon->Collect().size(), 1u);
}

TEST(RegistryForTest, ARegistryOfItsOwnWhenNoneIsGiven) {
  const auto first = RegistryFor(ProbeDeps{});
  const auto second = RegistryFor(ProbeDeps{});
  ASSERT_NE(first, nullptr);
  EXPECT_NE(first.get(), second.get());
  prometheus::BuildGauge().Name("g").Help("g").Register(*first).Add({}).Set(1);
  EXPECT_TRUE(second->Collect().empty());
}

}  // namespace
}  // namespace hostperf::probes
