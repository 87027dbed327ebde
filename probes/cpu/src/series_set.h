#pragma once

#include <prometheus/family.h>

#include <cstdint>
#include <map>
#include <set>

namespace hostperf::probes::cpu {

// The series of one family that the last publication touched; Sweep removes
// the others (a CPU gone offline, an info label that changed), so that no
// stale or zero series stays behind.
template <typename Metric>
class SeriesSet {
 public:
  explicit SeriesSet(prometheus::Family<Metric>& family) : family_(family) {}

  Metric& Get(const prometheus::Labels& labels) {
    auto [it, inserted] = series_.try_emplace(labels, nullptr);
    if (inserted) it->second = &family_.Add(labels);
    touched_.insert(labels);
    return *it->second;
  }

  void Sweep() {
    for (auto it = series_.begin(); it != series_.end();) {
      if (touched_.count(it->first) != 0) {
        ++it;
        continue;
      }
      family_.Remove(it->second);  // drop our pointer with it
      kernel_counts_.erase(it->first);
      it = series_.erase(it);
    }
    touched_.clear();
  }

  // A counter that follows a cumulative kernel count: it rises by what the
  // kernel's count rose (all of it on first sight or after a reset).
  void Follow(const prometheus::Labels& labels, std::uint64_t kernel_count) {
    Metric& counter = Get(labels);
    const auto last = kernel_counts_.find(labels);
    const std::uint64_t rise =
        last == kernel_counts_.end() || kernel_count < last->second ? kernel_count : kernel_count - last->second;
    if (rise > 0) counter.Increment(static_cast<double>(rise));
    kernel_counts_[labels] = kernel_count;
  }

 private:
  prometheus::Family<Metric>& family_;
  std::map<prometheus::Labels, Metric*> series_;
  std::set<prometheus::Labels> touched_;
  std::map<prometheus::Labels, std::uint64_t> kernel_counts_;
};

}  // namespace hostperf::probes::cpu
