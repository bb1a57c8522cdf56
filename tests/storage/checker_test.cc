// The offline checker (storage/checker.h): silent on a healthy database, one error per
// inconsistency it is documented to find. It opens the database read-only, so every test closes
// its engine first.
#include "storage/checker.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;

namespace {

CheckReport Check(const std::string& dir, std::string* text) {
  std::ostringstream out;
  CheckReport rep = CheckDatabase(dir, out);
  *text = out.str();
  return rep;
}

void Put(Engine& e, rocksdb::ColumnFamilyHandle* cf, const std::string& key,
         const std::string& value) {
  REQUIRE(e.db()->Put(rocksdb::WriteOptions(), cf, key, value).ok());
}

}  // namespace

TEST_CASE("the checker reports no errors on a healthy database", "[checker]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const auto items = Items::Make("h-", 0, 300);
  // A grown filter, a short last page, a renamed filter, a deleted filter (dead pages), a
  // loaded filter, an expired filter, strings, and two namespaces.
  REQUIRE(db.CfInsert(kAlone, 0, "grown", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 100}, settings)
              .ok());
  REQUIRE(db.CfReserve(kAlone, 0, "short", Reserve(192, 3), settings).ok());
  REQUIRE(db.CfInsert(kAlone, 0, "short", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  REQUIRE(db.CfInsert(kAlone, 1, "renamed", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  REQUIRE(*db.Rename(1, "renamed", "renamed2", false));
  REQUIRE(db.CfInsert(kAlone, 0, "deleted", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  REQUIRE(*db.Delete(0, "deleted"));
  REQUIRE(db.CfInsert(kAlone, 0, "expired", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  REQUIRE(*db.SetExpire(0, "expired", NowMs() - 1));
  const std::string header = *db.CfScanDump(kAlone, 0, "grown", 0)->data;
  REQUIRE(db.CfLoadChunk(kAlone, 0, "loaded", 1, header, settings).ok());
  REQUIRE(db.CfReserve(kAlone, 0, "reserved", Reserve(1000), settings).ok());
  REQUIRE(db.SetString(0, "s1", "v", 0, false).ok());
  REQUIRE(db.SetString(1, "s2", "v", 0, false).ok());
  for (int i = 0; i < 100; ++i) {
    REQUIRE(*db.CfDelete(kAlone, 0, "grown", items.views[static_cast<size_t>(i)], settings));
  }
  const size_t pages = AllPages(t.engine()).size();
  t.Close();

  std::string text;
  CheckReport rep = Check(t.dir(), &text);
  INFO(text);
  CHECK(rep.ok());
  CHECK(rep.errors == 0);
  CHECK(rep.keys == 7);  // grown short renamed2 loaded reserved s1 s2
  CHECK(rep.filters == 5);
  CHECK(rep.pages == pages);
  CHECK(rep.dead_pages > 0);  // of "deleted" and "expired", awaiting compaction
  CHECK(text.find("0 errors") != std::string::npos);

  SECTION("and none after compaction, with no dead pages left") {
    t.Open();
    REQUIRE(t.engine().CompactAll().ok());
    t.Close();
    rep = Check(t.dir(), &text);
    CHECK(rep.errors == 0);
    CHECK(rep.dead_pages == 0);
    CHECK(rep.pages < pages);
  }
}

TEST_CASE("the checker reports a page of the wrong length", "[checker]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const auto items = Items::Make("w-", 0, 40);
  REQUIRE(db.CfInsert(kAlone, 0, "victim", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  const auto pages = PagesWithPrefix(t.engine(), FilterPrefix(db, 0, "victim"));
  REQUIRE(!pages.empty());
  const std::string bad_value = GENERATE(std::string(63, '\x01'), std::string(65, '\x01'));
  Put(t.engine(), t.engine().pages_cf(), pages[0].key, bad_value);
  t.Close();

  std::string text;
  CheckReport rep = Check(t.dir(), &text);
  INFO(text);
  CHECK_FALSE(rep.ok());
  // The page itself, and possibly the item count it no longer contributes to.
  CHECK(rep.errors >= 1);
  CHECK(rep.errors <= 2);
  CHECK(text.find("'victim': filter 0 page") != std::string::npos);
  CHECK(text.find("expected 64") != std::string::npos);
}

TEST_CASE("the checker reports an item count that disagrees with the pages", "[checker]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const auto items = Items::Make("n-", 0, 40);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  Metadata meta = *db.CfInfo(kAlone, 0, "f");
  const int64_t delta = GENERATE(1, -1);
  meta.size = static_cast<uint64_t>(static_cast<int64_t>(meta.size) + delta);
  meta.cuckoo.filter.num_items = meta.size;
  Put(t.engine(), t.engine().metadata_cf(), EncodeMetaKey(0, "f"), EncodeMetadata(meta));
  t.Close();

  std::string text;
  CheckReport rep = Check(t.dir(), &text);
  INFO(text);
  CHECK(rep.errors == 1);
  CHECK(text.find("'f'") != std::string::npos);
  CHECK(text.find("non-empty slots") != std::string::npos);
}

TEST_CASE("the checker reports malformed metadata and versions above the high-water mark",
          "[checker]") {
  TestDb t;
  Db& db = t.db();
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(100), CfSettings()).ok());

  SECTION("malformed record") {
    Put(t.engine(), t.engine().metadata_cf(), EncodeMetaKey(0, "junk"), "not a record");
  }
  SECTION("version from the future") {
    Metadata meta = *db.CfInfo(kAlone, 0, "f");
    meta.version += 1ULL << 40;
    Put(t.engine(), t.engine().metadata_cf(), EncodeMetaKey(0, "f"), EncodeMetadata(meta));
  }
  t.Close();
  std::string text;
  CheckReport rep = Check(t.dir(), &text);
  INFO(text);
  CHECK(rep.errors == 1);
}

TEST_CASE("the checker fails cleanly on a directory without a database", "[checker]") {
  TempDir dir;
  std::string text;
  CheckReport rep = Check(dir.path() + "/nothing-here", &text);
  CHECK(rep.errors == 1);
  CHECK(text.find("error") != std::string::npos);
}
