// LZF, the compression of Redis's RDB strings, producing the same bytes as the compressor of
// Redis 7.0 (hash table of 2^16 slots indexed by the three next bytes, VERY_FAST mode, its
// match rules and its "does it fit" tests), so that DUMP payloads compare byte for byte.
//
// Format: 000LLLLL + L+1 literal bytes; LLLooooo oooooooo = a copy of L+2 bytes from o+1 bytes
// back (L = 1..6); 111ooooo LLLLLLLL oooooooo = a copy of L+9 bytes from o+1 bytes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace cuckood::core {

// Compresses `in`. Returns false when the result would take more than `out_limit` bytes (Redis's
// lzf_compress returning 0), true with the compressed bytes in *out otherwise. Thread-safe (the
// hash table is per thread).
bool LzfCompress(std::string_view in, size_t out_limit, std::string* out);

// Decompresses `in`, which must expand to exactly out.size() bytes. false on malformed input
// (a copy reaching before the start, a run past the end of the input or of the output, a size
// other than out.size()); never reads or writes out of bounds.
bool LzfDecompress(std::string_view in, std::string* out);

// Receives consecutive pieces of decompressed output; false stops the decompression.
using ByteSink = std::function<bool(std::string_view piece)>;

// The same, streamed: hands the `out_len` bytes to `sink` in pieces (of at most about 256 KiB),
// keeping only the 8 KiB window LZF copies from. false on malformed input or when `sink` says so.
bool LzfDecompressTo(std::string_view in, uint64_t out_len, const ByteSink& sink);

}  // namespace cuckood::core
