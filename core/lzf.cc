// LZF compression and bounded decompression. The compressor follows Redis 7.0's choices step by
// step, since the bytes it produces are compared with Redis's: which position a hash slot
// remembers, when a match is taken, how long it is measured, which positions are hashed after
// it, and when the output is declared too large.
#include "core/lzf.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace cuckood::core {
namespace {

constexpr unsigned kHashBits = 16;
constexpr size_t kHashSlots = size_t{1} << kHashBits;
constexpr size_t kMaxLiteral = 32;                         // bytes per literal run
constexpr size_t kMaxOffset = size_t{1} << 13;             // a copy reaches at most 8 KiB back
constexpr size_t kMaxMatch = (size_t{1} << 8) + (1 << 3);  // bytes per copy (264)
constexpr size_t kFlushBytes = 256 * 1024;

// The slot of the three bytes held in the low 24 bits of h (higher bits do not matter: the
// subtraction is taken modulo 2^16).
inline size_t Slot(uint32_t h) {
  return ((h >> (24 - kHashBits)) - h * 5) & (kHashSlots - 1);
}

// Positions remembered per slot. Redis leaves its table uninitialised; an empty slot here is one
// that gives no candidate, which is what a fresh table gives. A generation number in the high
// bits empties the table in O(1) between calls.
class HashTable {
 public:
  static constexpr unsigned kPosBits = 40;
  static constexpr uint64_t kPosMask = (uint64_t{1} << kPosBits) - 1;

  HashTable() : slots_(kHashSlots, 0) {}
  void NewInput() {
    if (++generation_ == (uint64_t{1} << (64 - kPosBits))) {
      std::fill(slots_.begin(), slots_.end(), 0);
      generation_ = 1;
    }
  }
  // The position remembered in slot s (true) or none (false); then remembers pos there.
  bool Swap(size_t s, size_t pos, size_t* previous) {
    const uint64_t old = slots_[s];
    slots_[s] = (generation_ << kPosBits) | pos;
    if ((old >> kPosBits) != generation_) {
      return false;
    }
    *previous = static_cast<size_t>(old & kPosMask);
    return true;
  }
  void Set(size_t s, size_t pos) { slots_[s] = (generation_ << kPosBits) | pos; }

 private:
  std::vector<uint64_t> slots_;
  uint64_t generation_ = 0;
};

inline uint32_t Byte(const unsigned char* p, size_t i) {
  return p[i];
}

// Bytes matching between positions ref and ip (the first three are known to match), measured
// as Redis measures them: when more than 16 may match it compares 16 more bytes before checking
// the limit, so such a copy may run up to 19 bytes even if the limit is lower.
size_t MatchLength(const unsigned char* in, size_t ref, size_t ip, size_t maxlen) {
  size_t n = 3;
  if (maxlen > 16) {
    for (; n <= 18; ++n) {
      if (in[ref + n] != in[ip + n]) {
        return n;
      }
    }
  }
  while (n < maxlen && in[ref + n] == in[ip + n]) {
    ++n;
  }
  return n;
}

}  // namespace

