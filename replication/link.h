// A blocking TCP link between a primary and a replica, and the frames they exchange.
//
// The replica opens the link like any client (AUTH, REPLCONF, then REPLSYNC; see
// replication/primary.h for the exchange). After REPLSYNC the link carries lines and raw
// payloads:
//   primary -> replica   +CONTINUE <replid> <seq>        the stream follows from seq + 1
//                        +FULLSYNC <replid> <seq>        checkpoint files follow, then the stream
//                        +FILE <name> <size>\r\n<size bytes>+CRC <crc32c hex>
//                        +ENDFILES <seq>                 all files sent; waits for READY
//                        +BATCH <seq> <size>\r\n<size bytes>   one RocksDB write batch
//                        +PING <latest seq>              heartbeat while idle
//                        -ERR <text>                     and the link closes
//   replica -> primary   READY <seq>                     installed; holds up to seq (>= announced)
//                        ACK <seq>                       applied up to seq
// Each side runs the link on a thread of its own; reads and writes time out (repl-timeout), and
// another thread may Interrupt() a link to wake it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"

namespace cuckood::replication {

using storage::Code;
using storage::Status;

// Milliseconds of the steady clock (ack times, link timeouts).
inline int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The replication protocol's version, named in REPLSYNC; a primary refuses another one.
inline constexpr int kProtocolVersion = 1;
// Longest line a link accepts (a line is a header, never data).
inline constexpr size_t kMaxLine = 4096;

class Link {
 public:
  // Takes ownership of a connected, blocking socket.
  explicit Link(int fd = -1);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Connects to host:port (names resolved) within timeout.
  static Status Connect(const std::string& host, int port, std::chrono::milliseconds timeout,
                        Link* out);

  // Closes the current socket, if any, and takes fd.
  void Reset(int fd);
  bool open() const { return fd_ >= 0; }
  // Per-call limit for blocking reads and writes.
  void SetTimeout(std::chrono::milliseconds timeout);
  // Wakes a thread blocked on this link (its call fails); thread-safe.
  void Interrupt();
  void Close();

  Status WriteAll(std::string_view data);
  // A RESP command (array of bulk strings).
  Status WriteCommand(const std::vector<std::string>& argv);
  // One line without its CRLF.
  Status ReadLine(std::string* line);
  // Exactly n bytes, appended to *out.
  Status ReadExact(size_t n, std::string* out);
  // Bytes waiting in the read buffer or on the socket (does not block).
  bool Readable();
  // The peer's address as ip:port (empty when unknown).
  std::string PeerAddress() const;

 private:
  Status Fill();      // reads more into buf_
  std::mutex fd_mu_;  // Close/Reset against Interrupt from another thread
  int fd_ = -1;
  std::string buf_;
  size_t pos_ = 0;
};

// CRC-32C (Castagnoli) of data, continuing from crc (0 to start).
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);

// Splits a line on single spaces.
std::vector<std::string> SplitWords(std::string_view line);
// A decimal u64; false when malformed.
bool ParseU64(std::string_view s, uint64_t* out);

}  // namespace cuckood::replication
