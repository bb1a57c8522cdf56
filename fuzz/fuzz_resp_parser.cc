// resp::Parser on arbitrary bytes. The input is the byte stream a client sends (so the seed
// corpus is plain RESP); how it is split across Feed() calls is derived from a hash of the input.
//
// Invariants, under three sets of limits (the defaults, small limits, unauthenticated):
// - no crash, no sanitizer report, no unbounded allocation;
// - every command has at least one argument, none longer than the limits allow;
// - an error is sticky and its text is one of Redis's "ERR Protocol error: ..." messages;
// - feeding the stream whole, one byte at a time, in pseudo-random pieces or through
//   PrepareWrite/Commit gives the same commands, the same error and the same buffered() count
//   (parser.h: "Any split of the input across Feed() calls parses the same").
// query_buffer_limit stays at its 1 GiB default: that limit depends on the split by design.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "resp/parser.h"

namespace {

using cuckood::resp::Parser;
using cuckood::resp::ParserLimits;

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  bool error = false;
  std::string error_text;
  size_t buffered = 0;

  bool operator==(const Outcome&) const = default;
};

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Fnv1a(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  return h;
}

class Runner {
 public:
  explicit Runner(const ParserLimits& limits) : limits_(limits), parser_(limits) {}

  // Parses what is buffered; false once the parser has failed.
  bool Drain() {
    if (out_.error) {
      return false;
    }
    for (;;) {
      switch (parser_.Next(&argv_)) {
        case Parser::Result::kCommand: {
          FUZZ_CHECK(!argv_.empty());
          std::vector<std::string> copy;
          for (std::string_view arg : argv_) {
            FUZZ_CHECK(arg.size() <= limits_.max_bulk_len || arg.size() <= limits_.max_inline_len);
            copy.emplace_back(arg);
          }
          out_.commands.push_back(std::move(copy));
          break;
        }
        case Parser::Result::kNeedMore:
          FUZZ_CHECK(argv_.empty());
          return true;
        case Parser::Result::kError:
          out_.error = true;
          out_.error_text = parser_.error();
          FUZZ_CHECK(out_.error_text.rfind("ERR Protocol error: ", 0) == 0);
          // Sticky, also after more input.
          FUZZ_CHECK(parser_.Next(&argv_) == Parser::Result::kError);
          parser_.Feed("*1\r\n$4\r\nPING\r\n");
          FUZZ_CHECK(parser_.Next(&argv_) == Parser::Result::kError);
          FUZZ_CHECK(parser_.error() == out_.error_text);
          return false;
      }
    }
  }

  bool Feed(std::string_view bytes) {
    parser_.Feed(bytes);
    return Drain();
  }

  // Receives through the zero-copy path, asking for `slack` more room than is used.
  bool Receive(std::string_view bytes, size_t slack) {
    char* dst = parser_.PrepareWrite(bytes.size() + slack);
    if (!bytes.empty()) {
      std::memcpy(dst, bytes.data(), bytes.size());
    }
    parser_.Commit(bytes.size());
    return Drain();
  }

  Outcome Finish() {
    if (!out_.error) {
      out_.buffered = parser_.buffered();
    }
    return out_;
  }

 private:
  ParserLimits limits_;
  Parser parser_;
  std::vector<std::string_view> argv_;
  Outcome out_;
};

Outcome Whole(std::string_view data, const ParserLimits& limits) {
  Runner r(limits);
  r.Feed(data);
  return r.Finish();
}

Outcome ByteByByte(std::string_view data, const ParserLimits& limits) {
  Runner r(limits);
  for (size_t i = 0; i < data.size() && r.Feed(data.substr(i, 1)); ++i) {
  }
  return r.Finish();
}

// Pieces of pseudo-random length (mostly short, sometimes long), some through PrepareWrite,
// some empty.
Outcome RandomSplits(std::string_view data, const ParserLimits& limits, uint64_t seed) {
  Runner r(limits);
  uint64_t state = seed;
  size_t pos = 0;
  bool ok = true;
  while (ok && pos < data.size()) {
    const uint64_t rnd = SplitMix(&state);
    size_t len = (rnd & 3) == 0 ? 1 + (rnd >> 8) % 4096 : 1 + (rnd >> 8) % 16;
    if ((rnd & 0xf0) == 0) {
      len = 0;
    }
    len = std::min(len, data.size() - pos);
    const std::string_view piece = data.substr(pos, len);
    ok = (rnd & 0x100) != 0 ? r.Receive(piece, (rnd >> 20) % 64) : r.Feed(piece);
    pos += len;
  }
  return r.Finish();
}

void CheckAllSplits(std::string_view data, const ParserLimits& limits) {
  const Outcome whole = Whole(data, limits);
  FUZZ_CHECK(ByteByByte(data, limits) == whole);
  const uint64_t seed = Fnv1a(data);
  FUZZ_CHECK(RandomSplits(data, limits, seed) == whole);
  FUZZ_CHECK(RandomSplits(data, limits, seed ^ 0x5555) == whole);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);

  CheckAllSplits(data, ParserLimits{});

  ParserLimits small;
  small.max_bulk_len = 64;
  small.max_multibulk_len = 16;
  small.max_inline_len = 48;
  CheckAllSplits(data, small);

  ParserLimits unauthenticated;
  unauthenticated.unauthenticated = true;
  unauthenticated.max_inline_len = 256;
  CheckAllSplits(data, unauthenticated);
  return 0;
}
