// Request parsing as a client observes Redis 7's processInlineBuffer / processMultibulkBuffer
// (networking.c). Quirks reproduced on purpose:
// - A header line ends at the first '\r'; the byte after it is skipped unchecked, and so are the
//   two bytes after a bulk's data.
// - Line searches stop at a NUL byte (Redis uses strchr), so such a line never ends and runs into
//   the 64 KiB limit. Bulk data may hold any byte.
// - Numbers follow string2ll: no '+', no leading zeros, no "-0", at most 20 characters.
// - Inline args are split like sdssplitargs, empty ("") args included.
// One deliberate difference: Redis decides "too big" from the bytes buffered when a read ends, so
// a line of 64-80 KiB passes or fails depending on its 16 KiB reads. Here a line whose terminator
// is more than max_inline_len bytes away always fails, as it would in Redis had the bytes arrived
// one at a time; the outcome never depends on how the input was split.
#include "resp/parser.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace cuckood::resp {
namespace {

constexpr size_t kNotFound = std::numeric_limits<size_t>::max();
constexpr size_t kNulSeen = std::numeric_limits<size_t>::max();
// FindLineEnd looks at up to this many bytes one by one before it searches with memchr.
constexpr size_t kShortLine = 24;
// A buffer above this capacity holding under a quarter of it is reallocated smaller, so one huge
// request does not pin its memory for the life of the connection.
constexpr size_t kKeepCapacity = size_t{1} << 20;
// Arg slots reserved from a multibulk count; more grow as args arrive (a bare "*2000000000" must
// not allocate).
constexpr int64_t kMaxReservedArgs = 1024;

constexpr const char* kErrTooBigCount = "ERR Protocol error: too big mbulk count string";
constexpr const char* kErrInvalidCount = "ERR Protocol error: invalid multibulk length";
constexpr const char* kErrTooBigBulkCount = "ERR Protocol error: too big bulk count string";
constexpr const char* kErrExpectedDollar = "ERR Protocol error: expected '$', got '";
constexpr const char* kErrInvalidBulk = "ERR Protocol error: invalid bulk length";
// Before AUTH, Redis accepts only small commands.
constexpr int64_t kUnauthMaxArgs = 10;
constexpr int64_t kUnauthMaxBulk = 16384;
constexpr const char* kErrUnauthCount = "ERR Protocol error: unauthenticated multibulk length";
constexpr const char* kErrUnauthBulk = "ERR Protocol error: unauthenticated bulk length";
constexpr const char* kErrTooBigInline = "ERR Protocol error: too big inline request";
constexpr const char* kErrUnbalanced = "ERR Protocol error: unbalanced quotes in request";
// Redis closes such a client without a reply; the text is ours.
constexpr const char* kErrQueryBuffer = "ERR Protocol error: query buffer limit exceeded";

// Redis's string2ll acceptance rules (see the file comment).
bool ParseStrictInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) {
    return false;
  }
  if (s == "0") {
    *out = 0;
    return true;
  }
  const bool negative = s[0] == '-';
  size_t i = negative ? 1 : 0;
  if (i == s.size() || s[i] < '1' || s[i] > '9') {
    return false;
  }
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    const auto digit = static_cast<uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return false;
    }
    v = v * 10 + digit;
  }
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (v > kMax + (negative ? 1 : 0)) {
    return false;
  }
  *out = negative ? static_cast<int64_t>(~v + 1) : static_cast<int64_t>(v);
  return true;
}

bool IsSpace(char c) {  // C-locale isspace
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : c - 'A' + 10;
}

char Unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

