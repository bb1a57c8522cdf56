#include "storage/mem_cache.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "storage/format.h"
#include "storage/page_handles.h"

namespace cuckood::storage {
namespace {

std::string PageKey(int i) {
  return "p-some-filter-prefix-" + std::to_string(i);
}

// The threads of a test whose first two write until `stop` and whose others read until done:
// the readers are waited for, then the writers stopped.
void JoinReadersThenWriters(std::vector<std::thread>& threads, std::atomic<bool>& stop) {
  for (size_t i = 2; i < threads.size(); ++i) {
    threads[i].join();
  }
  stop.store(true);
  threads[0].join();
  threads[1].join();
}

TEST_CASE("IsMetaCacheKeyOf tells a metadata cache key's namespace and key", "[mem_cache]") {
  const std::vector<uint16_t> namespaces = {0, 1, 256, 257, 0xffff};
  const std::vector<std::string> keys = {
      "", "f", "g", "ff", "{f}", "mk:000000000001", std::string("f\0", 2), std::string(300, 'k')};
  for (uint16_t ns : namespaces) {
    for (const auto& key : keys) {
      const std::string cache_key = MetaCacheKey(EncodeMetaKey(ns, key));
      for (uint16_t other_ns : namespaces) {
        for (const auto& other : keys) {
          CHECK(IsMetaCacheKeyOf(cache_key, other_ns, other) == (ns == other_ns && key == other));
        }
      }
      CHECK_FALSE(IsMetaCacheKeyOf(PageCacheKey(EncodeMetaKey(ns, key)), ns, key));
    }
  }
}

TEST_CASE("MemCache: hits, known-absent entries and misses", "[mem_cache]") {
  MemCache cache(1 << 20, 4);
  MemCache::Value v;
  CHECK_FALSE(cache.GetShared("a", &v));
  cache.Put("a", std::optional<std::string>("alpha"));
  cache.Put("gone", std::optional<std::string>());
  REQUIRE(cache.GetShared("a", &v));
  REQUIRE(v != nullptr);
  CHECK(*v == "alpha");
  REQUIRE(cache.GetShared("gone", &v));
  CHECK(v == nullptr);  // known absent
  std::optional<std::string> copy;
  REQUIRE(cache.Get("a", &copy));
  CHECK(copy == std::optional<std::string>("alpha"));
  CHECK(cache.hits() == 3);
  CHECK(cache.misses() == 1);
}

TEST_CASE("MemCache: shared values are not copied and outlive their replacement", "[mem_cache]") {
  MemCache cache(1 << 20, 4);
  auto page = std::make_shared<std::string>(2048, 'x');
  cache.Put("k", page);
  MemCache::Value got;
  REQUIRE(cache.GetShared("k", &got));
  CHECK(got.get() == page.get());
  cache.Put("k", std::optional<std::string>("new"));
  CHECK(*got == std::string(2048, 'x'));  // a reader's view stays valid
  REQUIRE(cache.GetShared("k", &got));
  CHECK(*got == "new");
}

TEST_CASE("MemCache: a fill after a newer put is refused", "[mem_cache]") {
  MemCache cache(1 << 20, 1);
  const uint64_t epoch = cache.Epoch("k");
  cache.Put("k", std::optional<std::string>("committed"));
  cache.Fill("k", std::optional<std::string>("stale read"), epoch);
  MemCache::Value got;
  REQUIRE(cache.GetShared("k", &got));
  CHECK(*got == "committed");
  cache.Fill("other", std::optional<std::string>("read"), cache.Epoch("other"));
  REQUIRE(cache.GetShared("other", &got));
  CHECK(*got == "read");
}

TEST_CASE("MemCache: stays within its capacity and keeps the entries in use", "[mem_cache]") {
  const uint64_t capacity = 256 << 10;  // 4 shards of 64 KiB: ~30 pages of 2 KiB each
  MemCache cache(capacity, 4);
  MemCache::Value got;
  // a small hot set, looked up between every insert of a long stream of cold pages
  for (int i = 0; i < 8; ++i) {
    cache.Put("hot" + std::to_string(i), std::make_shared<std::string>(2048, 'h'));
  }
  int hot_hits = 0;
  for (int i = 0; i < 5000; ++i) {
    cache.Put(PageKey(i), std::make_shared<std::string>(2048, 'c'));
    for (int h = 0; h < 8; ++h) {
      hot_hits += cache.GetShared("hot" + std::to_string(h), &got) ? 1 : 0;
    }
    CHECK(cache.bytes() <= capacity);
  }
  // the hot entries were evicted at most rarely (they move to the front when they get old)
  CHECK(hot_hits > 5000 * 8 * 9 / 10);
  // old cold pages are gone, the newest are there
  CHECK_FALSE(cache.GetShared(PageKey(0), &got));
  CHECK(cache.GetShared(PageKey(4999), &got));
  cache.Clear();
  CHECK(cache.bytes() == 0);
  CHECK_FALSE(cache.GetShared(PageKey(4999), &got));
}

TEST_CASE("MemCache: page keys that differ only in their last bytes spread over the shards",
          "[mem_cache]") {
  // 64 shards of 64 KiB: 2,000 pages of 2 KiB (4 MiB) fit only if they spread over the shards.
  MemCache cache(4 << 20, 64);
  for (uint32_t page = 0; page < 1600; ++page) {
    std::string key = "p\x00\x01somekey\x00\x00\x00\x00\x00\x00\x00\x07";
    key += std::string("\x00\x00", 2);  // sub-filter 0
    for (int shift = 24; shift >= 0; shift -= 8) {
      key.push_back(static_cast<char>(page >> shift));  // big-endian page index
    }
    cache.Put(key, std::make_shared<std::string>(2048, 'x'));
  }
  CHECK(cache.bytes() > (1600ULL * 2048) * 9 / 10);  // (almost) nothing was evicted
}

TEST_CASE("MemCache: GetSharedMany answers as GetShared does, key by key", "[mem_cache]") {
  MemCache cache(1 << 20, 16);
  for (int i = 0; i < 300; i += 2) {
    cache.Put(PageKey(i), std::make_shared<std::string>("v" + std::to_string(i)));
  }
  cache.Put(PageKey(1), MemCache::Value());  // known absent
  std::vector<std::string> owned;
  for (int i = 299; i >= 0; --i) {  // (every shard, out of order, one key twice)
    owned.push_back(PageKey(i));
  }
  owned.push_back(PageKey(10));
  std::vector<std::string_view> keys(owned.begin(), owned.end());
  std::vector<MemCache::Value> values(keys.size());
  auto found = std::make_unique<bool[]>(keys.size());
  const uint64_t hits = cache.hits();
  const uint64_t misses = cache.misses();
  cache.GetSharedMany(keys, values.data(), found.get());
  size_t expect_hits = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    MemCache::Value one;
    const bool hit = cache.GetShared(keys[i], &one);
    CHECK(found[i] == hit);
    if (hit) {
      ++expect_hits;
      CHECK(values[i] == one);  // the same shared value
    }
  }
  CHECK(expect_hits == 150 + 1 + 1);
  REQUIRE(found[298]);  // PageKey(1)
  CHECK(values[298] == nullptr);
  CHECK(*values.back() == "v10");
  // GetShared above counted as many again.
  CHECK(cache.hits() - hits == 2 * expect_hits);
  CHECK(cache.misses() - misses == 2 * (keys.size() - expect_hits));
}

TEST_CASE("MemCache: GetSharedFew answers as GetShared does, for any few keys", "[mem_cache]") {
  MemCache cache(1 << 20, 4);  // (4 shards: keys of one shard in most calls)
  for (int i = 0; i < 40; i += 2) {
    cache.Put(PageKey(i), std::make_shared<std::string>("v" + std::to_string(i)));
  }
  cache.Put(PageKey(1), MemCache::Value());               // known absent
  for (size_t n = 1; n <= MemCache::kFewKeys + 1; ++n) {  // (one more: GetSharedMany's path)
    for (int start = 0; start < 8; ++start) {
      std::vector<std::string> owned;
      for (size_t j = 0; j < n; ++j) {
        owned.push_back(PageKey(static_cast<int>((start + j * 3) % 12)));
      }
      if (n > 2) {
        owned[n - 1] = owned[0];  // one key twice
      }
      std::vector<std::string_view> keys(owned.begin(), owned.end());
      std::vector<MemCache::Value> values(n);
      auto found = std::make_unique<bool[]>(n);
      const uint64_t hits = cache.hits();
      const uint64_t misses = cache.misses();
      cache.GetSharedFew(keys, values.data(), found.get());
      uint64_t expect_hits = 0;
      for (size_t j = 0; j < n; ++j) {
        MemCache::Value one;
        const uint64_t before = cache.hits();
        const bool hit = cache.GetShared(keys[j], &one);
        CHECK(cache.hits() - before == (hit ? 1 : 0));
        CHECK(found[j] == hit);
        expect_hits += hit ? 1 : 0;
        if (hit) {
          CHECK(values[j] == one);
        }
      }
      // every key asked once, each counted once (and again by the GetShared above)
      CHECK(cache.hits() - hits == 2 * expect_hits);
      CHECK(cache.misses() - misses == 2 * (n - expect_hits));
    }
  }
}

TEST_CASE("MemCache: keys longer than an entry holds inline", "[mem_cache]") {
  MemCache cache(1 << 20, 4);
  const std::string base(MemCache::kInlineKey - 2, 'k');
  std::vector<std::string> keys;
  for (size_t extra = 0; extra < 6; ++extra) {  // lengths around the inline limit
    for (char c : {'a', 'b'}) {
      keys.push_back(base + std::string(extra, 'x') + c);  // (same first 70 bytes)
    }
  }
  keys.push_back(std::string(5000, 'L'));
  for (size_t i = 0; i < keys.size(); ++i) {
    cache.Put(keys[i], std::make_shared<std::string>(std::to_string(i)));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    MemCache::Value got;
    REQUIRE(cache.GetShared(keys[i], &got));
    CHECK(*got == std::to_string(i));
  }
  MemCache::Value got;
  CHECK_FALSE(cache.GetShared(base + "xxxxxxc", &got));
  // A long key's bytes count against the capacity; erased, it is gone.
  const uint64_t with = cache.bytes();
  cache.Erase(keys.back());
  CHECK_FALSE(cache.GetShared(keys.back(), &got));
  CHECK(with - cache.bytes() >= 5000);
  cache.Clear();
  CHECK(cache.bytes() == 0);
}

TEST_CASE("MemCache: GetSharedFew while writers grow, replace and erase entries", "[mem_cache]") {
  MemCache cache(256 << 10, 4);  // (small: evictions; the indices grow from empty)
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread writer([&] {
    for (int i = 0; i < 30000; ++i) {
      const std::string key = PageKey((i * 13) % 3000);
      if (i % 5 == 4) {
        cache.Erase(key);
      } else {
        cache.Put(key, std::make_shared<std::string>(key + std::string(i % 7 * 100, '.')));
      }
    }
    stop = true;
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      // (no read section: the values are owned. Borrowed ones may not meet a replacement of
      // their key, which the server's writers make only under the key's stripe, and this
      // writer replaces values freely)
      std::string owned[4];
      std::string_view keys[4];
      MemCache::Value values[4];
      bool found[4];
      for (int i = 0; !stop; ++i) {
        for (int j = 0; j < 4; ++j) {
          owned[j] = PageKey((i * 7 + j * 11 + t) % 3000);
          keys[j] = owned[j];
        }
        cache.GetSharedFew(std::span<const std::string_view>(keys, 1 + i % 4), values, found);
        for (int j = 0; j < 1 + i % 4; ++j) {
          if (found[j] && values[j] && values[j]->compare(0, owned[j].size(), owned[j]) != 0) {
            wrong.fetch_add(1);
          }
          values[j] = nullptr;
        }
      }
    });
  }
  writer.join();
  for (auto& th : readers) {
    th.join();
  }
  CHECK(wrong.load() == 0);
  CHECK(cache.bytes() <= (256 << 10));
}

