#include "hostperf/probes/net/client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "control.h"

namespace hostperf::probes::net {

using Clock = std::chrono::steady_clock;

// One generator for every thread, not one per thread: a thread_local one
// (5000 bytes) is part of the static TLS block that glibc zeroes at the top
// of every thread's stack, resident in each of the HTTP workers too.
std::uint32_t RandomSessionId() {
  static std::mutex mu;
  static std::mt19937 rng(std::random_device{}());
  std::lock_guard lock(mu);
  return rng();
}

bool SendMessage(int fd, const Message& message, const Secret& secret, Clock::time_point deadline,
                 std::span<const std::uint8_t> binding) {
  const auto bytes = Encode(message, secret, binding);
  return WriteAll(fd, bytes.data(), bytes.size(), deadline);
}

namespace {

bool ReadExact(int fd, std::uint8_t* data, std::size_t size, Clock::time_point deadline) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, data + done, size - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!WaitFd(fd, POLLIN, deadline)) return false;
    } else {
      return false;  // EOF or error
    }
  }
  return true;
}

}  // namespace

std::optional<Message> ReceiveMessage(int fd, const Secret& secret, Clock::time_point deadline,
                                      std::span<const std::uint8_t> binding,
                                      std::optional<std::uint8_t>* peer_version) {
  std::vector<std::uint8_t> buffer(kHeaderSize);
  if (!ReadExact(fd, buffer.data(), kHeaderSize, deadline)) return std::nullopt;
  const std::size_t length = (static_cast<std::size_t>(buffer[12]) << 8) | buffer[13];
  if (length > kMaxPayload) return std::nullopt;
  buffer.resize(kHeaderSize + length + kMacSize);
  if (!ReadExact(fd, buffer.data() + kHeaderSize, length + kMacSize, deadline)) return std::nullopt;
  const Decoded decoded = Decode(buffer, secret, binding);
  if (decoded.error == DecodeError::kBadVersion && peer_version != nullptr) *peer_version = decoded.version;
  return decoded.message;
}

namespace {

std::string VersionMismatch(const SocketAddress& peer, unsigned version) {
  return "protocol version mismatch: peer " + peer.ToString() + " speaks protocol version " + std::to_string(version) +
         ", this host speaks version " + std::to_string(kProtocolVersion) +
         " (upgrade hostperf on both hosts to the same release)";
}

}  // namespace

