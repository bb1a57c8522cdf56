#include "storage/page_merge.h"

#include <algorithm>
#include <cstring>

namespace cuckood::storage {
namespace {

constexpr size_t kRunHeader = 6;  // u32 offset + u16 length
// Two changed bytes closer than this share one run (cheaper than a second run header).
constexpr size_t kJoinGap = kRunHeader;
constexpr size_t kMaxRun = 0xffff;

void PutU32(std::string* s, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v), static_cast<char>(v >> 8),
                         static_cast<char>(v >> 16), static_cast<char>(v >> 24)};
  s->append(bytes, 4);
}

void PutU16(std::string* s, uint16_t v) {
  const char bytes[2] = {static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
  s->append(bytes, 2);
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  }
  return v;
}

uint16_t GetU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}

// Applies one operand to page (creating it as zeros when empty and `create`). false = invalid.
bool Apply(std::string_view op, std::string* page, bool* have_page) {
  if (op.size() < 4) {
    return false;
  }
  const uint32_t page_len = GetU32(op.data());
  if (!*have_page) {
    page->assign(page_len, '\0');
    *have_page = true;
  } else if (page->size() != page_len) {
    return false;
  }
  size_t pos = 4;
  while (pos < op.size()) {
    if (op.size() - pos < kRunHeader) {
      return false;
    }
    const uint32_t off = GetU32(op.data() + pos);
    const uint16_t len = GetU16(op.data() + pos + 4);
    pos += kRunHeader;
    if (op.size() - pos < len || off > page_len || page_len - off < len) {
      return false;
    }
    std::memcpy(page->data() + off, op.data() + pos, len);
    pos += len;
  }
  return true;
}

class PageMergeOperator final : public rocksdb::MergeOperator {
 public:
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    std::string& page = out->new_value;
    bool have = false;
    if (in.existing_value != nullptr) {
      page.assign(in.existing_value->data(), in.existing_value->size());
      have = true;
    }
    for (const auto& op : in.operand_list) {
      if (!Apply(std::string_view(op.data(), op.size()), &page, &have)) {
        return false;
      }
    }
    return true;
  }

  // Operands of one page combine by concatenating their runs (later runs win on overlap).
  bool PartialMergeMulti(const rocksdb::Slice&, const std::deque<rocksdb::Slice>& operands,
                         std::string* new_value, rocksdb::Logger*) const override {
    if (operands.empty() || operands.front().size() < 4) {
      return false;
    }
    const uint32_t page_len = GetU32(operands.front().data());
    new_value->clear();
    PutU32(new_value, page_len);
    for (const auto& op : operands) {
      if (op.size() < 4 || GetU32(op.data()) != page_len) {
        return false;
      }
      new_value->append(op.data() + 4, op.size() - 4);
    }
    return true;
  }

  const char* Name() const override { return "cuckood.PageMerge"; }
};

}  // namespace

bool AllZeroBytes(std::string_view s) {
  // 64 bytes at a time against a block of zeros (memcmp is vectorised; a loop over the bytes
  // with an early exit is not).
  static constexpr char kZeros[64] = {};
  size_t i = 0;
  for (; i + sizeof(kZeros) <= s.size(); i += sizeof(kZeros)) {
    if (std::memcmp(s.data() + i, kZeros, sizeof(kZeros)) != 0) {
      return false;
    }
  }
  return i == s.size() || std::memcmp(s.data() + i, kZeros, s.size() - i) == 0;
}

bool EncodePageDelta(std::string_view before, std::string_view after, std::string* operand) {
  operand->clear();
  PutU32(operand, static_cast<uint32_t>(after.size()));
  const size_t n = after.size();
  size_t i = 0;
  while (i < n) {
    // Skip unchanged bytes 64, then 8 at a time: a command changes a few bytes of a 2 KiB page.
    while (i + 64 <= n && std::memcmp(before.data() + i, after.data() + i, 64) == 0) {
      i += 64;
    }
    while (i + 8 <= n && std::memcmp(before.data() + i, after.data() + i, 8) == 0) {
      i += 8;
    }
    if (i >= n) {
      break;
    }
    if (before[i] == after[i]) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t end = i + 1;  // one past the last changed byte of this run
    size_t j = end;
    while (j < n && j - start < kMaxRun) {
      if (before[j] != after[j]) {
        end = j + 1;
      } else if (j - end >= kJoinGap) {
        break;
      }
      ++j;
    }
    PutU32(operand, static_cast<uint32_t>(start));
    PutU16(operand, static_cast<uint16_t>(end - start));
    operand->append(after.data() + start, end - start);
    i = end;
    if (operand->size() >= n / 2) {
      return false;
    }
  }
  return true;
}

bool AllZeroBytes(std::string_view page, std::span<const PageRange> written) {
  for (const PageRange& r : written) {
    if (r.offset < page.size() && !AllZeroBytes(page.substr(r.offset, r.length))) {
      return false;
    }
  }
  return AllZeroBytes(page);
}

bool SameBytes(std::string_view a, std::string_view b, std::span<const PageRange> written) {
  if (a.size() != b.size()) {
    return false;
  }
  for (const PageRange& r : written) {
    if (r.offset < a.size() && a.substr(r.offset, r.length) != b.substr(r.offset, r.length)) {
      return false;
    }
  }
  return true;
}

bool EncodePageRanges(std::string_view page, std::span<PageRange> ranges, std::string* operand) {
  operand->clear();
  PutU32(operand, static_cast<uint32_t>(page.size()));
  std::sort(ranges.begin(), ranges.end(),
            [](const PageRange& a, const PageRange& b) { return a.offset < b.offset; });
  const size_t n = page.size();
  size_t i = 0;
  while (i < ranges.size()) {
    // One run for ranges that overlap or lie closer than a run header apart.
    const size_t start = std::min<size_t>(ranges[i].offset, n);
    size_t end = std::min<size_t>(start + ranges[i].length, n);
    for (++i; i < ranges.size() && ranges[i].offset <= end + kJoinGap; ++i) {
      const size_t next_end = std::min<size_t>(size_t{ranges[i].offset} + ranges[i].length, n);
      if (next_end - start > kMaxRun) {
        break;
      }
      end = std::max(end, next_end);
    }
    if (end > start) {
      PutU32(operand, static_cast<uint32_t>(start));
      PutU16(operand, static_cast<uint16_t>(end - start));
      operand->append(page.data() + start, end - start);
    }
    if (operand->size() >= n / 2) {
      return false;
    }
  }
  return true;
}

std::shared_ptr<rocksdb::MergeOperator> NewPageMergeOperator() {
  return std::make_shared<PageMergeOperator>();
}

}  // namespace cuckood::storage
