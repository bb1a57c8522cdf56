// DUMP payload codec (see rdb.h for the layout). Reading follows Redis 7.0's loader where its
// quirks decide what is accepted: a length byte of the "encoded" kind read as a plain length
// gives its low six bits, the reader may run into the footer (it is part of the buffer Redis
// reads from), and bytes after the value are ignored.
#include "core/rdb.h"

#include <array>
#include <charconv>
#include <limits>

#include "core/crc64.h"
#include "core/dump.h"

namespace cuckood::core::rdb {
namespace {

constexpr std::string_view kModuleAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// Length prefixes (two high bits) and the encodings of the "encoded" kind.
constexpr uint8_t k6Bit = 0;
constexpr uint8_t k14Bit = 1;
constexpr uint8_t kEncoded = 3;
constexpr uint8_t k32Bit = 0x80;
constexpr uint8_t k64Bit = 0x81;
constexpr uint8_t kEncInt8 = 0;
constexpr uint8_t kEncInt16 = 1;
constexpr uint8_t kEncInt32 = 2;
constexpr uint8_t kEncLzf = 3;

// Module value opcodes.
constexpr uint64_t kOpEof = 0;
constexpr uint64_t kOpUnsigned = 2;
constexpr uint64_t kOpString = 5;

// Redis compresses only strings longer than this, and only when it saves 4 bytes.
constexpr size_t kMinCompressLength = 20;
constexpr size_t kMinCompressGain = 4;

// RedisBloom's defaults for filters saved before encoding version 4.
constexpr uint16_t kOldBucketSize = 2;
constexpr uint16_t kOldMaxIterations = 20;
constexpr uint16_t kOldExpansion = 1;

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
  }
}

void PutBe(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out->push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
  }
}

// A string Redis would store in an int encoding: canonical decimal (what string2ll accepts and
// ll2string gives back: no '+', no leading zeros, no "-0") within 32 bits.
bool CanonicalInt32(std::string_view s, int64_t* value) {
  if (s.empty() || s.size() > 11) {
    return false;
  }
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || s[i] < '0' || s[i] > '9' || (s[i] == '0' && s.size() != 1)) {
    return false;
  }
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    v = v * 10 + (s[i] - '0');
  }
  v = s[0] == '-' ? -v : v;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  *value = v;
  return true;
}

void AppendModuleUnsigned(std::string* out, uint64_t v) {
  AppendLength(out, kOpUnsigned);
  AppendLength(out, v);
}

