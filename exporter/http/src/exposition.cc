#include "hostperf/http/exposition.h"

#include <prometheus/text_serializer.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

namespace hostperf::exporter {
namespace {

std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace

std::string SerializeMetrics(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collectable : collectables) {
    auto collected = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(collected.begin()),
                    std::make_move_iterator(collected.end()));
  }
  // Families without samples would be a bare HELP/TYPE pair: leave them out.
  std::erase_if(families, [](const prometheus::MetricFamily& family) { return family.metric.empty(); });
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

Result<std::string> Gzip(std::string_view data) {
  z_stream stream{};
  // 15 + 16: maximum window, gzip wrapper instead of zlib's.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Result<std::string>::Error("deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return Result<std::string>::Error("deflate failed");
  out.resize(stream.total_out);
  return out;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  // An explicit "gzip;q=…" decides; "*" only stands for codings not listed
  // (RFC 9110 12.5.3), so "gzip;q=0, *" refuses gzip.
  std::optional<double> gzip_q;
  std::optional<double> any_q;
  std::size_t start = 0;
  while (start <= accept_encoding.size()) {
    auto end = accept_encoding.find(',', start);
    if (end == std::string_view::npos) end = accept_encoding.size();
    std::string item = Trim(accept_encoding.substr(start, end - start));
    std::string coding = item;
    double q = 1.0;
    if (const auto semi = item.find(';'); semi != std::string::npos) {
      coding = Trim(std::string_view(item).substr(0, semi));
      const std::string param = Trim(std::string_view(item).substr(semi + 1));
      if (param.rfind("q=", 0) == 0) {
        try {
          q = std::stod(param.substr(2));
        } catch (...) {
          q = 0;
        }
      }
    }
    std::transform(coding.begin(), coding.end(), coding.begin(), [](unsigned char c) { return std::tolower(c); });
    if (coding == "gzip") gzip_q = std::max(q, gzip_q.value_or(0));
    if (coding == "*") any_q = std::max(q, any_q.value_or(0));
    start = end + 1;
  }
  return gzip_q ? *gzip_q > 0 : any_q.value_or(0) > 0;
}

HttpHandler MetricsHandler(std::vector<std::shared_ptr<prometheus::Collectable>> collectables) {
  return [collectables = std::move(collectables)](const HttpRequest& request) {
    if (request.method != "GET" && request.method != "HEAD") {
      auto response = HttpResponse::Text(405, "use GET");
      response.headers.emplace_back("Allow", "GET, HEAD");
      return response;
    }
    HttpResponse response;
    response.content_type = std::string(kTextFormatContentType);
    response.body = SerializeMetrics(collectables);
    if (AcceptsGzip(request.Header("accept-encoding"))) {
      if (auto compressed = Gzip(response.body)) {
        response.body = std::move(compressed).value();
        response.headers.emplace_back("Content-Encoding", "gzip");
      }
    }
    response.headers.emplace_back("Vary", "Accept-Encoding");
    return response;
  };
}

}  // namespace hostperf::exporter
