// The generic keyspace of Db (storage/keyspace.cc): strings, existence, deletion, expiry, RENAME,
// FLUSHDB/FLUSHALL, DBSIZE, SCAN, KEYS, glob matching, and the database map of SWAPDB.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/rdb.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace rdb = cuckood::core::rdb;

namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Walks a whole SCAN and returns how often each key was reported.
std::map<std::string, int> ScanAll(Db& db, uint16_t ns, std::string_view pattern, uint64_t count,
                                   std::string_view type, int* calls = nullptr) {
  std::map<std::string, int> seen;
  uint64_t cursor = 0;
  int n = 0;
  do {
    auto page = db.Scan(ns, cursor, pattern, count, type);
    REQUIRE(page.ok());
    CHECK(page->keys.size() <= std::max<uint64_t>(count, 1));
    for (const auto& k : page->keys) {
      seen[k]++;
    }
    cursor = page->cursor;
    REQUIRE(++n < 100000);
  } while (cursor != 0);
  if (calls != nullptr) {
    *calls = n;
  }
  return seen;
}

}  // namespace

TEST_CASE("strings: SET, GET, EXISTS and DEL", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  auto missing = db.Get(kAlone, 0, "k");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  CHECK_FALSE(*db.Exists(kAlone, 0, "k"));

  REQUIRE(db.SetString(0, "k", std::string("v\0x", 3), 0, false).ok());
  auto got = db.Get(kAlone, 0, "k");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->type == KeyType::kString);
  CHECK((*got)->value == std::string("v\0x", 3));
  CHECK((*got)->expire_ms == 0);
  CHECK(*db.Exists(kAlone, 0, "k"));

  SECTION("namespaces are separate") {
    CHECK_FALSE(*db.Exists(kAlone, 1, "k"));
    REQUIRE(db.SetString(1, "k", "other", 0, false).ok());
    CHECK((*db.Get(kAlone, 0, "k"))->value == std::string("v\0x", 3));
    CHECK((*db.Get(kAlone, 1, "k"))->value == "other");
  }
  SECTION("overwrite replaces the value") {
    REQUIRE(db.SetString(0, "k", "new", 0, false).ok());
    CHECK((*db.Get(kAlone, 0, "k"))->value == "new");
  }
  SECTION("DEL removes the key once") {
    auto d = db.Delete(0, "k");
    REQUIRE(d.ok());
    CHECK(*d);
    CHECK_FALSE(*db.Exists(kAlone, 0, "k"));
    CHECK_FALSE(RawMeta(t.engine(), 0, "k").has_value());
    auto again = db.Delete(0, "k");
    REQUIRE(again.ok());
    CHECK_FALSE(*again);
  }
  SECTION("the empty key is a key") {
    REQUIRE(db.SetString(0, "", "e", 0, false).ok());
    CHECK(*db.Exists(kAlone, 0, ""));
    CHECK(*db.DbSize(0) == 2);
  }
}

