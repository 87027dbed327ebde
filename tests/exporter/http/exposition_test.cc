#include "hostperf/http/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <zlib.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hostperf::exporter {
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

}  // namespace
}  // namespace hostperf::exporter
