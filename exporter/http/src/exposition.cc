#include "hostperf/http/exposition.h"

#include <prometheus/text_serializer.h>
#include <pthread.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace hostperf::http {
namespace {

std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

// The values of every `label="…"` in the sample lines of `text`, as
// [begin, end) offsets of the text between the quotes. A `="` in a sample
// line always opens a label value (quotes inside values are escaped), so the
// name before it is a label name when `{` or `,` precedes it.
std::vector<std::pair<std::size_t, std::size_t>> LabelValueSpans(std::string_view text, std::string_view label) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t line_end = text.find('\n', line);
    if (line_end == std::string_view::npos) line_end = text.size();
    const auto open = text[line] == '#' ? std::string_view::npos : text.find('{', line);
    if (open != std::string_view::npos && open < line_end) {
      bool in_value = false;
      std::size_t name_start = open + 1;
      std::size_t value_start = 0;
      for (std::size_t i = open + 1; i < line_end; ++i) {
        const char c = text[i];
        if (in_value) {
          if (c == '\\') {
            ++i;
          } else if (c == '"') {
            in_value = false;
            if (text.substr(name_start, value_start - 2 - name_start) == label) spans.emplace_back(value_start, i);
          }
        } else if (c == '"') {
          in_value = true;
          value_start = i + 1;
        } else if (c == ',') {
          name_start = i + 1;
        } else if (c == '}') {
          break;
        }
      }
    }
    line = line_end + 1;
  }
  return spans;
}

// `text` with the values of `label` replaced by `values` in order (the
// exact doubles the serializer printed with 16 digits, which do not always
// round-trip). Should the count not match, each printed value is parsed
// back instead (exact for every bound written with up to 15 digits).
std::string RewriteFloatLabel(const std::string& text, std::string_view label, const std::vector<double>& values) {
  const auto spans = LabelValueSpans(text, label);
  if (spans.empty()) return text;
  const bool exact = spans.size() == values.size();
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const auto [begin, end] = spans[k];
    const std::string_view printed(text.data() + begin, end - begin);
    std::optional<double> value;
    if (exact) {
      value = values[k];
    } else if (printed == "+Inf") {
      value = std::numeric_limits<double>::infinity();
    } else if (printed == "-Inf") {
      value = -std::numeric_limits<double>::infinity();
    } else {
      double parsed = 0;
      const auto [ptr, ec] = std::from_chars(printed.data(), printed.data() + printed.size(), parsed);
      if (ec == std::errc() && ptr == printed.data() + printed.size()) value = parsed;
    }
    if (!value) continue;  // not a number: left as printed
    out.append(text, copied, begin - copied);
    out += FormatFloatLikeGo(*value);
    copied = end;
  }
  out.append(text, copied, std::string::npos);
  return out;
}

}  // namespace

std::string FormatFloatLikeGo(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";
  char buffer[64];
  // Shortest digits that parse back to `value`, as d.ddde[+-]x.
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
  std::string_view scientific(buffer, static_cast<std::size_t>(end - buffer));
  std::string out;
  if (scientific.front() == '-') {
    out += '-';
    scientific.remove_prefix(1);
  }
  const auto e = scientific.find('e');
  std::string digits;
  for (const char c : scientific.substr(0, e)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(scientific.substr(e + 1)).c_str());
  // Go's strconv.FormatFloat(f, 'g', -1, 64): %e when the exponent is below
  // -4 or at least 6 (the shortest form decides at precision 6), else %f;
  // the exponent has a sign and at least two digits.
  if (exponent < -4 || exponent >= 6) {
    out += digits.front();
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int magnitude = std::abs(exponent);
    out += exponent < 0 ? "e-" : "e+";
    if (magnitude < 10) out += '0';
    out += std::to_string(magnitude);
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto whole = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= whole) {
      out += digits + std::string(whole - digits.size(), '0');
    } else {
      out += digits.substr(0, whole) + "." + digits.substr(whole);
    }
  }
  return out;
}