bool LzfCompress(std::string_view input, size_t out_limit, std::string* out) {
  out->clear();
  const size_t in_len = input.size();
  if (in_len == 0 || out_limit == 0 || in_len > HashTable::kPosMask) {
    return false;
  }
  thread_local HashTable table;
  table.NewInput();
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  // One spare byte: a literal run's header is reserved before it is known to be needed.
  out->resize(out_limit + 1);
  auto* o = reinterpret_cast<unsigned char*>(out->data());
  size_t op = 1;  // o[0] is the header of the first literal run
  size_t ip = 0;
  size_t lit = 0;
  auto end_run = [&] {
    if (lit > 0) {
      o[op - lit - 1] = static_cast<unsigned char>(lit - 1);
    } else {
      --op;  // the reserved header was not used
    }
  };
  uint32_t h = in_len >= 2 ? (Byte(in, 0) << 8) | Byte(in, 1) : 0;
  while (ip + 2 < in_len) {
    h = (h << 8) | Byte(in, ip + 2);
    size_t ref = 0;
    const bool had = table.Swap(Slot(h), ip, &ref);
    if (had && ref > 0 && ip - ref - 1 < kMaxOffset && in[ref] == in[ip] &&
        in[ref + 1] == in[ip + 1] && in[ref + 2] == in[ip + 2]) {
      const size_t off = ip - ref - 1;
      const size_t maxlen = std::min(in_len - ip - 2, kMaxMatch);
      // Room for a copy (three bytes) and the next run's header, counting the reclaimed header
      // of an empty run.
      if (op + 4 >= out_limit && op - (lit == 0 ? 1 : 0) + 4 >= out_limit) {
        return false;
      }
      end_run();
      const size_t count = MatchLength(in, ref, ip, maxlen);
      const size_t len = count - 2;
      if (len < 7) {
        o[op++] = static_cast<unsigned char>((off >> 8) + (len << 5));
      } else {
        o[op++] = static_cast<unsigned char>((off >> 8) + (7 << 5));
        o[op++] = static_cast<unsigned char>(len - 7);
      }
      o[op++] = static_cast<unsigned char>(off & 0xff);
      lit = 0;
      ++op;
      ip += count;
      if (ip + 2 >= in_len) {
        break;
      }
      // Only the two positions before the new one are hashed (VERY_FAST).
      ip -= 2;
      h = (Byte(in, ip) << 8) | Byte(in, ip + 1);
      for (int k = 0; k < 2; ++k) {
        h = (h << 8) | Byte(in, ip + 2);
        table.Set(Slot(h), ip);
        ++ip;
      }
      continue;
    }
    if (op >= out_limit) {
      return false;
    }
    ++lit;
    o[op++] = in[ip++];
    if (lit == kMaxLiteral) {
      end_run();
      lit = 0;
      ++op;
    }
  }
  if (op + 3 > out_limit) {  // the last (at most two) bytes and their header
    return false;
  }
  while (ip < in_len) {
    ++lit;
    o[op++] = in[ip++];
    if (lit == kMaxLiteral) {
      end_run();
      lit = 0;
      ++op;
    }
  }
  end_run();
  out->resize(op);
  return true;
}

namespace {

// Decodes `in` into a window buffer, handing full stretches to `flush`. Out holds the output
// produced so far from index `start`; the caller's Room() makes space for `n` more bytes.
template <typename Room>
bool Decode(std::string_view input, uint64_t out_len, std::string& buf, size_t& pos,
            uint64_t& total, Room room) {
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  const size_t in_len = input.size();
  size_t ip = 0;
  while (ip < in_len) {
    const size_t ctrl = in[ip++];
    if (ctrl < 32) {
      const size_t n = ctrl + 1;
      if (n > in_len - ip || n > out_len - total || !room(n)) {
        return false;
      }
      std::memcpy(buf.data() + pos, in + ip, n);
      ip += n;
      pos += n;
      total += n;
      continue;
    }
    size_t n = ctrl >> 5;
    if (n == 7) {
      if (ip >= in_len) {
        return false;
      }
      n += in[ip++];
    }
    n += 2;
    if (ip >= in_len) {
      return false;
    }
    const size_t back = ((ctrl & 0x1f) << 8) + in[ip++] + 1;
    if (back > total || n > out_len - total || !room(n)) {
      return false;
    }
    // Byte by byte: the source may overlap the bytes being written (a repeated pattern).
    char* dst = buf.data() + pos;
    const char* src = dst - back;
    for (size_t i = 0; i < n; ++i) {
      dst[i] = src[i];
    }
    pos += n;
    total += n;
  }
  return total == out_len;
}

}  // namespace

bool LzfDecompress(std::string_view in, std::string* out) {
  size_t pos = 0;
  uint64_t total = 0;
  const uint64_t out_len = out->size();
  // The output buffer is the window: nothing to flush, and the length checks keep it in bounds.
  return Decode(in, out_len, *out, pos, total, [](size_t) { return true; });
}

bool LzfDecompressTo(std::string_view in, uint64_t out_len, const ByteSink& sink) {
  std::string buf(
      static_cast<size_t>(std::min<uint64_t>(out_len, kFlushBytes + kMaxOffset)) + kMaxMatch, '\0');
  size_t pos = 0;
  size_t emitted = 0;  // buf[emitted, pos) is output not yet handed to the sink
  uint64_t total = 0;
  bool sink_ok = true;
  auto room = [&](size_t n) {
    if (pos + n <= buf.size()) {
      return true;
    }
    if (!sink(std::string_view(buf.data() + emitted, pos - emitted))) {
      sink_ok = false;
      return false;
    }
    const size_t keep = std::min(pos, kMaxOffset);
    std::memmove(buf.data(), buf.data() + pos - keep, keep);
    pos = keep;
    emitted = keep;
    return pos + n <= buf.size();
  };
  if (!Decode(in, out_len, buf, pos, total, room) || !sink_ok) {
    return false;
  }
  return pos == emitted || sink(std::string_view(buf.data() + emitted, pos - emitted));
}

}  // namespace cuckood::core
