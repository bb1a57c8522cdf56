// CF.SCANDUMP / CF.LOADCHUNK codec (reference §3): header layout and iterator arithmetic.
#include "core/dump.h"

#include <limits>

namespace cuckood::core {
namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

void PutLe(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(value >> (8 * i))));
  }
}

uint64_t GetLe(std::string_view data, size_t offset, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<uint8_t>(data[offset + static_cast<size_t>(i)]);
  }
  return value;
}

bool IsPow2(uint64_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

// The sub-filter holding byte `offset` of the concatenated sub-filters, with `offset` made
// relative to it. When the offset lies beyond the end, it has been reduced by every sub-filter's
// size and the last sub-filter is returned (RedisBloom's loop leaves its cursor there; LOADCHUNK
// relies on this quirk, SCANDUMP checks `found`).
struct Located {
  uint32_t filter = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  bool found = false;
};

Located Locate(const FilterMeta& meta, uint64_t offset) {
  Located loc;
  for (uint32_t i = 0; i < meta.num_filters; ++i) {
    loc.filter = i;
    loc.size = SubFilterBytes(meta, i);
    if (offset < loc.size) {
      loc.found = true;
      break;
    }
    offset -= loc.size;
  }
  loc.offset = offset;
  return loc;
}

}  // namespace

std::string EncodeHeader(const FilterMeta& meta) {
  std::string out;
  out.reserve(kHeaderSize);
  PutLe(out, meta.num_items, 8);
  PutLe(out, meta.base_num_buckets, 8);
  PutLe(out, meta.num_deletes, 8);
  PutLe(out, meta.num_filters, 8);
  PutLe(out, meta.bucket_size, 2);
  PutLe(out, meta.max_iterations, 2);
  PutLe(out, meta.expansion, 2);
  return out;
}

std::optional<FilterMeta> DecodeHeader(std::string_view data, const Limits& limits) {
  if (data.size() != kHeaderSize) {
    return std::nullopt;
  }
  FilterMeta meta;
  meta.num_items = GetLe(data, 0, 8);
  meta.base_num_buckets = GetLe(data, 8, 8);
  meta.num_deletes = GetLe(data, 16, 8);
  // RedisBloom keeps numFilters in a u16: the high bits are dropped before validation.
  meta.num_filters = static_cast<uint16_t>(GetLe(data, 24, 8));
  meta.bucket_size = static_cast<uint16_t>(GetLe(data, 32, 2));
  meta.max_iterations = static_cast<uint16_t>(GetLe(data, 34, 2));
  meta.expansion = static_cast<uint16_t>(GetLe(data, 36, 2));  // kept as sent, even if not 2^k

  // The 2.8 checks. No upper bound on expansion (beyond u16), no check of the counters.
  if (meta.bucket_size < 1 || meta.bucket_size > 255) {
    return std::nullopt;
  }
  if (meta.base_num_buckets > kMaxBuckets || !IsPow2(meta.base_num_buckets)) {
    return std::nullopt;
  }
  if (meta.num_filters < 1 || meta.num_filters > kMaxSubFilters) {
    return std::nullopt;
  }
  if (meta.max_iterations == 0) {
    return std::nullopt;
  }
  if (meta.expansion == 0 && meta.num_filters > 1) {
    return std::nullopt;
  }
  // RedisBloom then allocates every sub-filter; a size it cannot represent or we refuse to hold
  // fails like that allocation. Counts only grow with i (expansion >= 1 here when n > 1), so
  // this loop is short unless expansion is 1, where each step is O(1).
  for (uint32_t i = 0; i < meta.num_filters; ++i) {
    const uint64_t bytes = SubFilterBytes(meta, i);
    if (bytes == 0 || bytes > limits.max_filter_bytes) {
      return std::nullopt;
    }
  }
  return meta;
}

std::optional<ChunkRange> DumpRange(const FilterMeta& meta, int64_t iter) {
  if (iter < 1) {
    return std::nullopt;
  }
  const Located loc = Locate(meta, static_cast<uint64_t>(iter) - 1);
  if (!loc.found) {
    return std::nullopt;
  }
  ChunkRange range;
  range.filter = loc.filter;
  if (loc.size <= kMaxChunkBytes) {
    // Small sub-filters go whole, from their first byte, whatever the position inside them was.
    range.offset = 0;
    range.length = loc.size;
  } else {
    range.offset = loc.offset;
    range.length = loc.size - loc.offset < kMaxChunkBytes ? loc.size - loc.offset : kMaxChunkBytes;
  }
  // The next iterator is the position after the chunk (counted from `iter`, not from the start
  // of the sub-filter). Past INT64_MAX there is nothing a client could send back: end the scan.
  if (range.length > kInt64Max - static_cast<uint64_t>(iter)) {
    return std::nullopt;
  }
  range.next_iter = iter + static_cast<int64_t>(range.length);
  return range;
}

std::optional<ChunkRange> LoadRange(const FilterMeta& meta, int64_t iter, uint64_t length) {
  if (length == 0 || iter <= 0 || static_cast<uint64_t>(iter) - 1 < length) {
    return std::nullopt;
  }
  // The chunk ends just before `iter`, mirroring SCANDUMP's "iterator after the chunk".
  const uint64_t start = static_cast<uint64_t>(iter) - 1 - length;
  const Located loc = Locate(meta, start);
  if (length > loc.size || loc.offset > loc.size - length) {
    return std::nullopt;
  }
  ChunkRange range;
  range.filter = loc.filter;
  range.offset = loc.offset;
  range.length = length;
  range.next_iter = iter;
  return range;
}

}  // namespace cuckood::core