TEST_CASE("MemCache: Version changes with every write of the key", "[mem_cache]") {
  MemCache cache(1 << 20, 4);
  MemCache other(1 << 20, 4);
  CHECK(cache.id() != other.id());
  const uint64_t v0 = cache.Version("k");
  MemCache::Value got;
  uint64_t epoch = 0;
  CHECK_FALSE(cache.GetShared("k", &got, &epoch));
  CHECK(epoch == v0);
  cache.Fill("k", std::make_shared<std::string>("a"), epoch);  // a fill is no change
  CHECK(cache.Version("k") == v0);
  cache.Put("k", std::make_shared<std::string>("b"));
  const uint64_t v1 = cache.Version("k");
  CHECK(v1 != v0);
  REQUIRE(cache.GetShared("k", &got, &epoch));
  CHECK(epoch == v1);
  cache.Erase("k");
  const uint64_t v2 = cache.Version("k");
  CHECK(v2 != v1);
  cache.Clear();
  CHECK(cache.Version("k") != v2);
}

TEST_CASE("MemCache: most keys' versions outlast the writes of other keys of their shard",
          "[mem_cache]") {
  MemCache cache(1 << 20, 1);  // (one shard: every key shares it)
  std::vector<std::string> keys;
  std::vector<uint64_t> before;
  for (int i = 0; i < 1000; ++i) {
    keys.push_back("mkey:" + std::to_string(i));
    before.push_back(cache.Version(keys.back()));
  }
  cache.Put(keys[0], std::make_shared<std::string>("written"));
  CHECK(cache.Version(keys[0]) != before[0]);
  int unchanged = 0;
  for (size_t i = 1; i < keys.size(); ++i) {
    unchanged += cache.Version(keys[i]) == before[i] ? 1 : 0;
  }
  // A counter serves 1/64 of a shard's keys: a write leaves the others' versions as they were.
  CHECK(unchanged >= 900);
  CHECK(unchanged < 999);  // (and some keys do share the written key's counter)
  cache.Clear();
  for (size_t i = 1; i < keys.size(); ++i) {
    CHECK(cache.Version(keys[i]) != before[i]);
  }
}

