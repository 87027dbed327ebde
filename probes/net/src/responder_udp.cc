// The peer responder's UDP side: pings and hellos echoed statelessly (within
// the per-source rate limit), and the bulk datagrams of UDP throughput sessions.
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>

#include "responder_impl.h"

namespace hostperf::probes::net::responder {

void ResponderImpl::ServeUdp(int fd, std::span<std::uint8_t> buffer) {
  for (int budget = 0; budget < 4096; ++budget) {
    SocketAddress from;
    from.length = sizeof(from.storage);
    const ssize_t n =
        ::recvfrom(fd, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from.storage), &from.length);
    if (n < 0) return;
    const auto now = Clock::now();
    const std::span<const std::uint8_t> datagram(buffer.data(), static_cast<std::size_t>(n));
    if (const auto data = DecodeUdpData(datagram)) {
      OnUdpData(*data, datagram.size(), now);
      continue;
    }
    // Authenticated first, then charged: junk from a source (forged, or a
    // neighbour sharing its address) spends that source's junk bucket, its
    // authenticated requests their own, so junk never costs a genuine
    // observer its replies. A verification (HMAC-SHA256 over one small
    // datagram, a cached key: well under a microsecond) costs less than the
    // receive that brought the datagram in; only replies and counted
    // reasons are rate-limited per source.
    const std::string source = from.Host();
    const Decoded decoded = Decode(datagram, options_.secret);
    if (!decoded.message || decoded.consumed != datagram.size()) {
      Drop(junk_.Allow(source, now) ? FailureReason(decoded.error) : "rate_limited");
      continue;
    }
    if (!requests_.Allow(source, now)) {
      Drop("rate_limited");
      continue;
    }
    Message reply = *decoded.message;
    std::span<const std::uint8_t> binding;
    if (reply.type == MessageType::kPing) {
      reply.type = MessageType::kPong;
      reply.ping.t2_ns = options_.realtime();
    } else if (reply.type == MessageType::kHello) {
      reply.type = MessageType::kHelloAck;
      reply.hello.version = kProtocolVersion;
      reply.hello.revision = 0;  // no MTU over UDP: the reply must not outgrow the request
      reply.hello.mtu = 0;
      reply.hello.max_connections = options_.max_connections;
      reply.hello.nonce = RandomNonce();
      binding = decoded.message->hello.nonce;
    } else {
      Drop("malformed");
      continue;
    }
    Count(decoded.message->type);
    reply.ping.t3_ns = options_.realtime();
    const auto bytes = Encode(reply, options_.secret, binding);
    // Amplification guard: a reply never exceeds its request.
    if (bytes.size() > datagram.size()) continue;
    ::sendto(fd, bytes.data(), bytes.size(), MSG_DONTWAIT, from.get(), from.length);
  }
}

std::string_view FailureReason(DecodeError error) {
  switch (error) {
    case DecodeError::kBadHmac:
      return "bad_hmac";
    case DecodeError::kBadVersion:
      return "bad_version";
    default:
      return "malformed";
  }
}

void ResponderImpl::OnUdpData(const UdpData& data, std::size_t size, Clock::time_point now) {
  const auto owner = udp_tokens_.find(data.token);
  const auto it = owner == udp_tokens_.end() ? sessions_.end() : sessions_.find(owner->second);
  if (it == sessions_.end() || it->second.test != ThroughputTest::kUdp) {
    Drop("malformed");
    return;
  }
  Session& session = it->second;
  session.bytes += size;
  session.packets += 1;
  session.max_seq = std::max(session.max_seq, data.seq);
  if (!session.first_byte) session.first_byte = now;
  session.last_byte = now;
  const std::int64_t transit = options_.realtime() - data.sent_ns;
  if (session.last_transit) {
    const double d = static_cast<double>(std::llabs(transit - *session.last_transit));
    session.jitter_ns += (d - session.jitter_ns) / 16.0;
  }
  session.last_transit = transit;
}

}  // namespace hostperf::probes::net::responder
