#include "hostperf/exporter/landing_page.h"

#include <cmath>
#include <string>

#include "hostperf/config/units.h"
#include "hostperf/probes/build_info.h"

namespace hostperf::exporter {
namespace {

std::string Seconds(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fs", value);
  return buf;
}

std::string OutcomeCell(const ProbeStatus& probe) {
  if (!probe.last_outcome) return "<td>–</td>";
  using Status = probes::ProbeOutcome::Status;
  const auto& outcome = *probe.last_outcome;
  switch (outcome.status) {
    case Status::kSuccess:
      return "<td class=ok>ok</td>";
    case Status::kSkipped:
      return "<td class=warn>skipped: " + HtmlEscape(outcome.reason) + "</td>";
    case Status::kFailure:
      break;
  }
  return "<td class=fail title=\"" + HtmlEscape(outcome.message) + "\">failed: " + HtmlEscape(outcome.reason) +
         "</td>";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderLandingPage(const std::vector<ProbeStatus>& probes, std::string_view telemetry_path,
                              std::string_view config_source, double now_unix_seconds) {
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>hostperf exporter</title>\n"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
      ".ok{background:#dfd}.warn{background:#ffd}.fail{background:#fdd}</style></head><body>\n"
      "<h1>hostperf exporter</h1>\n<p>Version " +
      HtmlEscape(build_info::kVersion) + " (" + HtmlEscape(build_info::kRevision) + "), built with " +
      HtmlEscape(build_info::kCompiler) + " " + HtmlEscape(build_info::kCompilerVersion) + ", fingerprint <code>" +
      HtmlEscape(build_info::kFingerprint) + "</code>. Config: <code>" + HtmlEscape(config_source) +
      "</code>.</p>\n<ul><li><a href=\"" + HtmlEscape(telemetry_path) +
      "\">Metrics</a></li><li><a href=\"/-/healthy\">Health</a></li><li><a href=\"/-/ready\">Readiness</a></li></ul>\n"
      "<h2>Probes</h2>\n<table><tr><th>probe</th><th>schedule</th><th>timeout</th><th>last run</th>"
      "<th>took</th><th>last result</th><th>next run</th></tr>\n";
  for (const ProbeStatus& probe : probes) {
    html += "<tr><td>" + HtmlEscape(probe.name) + "</td>";
    if (!probe.enabled) {
      html += "<td colspan=6>disabled</td></tr>\n";
      continue;
    }
    html += "<td>every " + config::FormatDuration(probe.interval) + "</td><td>" +
            config::FormatDuration(probe.timeout) + "</td>";
    if (probe.last_run_unix_seconds) {
      const double ago = std::max(0.0, now_unix_seconds - *probe.last_run_unix_seconds);
      html += "<td>" + Seconds(std::round(ago)) + " ago</td><td>" +
              Seconds(std::chrono::duration<double>(probe.last_duration).count()) + "</td>";
    } else {
      html += "<td>not yet</td><td>–</td>";
    }
    html += OutcomeCell(probe);
    html += probe.running ? std::string("<td>running</td>")
                          : "<td>in " + Seconds(std::chrono::duration<double>(probe.due_in).count()) + "</td>";
    html += "</tr>\n";
  }
  html += "</table>\n</body></html>\n";
  return html;
}

}  // namespace hostperf::exporter