TEST_CASE("expiry: an expired key reads as absent everywhere", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  REQUIRE(db.SetString(0, "k", "v", 0, false).ok());
  REQUIRE(db.SetString(0, "other", "v", 0, false).ok());

  SECTION("SetExpire in the future keeps the key and records the time") {
    const uint64_t at = NowMs() + 3'600'000;
    auto r = db.SetExpire(0, "k", at);
    REQUIRE(r.ok());
    CHECK(*r);
    CHECK((*db.Get(kAlone, 0, "k"))->expire_ms == at);
    CHECK(*db.Exists(kAlone, 0, "k"));
    CHECK(*db.DbSize(0) == 2);
    SECTION("SetExpire 0 persists it") {
      REQUIRE(*db.SetExpire(0, "k", 0));
      CHECK((*db.Get(kAlone, 0, "k"))->expire_ms == 0);
    }
    SECTION("SET with keep_ttl keeps the expiry; without it clears it") {
      REQUIRE(db.SetString(0, "k", "v2", 0, true).ok());
      CHECK((*db.Get(kAlone, 0, "k"))->expire_ms == at);
      CHECK((*db.Get(kAlone, 0, "k"))->value == "v2");
      REQUIRE(db.SetString(0, "k", "v3", 0, false).ok());
      CHECK((*db.Get(kAlone, 0, "k"))->expire_ms == 0);
    }
  }
  SECTION("an expiry in the past hides the key, though the record is still stored") {
    REQUIRE(*db.SetExpire(0, "k", NowMs() - 1));
    CHECK_FALSE(db.Get(kAlone, 0, "k")->has_value());
    CHECK_FALSE(*db.Exists(kAlone, 0, "k"));
    CHECK(*db.DbSize(0) == 1);
    CHECK(*db.Keys(0, "*") == std::vector<std::string>{"other"});
    CHECK(ScanAll(db, 0, "", 10, "") == std::map<std::string, int>{{"other", 1}});
    CHECK_FALSE(*db.Delete(0, "k"));  // nothing to delete
    CHECK_FALSE(*db.SetExpire(0, "k", 0));
    CHECK(db.Rename(0, "k", "k2", false).status().code() == Code::kNotFound);
    CHECK(RawMeta(t.engine(), 0, "k").has_value());
    SECTION("SET revives the name as a new key") {
      REQUIRE(db.SetString(0, "k", "fresh", 0, true).ok());
      CHECK((*db.Get(kAlone, 0, "k"))->value == "fresh");
      CHECK((*db.Get(kAlone, 0, "k"))->expire_ms == 0);
    }
  }
  SECTION("SetExpire of a missing key is false") {
    auto r = db.SetExpire(0, "nope", NowMs() + 1000);
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
    CHECK_FALSE(*db.Exists(kAlone, 0, "nope"));
  }
  SECTION("Expire deletes now") {
    REQUIRE(*db.Expire(0, "k"));
    CHECK_FALSE(*db.Exists(kAlone, 0, "k"));
    CHECK_FALSE(RawMeta(t.engine(), 0, "k").has_value());
  }
}

TEST_CASE("RENAME of strings", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  REQUIRE(db.SetString(0, "a", "va", 12345 + NowMs(), false).ok());
  REQUIRE(db.SetString(0, "b", "vb", 0, false).ok());

  SECTION("moves the value and the expiry") {
    const uint64_t expire = (*db.Get(kAlone, 0, "a"))->expire_ms;
    auto r = db.Rename(0, "a", "c", false);
    REQUIRE(r.ok());
    CHECK(*r);
    CHECK_FALSE(*db.Exists(kAlone, 0, "a"));
    CHECK((*db.Get(kAlone, 0, "c"))->value == "va");
    CHECK((*db.Get(kAlone, 0, "c"))->expire_ms == expire);
  }
  SECTION("overwrites an existing destination") {
    REQUIRE(*db.Rename(0, "a", "b", false));
    CHECK((*db.Get(kAlone, 0, "b"))->value == "va");
    CHECK(*db.DbSize(0) == 1);
  }
  SECTION("NX refuses an existing destination and changes nothing") {
    auto r = db.Rename(0, "a", "b", true);
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
    CHECK((*db.Get(kAlone, 0, "a"))->value == "va");
    CHECK((*db.Get(kAlone, 0, "b"))->value == "vb");
  }
  SECTION("NX to a free name renames") {
    REQUIRE(*db.Rename(0, "a", "z", true));
    CHECK((*db.Get(kAlone, 0, "z"))->value == "va");
  }
  SECTION("a missing source is kNotFound") {
    auto r = db.Rename(0, "missing", "x", false);
    CHECK(r.status().code() == Code::kNotFound);
    CHECK(r.status().reason() == Reason::kKeyNotFound);
    CHECK_FALSE(*db.Exists(kAlone, 0, "x"));
  }
  SECTION("renaming a key to itself keeps it (NX answers false)") {
    CHECK(*db.Rename(0, "a", "a", false));
    CHECK_FALSE(*db.Rename(0, "a", "a", true));
    CHECK((*db.Get(kAlone, 0, "a"))->value == "va");
  }
}

