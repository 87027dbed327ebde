#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hostperf/probes/probe.h"
#include "tagged.h"

namespace hostperf::probes::disk {

// What a run tells whoever started it while it goes: report entries (a
// directory, a table row, an array's members: JSON with a "kind") and the
// current test. Empty when nobody listens (scheduled runs).
struct Feedback {
  std::function<void(const nlohmann::json&)> on_report;
  std::function<void(const Progress&)> on_progress;

  void Report(std::string_view kind, const nlohmann::json& entry) const {
    if (on_report) on_report(Tagged(kind, entry));
  }
  void ReportProgress(const Progress& progress) const {
    if (on_progress) on_progress(progress);
  }
};

}  // namespace hostperf::probes::disk
