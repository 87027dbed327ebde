#include "hostperf/http/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../../common/go_float.h"

namespace hostperf::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// gunzip with zlib; fails the test on a corrupt stream.
std::string Gunzip(std::string_view compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[4096];
  int rc = Z_OK;
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) break;
  }
  EXPECT_EQ(rc, Z_STREAM_END) << "truncated or corrupt gzip stream";
  EXPECT_EQ(stream.avail_in, 0u) << "trailing bytes after the gzip stream";
  inflateEnd(&stream);
  return out;
}

struct AcceptCase {
  std::string header;
  bool gzip;
};

// Readable ctest names instead of gtest's byte dump.
void PrintTo(const AcceptCase& c, std::ostream* os) {
  *os << '"' << c.header << "\" -> " << (c.gzip ? "gzip" : "identity");
}

class AcceptsGzipTest : public ::testing::TestWithParam<AcceptCase> {};

TEST_P(AcceptsGzipTest, MatchesTheHeader) {
  EXPECT_EQ(AcceptsGzip(GetParam().header), GetParam().gzip) << "Accept-Encoding: " << GetParam().header;
}

INSTANTIATE_TEST_SUITE_P(Table, AcceptsGzipTest,
                         ::testing::Values(AcceptCase{"gzip", true},                 //
                                           AcceptCase{"deflate, gzip;q=0.5", true},  //
                                           AcceptCase{"gzip;q=0", false},            //
                                           AcceptCase{"gzip; q=0.000", false},       //
                                           AcceptCase{"*", true},                    //
                                           AcceptCase{"", false},                    //
                                           AcceptCase{"identity", false},            //
                                           AcceptCase{"GZIP", true},                 //
                                           AcceptCase{"  gzip  ", true},             //
                                           AcceptCase{"deflate, br", false},         //
                                           AcceptCase{"br;q=1.0, gzip;q=0.8, *;q=0.1", true},
                                           AcceptCase{"identity, *;q=0", false},  //
                                           AcceptCase{"gzip;q=bogus", false},     //
                                           // An explicit refusal beats the wildcard (RFC 9110 12.5.3).
                                           AcceptCase{"gzip;q=0, *", false},  //
                                           AcceptCase{"*, gzip;q=0", false},  //
                                           AcceptCase{"gzip;q=0, *;q=0.5", false}));

TEST(GzipTest, OutputInflatesBackToTheInput) {
  const std::string input = "# HELP a_metric A metric.\n# TYPE a_metric gauge\na_metric 1\n";
  const auto compressed = Gzip(input);
  ASSERT_TRUE(compressed.ok()) << compressed.error();
  ASSERT_GE(compressed->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*compressed)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*compressed)[1]), 0x8b);
  EXPECT_EQ(Gunzip(*compressed), input);
}

TEST(GzipTest, EmptyInputGivesAValidEmptyStream) {
  const auto compressed = Gzip("");
  ASSERT_TRUE(compressed.ok()) << compressed.error();
  EXPECT_EQ(Gunzip(*compressed), "");
}

TEST(GzipTest, LargeInputRoundTripsAndShrinks) {
  std::string input;
  for (int i = 0; input.size() < 2 * 1024 * 1024; ++i) {
    input += "hostperf_disk_throughput_bytes_per_second{directory=\"/data" + std::to_string(i % 97) +
             "\",test=\"read\"} " + std::to_string(i * 7919 % 100003) + "\n";
  }
  const auto compressed = Gzip(input);
  ASSERT_TRUE(compressed.ok()) << compressed.error();
  EXPECT_LT(compressed->size(), input.size() / 4);
  EXPECT_EQ(Gunzip(*compressed), input);
}

std::shared_ptr<prometheus::Registry> SampleRegistry() {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("test_requests_total")
      .Help("Requests.")
      .Register(*registry)
      .Add({{"code", "200"}})
      .Increment(3);
  prometheus::BuildGauge().Name("test_temperature_celsius").Help("Temperature.").Register(*registry).Add({}).Set(21.5);
  prometheus::BuildHistogram()
      .Name("test_latency_seconds")
      .Help("Latency.")
      .Register(*registry)
      .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 1})
      .Observe(0.5);
  // Registered but without a single series: must not appear at all.
  prometheus::BuildGauge().Name("test_empty_family").Help("Nothing here.").Register(*registry);
  return registry;
}

