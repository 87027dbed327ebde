#pragma once

// The rows of a full run's tables that are not a pair session's
// (result_rows.h): the all-hosts throughput rows, their averages and
// findings. Internal to the net probe.

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hostperf/probes/net/plan.h"

namespace hostperf::probes::net {

// The value at quantile `q` (0-1) of `values`, nearest rank; 0 when empty.
double Percentile(std::vector<double> values, double q);

// One host's row of a throughput test among all hosts: vnetperf's columns
// (what the host sent and what it received, in the same seconds).
nlohmann::json PlanRow(const std::string& date, const std::string& test, double rate, const AllToAllHostResult& r);

// What fell short in one rate's test among all hosts, localised as
// Pingmesh does: a host is named when it falls short of the rate and of the
// other hosts (its link, its port); when most hosts fall short together,
// one finding names the shared network instead of every host.
std::vector<std::string> PlanShortfalls(std::span<const AllToAllHostResult> results, const std::string& test,
                                        double rate);

// The "average" row of one rate's rows.
nlohmann::json AverageRow(const nlohmann::json& rows, const std::string& date, const std::string& test, double rate);

}  // namespace hostperf::probes::net
