#include "storage/page_merge.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace cuckood::storage {
namespace {

// Runs the operator's full merge of operands over an optional base page.
bool Merge(const std::string* base, const std::vector<std::string>& ops, std::string* out) {
  auto op = NewPageMergeOperator();
  std::vector<rocksdb::Slice> slices(ops.begin(), ops.end());
  rocksdb::Slice key("k");
  rocksdb::Slice existing;
  if (base != nullptr) {
    existing = rocksdb::Slice(*base);
  }
  rocksdb::MergeOperator::MergeOperationInput in(key, base ? &existing : nullptr, slices, nullptr);
  rocksdb::Slice existing_operand;
  rocksdb::MergeOperator::MergeOperationOutput res(*out, existing_operand);
  return op->FullMergeV2(in, &res);
}

TEST_CASE("a page delta carries only the changed bytes and rebuilds the page") {
  std::string before(2048, '\0');
  std::string after = before;
  after[5] = 7;
  after[1500] = static_cast<char>(200);
  std::string operand;
  REQUIRE(EncodePageDelta(before, after, &operand));
  CHECK(operand.size() < 32);
  std::string merged;
  SECTION("over the stored page") {
    REQUIRE(Merge(&before, {operand}, &merged));
    CHECK(merged == after);
  }
  SECTION("over a missing page, which reads as zeros") {
    REQUIRE(Merge(nullptr, {operand}, &merged));
    CHECK(merged == after);
  }
}

TEST_CASE("a one-byte change anywhere in a page is found and carried alone") {
  // Every position, so every alignment of the 64- and 8-byte skips over unchanged bytes.
  std::mt19937 rng(7);
  std::string before(2048, '\0');
  for (auto& c : before) {
    c = static_cast<char>(rng() % 4 == 0 ? rng() : 0);
  }
  for (size_t pos = 0; pos < before.size(); ++pos) {
    std::string after = before;
    after[pos] = static_cast<char>(after[pos] ^ 0x5a);
    std::string operand;
    REQUIRE(EncodePageDelta(before, after, &operand));
    CHECK(operand.size() == 4 + 4 + 2 + 1);  // page length, offset, run length, the byte
    std::string merged;
    REQUIRE(Merge(&before, {operand}, &merged));
    REQUIRE(merged == after);
  }
}

TEST_CASE("AllZeroBytes finds a set byte at any position and length") {
  for (size_t len : {0, 1, 7, 8, 63, 64, 65, 127, 200, 2048}) {
    std::string s(len, '\0');
    CHECK(AllZeroBytes(s));
    for (size_t pos = 0; pos < len; ++pos) {
      s[pos] = 1;
      REQUIRE_FALSE(AllZeroBytes(s));
      s[pos] = 0;
    }
  }
  CHECK(AllZeroBytes(std::string_view()));
}

TEST_CASE("successive page deltas apply in order, later bytes winning") {
  std::mt19937 rng(7);
  std::string page(2040, '\0');
  std::string stored = page;
  std::vector<std::string> ops;
  for (int i = 0; i < 50; ++i) {
    std::string next = page;
    for (int k = 0; k < 3; ++k) {
      next[rng() % next.size()] = static_cast<char>(1 + rng() % 255);
    }
    std::string op;
    REQUIRE(EncodePageDelta(page, next, &op));
    ops.push_back(op);
    page = next;
  }
  std::string merged;
  REQUIRE(Merge(&stored, ops, &merged));
  CHECK(merged == page);

  SECTION("partial merge of the operands gives the same page") {
    auto op = NewPageMergeOperator();
    std::deque<rocksdb::Slice> dq(ops.begin(), ops.end());
    std::string combined;
    REQUIRE(op->PartialMergeMulti(rocksdb::Slice("k"), dq, &combined, nullptr));
    std::string again;
    REQUIRE(Merge(&stored, {combined}, &again));
    CHECK(again == page);
  }
}

TEST_CASE("a page delta is refused when the whole page is smaller") {
  std::string before(256, '\0');
  std::string after(256, '\x05');
  std::string operand;
  CHECK_FALSE(EncodePageDelta(before, after, &operand));
}

TEST_CASE("a page delta over a page of another length fails the merge (corruption)") {
  std::string before(2048, '\0');
  std::string after = before;
  after[0] = 1;
  std::string operand;
  REQUIRE(EncodePageDelta(before, after, &operand));
  std::string wrong(100, '\0');
  std::string merged;
  CHECK_FALSE(Merge(&wrong, {operand}, &merged));
  SECTION("and so does a truncated operand") {
    CHECK_FALSE(Merge(&before, {operand.substr(0, operand.size() - 1)}, &merged));
  }
}

TEST_CASE("a page's written ranges, in any order and overlapping, rebuild it over any old bytes") {
  // A writer that changed a page in place knows which bytes it wrote, not their old values: the
  // operand carries those bytes, and applying it to whatever the stored page held there gives
  // the page.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    const size_t len = round % 3 == 0 ? 64 : 2048;
    std::string stored(len, '\0');
    for (auto& c : stored) {
      c = static_cast<char>(rng() % 3 == 0 ? rng() : 0);
    }
    std::string page = stored;
    std::vector<PageRange> ranges;
    const int writes = 1 + static_cast<int>(rng() % 12);
    for (int w = 0; w < writes; ++w) {
      const uint32_t width = 1 + static_cast<uint32_t>(rng() % 4);
      const uint32_t at = static_cast<uint32_t>(rng() % (len - width + 1));
      for (uint32_t i = 0; i < width; ++i) {
        page[at + i] = static_cast<char>(rng());
      }
      ranges.push_back({at, width});
      if (rng() % 4 == 0) {
        ranges.push_back({at, width});  // (the same bucket written twice)
      }
    }
    std::shuffle(ranges.begin(), ranges.end(), rng);
    std::string operand;
    if (!EncodePageRanges(page, ranges, &operand)) {
      CHECK(len == 64);  // (the runs would be half a small page: it is written whole)
      continue;
    }
    CHECK(operand.size() <= 4 + ranges.size() * 16);
    std::string merged;
    REQUIRE(Merge(&stored, {operand}, &merged));
    CHECK(merged == page);
    if (AllZeroBytes(stored)) {
      REQUIRE(Merge(nullptr, {operand}, &merged));  // (a page that was not stored)
      CHECK(merged == page);
    }
  }
}