TEST_CASE("FLUSHDB clears one namespace, FLUSHALL every one", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  CfSettings settings = SmallPages();
  const auto items = Items::Make("item", 0, 20);
  for (uint16_t ns : {0, 1, 2, 0xffff}) {
    REQUIRE(db.SetString(ns, "s", "v", 0, false).ok());
    REQUIRE(db.SetString(ns, "s2", "v", 0, false).ok());
    REQUIRE(db.CfInsert(kAlone, ns, "f", items.views,
                        InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
                .ok());
  }
  // A renamed filter (alias record in the default CF) in namespace 1.
  REQUIRE(*db.Rename(1, "f", "g", false));
  const size_t pages_per_ns = AllPages(t.engine()).size() / 4;
  REQUIRE(pages_per_ns > 0);

  SECTION("FLUSHDB") {
    for (uint16_t ns : {1, 0xffff}) {
      REQUIRE(db.FlushDb(ns).ok());
      CHECK(*db.DbSize(ns) == 0);
      CHECK(db.Keys(ns, "*")->empty());
      CHECK(*db.CfLookup(kAlone, ns, "f", items.views, false) == std::vector<uint64_t>(20, 0));
    }
    CHECK(*db.CfLookup(kAlone, 1, "g", items.views, false) == std::vector<uint64_t>(20, 0));
    for (uint16_t ns : {0, 2}) {
      CHECK(*db.DbSize(ns) == 3);
      CHECK(Sorted(*db.Keys(ns, "*")) == std::vector<std::string>{"f", "s", "s2"});
      CHECK(*db.CfLookup(kAlone, ns, "f", items.views, false) == std::vector<uint64_t>(20, 1));
    }
    CHECK(AllPages(t.engine()).size() == 2 * pages_per_ns);
    for (const auto& p : AllPages(t.engine())) {
      PageKeyParts parts;
      REQUIRE(DecodePageKey(p.key, &parts));
      CHECK((parts.ns == 0 || parts.ns == 2));
    }
    // The alias of namespace 1 is gone; nothing else in the default CF was touched.
    for (const auto& r : AllRecords(t.engine(), t.engine().default_cf())) {
      CHECK(r.key[0] != kAliasPrefix);
    }
    CHECK(RawMeta(t.engine(), 0, "s").has_value());
  }
  SECTION("FLUSHALL") {
    const uint64_t before = *t.engine().NewVersion();
    REQUIRE(db.FlushAll().ok());
    for (uint16_t ns : {0, 1, 2, 0xffff}) {
      CHECK(*db.DbSize(ns) == 0);
      CHECK(*db.CfLookup(kAlone, ns, "f", items.views, false) == std::vector<uint64_t>(20, 0));
    }
    CHECK(AllPages(t.engine()).empty());
    CHECK(AllRecords(t.engine(), t.engine().metadata_cf()).empty());
    // The version high-water mark survives: a new filter never reuses an old version.
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(100), settings).ok());
    CHECK(db.CfInfo(kAlone, 0, "f")->version > before);
  }
}

TEST_CASE("DBSIZE counts live keys of one namespace", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  CHECK(*db.DbSize(0) == 0);
  for (int i = 0; i < 25; ++i) {
    REQUIRE(db.SetString(0, "k" + std::to_string(i), "v", 0, false).ok());
  }
  REQUIRE(db.CfReserve(kAlone, 0, "filter", Reserve(100), CfSettings()).ok());
  REQUIRE(db.SetString(3, "elsewhere", "v", 0, false).ok());
  CHECK(*db.DbSize(0) == 26);
  CHECK(*db.DbSize(3) == 1);
  CHECK(*db.DbSize(2) == 0);
  REQUIRE(*db.Delete(0, "k3"));
  REQUIRE(*db.SetExpire(0, "k4", NowMs() - 10));
  CHECK(*db.DbSize(0) == 24);
}