Result<Control> OpenControl(const SocketAddress& peer, const Secret& secret, Clock::time_point deadline) {
  auto connected = ConnectTcp(peer, deadline);
  if (!connected) return connected.failure();
  Fd fd = std::move(connected).value();
  // Small messages each waiting for an answer: Nagle would hold a plan's
  // second message for the first one's delayed ACK (40 ms a host).
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Message hello;
  hello.type = MessageType::kHello;
  hello.session = RandomSessionId();
  hello.hello.nonce = RandomNonce();
  if (!SendMessage(fd.get(), hello, secret, deadline)) {
    return Failure{"protocol_error", "hello to " + peer.ToString() + ": send failed"};
  }
  std::optional<std::uint8_t> peer_version;
  const auto ack = ReceiveMessage(fd.get(), secret, deadline, hello.hello.nonce, &peer_version);
  if (peer_version) return Failure{"protocol_error", VersionMismatch(peer, *peer_version)};
  if (!ack || ack->type != MessageType::kHelloAck) {
    char byte = 0;
    const bool closed = ::recv(fd.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    return Failure{"protocol_error",
                   "no hello reply from " + peer.ToString() +
                       (closed ? ": it closed the connection (wrong secret, a responder of another protocol version "
                                 "than " +
                                     std::to_string(kProtocolVersion) + ", or at its connection or rate limit)"
                               : " (wrong secret or not a hostperf responder?)")};
  }
  if (ack->hello.version != kProtocolVersion)
    return Failure{"protocol_error", VersionMismatch(peer, ack->hello.version)};
  std::optional<std::uint32_t> mtu;
  if (ack->hello.revision >= 1 && ack->hello.mtu > 0) mtu = ack->hello.mtu;
  Control control;
  control.fd = std::move(fd);
  control.peer_max_connections = ack->hello.max_connections;
  control.peer_revision = ack->hello.revision;
  control.peer_mtu = mtu;
  control.binding = SessionBinding(hello.hello.nonce, ack->hello.nonce);
  return control;
}

namespace {

// Paced sends a gap of at least this apart sleep to their time: the timer's
// slack (~50 us) is nothing beside the gap, and hundreds of slow streams
// (a host's rate shared by all its peers) must not spin.
constexpr double kSleepOnlyGapNs = 10e6;

// `spin`: spin through the last 200 us (timer slack is ~50 us), for short gaps.
void SleepUntil(Clock::time_point when, bool spin) {
  const auto kSpin = spin ? std::chrono::microseconds(200) : std::chrono::microseconds(0);
  while (true) {
    const auto now = Clock::now();
    if (now >= when) return;
    if (when - now > kSpin) {
      std::this_thread::sleep_for(when - now - kSpin);
    }
  }
}

// A paced sender with nothing more due before the end still takes the
// session's whole duration: its rate is what it sent over that time.
void WaitOutTheDuration(Clock::time_point end, const std::function<bool()>& should_stop) {
  while (!should_stop()) {
    const auto now = Clock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(end - now, std::chrono::milliseconds(50)));
  }
}

void SendTcpData(int fd, const ThroughputOptions& options, const std::function<bool()>& should_stop,
                 ThroughputResult* result) {
  // Paced, a write holds at most 50 ms of the rate (at least 4 KiB): at a
  // few KB/s per peer (a host's rate shared by hundreds of peers) a whole
  // block would overshoot the rate.
  const std::size_t write_size =
      options.rate_bytes_per_second > 0
          ? std::clamp<std::size_t>(options.rate_bytes_per_second / 20, std::min<std::size_t>(4096, options.write_size),
                                    options.write_size)
          : options.write_size;
  const bool spin =
      options.rate_bytes_per_second > 0 && write_size * 1e9 / options.rate_bytes_per_second < kSleepOnlyGapNs;
  std::vector<std::uint8_t> block(write_size, 0x5a);
  const auto start = Clock::now();
  const auto end = start + options.duration;
  while (true) {
    const auto now = Clock::now();
    if (now >= end || should_stop()) break;
    if (options.rate_bytes_per_second > 0) {
      // Pace: the next write may start once the bytes so far fit the rate.
      const auto due = start + std::chrono::nanoseconds(static_cast<std::int64_t>(
                                   static_cast<double>(result->bytes_sent) * 1e9 / options.rate_bytes_per_second));
      if (due >= end) {
        WaitOutTheDuration(end, should_stop);
        break;
      }
      SleepUntil(due, spin);
    }
    const ssize_t n = ::send(fd, block.data(), block.size(), MSG_NOSIGNAL);
    if (n > 0) {
      result->bytes_sent += static_cast<std::uint64_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      WaitFd(fd, POLLOUT, std::min(end, Clock::now() + std::chrono::milliseconds(100)));
    } else {
      result->error = std::string("send: ") + std::strerror(errno);
      break;
    }
  }
  result->sent_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

void SendUdpData(const SocketAddress& peer, std::uint64_t token, const ThroughputOptions& options,
                 const std::function<bool()>& should_stop, const RealtimeClock& realtime, ThroughputResult* result) {
  Fd fd = NonBlockingSocket(peer.family(), SOCK_DGRAM);
  const int buffer = 4 * 1024 * 1024;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  if (!fd.valid() || ::connect(fd.get(), peer.get(), peer.length) != 0) {
    result->error = std::string("udp socket: ") + std::strerror(errno);
    return;
  }
  const std::size_t size = std::max(options.datagram_size, kUdpDataHeader);
  std::vector<std::uint8_t> datagram(size, 0x5a);
  // Datagram i leaves at start + i * size / rate: evenly paced, not in bursts.
  const double gap_ns = options.rate_bytes_per_second > 0 ? size * 1e9 / options.rate_bytes_per_second : 0;
  const auto start = Clock::now();
  const auto end = start + options.duration;
  for (std::uint64_t seq = 0;; ++seq) {
    const auto due = start + std::chrono::nanoseconds(static_cast<std::int64_t>(gap_ns * static_cast<double>(seq)));
    if (should_stop()) break;
    if (due >= end) {
      WaitOutTheDuration(end, should_stop);
      break;
    }
    SleepUntil(due, gap_ns < kSleepOnlyGapNs);
    EncodeUdpData({token, seq, realtime()}, datagram);
    while (::send(fd.get(), datagram.data(), datagram.size(), 0) < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS && errno != EINTR) break;
      WaitFd(fd.get(), POLLOUT, Clock::now() + std::chrono::milliseconds(10));
    }
    result->bytes_sent += size;
    result->packets_sent += 1;
  }
  result->sent_seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

// The pings of one MeasureLatency call: a connected UDP socket per target
// and the replies seen so far.
class PingSeries {
 public:
  PingSeries(std::span<const PeerTarget> targets, const Secret& secret, const RealtimeClock& realtime)
      : realtime_(realtime), results_(targets.size()), states_(targets.size()) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      states_[i].secret = &targets[i].SecretOr(secret);
      states_[i].fd = NonBlockingSocket(targets[i].address.family(), SOCK_DGRAM);
      states_[i].session = RandomSessionId();
      if (!states_[i].fd.valid() ||
          ::connect(states_[i].fd.get(), targets[i].address.get(), targets[i].address.length) != 0) {
        results_[i].error = std::string("udp socket: ") + std::strerror(errno);
        states_[i].fd.Reset();
      }
    }
  }

  // Sends ping `seq` to every target whose socket opened.
  void SendAll(std::uint32_t seq) {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].fd.valid()) continue;
      Message ping;
      ping.type = MessageType::kPing;
      ping.session = states_[i].session;
      ping.ping.seq = seq;
      ping.ping.t1_ns = realtime_();
      const auto bytes = Encode(ping, *states_[i].secret);
      ::send(states_[i].fd.get(), bytes.data(), bytes.size(), MSG_DONTWAIT);
      results_[i].sent += 1;  // a refused or dropped send is a lost packet too
      states_[i].answered[seq] = false;
    }
  }

  // Every ping sent so far has its reply (targets without a socket aside).
  bool AllAnswered() const {
    return std::all_of(states_.begin(), states_.end(), [](const State& s) {
      return !s.fd.valid() || std::all_of(s.answered.begin(), s.answered.end(), [](auto& e) { return e.second; });
    });
  }

  // Waits for replies until `wake` at the latest and reads those that came.
  void WaitAndRead(Clock::time_point now, Clock::time_point wake) {
    fds_.clear();
    for (const State& s : states_) fds_.push_back({s.fd.get(), POLLIN, 0});
    const auto wait = std::chrono::duration_cast<std::chrono::microseconds>(wake - now);
    timespec timeout{static_cast<time_t>(std::max<long long>(0, wait.count()) / 1000000),
                     static_cast<long>(std::max<long long>(0, wait.count()) % 1000000) * 1000};
    if (::ppoll(fds_.data(), fds_.size(), &timeout, nullptr) <= 0) return;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (fds_[i].revents & POLLIN) Read(i);
    }
  }

  // Reads every reply already waiting.
  void ReadAll() {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (states_[i].fd.valid()) Read(i);
    }
  }

  std::vector<LatencyResult> Results() {
    for (LatencyResult& result : results_) result.clock_offset_seconds = ClockOffsetSeconds(result.samples);
    return std::move(results_);
  }

 private:
  struct State {
    Fd fd;
    const Secret* secret = nullptr;  // the target's (it outlives the series)
    std::uint32_t session = 0;
    std::map<std::uint32_t, bool> answered;  // seq -> reply seen
  };

  // Reads every reply waiting on target i's socket.
  void Read(std::size_t i) {
    while (true) {
      const ssize_t n = ::recv(states_[i].fd.get(), buffer_.data(), buffer_.size(), 0);
      if (n < 0) return;
      const std::int64_t t4 = realtime_();
      const Decoded decoded =
          Decode(std::span<const std::uint8_t>(buffer_.data(), static_cast<std::size_t>(n)), *states_[i].secret);
      if (!decoded.message || decoded.message->type != MessageType::kPong ||
          decoded.message->session != states_[i].session) {
        continue;
      }
      const Ping& pong = decoded.message->ping;
      auto seen = states_[i].answered.find(pong.seq);
      if (seen == states_[i].answered.end() || seen->second) continue;  // unknown or duplicate
      seen->second = true;
      const TimestampSample sample{pong.t1_ns, pong.t2_ns, pong.t3_ns, t4};
      results_[i].received += 1;
      results_[i].samples.push_back(sample);
      results_[i].rtt_seconds.push_back(std::max<std::int64_t>(0, sample.Delay()) / 1e9);
    }
  }

  const RealtimeClock& realtime_;
  std::vector<LatencyResult> results_;
  std::vector<State> states_;
  std::vector<pollfd> fds_;
  std::array<std::uint8_t, kMaxMessage> buffer_;
};

}  // namespace