// Sequential reads over the payload; every read checks the bounds.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool Byte(uint8_t* b) {
    if (pos_ >= data_.size()) {
      return false;
    }
    *b = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool Take(uint64_t n, std::string_view* out) {
    if (n > data_.size() - pos_) {
      return false;
    }
    *out = data_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool Uint(int bytes, bool big_endian, uint64_t* v) {
    std::string_view raw;
    if (!Take(static_cast<uint64_t>(bytes), &raw)) {
      return false;
    }
    *v = 0;
    for (int i = 0; i < bytes; ++i) {
      const int at = big_endian ? i : bytes - 1 - i;
      *v = (*v << 8) | static_cast<uint8_t>(raw[static_cast<size_t>(at)]);
    }
    return true;
  }
  // An RDB length; *encoded tells an "encoded" first byte (its low six bits are returned).
  bool Length(uint64_t* len, bool* encoded) {
    uint8_t b = 0;
    if (!Byte(&b)) {
      return false;
    }
    *encoded = false;
    const uint8_t kind = b >> 6;
    if (kind == kEncoded) {
      *encoded = true;
      *len = b & 0x3f;
      return true;
    }
    if (kind == k6Bit) {
      *len = b & 0x3f;
      return true;
    }
    if (kind == k14Bit) {
      uint8_t low = 0;
      if (!Byte(&low)) {
        return false;
      }
      *len = (static_cast<uint64_t>(b & 0x3f) << 8) | low;
      return true;
    }
    if (b == k32Bit) {
      return Uint(4, true, len);
    }
    if (b == k64Bit) {
      return Uint(8, true, len);
    }
    return false;  // an unknown length prefix
  }
  bool PlainLength(uint64_t* len) {
    bool encoded = false;
    return Length(len, &encoded);
  }
  bool String(EncodedString* s) {
    uint64_t len = 0;
    bool encoded = false;
    if (!Length(&len, &encoded)) {
      return false;
    }
    if (!encoded) {
      s->kind = EncodedString::Kind::kRaw;
      s->length = len;
      return Take(len, &s->bytes);
    }
    if (len == kEncLzf) {
      uint64_t clen = 0;
      s->kind = EncodedString::Kind::kLzf;
      return PlainLength(&clen) && PlainLength(&s->length) && Take(clen, &s->bytes);
    }
    const int width = len == kEncInt8 ? 1 : len == kEncInt16 ? 2 : len == kEncInt32 ? 4 : 0;
    uint64_t raw = 0;
    if (width == 0 || !Uint(width, false, &raw)) {
      return false;
    }
    // Sign-extend from the encoded width.
    const unsigned shift = static_cast<unsigned>(64 - 8 * width);
    s->kind = EncodedString::Kind::kInt;
    s->value = static_cast<int64_t>(raw << shift) >> shift;
    std::array<char, 24> text{};
    auto r = std::to_chars(text.data(), text.data() + text.size(), s->value);
    s->length = static_cast<uint64_t>(r.ptr - text.data());
    return true;
  }
  bool ModuleUnsigned(uint64_t* v) {
    uint64_t op = 0;
    return PlainLength(&op) && op == kOpUnsigned && PlainLength(v);
  }
  bool ModuleString(EncodedString* s) {
    uint64_t op = 0;
    return PlainLength(&op) && op == kOpString && String(s);
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

bool VerifyFooter(std::string_view payload) {
  if (payload.size() < kFooterSize) {
    return false;
  }
  const std::string_view footer = payload.substr(payload.size() - kFooterSize);
  const uint16_t version = static_cast<uint16_t>(static_cast<uint8_t>(footer[0]) |
                                                 (static_cast<uint8_t>(footer[1]) << 8));
  if (version > kRdbVersion) {
    return false;
  }
  uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) {
    stored = (stored << 8) | static_cast<uint8_t>(footer[2 + static_cast<size_t>(i)]);
  }
  return Crc64(0, payload.substr(0, payload.size() - 8)) == stored;
}

bool ParseCuckoo(Reader& r, uint64_t encver, const Limits& limits, Payload* out) {
  uint64_t num_filters = 0, buckets = 0, items = 0;
  if (!r.ModuleUnsigned(&num_filters) || !r.ModuleUnsigned(&buckets) || !r.ModuleUnsigned(&items)) {
    return false;
  }
  FilterMeta meta;
  // RedisBloom keeps numFilters and the three small fields in 16 bits.
  meta.num_filters = static_cast<uint16_t>(num_filters);
  meta.base_num_buckets = buckets;
  meta.num_items = items;
  if (meta.num_filters == 0 || buckets == 0) {
    return false;
  }
  if (encver < kCuckooEncodingVersion) {
    meta.bucket_size = kOldBucketSize;
    meta.max_iterations = kOldMaxIterations;
    meta.expansion = kOldExpansion;
  } else {
    uint64_t deletes = 0, bucket_size = 0, max_iterations = 0, expansion = 0;
    if (!r.ModuleUnsigned(&deletes) || !r.ModuleUnsigned(&bucket_size) ||
        !r.ModuleUnsigned(&max_iterations) || !r.ModuleUnsigned(&expansion)) {
      return false;
    }
    meta.num_deletes = deletes;
    meta.bucket_size = static_cast<uint16_t>(bucket_size);
    meta.max_iterations = static_cast<uint16_t>(max_iterations);
    meta.expansion = static_cast<uint16_t>(expansion);
  }
  // The same checks as a CF.LOADCHUNK header: what passes them, the core can serve.
  if (!DecodeHeader(EncodeHeader(meta), limits)) {
    return false;
  }
  out->sub_filters.clear();
  out->sub_filters.reserve(meta.num_filters);
  for (uint32_t i = 0; i < meta.num_filters; ++i) {
    uint64_t n = buckets;
    if (encver >= kCuckooEncodingVersion && !r.ModuleUnsigned(&n)) {
      return false;
    }
    EncodedString s;
    if (n != SubFilterBuckets(meta, i) || !r.ModuleString(&s) ||
        s.length != SubFilterBytes(meta, i)) {
      return false;
    }
    out->sub_filters.push_back(s);
  }
  uint64_t eof = 0;
  if (!r.PlainLength(&eof) || eof != kOpEof) {
    return false;
  }
  out->filter = meta;
  return true;
}

}  // namespace

uint64_t ModuleTypeId(std::string_view name, uint64_t encoding_version) {
  if (name.size() != 9 || encoding_version > 1023) {
    return 0;
  }
  uint64_t id = 0;
  for (char c : name) {
    const size_t at = kModuleAlphabet.find(c);
    if (at == std::string_view::npos) {
      return 0;
    }
    id = (id << 6) | at;
  }
  return (id << 10) | encoding_version;
}

void AppendLength(std::string* out, uint64_t len) {
  if (len < (1u << 6)) {
    out->push_back(static_cast<char>((k6Bit << 6) | len));
  } else if (len < (1u << 14)) {
    out->push_back(static_cast<char>((k14Bit << 6) | (len >> 8)));
    out->push_back(static_cast<char>(len & 0xff));
  } else if (len <= std::numeric_limits<uint32_t>::max()) {
    out->push_back(static_cast<char>(k32Bit));
    PutBe(out, len, 4);
  } else {
    out->push_back(static_cast<char>(k64Bit));
    PutBe(out, len, 8);
  }
}