TEST_CASE("SCAN visits every key exactly once when nothing changes", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  std::set<std::string> strings;
  std::set<std::string> filters;
  for (int i = 0; i < 300; ++i) {
    const std::string k = "key:" + std::to_string(i);
    REQUIRE(db.SetString(0, k, "v", 0, false).ok());
    strings.insert(k);
  }
  for (int i = 0; i < 40; ++i) {
    const std::string k = "cf:" + std::to_string(i);
    REQUIRE(db.CfReserve(kAlone, 0, k, Reserve(64), CfSettings()).ok());
    filters.insert(k);
  }
  REQUIRE(db.SetString(1, "key:other-ns", "v", 0, false).ok());

  SECTION("all keys, with small and large COUNT") {
    for (uint64_t count : {1, 7, 10, 339, 340, 1000}) {
      INFO("COUNT " << count);
      int calls = 0;
      auto seen = ScanAll(db, 0, "", count, "", &calls);
      CHECK(seen.size() == 340);
      for (const auto& [k, n] : seen) {
        INFO(k);
        CHECK(n == 1);
        CHECK((strings.count(k) + filters.count(k)) == 1);
      }
      if (count >= 340) {
        CHECK(calls == 1);
      } else {
        CHECK(calls >= static_cast<int>(340 / count));
      }
    }
  }
  SECTION("COUNT 0 still makes progress") {
    auto seen = ScanAll(db, 0, "", 0, "");
    CHECK(seen.size() == 340);
  }
  SECTION("MATCH filters by glob") {
    auto seen = ScanAll(db, 0, "key:1?", 7, "");
    std::map<std::string, int> want;
    for (int i = 10; i < 20; ++i) {
      want["key:" + std::to_string(i)] = 1;
    }
    CHECK(seen == want);
  }
  SECTION("TYPE filters by type name, case-insensitively") {
    auto cf = ScanAll(db, 0, "", 9, "MBbloomCF");
    CHECK(cf.size() == 40);
    for (const auto& [k, n] : cf) {
      CHECK(filters.count(k) == 1);
    }
    CHECK(ScanAll(db, 0, "", 9, "mbbloomcf").size() == 40);
    auto str = ScanAll(db, 0, "", 9, "string");
    CHECK(str.size() == 300);
    CHECK(ScanAll(db, 0, "", 9, "hash").empty());
  }
  SECTION("MATCH and TYPE together") {
    auto seen = ScanAll(db, 0, "cf:3*", 5, "MBbloomCF");
    CHECK(seen.size() == 11);  // cf:3, cf:30 .. cf:39
    CHECK(ScanAll(db, 0, "cf:3*", 5, "string").empty());
  }
  SECTION("another namespace is scanned on its own") {
    CHECK(ScanAll(db, 1, "", 3, "") == std::map<std::string, int>{{"key:other-ns", 1}});
    CHECK(ScanAll(db, 2, "", 3, "").empty());
  }
  SECTION("a cursor of another namespace never yields that namespace's keys") {
    auto first = db.Scan(0, 0, "", 5, "");
    REQUIRE(first.ok());
    REQUIRE(first->cursor != 0);
    auto page = db.Scan(1, first->cursor, "", 1000, "");
    REQUIRE(page.ok());
    CHECK(page->keys == std::vector<std::string>{"key:other-ns"});
    CHECK(page->cursor == 0);
  }
  SECTION("an unknown cursor restarts rather than skipping keys") {
    auto page = db.Scan(0, 987654321, "", 1000, "");
    REQUIRE(page.ok());
    CHECK(page->keys.size() == 340);
    CHECK(page->cursor == 0);
  }
}