// Splits an inline line the way sdssplitargs does: blanks (isspace) separate args; an unquoted arg
// ends at ' ', '\t', '\r' or '\n'; "double quotes" take \xHH, \n \r \t \b \a and \<any> escapes;
// 'single quotes' take only \'; a quote may open mid-arg, but a closing quote must be followed by
// a blank or the end. Returns false for unbalanced quotes. The decoded args are written over the
// line itself (an arg never outgrows its source text, so writing never overtakes reading); spans
// are (offset, length) within the line. The line holds no NUL (FindLineEnd stops at one).
bool SplitInlineArgs(char* line, size_t len, std::vector<std::pair<size_t, size_t>>* spans) {
  // sdssplitargs reads a NUL-terminated string: past the end reads as '\0'.
  auto at = [line, len](size_t i) { return i < len ? line[i] : '\0'; };
  size_t in = 0;
  size_t out = 0;
  while (true) {
    while (in < len && IsSpace(line[in])) {
      ++in;
    }
    if (in == len) {
      return true;
    }
    const size_t start = out;
    enum class Mode { kPlain, kDouble, kSingle } mode = Mode::kPlain;
    bool done = false;
    while (!done) {
      const char c = at(in);
      if (mode == Mode::kDouble) {
        if (c == '\\' && at(in + 1) == 'x' && IsHexDigit(at(in + 2)) && IsHexDigit(at(in + 3))) {
          line[out++] = static_cast<char>(HexValue(at(in + 2)) * 16 + HexValue(at(in + 3)));
          in += 4;
        } else if (c == '\\' && at(in + 1) != '\0') {
          line[out++] = Unescape(at(in + 1));
          in += 2;
        } else if (c == '"') {
          if (at(in + 1) != '\0' && !IsSpace(at(in + 1))) {
            return false;
          }
          done = true;
          ++in;
        } else if (c == '\0') {
          return false;
        } else {
          line[out++] = c;
          ++in;
        }
      } else if (mode == Mode::kSingle) {
        if (c == '\\' && at(in + 1) == '\'') {
          line[out++] = '\'';
          in += 2;
        } else if (c == '\'') {
          if (at(in + 1) != '\0' && !IsSpace(at(in + 1))) {
            return false;
          }
          done = true;
          ++in;
        } else if (c == '\0') {
          return false;
        } else {
          line[out++] = c;
          ++in;
        }
      } else {
        switch (c) {
          case ' ':
          case '\t':
          case '\r':
          case '\n':
            done = true;
            ++in;
            break;
          case '\0':
            done = true;
            break;
          case '"':
            mode = Mode::kDouble;
            ++in;
            break;
          case '\'':
            mode = Mode::kSingle;
            ++in;
            break;
          default:
            line[out++] = c;
            ++in;
            break;
        }
      }
    }
    spans->emplace_back(start, out - start);
  }
}

}  // namespace

Parser::Parser(ParserLimits limits) : limits_(limits) {}

void Parser::Feed(std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  std::memcpy(PrepareWrite(bytes.size()), bytes.data(), bytes.size());
  Commit(bytes.size());
}

char* Parser::PrepareWrite(size_t n) {
  Compact(n);
  return buf_.data() + end_;
}

void Parser::Commit(size_t n) {
  end_ += std::min(n, buf_.size() - end_);
}

size_t Parser::buffered() const {
  return end_ - pos_;
}

// Drops consumed bytes and makes room for `incoming` more. Bytes are moved only when the move
// costs no more than the bytes dropped, or as part of a reallocation that copies the live bytes
// anyway (growing geometrically), so the work stays amortised O(1) a byte however the input is
// split.
void Parser::Compact(size_t incoming) {
  if (!error_.empty()) {  // input after an error is never parsed: drop it
    end_ = pos_ = cmd_start_ = 0;
  }
  // An unfinished multibulk keeps its parsed args (spans_ point at them).
  const size_t keep = pending_args_ >= 0 ? cmd_start_ : pos_;
  const size_t live = end_ - keep;
  const size_t capacity = buf_.capacity();
  const bool must_grow = capacity - end_ < incoming;
  const bool oversized = capacity > kKeepCapacity && live + incoming < capacity / 4;
  size_t shift = 0;
  if (must_grow || oversized) {
    std::string fresh;
    fresh.reserve(oversized ? live + incoming : std::max(live + incoming, 2 * capacity));
    fresh.append(buf_, keep, live);
    buf_.swap(fresh);
    shift = keep;
  } else if (keep > 0 && keep >= live) {
    std::memmove(buf_.data(), buf_.data() + keep, live);
    shift = keep;
  }
  if (shift > 0) {
    end_ -= shift;
    pos_ -= shift;
    cmd_start_ = pending_args_ >= 0 ? cmd_start_ - shift : 0;
  }
  if (buf_.size() - end_ < incoming) {
    buf_.resize(end_ + incoming);  // within capacity: zero-fills only bytes never handed out
  }
}

