#include "hostperf/probes/memory/memory_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/base/flags.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/memory/module.h"

namespace hostperf::probes::memory {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxElements = std::size_t{1} << 36;  // 512 GiB per array
constexpr int kMaxIterations = 1000;
constexpr int kMaxThreads = 1024;

// The CPUs this process may run on, to drop pin targets a cpuset forbids.
std::vector<int> AllowedCpus(const std::vector<int>& candidates) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return candidates;
  std::vector<int> allowed;
  for (const int cpu : candidates) {
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
  }
  return allowed;
}

// An integer option in [min, max], or an error naming it.
template <typename T>
Result<std::optional<T>> IntegerOption(const json& options, const char* key, T min, T max) {
  using R = Result<std::optional<T>>;
  const auto it = options.find(key);
  if (it == options.end() || it->is_null()) return std::optional<T>{};
  if (!it->is_number_integer()) return R::Error(fmt::format("memory option \"{}\" must be an integer", key));
  const bool in_range = it->is_number_unsigned() ? it->get<std::uint64_t>() >= static_cast<std::uint64_t>(min) &&
                                                       it->get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                                                 : it->get<std::int64_t>() >= static_cast<std::int64_t>(min) &&
                                                       it->get<std::int64_t>() <= static_cast<std::int64_t>(max);
  if (!in_range) {
    return R::Error(fmt::format("memory option \"{}\" must be between {} and {}, got {}", key, min, max, it->dump()));
  }
  return std::optional<T>(it->get<T>());
}

json KernelJson(const KernelStats& stats) {
  return {{"kernel", KernelName(stats.kernel)},
          {"bytes_per_iteration", stats.bytes},
          {"best_bytes_per_second", stats.BestBytesPerSecond()},
          {"avg_seconds", stats.avg_seconds},
          {"min_seconds", stats.min_seconds},
          {"max_seconds", stats.max_seconds}};
}

struct Plan {
  bool full = false;  // a full run (gpcheckperf stream), else a scheduled one
  SizingInput input;
  Sizing sizing;
  std::uint64_t llc_bytes = 0;
  StreamOptions stream;
};

json ToJson(const Plan& plan, const StreamRun& run) {
  json kernels = json::array();
  for (const KernelStats& stats : run.kernels) kernels.push_back(KernelJson(stats));
  json result = {
      {"mode", plan.full ? "full" : "scheduled"},
      {"threads", plan.stream.threads},
      {"pinned_cpus", plan.stream.cpus},
      {"pinned_threads", run.pinned_threads},
      {"iterations", plan.stream.iterations},
      {"array_elements", plan.stream.elements},
      {"array_bytes", plan.stream.elements * sizeof(double)},
      {"total_bytes", 3 * plan.stream.elements * sizeof(double)},
      {"llc_bytes", plan.llc_bytes},
      {"llc_total_bytes", plan.sizing.llc_total},
      {"llc_known", plan.sizing.llc_known},
      {"cache_resident", plan.sizing.cache_resident},
      {"kernels", kernels},
  };
  if (run.validation) {
    result["validation"] = {{"ok", run.validation->ok},           {"epsilon", kValidationEpsilon},
                            {"a_error", run.validation->a_error}, {"b_error", run.validation->b_error},
                            {"c_error", run.validation->c_error}, {"message", run.validation->message}};
  }
  return result;
}

class MemoryProbe final : public Probe {
 public:
  MemoryProbe(const ProbeDeps& deps, MemoryProbeSeams seams)
      : seams_(std::move(seams)),
        roots_(deps.roots),
        registry_handle_(RegistryFor(deps)),
        registry_(*registry_handle_),
        bandwidth_(prometheus::BuildGauge()
                       .Name("hostperf_memory_bandwidth_bytes_per_second")
                       .Help("Best STREAM rate of the last run per kernel (STREAM's byte counting).")
                       .Register(registry_)),
        cache_resident_(prometheus::BuildGauge()
                            .Name("hostperf_memory_cache_resident")
                            .Help("1 when the last run's arrays were not proven larger than 4x the last-level cache "
                                  "(smaller, or the LLC size is unknown): its bandwidth may be cache bandwidth.")
                            .Register(registry_)),
        array_bytes_(prometheus::BuildGauge()
                         .Name("hostperf_memory_array_bytes")
                         .Help("Total size of the three STREAM arrays of the last run.")
                         .Register(registry_)),
        validation_errors_(prometheus::BuildCounter()
                               .Name("hostperf_memory_validation_errors_total")
                               .Help("STREAM runs whose results failed validation.")
                               .Register(registry_)
                               .Add({})) {}