TEST_CASE("KEYS returns the live keys matching a glob", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  for (const char* k : {"hello", "hallo", "hxllo", "hllo", "heeeello", "other"}) {
    REQUIRE(db.SetString(0, k, "v", 0, false).ok());
  }
  REQUIRE(db.SetString(1, "hello", "v", 0, false).ok());
  CHECK(Sorted(*db.Keys(0, "h?llo")) == std::vector<std::string>{"hallo", "hello", "hxllo"});
  CHECK(Sorted(*db.Keys(0, "h*llo")) ==
        std::vector<std::string>{"hallo", "heeeello", "hello", "hllo", "hxllo"});
  CHECK(Sorted(*db.Keys(0, "h[ae]llo")) == std::vector<std::string>{"hallo", "hello"});
  CHECK(Sorted(*db.Keys(0, "h[^e]llo")) == std::vector<std::string>{"hallo", "hxllo"});
  CHECK(Sorted(*db.Keys(0, "h[a-b]llo")) == std::vector<std::string>{"hallo"});
  CHECK(db.Keys(0, "*")->size() == 6);
  CHECK(db.Keys(0, "nomatch*")->empty());
  CHECK(*db.Keys(1, "*") == std::vector<std::string>{"hello"});
}

TEST_CASE("GlobMatch follows Redis's stringmatchlen", "[keyspace]") {
  SECTION("*") {
    CHECK(GlobMatch("*", ""));
    CHECK(GlobMatch("*", "anything"));
    CHECK(GlobMatch("a*", "a"));
    CHECK(GlobMatch("a*", "abc"));
    CHECK_FALSE(GlobMatch("a*", "ba"));
    CHECK(GlobMatch("*c", "abc"));
    CHECK_FALSE(GlobMatch("*c", "abcd"));
    CHECK(GlobMatch("a*b*c", "axxbyyc"));
    CHECK_FALSE(GlobMatch("a*b*c", "axxcyyb"));
    CHECK(GlobMatch("a**b", "ab"));
    CHECK(GlobMatch("*a*", "bab"));
  }
  SECTION("?") {
    CHECK(GlobMatch("a?c", "abc"));
    CHECK_FALSE(GlobMatch("a?c", "ac"));
    CHECK_FALSE(GlobMatch("a?c", "abbc"));
    CHECK(GlobMatch("???", "xyz"));
    CHECK_FALSE(GlobMatch("?", ""));
  }
  SECTION("[...] sets and ranges") {
    CHECK(GlobMatch("[a-c]x", "bx"));
    CHECK(GlobMatch("[a-c]x", "ax"));
    CHECK(GlobMatch("[a-c]x", "cx"));
    CHECK_FALSE(GlobMatch("[a-c]x", "dx"));
    CHECK(GlobMatch("[c-a]", "b"));  // reversed ranges are swapped, as in Redis
    CHECK(GlobMatch("[abc]", "c"));
    CHECK_FALSE(GlobMatch("[abc]", "d"));
    CHECK_FALSE(GlobMatch("[abc]", ""));
    CHECK(GlobMatch("[a-c0-9]", "5"));
  }
  SECTION("[^...] negation") {
    CHECK(GlobMatch("[^a]", "b"));
    CHECK_FALSE(GlobMatch("[^a]", "a"));
    CHECK_FALSE(GlobMatch("[^a-z]", "q"));
    CHECK(GlobMatch("[^a-z]", "Q"));
    CHECK_FALSE(GlobMatch("[^a]", ""));
  }
  SECTION("backslash escapes") {
    CHECK(GlobMatch("\\*", "*"));
    CHECK_FALSE(GlobMatch("\\*", "a"));
    CHECK(GlobMatch("a\\?", "a?"));
    CHECK_FALSE(GlobMatch("a\\?", "ab"));
    CHECK(GlobMatch("\\[a\\]", "[a]"));
    CHECK(GlobMatch("[\\]]", "]"));
    CHECK(GlobMatch("[\\^]", "^"));
    CHECK_FALSE(GlobMatch("[\\^]", "a"));
  }
  SECTION("literal text and case") {
    CHECK(GlobMatch("abc", "abc"));
    CHECK_FALSE(GlobMatch("abc", "abcd"));
    CHECK_FALSE(GlobMatch("abc", "ABC"));
    CHECK(GlobMatch("abc", "ABC", true));
    CHECK(GlobMatch("[A-C]x", "bX", true));
    CHECK(GlobMatch("", ""));
    CHECK_FALSE(GlobMatch("", "a"));
  }
  SECTION("binary text") {
    CHECK(GlobMatch("a*", std::string("a\0b", 3)));
    CHECK(GlobMatch(std::string("a\0?", 3), std::string("a\0b", 3)));
  }
}