std::optional<double> ClockOffsetSeconds(std::span<const TimestampSample> samples) {
  const auto best = std::min_element(samples.begin(), samples.end(),
                                     [](const auto& a, const auto& b) { return a.Delay() < b.Delay(); });
  if (best == samples.end()) return std::nullopt;
  return best->OffsetSeconds();
}

std::string_view ToString(SessionOutcome outcome) {
  switch (outcome) {
    case SessionOutcome::kOk:
      return "ok";
    case SessionOutcome::kBusy:
      return "busy";
    case SessionOutcome::kDenied:
      return "denied";
    case SessionOutcome::kUnreachable:
      return "unreachable";
    case SessionOutcome::kProtocolError:
      return "protocol_error";
    case SessionOutcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::vector<LatencyResult> MeasureLatency(std::span<const PeerTarget> targets, const LatencyOptions& options,
                                          const Secret& secret, const std::function<bool()>& should_stop,
                                          const RealtimeClock& realtime) {
  PingSeries series(targets, secret, realtime);
  const auto start = Clock::now();
  const auto last_send = start + options.interval * (options.packets == 0 ? 0 : options.packets - 1);
  const auto stop_at = last_send + options.reply_timeout;
  std::uint32_t next = 0;
  bool stopped = false;
  while (true) {
    auto now = Clock::now();
    if (should_stop()) {
      stopped = true;
      break;
    }
    while (next < options.packets && now >= start + options.interval * next) series.SendAll(next++);
    if (now >= stop_at || (next == options.packets && series.AllAnswered())) break;
    series.WaitAndRead(now, next < options.packets ? start + options.interval * next : stop_at);
  }
  // Replies already here when the window closed count: a prober descheduled
  // past its window (a loaded host) must not report a network loss.
  if (!stopped) series.ReadAll();
  return series.Results();
}

ThroughputResult RunThroughput(const SocketAddress& peer, const ThroughputOptions& options, const Secret& secret,
                               const std::function<bool()>& should_stop, const RealtimeClock& realtime) {
  ThroughputResult result;
  // Client states: connect+hello, session requested, streaming, stopping, done.
  auto control = OpenControl(peer, secret, Clock::now() + options.connect_timeout);
  if (!control) {
    result.error = control.error();
    return result;
  }
  result.peer_mtu = control->peer_mtu;
  const Fd fd = std::move(control->fd);
  const auto control_deadline = [&] { return Clock::now() + options.connect_timeout; };
  Message start;
  start.type = options.plan_id != 0 ? MessageType::kPlanSessionStart : MessageType::kSessionStart;
  start.session = RandomSessionId();
  start.start.plan_id = options.plan_id;
  start.start.test = options.test;
  start.start.duration_ms = static_cast<std::uint32_t>(
      std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(options.duration).count()));
  start.start.rate_bytes_per_second = options.rate_bytes_per_second;
  if (!SendMessage(fd.get(), start, secret, control_deadline(), control->NextSent())) {
    result.outcome = SessionOutcome::kProtocolError;
    result.error = "session start: send failed";
    return result;
  }
  const auto reply = ReceiveMessage(fd.get(), secret, control_deadline(), control->NextReceived());
  if (!reply) {
    result.outcome = SessionOutcome::kProtocolError;
    result.error = "no reply to session start";
    return result;
  }
  if (reply->type == MessageType::kBusy) {
    result.outcome = SessionOutcome::kBusy;
    result.error = "peer is busy with another throughput session";
    return result;
  }
  if (reply->type != MessageType::kAccept) {
    result.outcome = reply->type == MessageType::kDenied ? SessionOutcome::kDenied : SessionOutcome::kProtocolError;
    result.error = "session start answered with " + std::string(ToString(reply->type));
    return result;
  }
  if (options.test == ThroughputTest::kTcp) {
    SendTcpData(fd.get(), options, should_stop, &result);
    ::shutdown(fd.get(), SHUT_WR);  // end of stream: the responder replies with results
  } else {
    SendUdpData(peer, reply->accept.token, options, should_stop, realtime, &result);
    // Let the last datagrams land before asking for the count.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Message stop;
    stop.type = MessageType::kSessionStop;
    stop.session = start.session;
    SendMessage(fd.get(), stop, secret, control_deadline(), control->NextSent());
  }
  // The results come once the responder has seen the end; a stop request
  // is honoured while waiting (a cancelled all-hosts plan, Ctrl-C).
  const auto results_deadline =
      Clock::now() + options.results_timeout.value_or(options.connect_timeout + options.duration);
  while (Clock::now() < results_deadline && !should_stop() &&
         !WaitFd(fd.get(), POLLIN, std::min(results_deadline, Clock::now() + std::chrono::milliseconds(100)))) {
  }
  const auto results = should_stop() && !WaitFd(fd.get(), POLLIN, Clock::now())
                           ? std::nullopt
                           : ReceiveMessage(fd.get(), secret, results_deadline, control->NextReceived());
  if (!results || results->type != MessageType::kResults) {
    result.outcome = SessionOutcome::kProtocolError;
    if (result.error.empty()) result.error = "no results from the peer";
    return result;
  }
  result.outcome = should_stop() ? SessionOutcome::kStopped : SessionOutcome::kOk;
  result.bytes_received = results->results.bytes;
  result.packets_received = results->results.packets;
  result.packets_lost =
      result.packets_sent > result.packets_received ? result.packets_sent - result.packets_received : 0;
  result.received_seconds = results->results.duration_ns / 1e9;
  result.jitter_seconds = results->results.jitter_ns / 1e9;
  return result;
}

Result<HelloReply> Hello(const SocketAddress& peer, const Secret& secret, std::chrono::nanoseconds timeout) {
  auto control = OpenControl(peer, secret, Clock::now() + timeout);
  if (!control) return control.failure();
  return HelloReply{control->peer_max_connections, control->peer_revision, control->peer_mtu};
}

std::uint64_t RaiseOpenFileLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return 0;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
    ::getrlimit(RLIMIT_NOFILE, &files);
  }
  return files.rlim_cur;
}

ConnectionTestResult ConnectionTest(const SocketAddress& peer, const Secret& secret, std::uint32_t maximum,
                                    std::chrono::nanoseconds timeout) {
  ConnectionTestResult result;
  result.tried = maximum;
  std::vector<Fd> open;
  const auto deadline = Clock::now() + timeout;
  for (std::uint32_t i = 0; i < result.tried && Clock::now() < deadline; ++i) {
    auto control = OpenControl(peer, secret, std::min(deadline, Clock::now() + std::chrono::seconds(1)));
    if (!control) break;  // refused, closed at once or no hello: the limit
    const std::uint32_t advertised = control->peer_max_connections;
    if (i == 0 && advertised > 0) {
      // Asking for more than the peer is configured to hold would only
      // measure its refusal and load it for nothing.
      result.peer_limit = advertised;
      result.tried = std::min(maximum, advertised);
    }
    open.push_back(std::move(control->fd));
  }
  result.accepted = static_cast<std::uint32_t>(open.size());
  return result;
}

}  // namespace hostperf::probes::net
