#include "hostperf/daemon/landing_page.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "hostperf/base/clock.h"
#include "hostperf/config/units.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {
namespace {

std::string Seconds(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fs", value);
  return buf;
}

// How bad a verdict is, for picking the worst (info judges nothing).
int Severity(probes::Verdict verdict) {
  switch (verdict) {
    case probes::Verdict::kFail:
      return 2;
    case probes::Verdict::kWarn:
      return 1;
    case probes::Verdict::kPass:
    case probes::Verdict::kInfo:
      break;
  }
  return 0;
}

// The result's worst warn or fail figure, if any.
std::optional<probes::Figure> WorstFigure(std::string_view probe, const nlohmann::json& result) {
  std::optional<probes::Figure> worst;
  for (probes::Figure& figure : probes::HeadlineFigures(probe, result)) {
    if (Severity(figure.verdict) > (worst ? Severity(worst->verdict) : 0)) worst = std::move(figure);
  }
  return worst;
}

// A run that completed but measured something out of bounds.
std::string DegradedCell(const probes::Figure& worst) {
  const char* css = worst.verdict == probes::Verdict::kFail ? "fail" : "warn";
  const std::string what = worst.title + (worst.subject.empty() ? "" : " (" + worst.subject + ")") + ": " + worst.shown;
  return "<td class=" + std::string(css) + " title=\"" + http::HtmlEscape(what) +
         "\">degraded: " + http::HtmlEscape(what) + " — " + std::string(probes::ToString(worst.verdict)) + "</td>";
}

std::string OutcomeCell(const ProbeStatus& probe) {
  if (!probe.last_outcome) return "<td>–</td>";
  using Status = probes::ProbeOutcome::Status;
  const auto& outcome = *probe.last_outcome;
  switch (outcome.status) {
    case Status::kSuccess:
      if (const auto worst = WorstFigure(probe.name, outcome.result)) return DegradedCell(*worst);
      return "<td class=ok>ok</td>";
    case Status::kSkipped:
      return "<td class=warn>skipped: " + http::HtmlEscape(outcome.reason) + "</td>";
    case Status::kFailure:
      break;
  }
  return "<td class=fail title=\"" + http::HtmlEscape(outcome.message) +
         "\">failed: " + http::HtmlEscape(outcome.reason) + "</td>";
}

std::string UtcTime(double unix_seconds) { return FormatUtc(unix_seconds, "%Y-%m-%d %H:%M:%S UTC"); }

std::string ChecksCell(const ProbeStatus& probe) {
  if (!probe.last_outcome) return "<td>–</td>";
  return "<td>" + RenderFigures(probe.name, probe.last_outcome->result) + "</td>";
}

std::string StringField(const nlohmann::json& run, const char* key) {
  const auto it = run.find(key);
  return it != run.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One full run (a RunManager record): link, state, probes, creation time and
// each probe's figures against the thresholds.
std::string FullRunRow(const nlohmann::json& run, double now) {
  const std::string id = StringField(run, "id");
  const std::string state = StringField(run, "state");
  const std::string reason = StringField(run, "reason");
  const char* css = state == "succeeded" ? "ok" : state == "failed" ? "fail" : "warn";
  const auto results = run.find("results");
  std::string probes;
  std::string checks;
  int worst = 0;
  for (const auto& name : run.value("probes", nlohmann::json::array())) {
    if (!name.is_string()) continue;
    const std::string probe = name.get<std::string>();
    probes += (probes.empty() ? "" : ", ") + http::HtmlEscape(probe);
    if (results == run.end() || !results->is_object() || !results->contains(probe)) continue;
    const std::string figures = RenderFigures(probe, (*results)[probe]);
    if (!figures.empty()) checks += "<b>" + http::HtmlEscape(probe) + "</b><br>" + figures;
    if (const auto figure = WorstFigure(probe, (*results)[probe])) worst = std::max(worst, Severity(figure->verdict));
  }
  std::string shown_state = state;
  if (state == "succeeded" && worst > 0) {
    css = worst == 2 ? "fail" : "warn";
    shown_state = "succeeded, degraded";
  }
  const std::string trigger = StringField(run, "trigger");
  const auto created = run.find("created_unix_seconds");
  const std::string when = created != run.end() && created->is_number()
                               ? UtcTime(created->get<double>()) + " (" +
                                     HumaniseRelative(created->get<double>(), now) + ")" +
                                     (trigger.empty() ? "" : ", by the " + http::HtmlEscape(trigger))
                               : "–";
  return "<tr><td><a href=\"/api/v1/runs/" + http::HtmlEscape(id) + "\">" + http::HtmlEscape(id) +
         "</a></td><td class=" + css + ">" + http::HtmlEscape(shown_state) +
         (reason.empty() ? "" : ": " + http::HtmlEscape(reason)) + "</td><td>" + probes + "</td><td>" + when +
         "</td><td>" + (checks.empty() ? "–" : checks) + "</td></tr>\n";
}

}  // namespace

std::string HumaniseDuration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // NaN too
  constexpr double kMinute = 60;
  constexpr double kHour = 60 * kMinute;
  constexpr double kDay = 24 * kHour;
  const auto two_units = [](long long big, const char* big_unit, long long small, const char* small_unit) {
    std::string text = std::to_string(big) + " " + big_unit;
    if (small > 0) text += " " + std::to_string(small) + " " + small_unit;
    return text;
  };
  const double whole = std::floor(seconds);
  if (whole < kMinute) return std::to_string(static_cast<long long>(whole)) + " s";
  if (whole < kHour) {
    return two_units(static_cast<long long>(whole / kMinute), "min", static_cast<long long>(std::fmod(whole, kMinute)),
                     "s");
  }
  if (whole < kDay) {
    return two_units(static_cast<long long>(whole / kHour), "h",
                     static_cast<long long>(std::fmod(whole, kHour) / kMinute), "min");
  }
  const auto days = static_cast<long long>(whole / kDay);
  // A week or more: the hours no longer matter.
  const long long hours = days < 7 ? static_cast<long long>(std::fmod(whole, kDay) / kHour) : 0;
  return two_units(days, days == 1 ? "day" : "days", hours, "h");
}