TEST_CASE("RANDOMKEY picks a live key of the namespace", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  auto none = db.RandomKey(0);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  REQUIRE(db.SetString(0, "a", "v", 0, false).ok());
  REQUIRE(db.SetString(0, "b", "v", 0, false).ok());
  REQUIRE(db.SetString(0, "gone", "v", NowMs() - 1, false).ok());
  REQUIRE(db.SetString(1, "c", "v", 0, false).ok());
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto k = db.RandomKey(0);
    REQUIRE(k.ok());
    REQUIRE(k->has_value());
    seen.insert(**k);
  }
  CHECK(seen == std::set<std::string>{"a", "b"});
}

TEST_CASE("DiskUsage covers a key's metadata and pages", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  CHECK(db.DiskUsage(kAlone, 0, "missing").status().code() == Code::kNotFound);
  REQUIRE(db.SetString(0, "s", std::string(100, 'x'), 0, false).ok());
  auto s = db.DiskUsage(kAlone, 0, "s");
  REQUIRE(s.ok());
  CHECK(*s >= 100);
  const auto items = Items::Make("du-", 0, 2000);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 4000},
                      SmallPages(64))
              .ok());
  REQUIRE(t.engine().Flush().ok());
  auto f = db.DiskUsage(kAlone, 0, "f");
  REQUIRE(f.ok());
  // 2000 one-byte fingerprints spread over 64-byte pages: well over a kilobyte on disk.
  CHECK(*f > 2000);
  REQUIRE(*db.Rename(0, "f", "g", false));
  CHECK(*db.DiskUsage(kAlone, 0, "g") > 2000);
}

TEST_CASE("a rename alias lives exactly as long as the renamed filter", "[keyspace]") {
  TestDb t;
  Db& db = t.db();
  CfSettings settings = SmallPages();
  const auto items = Items::Make("item", 0, 20);
  auto aliases = [&] {
    size_t n = 0;
    for (const auto& r : AllRecords(t.engine(), t.engine().default_cf())) {
      n += r.key[0] == kAliasPrefix ? 1 : 0;
    }
    return n;
  };
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  REQUIRE(aliases() == 0);
  REQUIRE(*db.Rename(0, "f", "g", false));
  REQUIRE(aliases() == 1);
  REQUIRE(*db.Rename(0, "g", "h", false));  // the same alias, pointing elsewhere
  REQUIRE(aliases() == 1);
  CHECK(*db.CfLookup(kAlone, 0, "h", items.views, false) == std::vector<uint64_t>(20, 1));

  SECTION("DEL") {
    REQUIRE(*db.Delete(0, "h"));
    CHECK(aliases() == 0);
  }
  SECTION("overwritten by SET") {
    REQUIRE(db.SetString(0, "h", "v", 0, false).ok());
    CHECK(aliases() == 0);
  }
  SECTION("overwritten by RENAME of another key") {
    REQUIRE(db.SetString(0, "s", "v", 0, false).ok());
    REQUIRE(*db.Rename(0, "s", "h", false));
    CHECK(aliases() == 0);
  }
  SECTION("overwritten by RENAME of another renamed filter") {
    REQUIRE(db.CfInsert(kAlone, 0, "f2", items.views,
                        InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
                .ok());
    REQUIRE(*db.Rename(0, "f2", "x", false));
    REQUIRE(aliases() == 2);
    REQUIRE(*db.Rename(0, "x", "h", false));
    CHECK(aliases() == 1);  // only f2's
    CHECK(*db.CfLookup(kAlone, 0, "h", items.views, false) == std::vector<uint64_t>(20, 1));
  }
  SECTION("renamed back to the name its pages are stored under") {
    REQUIRE(*db.Rename(0, "h", "f", false));
    CHECK(aliases() == 0);
    CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(20, 1));
    // the pages are still the live filter's: a full compaction keeps them
    REQUIRE(t.engine().CompactAll().ok());
    CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(20, 1));
  }
}

