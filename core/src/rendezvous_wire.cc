#include "rendezvous_wire.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cstring>

namespace rdmalab::rendezvous {

Header decode_header(const unsigned char* h) {
  Header x{};
  std::memcpy(&x.magic, h, 4);
  std::memcpy(&x.version, h + 4, 2);
  std::memcpy(&x.type, h + 6, 2);
  std::memcpy(&x.len, h + 8, 4);
  return Header{ntohl(x.magic), ntohl(x.len), ntohs(x.version), ntohs(x.type)};
}

void encode_header(unsigned char* h, std::uint16_t type, std::uint32_t len) {
  const std::uint32_t m = htonl(kMagic), l = htonl(len);
  const std::uint16_t v = htons(kVersion), t = htons(type);
  std::memcpy(h, &m, 4);
  std::memcpy(h + 4, &v, 2);
  std::memcpy(h + 6, &t, 2);
  std::memcpy(h + 8, &l, 4);
}

Status check_header(const Header& h, const std::string& who) {
  if (h.magic != kMagic) return Status(Errc::bootstrap, fmt::format("bootstrap: {} sent a message that is not rdmalab's (bad magic)", who));
  if (h.version != kVersion)
    return Status(Errc::bootstrap, fmt::format("bootstrap: {} speaks protocol version {}, this rdmalab speaks {}", who, h.version, kVersion));
  if (h.type < kHello || h.type > kBye) return Status(Errc::bootstrap, fmt::format("bootstrap: {} sent an unknown message type {}", who, h.type));
  if (h.len > kMaxLen) return Status(Errc::bootstrap, fmt::format("bootstrap: {} announced a {}-byte message (limit {})", who, h.len, kMaxLen));
  return Status::ok();
}

std::vector<std::byte> hello_body(int rank, int size, const std::string& token) {
  std::vector<std::byte> b(8 + token.size());
  const std::uint32_t r = htonl(static_cast<std::uint32_t>(rank)), s = htonl(static_cast<std::uint32_t>(size));
  std::memcpy(b.data(), &r, 4);
  std::memcpy(b.data() + 4, &s, 4);
  if (!token.empty()) std::memcpy(b.data() + 8, token.data(), token.size());
  return b;
}

HelloVerdict check_hello(std::span<const unsigned char> buf, const std::string& token, int size,
                         const std::vector<bool>& joined) {
  HelloVerdict v;
  auto drop = [&](std::string why, bool tell, bool fatal = false) {
    v.kind = HelloVerdict::drop;
    v.why = std::move(why);
    v.tell = tell;
    v.fatal = fatal;
    return v;
  };
  if (buf.size() < kHeaderBytes) return v;
  const Header hd = decode_header(buf.data());
  // A hello is two numbers and a token: its length is checked before anything is kept.
  if (hd.magic != kMagic) return drop("not rdmalab's protocol", false);
  if (hd.version != kVersion) return drop(fmt::format("protocol version {} (this rdmalab speaks {})", hd.version, kVersion), true);
  if (hd.type != kHello) return drop("its first message was not a hello", false);
  if (hd.len < 8 || hd.len > 8 + kMaxToken)
    return drop(fmt::format("a hello of {} bytes (a hello holds 8 bytes and a token of at most {})", hd.len, kMaxToken), false);
  if (buf.size() < kHeaderBytes + hd.len) return v;
  std::uint32_t r, sz;
  std::memcpy(&r, buf.data() + kHeaderBytes, 4);
  std::memcpy(&sz, buf.data() + kHeaderBytes + 4, 4);
  r = ntohl(r), sz = ntohl(sz);
  const std::string_view got(reinterpret_cast<const char*>(buf.data() + kHeaderBytes + 8), hd.len - 8);
  // The joiner learns why; the run keeps waiting for the ranks that have the token.
  if (got != token) return drop("wrong run token (every rank needs the same --token or RDMALAB_TOKEN)", true);
  if (buf.size() > kHeaderBytes + hd.len) return drop("sent more than its hello before the welcome", false);
  const auto want = static_cast<std::uint32_t>(size);
  if (sz != want) return drop(fmt::format("rank {} says the run has {} ranks; rank 0 has {} (the same --size everywhere)", r, sz, want), true, true);
  if (r == 0 || r >= want) return drop(fmt::format("rank {} is not in 1..{} (--rank)", r, want - 1), true, true);
  if (r < joined.size() && joined[r]) return drop(fmt::format("rank {} joined twice (two processes with the same --rank)", r), true, true);
  v.kind = HelloVerdict::accept;
  v.rank = r;
  return v;
}

std::string printable(std::string_view peer_text) {
  constexpr std::size_t kShown = 512;
  const std::string_view t = peer_text.substr(0, kShown);
  std::string out;
  for (std::size_t i = 0; i < t.size();) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += t[i++];
      continue;
    }
    // A whole UTF-8 character from U+00A0 up (rdmalab's own messages use a few) stays as it is;
    // anything else, C1 controls included, is written as bytes.
    const int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool ok = n > 0 && i + static_cast<std::size_t>(n) <= t.size();
    std::uint32_t cp = n == 4 ? c & 0x07u : n == 3 ? c & 0x0fu : c & 0x1fu;
    for (int k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(t[i + static_cast<std::size_t>(k)]);
      ok = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3fu);
    }
    ok = ok && cp >= 0xa0 && !(cp >= 0xd800 && cp < 0xe000) && cp < 0x110000 && (n < 3 || cp >= 0x800) && (n < 4 || cp >= 0x10000);
    if (ok) {
      out.append(t.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  if (peer_text.size() > kShown) out += fmt::format("... ({} bytes in all)", peer_text.size());
  return out;
}

}  // namespace rdmalab::rendezvous
