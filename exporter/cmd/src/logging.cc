#include "hostperf/cmd/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace hostperf::cmd {
namespace {

std::string Timestamp(spdlog::log_clock::time_point time) {
  const auto since_epoch = time.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - secs).count();
  const std::time_t t = secs.count();
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf, n) + "." + std::to_string(1000 + millis).substr(1) + "Z";
}

std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    default:
      return "error";
  }
}

// logfmt as Prometheus' go-kit logger writes it: ts=… level=… msg="…".
class LogfmtFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line = "ts=" + Timestamp(msg.time) + " level=" + std::string(LevelName(msg.level)) + " msg=";
    AppendQuoted(std::string_view(msg.payload.data(), msg.payload.size()), line);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<LogfmtFormatter>(); }

 private:
  static void AppendQuoted(std::string_view text, std::string& out) {
    out += '"';
    for (char c : text) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          out += c;
      }
    }
    out += '"';
  }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::json line = {{"ts", Timestamp(msg.time)},
                           {"level", LevelName(msg.level)},
                           {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    // replace: a message with invalid UTF-8 must still produce a line.
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "logfmt") return LogFormat::kLogfmt;
  if (text == "json") return LogFormat::kJson;
  return Result<LogFormat>::Error("unknown log format \"" + std::string(text) + "\" (use logfmt or json)");
}

Result<void> SetUpLogging(std::string_view level, LogFormat format) {
  spdlog::level::level_enum parsed;
  if (level == "debug") {
    parsed = spdlog::level::debug;
  } else if (level == "info") {
    parsed = spdlog::level::info;
  } else if (level == "warn") {
    parsed = spdlog::level::warn;
  } else if (level == "error") {
    parsed = spdlog::level::err;
  } else {
    return Result<void>::Error("unknown log level \"" + std::string(level) + "\" (use debug, info, warn or error)");
  }
  auto logger = std::make_shared<spdlog::logger>("hostperf", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<LogfmtFormatter>());
  }
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::debug);
  spdlog::set_default_logger(std::move(logger));
  return {};
}

}  // namespace hostperf::cmd