TEST_CASE("MemCache: concurrent readers and writers", "[mem_cache]") {
  MemCache cache(1 << 20, 8);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};  // (Catch2's assertions are not thread-safe: checked after join)
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &wrong, t] {
      MemCache::Value got;
      for (int i = 0; i < 20000; ++i) {
        const std::string key = PageKey((i * 7 + t) % 500);
        if (i % 3 == 0) {
          cache.Put(key, std::make_shared<std::string>(key));
        } else if (cache.GetShared(key, &got) && got && *got != key) {
          wrong.fetch_add(1);  // values always belong to their key
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  CHECK(wrong.load() == 0);
  CHECK(cache.bytes() <= (1 << 20));
}

TEST_CASE("MemCache: a fill never replaces a cached value (a section may borrow it)",
          "[mem_cache]") {
  MemCache cache(1 << 20, 1);
  const uint64_t epoch = cache.Epoch("k");
  cache.Fill("k", std::optional<std::string>("first reader"), epoch);
  cache.Fill("k", std::optional<std::string>("second reader"), epoch);  // (same epoch)
  MemCache::Value v;
  REQUIRE(cache.GetShared("k", &v));
  CHECK(*v == "first reader");
}

TEST_CASE("MemCache: values read in a section are borrowed, outside it owned", "[mem_cache]") {
  MemCache cache(1 << 20, 4);
  cache.Put("k", std::make_shared<std::string>("value"));
  cache.Put("absent", std::optional<std::string>());
  MemCache::Value got;
  REQUIRE(cache.GetShared("k", &got));
  CHECK(got.use_count() >= 2);  // shares the cache's value
  {
    MemCache::ReadSection section;
    MemCache::Value borrowed;
    REQUIRE(cache.GetShared("k", &borrowed));
    CHECK(borrowed.use_count() == 0);  // no reference counted
    CHECK(*borrowed == "value");
    CHECK(borrowed.get() == got.get());
    {
      MemCache::ReadSection nested;  // (sections nest)
    }
    std::string_view keys[] = {"k", "absent", "missing"};
    MemCache::Value values[3];
    bool found[3] = {};
    cache.GetSharedMany(keys, values, found);
    CHECK((found[0] && found[1] && !found[2]));
    CHECK(values[0].use_count() == 0);
    CHECK(*values[0] == "value");
    CHECK(values[1] == nullptr);
  }
  REQUIRE(cache.GetShared("k", &got));
  CHECK(got.use_count() >= 2);
}

TEST_CASE(
    "MemCache: a value evicted or erased while a section may borrow it lives until the section "
    "ends",
    "[mem_cache]") {
  MemCache cache(64 * 1024, 1);  // one shard: every drop below is retired there
  std::weak_ptr<const std::string> watch;
  {
    auto v = std::make_shared<std::string>(2048, 'a');
    watch = v;
    cache.Put("k", v);
  }
  auto churn = [&cache](int from) {  // enough drops to reclaim several times
    for (int i = from; i < from + 300; ++i) {
      cache.Put(PageKey(i), std::make_shared<std::string>(2048, 'c'));
    }
  };
  SECTION("replaced, evicted or erased while a section is open") {
    auto section = std::make_unique<MemCache::ReadSection>();
    MemCache::Value borrowed;
    REQUIRE(cache.GetShared("k", &borrowed));
    // (Put does not replace a value a section may borrow: its caller holds the key's stripe
    // exclusively, which excludes the key's readers.)
    if (GENERATE(true, false)) {
      churn(0);  // evicts "k" (the cache holds ~30 pages)
    } else {
      cache.Erase("k");  // e.g. a write that failed
    }
    churn(1000);
    CHECK_FALSE(watch.expired());
    CHECK(*borrowed == std::string(2048, 'a'));
    section.reset();
    churn(2000);
    CHECK(watch.expired());  // freed once the section closed
  }
  SECTION("another thread's open section holds back what is dropped meanwhile") {
    std::atomic<int> step{0};
    std::thread reader([&] {
      MemCache::ReadSection section;
      step.store(1);
      while (step.load() != 2) {
        std::this_thread::yield();
      }
    });
    while (step.load() != 1) {
      std::this_thread::yield();
    }
    cache.Erase("k");
    churn(0);
    const bool kept = !watch.expired();
    step.store(2);
    reader.join();
    CHECK(kept);
    churn(1000);
    CHECK(watch.expired());
  }
}

TEST_CASE("MemCache: borrowed values stay intact while writers replace and evict them",
          "[mem_cache]") {
  MemCache cache(256 * 1024, 4);  // ~100 pages of 2 KiB: constant eviction
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&cache, &stop, t] {
      // Each writer its own keys (as a stripe lock would give it), erased and put again: the
      // readers' values are dropped by Erase and by eviction.
      for (int i = 0; !stop.load(); ++i) {
        const int k = ((i * 13) % 200) * 2 + t;
        cache.Erase(PageKey(k));
        cache.Put(PageKey(k), std::make_shared<std::string>(2048, static_cast<char>('a' + k % 26)));
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&cache, &wrong, t] {
      for (int round = 0; round < 3000; ++round) {
        MemCache::ReadSection section;
        std::vector<std::pair<int, MemCache::Value>> held;
        for (int j = 0; j < 8; ++j) {
          const int k = (round * 31 + j * 7 + t) % 400;
          MemCache::Value v;
          if (cache.GetShared(PageKey(k), &v) && v) {
            held.emplace_back(k, std::move(v));
          }
        }
        std::this_thread::yield();  // (writers drop some of them meanwhile)
        for (const auto& [k, v] : held) {
          if (*v != std::string(2048, static_cast<char>('a' + k % 26))) {
            wrong.fetch_add(1);
          }
        }
      }
    });
  }
  JoinReadersThenWriters(threads, stop);
  CHECK(wrong.load() == 0);
}

