#pragma once

#include <prometheus/collectable.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/http/http_server.h"

namespace hostperf::http {

inline constexpr std::string_view kTextFormatContentType = "text/plain; version=0.0.4; charset=utf-8";

// `value` as Go's strconv.FormatFloat(value, 'g', -1, 64) prints it (the
// form client_golang uses for `le` and `quantile`): the shortest digits that
// round-trip, "7e-05", "0.25", "1", "100000", "1e+06", "1.23456789e+08";
// "+Inf", "-Inf", "NaN"; 0 and -0 as "0".
std::string FormatFloatLikeGo(double value);

// Serializes every collectable in the text format 0.0.4; histogram bucket
// bounds (`le`) and summary quantiles printed by FormatFloatLikeGo.
std::string SerializeMetrics(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables);

// gzip (RFC 1952) of `data`.
Result<std::string> Gzip(std::string_view data);

// True if an Accept-Encoding header value admits gzip (q > 0).
bool AcceptsGzip(std::string_view accept_encoding);

// The /metrics handler: GET and HEAD, gzip when the client asks.
HttpHandler MetricsHandler(std::vector<std::shared_ptr<prometheus::Collectable>> collectables);

}  // namespace hostperf::http