std::string SerializeMetrics(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collectable : collectables) {
    auto collected = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(collected.begin()),
                    std::make_move_iterator(collected.end()));
  }
  // Families without samples would be a bare HELP/TYPE pair: leave them out.
  std::erase_if(families, [](const prometheus::MetricFamily& family) { return family.metric.empty(); });
  // prometheus-cpp 1.0.1 prints `le` and `quantile` with 16 significant
  // digits (le="6.999999999999999e-05" for 7e-05); Go's and Python's clients
  // print the shortest form that round-trips, and selectors and `sum by (le)`
  // across exporters need the same strings. Histograms and summaries are
  // serialized one family at a time and their bounds rewritten from the
  // exact doubles; sample values are printed by prometheus-cpp as before.
  std::string result;
  std::vector<prometheus::MetricFamily> batch;
  const auto flush = [&result, &batch] {
    if (batch.empty()) return;
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, batch);
    result += out.str();
    batch.clear();
  };
  for (auto& family : families) {
    const bool histogram = family.type == prometheus::MetricType::Histogram;
    const bool summary = family.type == prometheus::MetricType::Summary;
    if (!histogram && !summary) {
      batch.push_back(std::move(family));
      continue;
    }
    flush();
    // The label values in the order the serializer writes them.
    std::vector<double> bounds;
    for (const auto& metric : family.metric) {
      if (histogram) {
        double last = -std::numeric_limits<double>::infinity();
        for (const auto& bucket : metric.histogram.bucket) bounds.push_back(last = bucket.upper_bound);
        if (last != std::numeric_limits<double>::infinity()) bounds.push_back(std::numeric_limits<double>::infinity());
      } else {
        for (const auto& quantile : metric.summary.quantile) bounds.push_back(quantile.quantile);
      }
    }
    batch.push_back(std::move(family));
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, batch);
    batch.clear();
    result += RewriteFloatLabel(out.str(), histogram ? "le" : "quantile", bounds);
  }
  flush();
  return result;
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

namespace {

// Builds the exposition on a thread of its own. It is made of thousands of
// small blocks (prometheus-cpp's families, labels, strings), and glibc keeps
// up to seven freed blocks of each small size in a cache per thread that
// malloc_trim cannot give back: built on the worker that took the scrape,
// each of the HTTP workers, which CivetWeb hands connections to in turn,
// would keep ~20 KiB of them (1.3 MiB for 64). Every scrape gets a
// serialization that started after it asked; the scrapes that ask while one
// runs share the next.
class MetricsSerializer {
 public:
  explicit MetricsSerializer(std::vector<std::shared_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}
  ~MetricsSerializer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    done_.notify_all();  // a scrape still waiting gets null
    if (thread_.joinable()) thread_.join();
  }
  MetricsSerializer(const MetricsSerializer&) = delete;
  MetricsSerializer& operator=(const MetricsSerializer&) = delete;

  // Null only while the serializer is being destroyed.
  std::shared_ptr<const std::string> Serialize() {
    std::unique_lock lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });  // on the first scrape
    const std::uint64_t wanted = started_ + 1;
    requested_ = std::max(requested_, wanted);
    wake_.notify_all();
    done_.wait(lock, [&] { return finished_ >= wanted || stop_; });
    if (finished_ < wanted) return nullptr;
    if (error_) std::rethrow_exception(error_);  // as if serialized here: the server answers 500
    return latest_;
  }

 private:
  void Loop() {
    // Named for ps and top: a thread starts with its creator's name (a worker's).
    (void)pthread_setname_np(pthread_self(), "hostperf-scrape");
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || requested_ > started_; });
      if (stop_) return;
      const std::uint64_t generation = ++started_;
      lock.unlock();
      std::shared_ptr<const std::string> text;
      std::exception_ptr error;
      try {
        text = std::make_shared<const std::string>(SerializeMetrics(collectables_));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      latest_ = std::move(text);
      error_ = error;
      finished_ = generation;
      done_.notify_all();
    }
  }

  const std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::mutex mu_;
  std::condition_variable wake_;  // the thread: a scrape asked, or stop
  std::condition_variable done_;  // the scrapes: a serialization finished
  std::uint64_t requested_ = 0;   // the newest generation a scrape waits for
  std::uint64_t started_ = 0;
  std::uint64_t finished_ = 0;
  std::shared_ptr<const std::string> latest_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace

HttpHandler MetricsHandler(std::vector<std::shared_ptr<prometheus::Collectable>> collectables) {
  auto serializer = std::make_shared<MetricsSerializer>(std::move(collectables));
  return [serializer = std::move(serializer)](const HttpRequest& request) {
    if (request.method != "GET" && request.method != "HEAD") {
      auto response = HttpResponse::Text(405, "use GET");
      response.headers.emplace_back("Allow", "GET, HEAD");
      return response;
    }
    HttpResponse response;
    response.content_type = std::string(kTextFormatContentType);
    const auto text = serializer->Serialize();
    if (text == nullptr) return HttpResponse::Text(503, "shutting down");
    response.body = *text;
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

}  // namespace hostperf::http