TEST_CASE("MemCache: a stamp stays valid until its key is written, erased, evicted or cleared",
          "[mem_cache]") {
  MemCache cache(64 * 1024, 1);  // one shard: every Put of a new key may evict
  auto stamp_of = [&cache](const std::string& key) {
    std::string_view k = key;
    MemCache::Value v;
    bool found = false;
    MemCache::Stamp stamp;
    cache.GetSharedMany(std::span<const std::string_view>(&k, 1), &v, &found, &stamp);
    REQUIRE(found);
    REQUIRE(stamp.counter != nullptr);
    return stamp;
  };
  cache.Put("k", std::make_shared<std::string>(2048, 'a'));
  auto stamp = stamp_of("k");
  CHECK(stamp.Valid());
  MemCache::Value v;
  REQUIRE(cache.GetShared("k", &v));  // (reads change nothing)
  CHECK(stamp.Valid());
  cache.Put("k", std::make_shared<std::string>(2048, 'b'));
  CHECK_FALSE(stamp.Valid());
  stamp = stamp_of("k");
  cache.Erase("k");
  CHECK_FALSE(stamp.Valid());
  cache.Put("k", std::make_shared<std::string>(2048, 'c'));
  stamp = stamp_of("k");
  cache.Clear();
  CHECK_FALSE(stamp.Valid());
  // Evicted: other keys push it out (each a page of 2 KiB in a 64 KiB cache).
  cache.Put("k", std::make_shared<std::string>(2048, 'd'));
  stamp = stamp_of("k");
  for (int i = 0; i < 200; ++i) {  // (no lookup of k meanwhile: that would keep it)
    cache.Put(PageKey(i), std::make_shared<std::string>(2048, 'x'));
  }
  CHECK_FALSE(cache.GetShared("k", &v));
  CHECK_FALSE(stamp.Valid());
}