  std::string_view Name() const override { return "memory"; }

 private:
  // One thread, arrays sized against the last-level cache within the
  // memory budget, a few iterations.
  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override {
    Plan plan = BasePlan(ctx);
    plan.sizing = ScheduledSizing(plan.input);
    plan.stream.iterations = kScheduledIterations;
    plan.stream.threads = 1;
    return Measure(ctx, Finish(std::move(plan)));
  }

  // gpcheckperf's stream: one thread per physical core, arrays at least 4x
  // the last-level cache, unless the options say otherwise.
  ProbeOutcome MeasureFull(const FullRunContext& ctx) override {
    static const MemoryOptions kDefaults;
    const MemoryOptions* options = ctx.Options<MemoryOptions>();
    if (options == nullptr) options = &kDefaults;
    Plan plan = BasePlan(ctx);
    plan.full = true;
    plan.input.memory_available = ReadMemAvailableBytes(roots_);
    plan.sizing = options->array_elements ? SizingFor(*options->array_elements, plan.input) : FullSizing(plan.input);
    plan.stream.iterations = options->iterations.value_or(kFullIterations);
    std::vector<int> cpus = AllowedCpus(OneCpuPerPhysicalCore(roots_));
    plan.stream.threads = options->threads.value_or(std::max<int>(1, static_cast<int>(cpus.size())));
    if (cpus.size() >= static_cast<std::size_t>(plan.stream.threads)) {
      cpus.resize(static_cast<std::size_t>(plan.stream.threads));
      plan.stream.cpus = std::move(cpus);
    }  // more threads than cores: the kernel places them
    ctx.ReportProgress({"stream", {}, {}});
    return Measure(ctx, Finish(std::move(plan)));
  }

  Plan BasePlan(const RunContext& ctx) const {
    Plan plan;
    plan.llc_bytes = ReadLastLevelCacheBytes(roots_);
    plan.input.llc_bytes = plan.llc_bytes;
    plan.input.packages = ReadCpuTopology(roots_).packages;
    plan.input.memory_budget = ctx.Settings<MemoryProbeConfig>().memory_budget;
    return plan;
  }

  Plan Finish(Plan plan) const {
    plan.stream.elements = std::max(plan.sizing.elements, static_cast<std::size_t>(plan.stream.threads));
    plan.stream.before_validation = seams_.before_validation;
    return plan;
  }

  ProbeOutcome Measure(const RunContext& ctx, const Plan& plan) {
    const StreamRun run = RunStream(plan.stream, ctx);
    json result = ToJson(plan, run);
    if (!run.error_reason.empty()) return ProbeOutcome::Failure(run.error_reason, run.error, std::move(result));
    if (!run.complete) {
      const std::string reason = ctx.Cancelled() ? "cancelled" : "timeout";
      return ProbeOutcome::Failure(reason, "memory run " + reason + " during the STREAM kernels", std::move(result));
    }
    if (!run.validation->ok) {
      validation_errors_.Increment();
      return ProbeOutcome::Failure("validation_failed", run.validation->message, std::move(result));
    }
    Publish(plan, run);
    return ProbeOutcome::Success(std::move(result));
  }

  void Publish(const Plan& plan, const StreamRun& run) {
    const std::string threads = std::to_string(plan.stream.threads);
    for (const KernelStats& stats : run.kernels) {
      bandwidth_.Add({{"kernel", std::string(KernelName(stats.kernel))}, {"threads", threads}})
          .Set(stats.BestBytesPerSecond());
    }
    cache_resident_.Add({{"threads", threads}}).Set(plan.sizing.cache_resident ? 1 : 0);
    array_bytes_.Add({{"threads", threads}}).Set(static_cast<double>(3 * plan.stream.elements * sizeof(double)));
  }