Parser::Step Parser::Fail(std::string message) {
  error_ = std::move(message);
  return Step::kError;
}

void Parser::Advance(size_t n) {
  pos_ += n;
  scanned_ = 0;
}

// Offset from pos_ of the current line's terminator, or kNotFound. The search stops at a NUL (see
// the file comment) and covers at most max_inline_len + 1 bytes: a terminator further away makes
// the line too long, which the caller reports once more than max_inline_len bytes are buffered.
size_t Parser::FindLineEnd(char terminator) {
  if (scanned_ == kNulSeen) {
    return kNotFound;
  }
  const size_t avail = end_ - pos_;
  const size_t window = avail > limits_.max_inline_len ? limits_.max_inline_len + 1 : avail;
  if (scanned_ >= window) {
    return kNotFound;
  }
  const char* line = buf_.data() + pos_;
  // Header lines ("*3", "$6") are a few bytes: looked at one by one, without two library calls.
  const size_t short_end = std::min(window, scanned_ + kShortLine);
  for (size_t i = scanned_; i < short_end; ++i) {
    if (line[i] == terminator) {
      scanned_ = i;
      return i;
    }
    if (line[i] == '\0') {
      scanned_ = kNulSeen;
      return kNotFound;
    }
  }
  scanned_ = short_end;
  if (scanned_ >= window) {
    return kNotFound;
  }
  const char* from = line + scanned_;
  const auto* hit = static_cast<const char*>(std::memchr(from, terminator, window - scanned_));
  const size_t stop = hit != nullptr ? static_cast<size_t>(hit - line) : window;
  if (std::memchr(from, '\0', stop - scanned_) != nullptr) {
    scanned_ = kNulSeen;
    return kNotFound;
  }
  scanned_ = stop;
  return hit != nullptr ? stop : kNotFound;
}

Parser::Result Parser::Next(std::vector<std::string_view>* argv) {
  argv->clear();
  if (!error_.empty()) {
    return Result::kError;
  }
  while (true) {
    Step step;
    if (pending_args_ >= 0) {
      step = ParseBulks(argv);
    } else if (pos_ == end_) {
      step = Step::kNeedMore;
    } else if (buf_[pos_] == '*') {
      step = ParseCount();
    } else {
      step = ParseInline(argv);
    }
    switch (step) {
      case Step::kCommand:
        return Result::kCommand;
      case Step::kError:
        return Result::kError;
      case Step::kNeedMore:
        // Like Redis's querybuf, this counts the bytes not yet parsed: a finished arg of an
        // unfinished command no longer counts.
        if (end_ - pos_ > limits_.query_buffer_limit) {
          query_buffer_limit_hit_ = true;
          Fail(kErrQueryBuffer);
          return Result::kError;
        }
        return Result::kNeedMore;
      case Step::kSkip:
      case Step::kProgress:
        break;
    }
  }
}

