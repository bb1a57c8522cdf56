// The scope of one command's storage calls: how its reads see the data, and the write group its
// filter writes commit into. The server builds one per command (server/dispatcher.h) once the
// command's key stripes are held and passes it to every storage::Db call that reads a key or
// writes a filter; storage keeps none of it per thread.
#pragma once

namespace cuckood::storage {

class WriteGroup;

enum class ReadMode {
  // The caller holds the keys' stripes (shared or exclusive): reads go through the in-memory
  // cache, and see the uncommitted changes of the scope's write group.
  kCached,
  // The caller could not take a key's stripe (a writer holds it, e.g. a long CF.COMPACT): reads
  // skip the in-memory cache and read one RocksDB snapshot, so they never wait for the writer
  // and still see a committed state.
  kSnapshot,
};

struct Scope {
  // Filter writes (CfReserve, CfInsert, CfDelete) collect their changes in this group instead of
  // writing a RocksDB batch each, and every read of the scope looks there first; other writes
  // commit the group first so RocksDB receives changes in the order they were made. nullptr:
  // every write is its own RocksDB write.
  WriteGroup* group = nullptr;
  ReadMode read = ReadMode::kCached;
  // The stripes of the command's keys are held (a command's scope; never with kSnapshot): a read of
  // a key from RocksDB then waits only for the pending writes of that key (Engine::SettleKey).
  // False (kAlone): for every pending write.
  bool stripes_held = false;

  bool snapshot_reads() const { return read == ReadMode::kSnapshot; }
};

// A scope of its own: cached reads, each write committed alone (maintenance, replication,
// tests).
inline constexpr Scope kAlone{};

}  // namespace cuckood::storage