TEST_CASE("a page is all zeros after writes only when every byte is") {
  std::string page(2048, '\0');
  std::vector<PageRange> written{{40, 2}};
  CHECK(AllZeroBytes(page, written));
  page[41] = 3;  // (set by the write)
  CHECK_FALSE(AllZeroBytes(page, written));
  page[41] = 0;
  page[2047] = 1;  // (set before, outside the bytes written: a delete of another slot)
  CHECK_FALSE(AllZeroBytes(page, written));
  page[2047] = 0;
  CHECK(AllZeroBytes(page, std::vector<PageRange>{}));
}

TEST_CASE("two pages are the same in the written ranges only when every byte there is") {
  std::string a(2048, '\0');
  a[100] = 7;
  std::string b = a;
  const std::vector<PageRange> written{{40, 2}, {2046, 2}};
  CHECK(SameBytes(a, b, written));
  b[41] = 1;
  CHECK_FALSE(SameBytes(a, b, written));
  b[41] = 0;
  b[2047] = 1;  // (the last byte of the last range)
  CHECK_FALSE(SameBytes(a, b, written));
  b[2047] = 0;
  b[100] = 0;  // (outside the ranges: not looked at)
  CHECK(SameBytes(a, b, written));
  CHECK_FALSE(SameBytes(a, a.substr(0, 1024), written));  // (pages of different lengths)
}

TEST_CASE("ranges close together share a run, and many ranges fall back to the whole page") {
  std::string page(2048, '\0');
  page[100] = 1;
  page[103] = 2;
  std::vector<PageRange> two{{103, 1}, {100, 1}};
  std::string operand;
  REQUIRE(EncodePageRanges(page, two, &operand));
  CHECK(operand.size() == 4 + 6 + 4);  // one run: bytes 100..103
  std::vector<PageRange> most;
  for (uint32_t at = 0; at < 2048; at += 8) {
    most.push_back({at, 2});
  }
  CHECK_FALSE(EncodePageRanges(page, most, &operand));
  std::vector<PageRange> none;
  REQUIRE(EncodePageRanges(page, none, &operand));
  CHECK(PageDeltaIsEmpty(operand));
}

}  // namespace
}  // namespace cuckood::storage