TEST_CASE("SwapDatabases swaps namespaces, persists the map, and reverts to none", "[swapdb]") {
  TestDb t;
  CHECK(t.db().Namespace(0) == 0);
  CHECK(t.db().Namespace(7) == 7);
  REQUIRE(t.db().SetString(0, "k", "zero", 0, false).ok());
  REQUIRE(t.db().SetString(1, "k", "one", 0, false).ok());
  REQUIRE(t.db().SwapDatabases(0, 1).ok());
  CHECK(t.db().Namespace(0) == 1);
  CHECK(t.db().Namespace(1) == 0);
  CHECK(t.db().DbOfNamespace(1) == 0);
  CHECK(t.db().DbOfNamespace(0) == 1);
  // The data did not move: only the map changed.
  CHECK(t.db().Get(kAlone, 0, "k").value()->value == "zero");
  CHECK(t.db().Get(kAlone, t.db().Namespace(0), "k").value()->value == "one");

  REQUIRE(t.db().SwapDatabases(1, 5).ok());  // db1 -> ns5, db5 -> ns0
  CHECK(t.db().Namespace(1) == 5);
  CHECK(t.db().Namespace(5) == 0);
  CHECK(t.db().DbOfNamespace(0) == 5);
  REQUIRE(t.db().SwapDatabases(2, 2).ok());
  CHECK(t.db().Namespace(2) == 2);

  t.Reopen();
  CHECK(t.db().Namespace(0) == 1);
  CHECK(t.db().Namespace(1) == 5);
  CHECK(t.db().Namespace(5) == 0);
  CHECK(t.db().DbOfNamespace(5) == 1);
  CHECK(t.db().Get(kAlone, t.db().Namespace(5), "k").value()->value == "zero");

  // Back to every database under its own namespace: the record goes.
  REQUIRE(t.db().SwapDatabases(1, 5).ok());
  REQUIRE(t.db().SwapDatabases(0, 1).ok());
  for (uint16_t i = 0; i < 8; ++i) {
    CHECK(t.db().Namespace(i) == i);
  }
  for (const auto& rec : AllRecords(t.engine(), t.engine().default_cf())) {
    CHECK(rec.key != kDbMapKey);
  }
  t.Reopen();
  CHECK(t.db().Namespace(0) == 0);
  CHECK(t.db().Namespace(1) == 1);
}

TEST_CASE("A corrupt database map is refused and leaves every database in place", "[swapdb]") {
  TestDb t;
  for (std::string bad : {std::string("\x01\x00\x02", 3), std::string("\x00\x00\x01\x00", 4),
                          std::string("\x00\x00\x01\x00\x00\x00\x01\x00", 8)}) {
    REQUIRE(t.engine()
                .db()
                ->Put(rocksdb::WriteOptions(), t.engine().default_cf(), std::string(kDbMapKey), bad)
                .ok());
    CHECK(t.db().LoadDatabaseMap().code() == Code::kCorruption);
    CHECK(t.db().Namespace(0) == 0);
    CHECK(t.db().Namespace(1) == 1);
  }
}