TEST(SerializeMetricsTest, WritesTextFormatWithTypeLines) {
  const std::string text = SerializeMetrics({SampleRegistry()});
  EXPECT_THAT(text, HasSubstr("# TYPE test_requests_total counter\n"));
  EXPECT_THAT(text, HasSubstr("test_requests_total{code=\"200\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE test_temperature_celsius gauge\n"));
  EXPECT_THAT(text, HasSubstr("test_temperature_celsius 21.5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE test_latency_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("test_latency_seconds_bucket{le=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("test_latency_seconds_count 1\n"));
  EXPECT_THAT(text, HasSubstr("test_latency_seconds_sum 0.5\n"));
}

TEST(SerializeMetricsTest, DropsFamiliesWithoutSamples) {
  const std::string text = SerializeMetrics({SampleRegistry()});
  EXPECT_THAT(text, Not(HasSubstr("test_empty_family")));
}

TEST(SerializeMetricsTest, ConcatenatesEveryCollectable) {
  auto other = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge().Name("other_up").Help("Up.").Register(*other).Add({}).Set(1);
  const std::string text = SerializeMetrics({SampleRegistry(), other});
  EXPECT_THAT(text, HasSubstr("test_requests_total"));
  EXPECT_THAT(text, HasSubstr("other_up 1\n"));
}

TEST(SerializeMetricsTest, NoCollectablesGiveEmptyText) { EXPECT_EQ(SerializeMetrics({}), ""); }

// ---------------------------------------------------------------------------
// Float labels in the shortest round-trip form, as Go prints them.

struct GoCase {
  double value;
  std::string go;  // strconv.FormatFloat(value, 'g', -1, 64)
};

void PrintTo(const GoCase& c, std::ostream* os) { *os << c.go; }

class FormatFloatLikeGoTest : public ::testing::TestWithParam<GoCase> {};

TEST_P(FormatFloatLikeGoTest, MatchesGo) {
  EXPECT_EQ(FormatFloatLikeGo(GetParam().value), GetParam().go);
  EXPECT_EQ(hostperf::testing::GoShortestOracle(GetParam().value), GetParam().go) << "the oracle itself";
}

INSTANTIATE_TEST_SUITE_P(
    Table, FormatFloatLikeGoTest,
    ::testing::Values(GoCase{7e-05, "7e-05"}, GoCase{70e-6, "7e-05"}, GoCase{8e-05, "8e-05"}, GoCase{1e-05, "1e-05"},
                      GoCase{2.5e-05, "2.5e-05"}, GoCase{0.0001, "0.0001"}, GoCase{0.00012, "0.00012"},
                      GoCase{0.001, "0.001"}, GoCase{2.5e-3, "0.0025"}, GoCase{0.1, "0.1"}, GoCase{0.25, "0.25"},
                      GoCase{0.5, "0.5"}, GoCase{0.99, "0.99"}, GoCase{1, "1"}, GoCase{2.5, "2.5"}, GoCase{10, "10"},
                      GoCase{123.456, "123.456"}, GoCase{100000, "100000"}, GoCase{999999, "999999"},
                      GoCase{1e6, "1e+06"}, GoCase{1.5e6, "1.5e+06"}, GoCase{123456789, "1.23456789e+08"},
                      GoCase{1e21, "1e+21"}, GoCase{1e100, "1e+100"}, GoCase{0.1 + 0.2, "0.30000000000000004"},
                      GoCase{5e-324, "5e-324"}, GoCase{1.7976931348623157e308, "1.7976931348623157e+308"},
                      GoCase{-0.5, "-0.5"}, GoCase{-1e6, "-1e+06"}, GoCase{0, "0"}, GoCase{-0.0, "0"},
                      GoCase{std::numeric_limits<double>::infinity(), "+Inf"},
                      GoCase{-std::numeric_limits<double>::infinity(), "-Inf"},
                      GoCase{std::numeric_limits<double>::quiet_NaN(), "NaN"}));

// Round trip and shortness over many values: every project bucket bound,
// powers of ten and their multiples, and random doubles of every magnitude.
TEST(FormatFloatLikeGo, RoundTripsShortestForManyValues) {
  std::vector<double> values;
  for (int exponent = -12; exponent <= 12; ++exponent) {
    for (const double mantissa : {1.0, 1.25, 2.0, 2.5, 3.0, 5.0, 7.0, 7.5, 8.0, 9.0}) {
      values.push_back(mantissa * std::pow(10.0, exponent));
      values.push_back(mantissa / std::pow(10.0, -exponent));
    }
  }
  std::mt19937_64 random(20);
  std::uniform_real_distribution<double> exponent(-300, 300);
  for (int i = 0; i < 20000; ++i) values.push_back(std::pow(10.0, exponent(random)));
  std::uniform_int_distribution<std::uint64_t> bits;
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t b = bits(random);
    double v;
    std::memcpy(&v, &b, sizeof(v));
    if (std::isfinite(v)) values.push_back(v);
  }
  for (const double v : values) {
    const std::string text = FormatFloatLikeGo(v);
    ASSERT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    ASSERT_EQ(text, hostperf::testing::GoShortestOracle(v)) << "%.17g: " << [v] {
      char t[40];
      std::snprintf(t, sizeof(t), "%.17g", v);
      return std::string(t);
    }();
  }
}

TEST(SerializeMetricsTest, BucketBoundsAndQuantilesAreShortestSampleValuesAsBefore) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& histograms = prometheus::BuildHistogram().Name("t_seconds").Help("T.").Register(*registry);
  histograms
      .Add({{"op", "le=\"7\", x\\"}},
           prometheus::Histogram::BucketBoundaries{10e-6, 70e-6, 80e-6, 0.001, 0.25, 1, 1e6, 123456789})
      .Observe(0.3);
  histograms.Add({{"op", "b"}}, prometheus::Histogram::BucketBoundaries{0.1, 0.3}).Observe(0.2);
  prometheus::BuildSummary()
      .Name("t_summary")
      .Help("S.")
      .Register(*registry)
      .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}, {0.999, 0.0001}})
      .Observe(1);
  auto& gauges = prometheus::BuildGauge().Name("t_gauge").Help("G.").Register(*registry);
  gauges.Add({{"le", "0.30000000000000004"}}).Set(70e-6);  // not a histogram: left alone
  const std::string text = SerializeMetrics({registry});
  const std::string a = "t_seconds_bucket{op=\"le=\\\"7\\\", x\\\\\",le=\"";
  for (const char* bound : {"1e-05", "7e-05", "8e-05", "0.001", "0.25", "1", "1e+06", "1.23456789e+08", "+Inf"}) {
    EXPECT_THAT(text, HasSubstr(a + bound + "\"}")) << text;
  }
  EXPECT_THAT(text, HasSubstr("t_seconds_bucket{op=\"b\",le=\"0.1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("t_seconds_bucket{op=\"b\",le=\"0.3\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("t_seconds_bucket{op=\"b\",le=\"+Inf\"} 1\n"));
  for (const char* q : {"0.5", "0.9", "0.99", "0.999"}) {
    EXPECT_THAT(text, HasSubstr(std::string("t_summary{quantile=\"") + q + "\"} 1\n"));
  }
  EXPECT_THAT(text, Not(HasSubstr("6.999999999999999e-05\"")));
  EXPECT_THAT(text, Not(HasSubstr("8.000000000000001e-05")));
  EXPECT_THAT(text, Not(HasSubstr("le=\"1000000\"")));
  // Sample values and other labels are printed by prometheus-cpp as before.
  EXPECT_THAT(text, HasSubstr("t_gauge{le=\"0.30000000000000004\"} 6.999999999999999e-05\n"));
  EXPECT_THAT(text, HasSubstr("t_seconds_sum{op=\"b\"} 0.2\n"));
  EXPECT_THAT(text, HasSubstr("t_seconds_count{op=\"b\"} 1\n"));
  // Families keep their order, each with its HELP and TYPE.
  EXPECT_LT(text.find("# TYPE t_gauge gauge"), text.find("# TYPE t_seconds histogram")) << text;
  EXPECT_LT(text.find("# TYPE t_seconds histogram"), text.find("# TYPE t_summary summary")) << text;
}

std::string HeaderValue(const HttpResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

HttpRequest Get(std::string accept_encoding = "") {
  HttpRequest request;
  request.method = "GET";
  request.path = "/metrics";
  if (!accept_encoding.empty()) request.headers["accept-encoding"] = std::move(accept_encoding);
  return request;
}

TEST(MetricsHandlerTest, GetServesTheTextFormat) {
  const HttpHandler handler = MetricsHandler({SampleRegistry()});
  const HttpResponse response = handler(Get());
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.content_type, kTextFormatContentType);
  EXPECT_EQ(HeaderValue(response, "Content-Encoding"), "");
  EXPECT_THAT(response.body, HasSubstr("test_temperature_celsius 21.5\n"));
  EXPECT_EQ(response.body, SerializeMetrics({SampleRegistry()}));
}

TEST(MetricsHandlerTest, GzipsWhenTheClientAsks) {
  const HttpHandler handler = MetricsHandler({SampleRegistry()});
  const HttpResponse response = handler(Get("gzip"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, kTextFormatContentType);
  EXPECT_EQ(HeaderValue(response, "Content-Encoding"), "gzip");
  EXPECT_EQ(HeaderValue(response, "Vary"), "Accept-Encoding");
  ASSERT_GE(response.body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(response.body[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(response.body[1]), 0x8b);
  EXPECT_EQ(Gunzip(response.body), SerializeMetrics({SampleRegistry()}));
}

TEST(MetricsHandlerTest, DoesNotGzipWhenTheClientRefuses) {
  const HttpHandler handler = MetricsHandler({SampleRegistry()});
  const HttpResponse response = handler(Get("gzip;q=0"));
  EXPECT_EQ(HeaderValue(response, "Content-Encoding"), "");
  EXPECT_THAT(response.body, HasSubstr("# TYPE"));
}

TEST(MetricsHandlerTest, HeadIsAnsweredLikeGet) {
  const HttpHandler handler = MetricsHandler({SampleRegistry()});
  HttpRequest request = Get();
  request.method = "HEAD";
  const HttpResponse response = handler(request);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, kTextFormatContentType);
}

TEST(MetricsHandlerTest, PostIsMethodNotAllowedWithAllowHeader) {
  const HttpHandler handler = MetricsHandler({SampleRegistry()});
  HttpRequest request = Get();
  request.method = "POST";
  const HttpResponse response = handler(request);
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(HeaderValue(response, "Allow"), "GET, HEAD");
  EXPECT_THAT(response.body, Not(HasSubstr("test_requests_total")));
}

TEST(MetricsHandlerTest, ReflectsChangesBetweenScrapes) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& gauge = prometheus::BuildGauge().Name("test_value").Help("Value.").Register(*registry).Add({});
  const HttpHandler handler = MetricsHandler({registry});
  gauge.Set(1);
  EXPECT_THAT(handler(Get()).body, HasSubstr("test_value 1\n"));
  gauge.Set(2);
  EXPECT_THAT(handler(Get()).body, HasSubstr("test_value 2\n"));
}

// Scrapes at once share serializations, but each sees what was set before
// it asked: a serialization that started earlier is never handed to it.
TEST(MetricsHandlerTest, ConcurrentScrapesEachSeeWhatWasSetBeforeTheyAsked) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& counter = prometheus::BuildCounter().Name("test_sets_total").Help("Sets.").Register(*registry).Add({});
  const HttpHandler handler = MetricsHandler({registry});
  constexpr int kThreads = 8;
  constexpr int kScrapes = 200;
  std::vector<int> stale(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kScrapes; ++i) {
        counter.Increment();
        const double before = counter.Value();
        const std::string body = handler(Get()).body;
        const auto at = body.find("\ntest_sets_total ");
        if (at == std::string::npos || std::stod(body.substr(at + 17)) < before) ++stale[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(stale[t], 0) << "thread " << t;
  EXPECT_THAT(handler(Get()).body, HasSubstr("test_sets_total " + std::to_string(kThreads * kScrapes) + "\n"));
}

}  // namespace
}  // namespace hostperf::http
