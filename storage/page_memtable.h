// The memtable of the `pages` and `metadata` column families: entries grouped by user key.
//
// Every write of a filter changes a few random pages, and RocksDB keeps each change as its own
// memtable entry (a merge operand) until the memtable is flushed. A memtable of 64 MiB thus
// holds about a million entries, a few hundred per page of a benchmark-sized filter. RocksDB's
// default representation is one skiplist of all entries: every insert and every point read
// walks ~20 levels of it, each step a cache miss, and that walk was the largest single cost of
// a CF.ADD.
//
// This representation keeps, per user key (per page), a list of its entries, newest first, and
// finds a page's list through a hash table; an insert or a point read of a page already in the
// memtable costs one hash probe. The pages themselves are linked in key order by a skiplist of
// their own (one node per page, not per entry), so flushes and iterators still see every entry
// in RocksDB's order: user key ascending, then sequence number descending. The metadata column
// family uses it too: its records (one per key, rewritten by every write of a filter) have the
// same shape of many versions of few keys.
//
// Requirements: the column family's comparator is RocksDB's bytewise comparator, and inserts
// are not concurrent (DBOptions::allow_concurrent_memtable_write = false; RocksDB refuses to
// open otherwise). Readers never lock: they may run beside the one writer.
#pragma once

#include <rocksdb/memtablerep.h>
#include <rocksdb/write_batch.h>

#include <cstddef>
#include <memory>
#include <span>

namespace cuckood::storage {

// write_buffer_bytes sizes each memtable's hash table (one bucket per 256 bytes of it).
std::shared_ptr<rocksdb::MemTableRepFactory> NewPageMemTableFactory(size_t write_buffer_bytes);

// Asks the CPU for what the inserts of batch's entries will read in the newest memtable of each
// column family of `targets` made by this representation's factory: each key's hash bucket and
// the page node chained there. Called by the writing thread right before the write, it turns a
// chain of cache misses per insert into misses that overlap. Only a hint: nothing for a factory
// that is not this representation's.
struct MemTableTarget {
  const rocksdb::MemTableRepFactory* factory;
  uint32_t cf;
};
void PrefetchPageInserts(std::span<const MemTableTarget> targets, const rocksdb::WriteBatch& batch);

}  // namespace cuckood::storage