TEST_CASE("A replicated SWAPDB batch changes the replica's map", "[swapdb]") {
  TestDb primary;
  TestDb replica;
  const uint64_t from = primary.engine().LatestSequence() + 1;
  REQUIRE(primary.db().SetString(3, "k", "v", 0, false).ok());
  REQUIRE(primary.db().SwapDatabases(0, 3).ok());
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  REQUIRE(primary.engine().db()->GetUpdatesSince(from, &it).ok());
  int batches = 0;
  for (; it->Valid(); it->Next()) {
    auto b = it->GetBatch();
    REQUIRE(replica.db().ApplyReplicated(b.writeBatchPtr->Data()).ok());
    ++batches;
  }
  CHECK(batches == 2);
  CHECK(replica.db().Namespace(0) == 3);
  CHECK(replica.db().Namespace(3) == 0);
  CHECK(replica.db().Get(kAlone, replica.db().Namespace(0), "k").value()->value == "v");
}

TEST_CASE("A replica keeps the pages of a filter written in several batches until its metadata",
          "[swapdb][replica]") {
  TestDb primary;
  TestDb replica;
  // 32 MiB of non-zero bucket bytes (a small payload): its copy takes several batches.
  cuckood::core::FilterMeta meta;
  meta.base_num_buckets = 1 << 20;
  meta.bucket_size = 32;
  meta.num_items = 1;
  std::string payload;
  rdb::BeginCuckoo(&payload, meta);
  rdb::AppendSubFilter(&payload, meta.base_num_buckets, std::string(32 << 20, '\x01'));
  rdb::EndCuckoo(&payload);
  rdb::Payload parsed;
  cuckood::core::Limits any;
  any.max_filter_bytes = UINT64_MAX;
  REQUIRE(rdb::ParsePayload(payload, any, &parsed) == rdb::ParseResult::kOk);
  REQUIRE(primary.db().Restore(0, "src", parsed, 0, CfSettings()).value());
  const uint64_t from = primary.engine().LatestSequence() + 1;
  REQUIRE(primary.db().Copy(0, "src", 0, "dst", false).value());
  std::vector<std::string> batches;
  {
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    REQUIRE(primary.engine().db()->GetUpdatesSince(from, &it).ok());
    for (; it->Valid(); it->Next()) {
      batches.push_back(it->GetBatch().writeBatchPtr->Data());
    }
  }
  REQUIRE(batches.size() >= 2);  // pages first, the metadata in the last batch
  for (size_t i = 0; i + 1 < batches.size(); ++i) {
    REQUIRE(replica.db().ApplyReplicated(batches[i]).ok());
  }
  const size_t pages_before = AllPages(replica.engine()).size();
  CHECK(pages_before > 0);
  REQUIRE(replica.engine().CompactAll().ok());
  CHECK(AllPages(replica.engine()).size() == pages_before);  // pinned: no metadata names them yet
  REQUIRE(replica.db().ApplyReplicated(batches.back()).ok());
  REQUIRE(replica.engine().CompactAll().ok());
  auto copied = replica.db().Dump(kAlone, 0, "dst");
  REQUIRE(copied.ok());
  REQUIRE(copied->has_value());
  CHECK(**copied == payload);
  // Unpinned once the metadata is there: deleting the copy lets compaction drop its pages.
  const uint64_t del_from = primary.engine().LatestSequence() + 1;
  REQUIRE(primary.db().Delete(0, "dst").value());
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  REQUIRE(primary.engine().db()->GetUpdatesSince(del_from, &it).ok());
  for (; it->Valid(); it->Next()) {
    REQUIRE(replica.db().ApplyReplicated(it->GetBatch().writeBatchPtr->Data()).ok());
  }
  REQUIRE(replica.engine().CompactAll().ok());
  CHECK(AllPages(replica.engine()).empty());
}
