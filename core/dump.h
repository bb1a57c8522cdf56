// The CF.SCANDUMP / CF.LOADCHUNK codec (redisbloom-cf-reference.md §3): the 38-byte header and
// the iterator arithmetic that places chunks inside sub-filters. The byte copying itself is the
// storage's business; these functions say which bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/filter.h"

namespace cuckood::core {

inline constexpr size_t kHeaderSize = 38;
inline constexpr uint64_t kMaxChunkBytes = 16777216;  // 16 MiB

// Little-endian packed header of `meta` (numItems, numBuckets, numDeletes, numFilters as u64,
// then bucketSize, maxIterations, expansion as u16).
std::string EncodeHeader(const FilterMeta& meta);

// Decodes and validates a header as RedisBloom 2.8 does (plus limits.max_filter_bytes for every
// sub-filter). nullopt = "Couldn't create filter!". Size must be kHeaderSize (caller checks first
// and answers "Invalid header").
std::optional<FilterMeta> DecodeHeader(std::string_view data, const Limits& limits);

// A byte range inside one sub-filter.
struct ChunkRange {
  uint32_t filter = 0;
  uint64_t offset = 0;  // byte offset inside the sub-filter
  uint64_t length = 0;
  int64_t next_iter = 0;  // SCANDUMP: the iterator to reply with
};

// SCANDUMP position p >= 1 (p = 0 is the header; the caller answers [0, null] when num_items = 0):
// the bytes to send, or nullopt for the end ([0, null]).
std::optional<ChunkRange> DumpRange(const FilterMeta& meta, int64_t iter);

// LOADCHUNK position p (!= 1) with a chunk of `length` bytes: where it goes, or nullopt for
// "Couldn't load chunk!".
std::optional<ChunkRange> LoadRange(const FilterMeta& meta, int64_t iter, uint64_t length);

}  // namespace cuckood::core