void AppendString(std::string* out, std::string_view s) {
  int64_t v = 0;
  if (CanonicalInt32(s, &v)) {
    const uint8_t prefix = kEncoded << 6;
    if (v >= -128 && v <= 127) {
      out->push_back(static_cast<char>(prefix | kEncInt8));
      PutLe(out, static_cast<uint64_t>(v), 1);
    } else if (v >= -32768 && v <= 32767) {
      out->push_back(static_cast<char>(prefix | kEncInt16));
      PutLe(out, static_cast<uint64_t>(v), 2);
    } else {
      out->push_back(static_cast<char>(prefix | kEncInt32));
      PutLe(out, static_cast<uint64_t>(v), 4);
    }
    return;
  }
  if (s.size() > kMinCompressLength) {
    thread_local std::string packed;
    if (LzfCompress(s, s.size() - kMinCompressGain, &packed)) {
      out->push_back(static_cast<char>((kEncoded << 6) | kEncLzf));
      AppendLength(out, packed.size());
      AppendLength(out, s.size());
      out->append(packed);
      if (packed.capacity() > (1u << 20)) {
        std::string().swap(packed);  // a large filter's buffer is not kept by the thread
      }
      return;
    }
  }
  AppendLength(out, s.size());
  out->append(s);
}

void AppendFooter(std::string* out) {
  PutLe(out, kRdbVersion, 2);
  PutLe(out, Crc64(0, *out), 8);
}

std::string DumpString(std::string_view value) {
  std::string out;
  out.push_back(static_cast<char>(kTypeString));
  AppendString(&out, value);
  AppendFooter(&out);
  return out;
}

void BeginCuckoo(std::string* out, const FilterMeta& meta) {
  out->push_back(static_cast<char>(kTypeModule2));
  AppendLength(out, ModuleTypeId(kCuckooTypeName, kCuckooEncodingVersion));
  AppendModuleUnsigned(out, meta.num_filters);
  AppendModuleUnsigned(out, meta.base_num_buckets);
  AppendModuleUnsigned(out, meta.num_items);
  AppendModuleUnsigned(out, meta.num_deletes);
  AppendModuleUnsigned(out, meta.bucket_size);
  AppendModuleUnsigned(out, meta.max_iterations);
  AppendModuleUnsigned(out, meta.expansion);
}

void AppendSubFilter(std::string* out, uint64_t num_buckets, std::string_view bytes) {
  AppendModuleUnsigned(out, num_buckets);
  AppendLength(out, kOpString);
  AppendString(out, bytes);
}

void EndCuckoo(std::string* out) {
  AppendLength(out, kOpEof);
  AppendFooter(out);
}

bool Decode(const EncodedString& s, const ByteSink& sink) {
  switch (s.kind) {
    case EncodedString::Kind::kRaw:
      return s.bytes.empty() || sink(s.bytes);
    case EncodedString::Kind::kLzf:
      return LzfDecompressTo(s.bytes, s.length, sink);
    case EncodedString::Kind::kInt: {
      std::array<char, 24> text{};
      auto r = std::to_chars(text.data(), text.data() + text.size(), s.value);
      return sink(std::string_view(text.data(), static_cast<size_t>(r.ptr - text.data())));
    }
  }
  return false;
}

bool DecodeToString(const EncodedString& s, std::string* out) {
  if (s.kind == EncodedString::Kind::kLzf) {
    // An LZF back-reference of at most 264 bytes takes at least 3 bytes: a claimed length beyond
    // what the compressed bytes can expand to is malformed, and is refused before anything is
    // allocated for it.
    constexpr uint64_t kMaxExpansion = 90;
    if (s.length > static_cast<uint64_t>(s.bytes.size()) * kMaxExpansion + 64 ||
        s.length > (uint64_t{1} << 32)) {
      return false;
    }
    out->assign(static_cast<size_t>(s.length), '\0');
    return LzfDecompress(s.bytes, out);
  }
  out->clear();
  return Decode(s, [out](std::string_view piece) {
    out->append(piece);
    return true;
  });
}

ParseResult ParsePayload(std::string_view payload, const Limits& limits, Payload* out) {
  if (!VerifyFooter(payload)) {
    return ParseResult::kVersionOrChecksum;
  }
  Reader r(payload);
  uint8_t type = 0;
  if (!r.Byte(&type)) {
    return ParseResult::kBadFormat;
  }
  out->type = type;
  if (type == kTypeString) {
    return r.String(&out->string) ? ParseResult::kOk : ParseResult::kBadFormat;
  }
  if (type != kTypeModule2) {
    return ParseResult::kBadFormat;  // lists, hashes, ... and the old module format
  }
  uint64_t id = 0;
  if (!r.PlainLength(&id)) {
    return ParseResult::kBadFormat;
  }
  // Redis finds the module type by the name part of the id; the low 10 bits go to its loader,
  // which refuses versions newer than its own.
  const uint64_t encver = id & 1023;
  if ((id >> 10) != (ModuleTypeId(kCuckooTypeName, 0) >> 10) || encver > kCuckooEncodingVersion) {
    return ParseResult::kBadFormat;
  }
  return ParseCuckoo(r, encver, limits, out) ? ParseResult::kOk : ParseResult::kBadFormat;
}

}  // namespace cuckood::core::rdb
