#include "storage/format.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace cuckood::storage {
namespace {

void PutU8(std::string* s, uint8_t v) {
  s->push_back(static_cast<char>(v));
}

// (The bytes are made first and appended at once: a push_back per byte checks the string's
// capacity each time, and every filter write encodes its metadata record.)
template <typename T>
void PutLE(std::string* s, T v) {
  char bytes[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) {
    bytes[i] = static_cast<char>(static_cast<uint64_t>(v) >> (8 * i));
  }
  s->append(bytes, sizeof(T));
}

template <typename T>
void PutBE(std::string* s, T v) {
  char bytes[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) {
    bytes[i] = static_cast<char>(static_cast<uint64_t>(v) >> (8 * (sizeof(T) - 1 - i)));
  }
  s->append(bytes, sizeof(T));
}

template <typename T>
T GetBE(const char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  }
  return static_cast<T>(v);
}

// Reads little-endian fields from a record, remembering whether it ran past the end.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  template <typename T>
  T LE() {
    if (s_.size() - pos_ < sizeof(T) || pos_ > s_.size()) {
      ok_ = false;
      pos_ = s_.size();
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(s_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  std::string_view Bytes(size_t n) {
    if (s_.size() - pos_ < n) {
      ok_ = false;
      pos_ = s_.size();
      return {};
    }
    auto out = s_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string_view Rest() {
    auto out = s_.substr(pos_);
    pos_ = s_.size();
    return out;
  }
  bool ok() const { return ok_; }
  bool done() const { return pos_ == s_.size(); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// CRC16-XMODEM (polynomial 0x1021, initial value 0), one table lookup per byte; the table is
// computed from the polynomial at compile time.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    auto crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

}  // namespace

std::string_view TypeName(KeyType type) {
  switch (type) {
    case KeyType::kString:
      return "string";
    case KeyType::kCuckoo:
      return "MBbloomCF";
  }
  return "none";
}

uint16_t KeySlot(std::string_view key) {
  // A write reads and writes records of its key under several encodings (its metadata key, its
  // page prefix, their cache keys), each with the key's slot: the thread remembers the last
  // key's, which a compare of the key finds again faster than its CRC16.
  struct Last {
    char key[64];
    uint32_t size = UINT32_MAX;
    uint16_t slot = 0;
  };
  thread_local Last last;
  if (key.size() == last.size && std::memcmp(key.data(), last.key, key.size()) == 0) {
    return last.slot;
  }
  const uint16_t slot = ComputeKeySlot(key);
  if (key.size() <= sizeof(last.key)) {
    std::memcpy(last.key, key.data(), key.size());
    last.size = static_cast<uint32_t>(key.size());
    last.slot = slot;
  }
  return slot;
}

uint16_t ComputeKeySlot(std::string_view key) {
  auto open = key.find('{');
  if (open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close != open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) & 16383);
}

std::string EncodeMetaKey(uint16_t ns, std::string_view key) {
  std::string out;
  out.reserve(4 + key.size());
  AppendMetaKey(&out, ns, key);
  return out;
}

void AppendMetaKey(std::string* out, uint16_t ns, std::string_view key) {
  PutBE<uint16_t>(out, ns);
  PutBE<uint16_t>(out, KeySlot(key));
  out->append(key);
}

bool DecodeMetaKey(std::string_view raw, uint16_t* ns, std::string_view* key) {
  if (raw.size() < 4) {
    return false;
  }
  *ns = GetBE<uint16_t>(raw.data());
  *key = raw.substr(4);
  return true;
}

std::string EncodeMetadata(const Metadata& meta) {
  std::string out;
  out.reserve(27 +
              (meta.type == KeyType::kString ? meta.value.size() : 44 + meta.cuckoo.owner.size()));
  PutU8(&out, kMetaFormatVersion);
  PutU8(&out, static_cast<uint8_t>(meta.type));
  PutLE<uint64_t>(&out, meta.expire_ms);
  PutLE<uint64_t>(&out, meta.version);
  if (meta.type == KeyType::kString) {
    PutLE<uint64_t>(&out, meta.value.size());
    out.append(meta.value);
    return out;
  }
  const auto& c = meta.cuckoo;
  PutLE<uint64_t>(&out, c.filter.num_items);
  PutLE<uint64_t>(&out, c.filter.num_deletes);
  PutLE<uint16_t>(&out, static_cast<uint16_t>(c.filter.num_filters));
  PutLE<uint16_t>(&out, c.filter.expansion);
  PutLE<uint16_t>(&out, c.filter.bucket_size);
  PutLE<uint16_t>(&out, c.filter.max_iterations);
  PutLE<uint64_t>(&out, c.filter.base_num_buckets);
  PutLE<uint64_t>(&out, c.base_capacity);
  PutLE<uint32_t>(&out, c.page_size);
  PutLE<uint32_t>(&out, static_cast<uint32_t>(c.owner.size()));
  out.append(c.owner);
  return out;
}

std::optional<Metadata> DecodeMetadata(std::string_view raw) {
  Reader r(raw);
  if (r.LE<uint8_t>() != kMetaFormatVersion) {
    return std::nullopt;
  }
  Metadata m;
  auto type = r.LE<uint8_t>();
  m.expire_ms = r.LE<uint64_t>();
  m.version = r.LE<uint64_t>();
  m.size = r.LE<uint64_t>();
  if (type == static_cast<uint8_t>(KeyType::kString)) {
    m.type = KeyType::kString;
    m.value = std::string(r.Rest());
    if (!r.ok() || m.value.size() != m.size) {
      return std::nullopt;
    }
    return m;
  }
  if (type != static_cast<uint8_t>(KeyType::kCuckoo)) {
    return std::nullopt;
  }
  m.type = KeyType::kCuckoo;
  auto& c = m.cuckoo;
  c.filter.num_items = m.size;
  c.filter.num_deletes = r.LE<uint64_t>();
  c.filter.num_filters = r.LE<uint16_t>();
  c.filter.expansion = r.LE<uint16_t>();
  c.filter.bucket_size = r.LE<uint16_t>();
  c.filter.max_iterations = r.LE<uint16_t>();
  c.filter.base_num_buckets = r.LE<uint64_t>();
  c.base_capacity = r.LE<uint64_t>();
  c.page_size = r.LE<uint32_t>();
  auto owner_len = r.LE<uint32_t>();
  c.owner = std::string(r.Bytes(owner_len));
  if (!r.ok() || !r.done() || c.filter.num_filters == 0 || c.filter.bucket_size == 0 ||
      c.filter.base_num_buckets == 0 || c.page_size == 0) {
    return std::nullopt;
  }
  return m;
}

bool PeekExpire(std::string_view raw, uint64_t* expire_ms) {
  Reader r(raw);
  if (r.LE<uint8_t>() != kMetaFormatVersion) {
    return false;
  }
  r.LE<uint8_t>();
  *expire_ms = r.LE<uint64_t>();
  return r.ok();
}

std::string EncodePagePrefix(uint16_t ns, std::string_view owner, uint64_t version) {
  std::string out;
  out.reserve(16 + owner.size() + 6);
  AppendPagePrefix(&out, ns, owner, version);
  return out;
}

void AppendPagePrefix(std::string* out, uint16_t ns, std::string_view owner, uint64_t version) {
  PutBE<uint16_t>(out, ns);
  PutBE<uint16_t>(out, KeySlot(owner));
  PutBE<uint32_t>(out, static_cast<uint32_t>(owner.size()));
  out->append(owner);
  PutBE<uint64_t>(out, version);
}

std::string EncodePageKey(std::string_view prefix, uint16_t filter, uint32_t page) {
  std::string out;
  out.reserve(prefix.size() + kPageKeySuffix);
  out.append(prefix);
  PutBE<uint16_t>(&out, filter);
  PutBE<uint32_t>(&out, page);
  return out;
}

void EncodePageKeySuffix(char* out, uint16_t filter, uint32_t page) {
  out[0] = static_cast<char>(filter >> 8);
  out[1] = static_cast<char>(filter);
  out[2] = static_cast<char>(page >> 24);
  out[3] = static_cast<char>(page >> 16);
  out[4] = static_cast<char>(page >> 8);
  out[5] = static_cast<char>(page);
}

void SetPageKeySuffix(std::string* key, uint16_t filter, uint32_t page) {
  EncodePageKeySuffix(key->data() + key->size() - kPageKeySuffix, filter, page);
}

bool DecodePageKey(std::string_view raw, PageKeyParts* out) {
  if (raw.size() < 8) {
    return false;
  }
  out->ns = GetBE<uint16_t>(raw.data());
  uint32_t len = GetBE<uint32_t>(raw.data() + 4);
  if (raw.size() != 8 + static_cast<size_t>(len) + 8 + 2 + 4) {
    return false;
  }
  out->owner = raw.substr(8, len);
  const char* p = raw.data() + 8 + len;
  out->version = GetBE<uint64_t>(p);
  out->filter = GetBE<uint16_t>(p + 8);
  out->page = GetBE<uint32_t>(p + 10);
  return true;
}

std::string EncodeAliasKey(uint16_t ns, std::string_view owner, uint64_t version) {
  std::string out;
  out.push_back(kAliasPrefix);
  PutBE<uint16_t>(&out, ns);
  PutBE<uint32_t>(&out, static_cast<uint32_t>(owner.size()));
  out.append(owner);
  PutBE<uint64_t>(&out, version);
  return out;
}

PageGeometry::PageGeometry(uint32_t page_size, uint16_t bucket_size) {
  const uint64_t bs = std::max<uint16_t>(bucket_size, 1);
  buckets_per_page = std::max<uint64_t>(1, page_size / bs);
  page_bytes = buckets_per_page * bs;
}

uint64_t PageGeometry::PageLength(uint64_t page, uint64_t num_buckets) const {
  const uint64_t bs = page_bytes / buckets_per_page;
  const uint64_t first = page * buckets_per_page;
  if (first >= num_buckets) {
    return 0;
  }
  return std::min(buckets_per_page, num_buckets - first) * bs;
}

uint64_t EffectiveMaxFilterBytes(uint64_t server_limit, uint32_t page_size, uint16_t bucket_size) {
  PageGeometry g(page_size, bucket_size);
  // Page indices are u32: at most 2^32 pages of page_bytes each.
  const uint64_t cap = g.page_bytes << 32;  // page_bytes < 2^32 (page size and bucket size)
  return std::min(server_limit, cap);
}

}  // namespace cuckood::storage
