#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "hostperf/probes/probe.h"
#include "tagged.h"

namespace hostperf::probes::disk {

// What a run tells whoever started it while it goes: report entries (a
// directory, a table row, an array's members: JSON with a "kind") and the
// current test. The full runs' callbacks; the scheduled burst has none, so
// its Feedback is empty and says nothing.
struct Feedback {
  const FullRunContext* listener = nullptr;  // null: nobody listens

  void Report(std::string_view kind, const nlohmann::json& entry) const {
    if (listener != nullptr) listener->Report(Tagged(kind, entry));
  }
  void ReportProgress(const Progress& progress) const {
    if (listener != nullptr) listener->ReportProgress(progress);
  }
};

}  // namespace hostperf::probes::disk