TEST_CASE("PageHandles: a kept page is used only while the cache still holds it", "[mem_cache]") {
  // Writers replace, erase and (through a small cache) evict pages whose bytes name their key
  // and version; readers keep what they find in their PageHandles and, in later sections, read
  // the bytes of every entry Find still hands out. A handle used after its value was dropped
  // would show another page's bytes (buffers are reused) or, under ASan, a use after free.
  MemCache cache(128 * 1024, 4);  // ~50 pages of 2 KiB: constant eviction
  auto page = [](int k, int version) {
    auto v = std::make_shared<std::string>(2048, static_cast<char>('a' + version % 26));
    std::memcpy(v->data(), &k, sizeof(k));
    return v;
  };
  auto key_in = [](const std::string& v) {
    int k = 0;
    std::memcpy(&k, v.data(), sizeof(k));
    return k;
  };
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> used{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        // Each writer its own keys; a value is replaced after an Erase (a Put over a value
        // recycles it at once: its caller holds the key's stripe, which readers take too).
        const int k = ((i * 13) % 100) * 2 + t;
        cache.Erase(PageKey(k));
        if (i % 5 != 0) {
          cache.Put(PageKey(k), page(k, i));
        }
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      PageHandles handles(1024);
      const uint64_t view_id = 1000 + t;
      for (int round = 0; round < 4000; ++round) {
        MemCache::ReadSection section;
        if (!MemCache::Borrowing()) {
          wrong.fetch_add(1);
        }
        for (int j = 0; j < 8; ++j) {
          const int k = (round * 31 + j * 7 + t) % 200;
          if (const auto* e = handles.Find(view_id, 0, k)) {
            used.fetch_add(1);
            if (e->value == nullptr || key_in(*e->value) != k || e->value->size() != 2048) {
              wrong.fetch_add(1);
            }
            continue;
          }
          std::string key = PageKey(k);
          std::string_view kv = key;
          MemCache::Value v;
          bool found = false;
          MemCache::Stamp stamp;
          cache.GetSharedMany(std::span<const std::string_view>(&kv, 1), &v, &found, &stamp);
          if (found && v) {
            handles.Remember(view_id, 0, k, v.get(), stamp);
          }
        }
        std::this_thread::yield();
      }
    });
  }
  JoinReadersThenWriters(threads, stop);
  CHECK(wrong.load() == 0);
  CHECK(used.load() > 0);
}

}  // namespace
}  // namespace cuckood::storage