std::string HumaniseRelative(double then_unix_seconds, double now_unix_seconds) {
  const double delta = now_unix_seconds - then_unix_seconds;
  return delta >= 0 ? HumaniseDuration(delta) + " ago" : "in " + HumaniseDuration(-delta);
}

std::string RenderFigures(std::string_view probe, const nlohmann::json& result) {
  std::string html;
  using probes::Verdict;
  for (const probes::Figure& figure : probes::HeadlineFigures(probe, result)) {
    const std::string verdict(probes::ToString(figure.verdict));
    const char* css = figure.verdict == Verdict::kPass   ? "ok"
                      : figure.verdict == Verdict::kWarn ? "warn"
                      : figure.verdict == Verdict::kFail ? "fail"
                                                         : "info";
    html += "<span class=" + std::string(css) + ">" + http::HtmlEscape(figure.title) +
            (figure.subject.empty() ? "" : " (" + http::HtmlEscape(figure.subject) + ")") + ": " +
            http::HtmlEscape(figure.shown) + " — " + verdict + " (" + http::HtmlEscape(figure.threshold) +
            ")</span><br>";
  }
  return html;
}

std::string RenderLandingPage(const std::vector<ProbeStatus>& probes, std::string_view telemetry_path,
                              std::string_view config_source, double now_unix_seconds,
                              const std::vector<nlohmann::json>& full_runs,
                              std::optional<double> next_full_run_unix_seconds) {
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>hostperf exporter</title>\n"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
      ".ok{background:#dfd}.warn{background:#ffd}.fail{background:#fdd}.info{background:#eef}</style></head><body>\n"
      "<h1>hostperf exporter</h1>\n<p>Version " +
      http::HtmlEscape(build_info::kVersion) + " (" + http::HtmlEscape(build_info::kRevision) + "), built with " +
      http::HtmlEscape(build_info::kCompiler) + " " + http::HtmlEscape(build_info::kCompilerVersion) +
      ", fingerprint <code>" + http::HtmlEscape(build_info::kFingerprint) + "</code>. Config: <code>" +
      http::HtmlEscape(config_source) + "</code>.</p>\n<ul><li><a href=\"" + http::HtmlEscape(telemetry_path) +
      "\">Metrics</a></li><li><a href=\"/-/healthy\">Health</a></li><li><a href=\"/-/ready\">Readiness</a></li>"
      "<li><a href=\"/api/v1/runs\">Full runs (run API)</a></li></ul>\n"
      "<h2>Probes</h2>\n<table><tr><th>probe</th><th>schedule</th><th>timeout</th><th>last run</th>"
      "<th>took</th><th>last result</th><th>against thresholds</th><th>next run</th></tr>\n";
  for (const ProbeStatus& probe : probes) {
    html += "<tr><td>" + http::HtmlEscape(probe.name) + "</td>";
    if (!probe.enabled) {
      html += "<td colspan=7>disabled</td></tr>\n";
      continue;
    }
    html += "<td>every " + config::FormatDuration(probe.interval) + "</td><td>" +
            config::FormatDuration(probe.timeout) + "</td>";
    if (probe.last_run_unix_seconds) {
      html += "<td title=\"" + UtcTime(*probe.last_run_unix_seconds) + "\">" +
              HumaniseRelative(std::min(*probe.last_run_unix_seconds, now_unix_seconds), now_unix_seconds) +
              "</td><td>" + Seconds(std::chrono::duration<double>(probe.last_duration).count()) + "</td>";
    } else {
      html += "<td>not yet</td><td>–</td>";
    }
    html += OutcomeCell(probe);
    html += ChecksCell(probe);
    html += probe.running ? std::string("<td>running</td>")
                          : "<td>in " + HumaniseDuration(std::chrono::duration<double>(probe.due_in).count()) + "</td>";
    html += "</tr>\n";
  }
  html += "</table>\n<h2>Full runs</h2>\n";
  if (next_full_run_unix_seconds) {
    html += "<p>Next full run: " + FormatUtc(*next_full_run_unix_seconds, "%a %Y-%m-%d %H:%M UTC") + ", " +
            HumaniseRelative(*next_full_run_unix_seconds, now_unix_seconds) + " (<code>[full_runs]</code>).</p>\n";
  } else {
    html += "<p>No full runs scheduled (<code>[full_runs]</code> is disabled).</p>\n";
  }
  if (full_runs.empty()) {
    html +=
        "<p>No full runs yet. Start one with <code>POST /api/v1/runs</code> (needs <code>api.token_file</code>).</p>\n";
  } else {
    html += "<table><tr><th>run</th><th>state</th><th>probes</th><th>created</th><th>against thresholds</th></tr>\n";
    for (const nlohmann::json& run : full_runs) {
      if (run.is_object()) html += FullRunRow(run, now_unix_seconds);
    }
    html += "</table>\n";
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace hostperf::daemon