// At a '*': reads the count line. kProgress enters the multibulk; kSkip for a count <= 0.
Parser::Step Parser::ParseCount() {
  const size_t eol = FindLineEnd('\r');
  if (eol == kNotFound) {
    return end_ - pos_ > limits_.max_inline_len ? Fail(kErrTooBigCount) : Step::kNeedMore;
  }
  if (end_ - pos_ < eol + 2) {
    return Step::kNeedMore;
  }
  int64_t count = 0;
  if (!ParseStrictInt({buf_.data() + pos_ + 1, eol - 1}, &count) ||
      count > limits_.max_multibulk_len) {
    return Fail(kErrInvalidCount);
  }
  if (limits_.unauthenticated && count > kUnauthMaxArgs) {
    return Fail(kErrUnauthCount);
  }
  Advance(eol + 2);
  if (count <= 0) {
    return Step::kSkip;
  }
  pending_args_ = count;
  bulk_len_ = -1;
  cmd_start_ = pos_;
  spans_.clear();
  spans_.reserve(static_cast<size_t>(std::min(count, kMaxReservedArgs)));
  return Step::kProgress;
}

// Inside a multibulk: reads "$<len>\r\n<bytes>\r\n" until the command is whole.
Parser::Step Parser::ParseBulks(std::vector<std::string_view>* argv) {
  while (pending_args_ > 0) {
    if (bulk_len_ < 0) {
      const size_t eol = FindLineEnd('\r');
      if (eol == kNotFound) {
        return end_ - pos_ > limits_.max_inline_len ? Fail(kErrTooBigBulkCount) : Step::kNeedMore;
      }
      if (end_ - pos_ < eol + 2) {
        return Step::kNeedMore;
      }
      const char* line = buf_.data() + pos_;
      if (line[0] != '$') {
        // Redis formats the byte with %c, then turns CR and LF in the reply into spaces.
        const char got = (line[0] == '\r' || line[0] == '\n') ? ' ' : line[0];
        return Fail(std::string(kErrExpectedDollar) + got + "'");
      }
      int64_t len = 0;
      if (!ParseStrictInt({line + 1, eol - 1}, &len) || len < 0 ||
          static_cast<uint64_t>(len) > limits_.max_bulk_len) {
        return Fail(kErrInvalidBulk);
      }
      if (limits_.unauthenticated && len > kUnauthMaxBulk) {
        return Fail(kErrUnauthBulk);
      }
      Advance(eol + 2);
      bulk_len_ = len;
    }
    // O(1) per call however the bulk arrives: its bytes are never scanned.
    const size_t avail = end_ - pos_;
    const auto len = static_cast<size_t>(bulk_len_);
    if (avail < 2 || avail - 2 < len) {
      return Step::kNeedMore;
    }
    spans_.emplace_back(pos_ - cmd_start_, len);
    Advance(len + 2);
    bulk_len_ = -1;
    --pending_args_;
  }
  pending_args_ = -1;
  argv->reserve(spans_.size());
  for (const auto& [offset, len] : spans_) {
    argv->emplace_back(buf_.data() + cmd_start_ + offset, len);
  }
  return Step::kCommand;
}

// Anything not starting with '*': one line, ended by '\n' with an optional '\r' before it.
Parser::Step Parser::ParseInline(std::vector<std::string_view>* argv) {
  const size_t eol = FindLineEnd('\n');
  if (eol == kNotFound) {
    return end_ - pos_ > limits_.max_inline_len ? Fail(kErrTooBigInline) : Step::kNeedMore;
  }
  char* line = buf_.data() + pos_;
  const size_t len = (eol > 0 && line[eol - 1] == '\r') ? eol - 1 : eol;
  spans_.clear();
  if (!SplitInlineArgs(line, len, &spans_)) {
    return Fail(kErrUnbalanced);
  }
  Advance(eol + 1);
  if (spans_.empty()) {
    return Step::kSkip;
  }
  argv->reserve(spans_.size());
  for (const auto& [offset, arg_len] : spans_) {
    argv->emplace_back(line + offset, arg_len);
  }
  return Step::kCommand;
}

}  // namespace cuckood::resp
