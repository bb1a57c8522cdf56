// Reuse of the 2-4 KiB buffers that every page read and write allocates and frees.
//
// glibc's malloc serves requests above 1 KiB from its sorted bins, not from its per-thread
// cache: each such malloc first merges the fast bins and sorts the unsorted chunks. With the
// pages of a filter larger than the caches, a page read and a page write each paid several of
// them (the page's bytes, RocksDB's data block, the copy for a write), and the allocator's
// bin work was over a quarter of the server's CPU. Both pools below keep such buffers per
// thread instead, a bounded number of them; what does not fit is freed as before.
//
// Under AddressSanitizer and ThreadSanitizer nothing is kept (every buffer is freed at once),
// so that their checks of the buffers' lifetimes stay whole.
#pragma once

#include <rocksdb/memory_allocator.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace cuckood::storage {

// ---- page buffers ----------------------------------------------------------------------------
// A string holding bytes, in a buffer this thread recycled when it has one of at least that size.
std::string PageBuffer(std::string_view bytes);
// An empty string with a recycled buffer's capacity, when this thread has one (for a read into it).
std::string EmptyPageBuffer();
// Keeps s's buffer for reuse on this thread when its capacity is a page's (1-4 KiB) and the
// thread keeps fewer than kKeptPageBuffers; s is left empty either way.
void RecyclePageBuffer(std::string&& s);
// Drops value (a page or metadata value of the in-memory cache); when this was the only
// reference, its buffer is recycled as by RecyclePageBuffer. Only for values made as a mutable
// std::string (std::make_shared<std::string>): the recycled bytes are written again.
void RecycleValue(std::shared_ptr<const std::string>&& value);
// How many page buffers this thread keeps now (for tests).
size_t KeptPageBuffers();
inline constexpr size_t kKeptPageBuffers = 512;  // 1-2 MiB per thread
inline constexpr size_t kPageBufferMin = 1024;
inline constexpr size_t kPageBufferMax = 4096;
// Whether buffers are kept at all (false under the sanitizers).
bool BufferPoolsEnabled();

// ---- RocksDB's blocks --------------------------------------------------------------------------
// The allocator of RocksDB's block buffers (data blocks read from the SST files): buffers of 1 KiB
// up to kBlockPoolMax bytes are kept per thread (at most kKeptBlocks of each of its two sizes,
// 4,352 and 8,192 bytes) and handed out again; the others come from malloc.
std::shared_ptr<rocksdb::MemoryAllocator> NewBlockAllocator();
inline constexpr size_t kBlockPoolMax = 8192;
inline constexpr size_t kKeptBlocks[2] = {256, 64};  // ~1.6 MiB per thread at most

}  // namespace cuckood::storage
