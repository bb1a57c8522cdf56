#include "replication/link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace cuckood::replication {

Link::Link(int fd) {
  Reset(fd);
}

void Link::Reset(int fd) {
  Close();
  std::lock_guard lock(fd_mu_);
  fd_ = fd;
  if (fd_ >= 0) {
    int one = 1;
    (void)setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
}

Link::~Link() {
  Close();
}

void Link::Close() {
  std::lock_guard lock(fd_mu_);
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  buf_.clear();
  pos_ = 0;
}

Status Link::Connect(const std::string& host, int port, std::chrono::milliseconds timeout,
                     Link* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    return {Code::kIoError, "cannot resolve " + host + ": " + gai_strerror(rc)};
  }
  std::string last = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    const int flags = fcntl(fd, F_GETFL, 0);
    (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 1) {
        int err = 0;
        socklen_t len = sizeof(err);
        (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = rc == 0 ? ETIMEDOUT : errno;
        rc = -1;
      }
    }
    if (rc == 0) {
      (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      freeaddrinfo(res);
      out->Reset(fd);
      return Status::Ok();
    }
    last = std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  return {Code::kIoError, "cannot connect to " + host + ":" + service + ": " + last};
}

void Link::SetTimeout(std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  (void)setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  (void)setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void Link::Interrupt() {
  std::lock_guard lock(fd_mu_);
  if (fd_ >= 0) {
    (void)::shutdown(fd_, SHUT_RDWR);
  }
}

Status Link::WriteAll(std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return {Code::kIoError, "replication link: write timed out"};
      }
      return {Code::kIoError, std::string("replication link: ") + std::strerror(errno)};
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status Link::WriteCommand(const std::vector<std::string>& argv) {
  std::string out = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
  return WriteAll(out);
}

Status Link::Fill() {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1 << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  std::array<char, 64 * 1024> chunk;
  for (;;) {
    ssize_t n = ::recv(fd_, chunk.data(), chunk.size(), 0);
    if (n > 0) {
      buf_.append(chunk.data(), static_cast<size_t>(n));
      return Status::Ok();
    }
    if (n == 0) {
      return {Code::kIoError, "replication link closed by the peer"};
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return {Code::kIoError, "replication link: read timed out"};
    }
    return {Code::kIoError, std::string("replication link: ") + std::strerror(errno)};
  }
}

Status Link::ReadLine(std::string* line) {
  for (;;) {
    const size_t nl = buf_.find("\r\n", pos_);
    if (nl != std::string::npos) {
      if (nl - pos_ > kMaxLine) {
        return {Code::kCorruption, "replication link: line too long"};
      }
      line->assign(buf_, pos_, nl - pos_);
      pos_ = nl + 2;
      return Status::Ok();
    }
    if (buf_.size() - pos_ > kMaxLine) {
      return {Code::kCorruption, "replication link: line too long"};
    }
    if (auto s = Fill(); !s.ok()) {
      return s;
    }
  }
}

Status Link::ReadExact(size_t n, std::string* out) {
  while (n > 0) {
    if (pos_ == buf_.size()) {
      if (auto s = Fill(); !s.ok()) {
        return s;
      }
    }
    const size_t take = std::min(n, buf_.size() - pos_);
    out->append(buf_, pos_, take);
    pos_ += take;
    n -= take;
  }
  return Status::Ok();
}

bool Link::Readable() {
  if (pos_ < buf_.size()) {
    return true;
  }
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

std::string Link::PeerAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "";
  }
  char host[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

uint32_t Crc32c(uint32_t crc, const void* data, size_t n) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      }
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  }
  return ~crc;
}

std::vector<std::string> SplitWords(std::string_view line) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= line.size()) {
    size_t sp = line.find(' ', start);
    if (sp == std::string_view::npos) {
      sp = line.size();
    }
    if (sp > start) {
      words.emplace_back(line.substr(start, sp - start));
    }
    start = sp + 1;
  }
  return words;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) {
    return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace cuckood::replication
