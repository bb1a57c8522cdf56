// Incremental RESP request parser: multibulk (`*N\r\n$L\r\n...`) and inline commands, with
// Redis's limits and error texts. Any split of the input across Feed() calls parses the same.
// Not thread-safe; one parser per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cuckood::resp {

struct ParserLimits {
  uint64_t max_bulk_len = 512ULL * 1024 * 1024;         // proto-max-bulk-len
  int64_t max_multibulk_len = 2147483647;               // INT_MAX: Redis 7 rejects counts above it
  size_t max_inline_len = 64 * 1024;                    // inline line / unfinished header line
  uint64_t query_buffer_limit = 1024ULL * 1024 * 1024;  // client-query-buffer-limit
  // Before AUTH (a password is set): at most 10 arguments of at most 16 KiB each, as Redis.
  bool unauthenticated = false;
};

class Parser {
 public:
  enum class Result {
    kCommand,   // *argv holds one command, never empty (blank lines and `*0` are skipped); an
                // arg may be empty
    kNeedMore,  // no complete command buffered; Feed() more
    kError,     // protocol error: error() has Redis's text; the connection must be closed.
                // Sticky: later Next() calls return kError too, and input fed after it is dropped
  };

  explicit Parser(ParserLimits limits = {});

  // Appends received bytes. Invalidates argv views from earlier Next() calls.
  void Feed(std::string_view bytes);
  // Space to receive into directly, then Commit(n) the bytes written (avoids a copy).
  char* PrepareWrite(size_t n);
  void Commit(size_t n);

  // Parses the next whole command. argv views point into the parser's buffer and stay valid until
  // the next Feed/PrepareWrite call: Next never moves the buffer, so the views of several commands
  // parsed in a row are valid together (a connection looks ahead at the commands that follow).
  Result Next(std::vector<std::string_view>* argv);

  // After kError: the message without the leading '-', e.g. "ERR Protocol error: invalid bulk
  // length".
  const std::string& error() const { return error_; }
  // After kError: whether the error was the query buffer limit (Redis counts those apart).
  bool query_buffer_limit_hit() const { return query_buffer_limit_hit_; }
  // Bytes buffered and not yet consumed (for query-buffer accounting, CLIENT LIST qbuf). Like
  // Redis's qbuf, the finished args of an unfinished multibulk no longer count.
  size_t buffered() const;
  void set_limits(const ParserLimits& limits) { limits_ = limits; }

 private:
  enum class Step { kCommand, kSkip, kProgress, kNeedMore, kError };

  Step ParseCount();
  Step ParseBulks(std::vector<std::string_view>* argv);
  Step ParseInline(std::vector<std::string_view>* argv);
  size_t FindLineEnd(char terminator);
  void Advance(size_t n);
  bool query_buffer_limit_hit_ = false;
  Step Fail(std::string message);
  void Compact(size_t incoming);

  ParserLimits limits_;
  // Bytes [0, end_) of buf_ hold data; buf_ may be longer (room handed out by PrepareWrite), so
  // growing never zero-fills the same bytes twice.
  std::string buf_;
  size_t end_ = 0;
  size_t pos_ = 0;  // first unconsumed byte
  // Bytes after pos_ already searched for the current line's terminator (kNulSeen: a NUL byte came
  // first, so the line can never end).
  size_t scanned_ = 0;
  // Multibulk state kept across calls so a huge command is not rescanned from its start.
  int64_t pending_args_ = -1;  // -1: not inside a multibulk
  int64_t bulk_len_ = -1;      // length of the bulk being received; -1: its header is next
  size_t cmd_start_ = 0;       // where the current multibulk's args begin; kept by Compact
  std::vector<std::pair<size_t, size_t>> spans_;  // (offset from cmd_start_, length) of args so far
  std::string error_;
};

}  // namespace cuckood::resp