  MemoryProbeSeams seams_;
  SystemRoots roots_;
  std::shared_ptr<prometheus::Registry> registry_handle_;  // RegistryFor(deps)
  prometheus::Registry& registry_;
  prometheus::Family<prometheus::Gauge>& bandwidth_;
  prometheus::Family<prometheus::Gauge>& cache_resident_;
  prometheus::Family<prometheus::Gauge>& array_bytes_;
  prometheus::Counter& validation_errors_;
};

}  // namespace

Result<MemoryOptions> ParseMemoryOptions(const nlohmann::json& options) {
  using R = Result<MemoryOptions>;
  if (options.is_null()) return MemoryOptions{};
  if (!options.is_object()) return R::Error("memory options must be a JSON object");
  for (const auto& [key, value] : options.items()) {
    if (key != "array_elements" && key != "iterations" && key != "threads") {
      return R::Error(fmt::format("unknown memory option \"{}\"", key));
    }
  }
  MemoryOptions parsed;
  const auto elements = IntegerOption<std::size_t>(options, "array_elements", kMinElements, kMaxElements);
  if (!elements) return R::Error(elements.error());
  const auto iterations = IntegerOption<int>(options, "iterations", 2, kMaxIterations);
  if (!iterations) return R::Error(iterations.error());
  const auto threads = IntegerOption<int>(options, "threads", 1, kMaxThreads);
  if (!threads) return R::Error(threads.error());
  parsed.array_elements = *elements;
  parsed.iterations = *iterations;
  parsed.threads = *threads;
  return parsed;
}

Result<std::shared_ptr<const ProbeOptions>> ParseMemoryModuleOptions(const nlohmann::json& options,
                                                                     std::optional<std::chrono::nanoseconds>) {
  return ShareOptions(ParseMemoryOptions(options));
}

nlohmann::json ToJson(const MemoryOptions& options) {
  json out = json::object();
  if (options.array_elements) out["array_elements"] = *options.array_elements;
  if (options.iterations) out["iterations"] = *options.iterations;
  if (options.threads) out["threads"] = *options.threads;
  return out;
}

Result<MemoryCommand> ParseMemoryCommand(const std::vector<std::string>& args) {
  using R = Result<MemoryCommand>;
  static constexpr FlagSpec kFlags[] = {
      Valued("array-size", "s", "a number"),
      Valued("ntimes", "n", "a number"),
      Valued("threads", "t", "a number"),
      Switch("json"),
      Switch("help", "h"),
  };
  auto parsed_flags = ParseFlags(args, {kFlags});
  if (!parsed_flags) return parsed_flags.failure();
  // STREAM takes no operands.
  if (!parsed_flags->positional.empty()) {
    return R::Error("unknown option \"" + parsed_flags->positional.front() + "\"");
  }
  MemoryCommand command;
  json options = json::object();
  for (const FlagValue& flag : parsed_flags->flags) {
    if (flag.Is("json")) {
      command.json = true;
      continue;
    }
    if (flag.Is("help")) {
      command.help = true;
      continue;
    }
    const char* key = flag.Is("array-size") ? "array_elements" : flag.Is("ntimes") ? "iterations" : "threads";
    const std::string& text = flag.value;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
      return R::Error("option " + flag.spelled + ": \"" + text + "\" is not a positive integer");
    }
    options[key] = value;
  }
  auto parsed = ParseMemoryOptions(options);
  if (!parsed) return R::Error(parsed.error());
  command.options = std::move(parsed).value();
  return command;
}

std::unique_ptr<Probe> CreateMemoryProbe(const ProbeDeps& deps, MemoryProbeSeams seams) {
  return std::make_unique<MemoryProbe>(deps, std::move(seams));
}

std::unique_ptr<Probe> CreateMemoryProbe(const ProbeDeps& deps) { return CreateMemoryProbe(deps, MemoryProbeSeams{}); }

}  // namespace hostperf::probes::memory
