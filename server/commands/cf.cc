// CF.* — RedisBloom 2.8's cuckoo filter commands: argument parsing and checks in RedisBloom's
// order, with its exact error texts and RESP2/RESP3 reply shapes (redisbloom-cf-reference.md §1).
#include <spdlog/fmt/fmt.h>

#include "core/dump.h"
#include "server/command.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

// Argument and insert-outcome texts; the texts of storage reasons are in cf_errors.h.
constexpr std::string_view kBadCapacity = "Bad capacity";
constexpr std::string_view kCapacityTooSmall = "Capacity must be at least (BucketSize * 2)";
constexpr std::string_view kMaxExpansions = "Maximum expansions reached";
constexpr std::string_view kFilterFull = "Filter is full";
constexpr std::string_view kGrowthFailed = "ERR Insufficient memory";
constexpr std::string_view kUnknownArgument = "Unknown argument received";
constexpr std::string_view kInvalidPosition = "Invalid position";

constexpr int64_t kMaxBucketSize = 255;
constexpr int64_t kMaxIterations = 65535;
constexpr int64_t kMaxExpansion = 32768;
constexpr int64_t kMinInsertCapacity = 4;

// RedisBloom finds an option by scanning the whole argv from index 0 (so a key named like a
// keyword is taken as the keyword); the first match wins. Returns its index or -1.
int FindKeyword(const Argv& argv, std::string_view word) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (EqualsIgnoreCase(argv[i], word)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

struct ReserveOptions {
  int64_t capacity = 0;
  int64_t bucket_size = 2;
  int64_t max_iterations = 20;
  int64_t expansion = 1;
};

// Parses one numeric option; returns false after writing the error reply.
bool ParseOption(CommandContext& ctx, std::string_view word, int64_t min, int64_t max,
                 int64_t* value) {
  int at = FindKeyword(ctx.argv, word);
  if (at < 0) {
    return true;
  }
  if (static_cast<size_t>(at) + 1 >= ctx.argv.size()) {
    // RedisBloom reads past argv here and crashes; we answer the arity error instead.
    ctx.out.Error(ArityError("cf.reserve"));
    return false;
  }
  auto v = ParseInt64(ctx.argv[static_cast<size_t>(at) + 1]);
  if (!v) {
    ctx.out.Error(fmt::format("Couldn't parse {}", word));
    return false;
  }
  if (*v < min || *v > max) {
    ctx.out.Error(
        fmt::format("{}: value must be an integer between {} and {}, inclusive.", word, min, max));
    return false;
  }
  *value = *v;
  return true;
}

void CfReserve(CommandContext& ctx) {
  if (ctx.argv.size() % 2 == 0) {
    ctx.out.Error(ArityError("cf.reserve"));
    return;
  }
  auto settings = ctx.server.cf_settings();
  ReserveOptions o;
  o.bucket_size = settings.bucket_size;
  o.max_iterations = settings.max_iterations;
  o.expansion = settings.expansion;
  auto cap = ParseInt64(ctx.argv[2]);
  if (!cap) {
    ctx.out.Error(kBadCapacity);
    return;
  }
  o.capacity = *cap;
  if (!ParseOption(ctx, "MAXITERATIONS", 1, kMaxIterations, &o.max_iterations) ||
      !ParseOption(ctx, "BUCKETSIZE", 1, kMaxBucketSize, &o.bucket_size) ||
      !ParseOption(ctx, "EXPANSION", 0, kMaxExpansion, &o.expansion)) {
    return;
  }
  if (o.bucket_size * 2 > o.capacity) {
    ctx.out.Error(kCapacityTooSmall);
    return;
  }
  storage::ReserveArgs args;
  args.capacity = static_cast<uint64_t>(o.capacity);
  args.bucket_size = static_cast<uint16_t>(o.bucket_size);
  args.max_iterations = static_cast<uint16_t>(o.max_iterations);
  args.expansion = static_cast<uint16_t>(o.expansion);
  auto s = ctx.server.db().CfReserve(ctx.scope, ctx.ns, ctx.argv[1], args, settings);
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

// CF.ADD / CF.ADDNX: NX-ness comes from the command name, as in RedisBloom.
void CfAddCommon(CommandContext& ctx, bool nx) {
  auto settings = ctx.server.cf_settings();
  std::vector<std::string_view> items{ctx.argv[2]};
  const storage::InsertOptions options{.nx = nx};
  auto r = ctx.server.db().CfInsert(ctx.scope, ctx.ns, ctx.argv[1], items, options, settings);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (r->max_expansions) {
    ctx.out.Error(kMaxExpansions);
    return;
  }
  switch (r->results[0]) {
    case core::InsertResult::kInserted:
      ctx.out.Bool(true);
      break;
    case core::InsertResult::kExists:
      ctx.out.Bool(false);
      break;
    case core::InsertResult::kFull:
      ctx.out.Error(kFilterFull);
      break;
    default:
      ctx.out.Error(kGrowthFailed);
      break;
  }
}

void CfAdd(CommandContext& ctx) {
  CfAddCommon(ctx, false);
}
void CfAddNx(CommandContext& ctx) {
  CfAddCommon(ctx, true);
}

void CfInsertCommon(CommandContext& ctx, bool nx) {
  const Argv& argv = ctx.argv;
  const std::string name = nx ? "cf.insertnx" : "cf.insert";
  storage::InsertOptions options{.nx = nx};
  size_t items_at = 0;
  // RedisBloom looks only at the first letter of each option word.
  for (size_t i = 2; i < argv.size();) {
    char c = argv[i].empty() ? '\0' : static_cast<char>(std::tolower(argv[i][0]));
    if (c == 'c') {
      if (i + 1 >= argv.size()) {
        ctx.out.Error(ArityError(name));
        return;
      }
      auto cap = ParseInt64(argv[i + 1]);
      if (!cap) {
        ctx.out.Error(kBadCapacity);
        return;
      }
      if (*cap < kMinInsertCapacity) {
        ctx.out.Error(kCapacityTooSmall);
        return;
      }
      options.capacity = static_cast<uint64_t>(*cap);
      i += 2;
    } else if (c == 'n') {
      options.no_create = true;
      ++i;
    } else if (c == 'i') {
      items_at = i + 1;
      break;
    } else {
      ctx.out.Error(kUnknownArgument);
      return;
    }
  }
  if (items_at == 0 || items_at >= argv.size()) {
    ctx.out.Error(ArityError(name));
    return;
  }
  std::vector<std::string_view> items(argv.begin() + static_cast<std::ptrdiff_t>(items_at),
                                      argv.end());
  auto r = ctx.server.db().CfInsert(ctx.scope, ctx.ns, argv[1], items, options,
                                    ctx.server.cf_settings());
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (r->max_expansions) {
    ctx.out.Error(kMaxExpansions);
    return;
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(r->results.size()));
  for (auto res : r->results) {
    if (nx) {
      // CF.INSERTNX answers integers even in RESP3.
      ctx.out.Integer(res == core::InsertResult::kInserted ? 1
                      : res == core::InsertResult::kExists ? 0
                                                           : -1);
    } else if (res == core::InsertResult::kInserted) {
      ctx.out.Bool(true);
    } else if (ctx.out.proto() >= 3) {
      ctx.out.Bool(false);
    } else {
      ctx.out.Integer(-1);
    }
  }
}

void CfInsert(CommandContext& ctx) {
  CfInsertCommon(ctx, false);
}
void CfInsertNx(CommandContext& ctx) {
  CfInsertCommon(ctx, true);
}

void CfLookupCommon(CommandContext& ctx, bool multi, bool count) {
  std::vector<std::string_view> items(ctx.argv.begin() + 2, ctx.argv.end());
  auto r = ctx.server.db().CfLookup(ctx.scope, ctx.ns, ctx.argv[1], items, count);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (count) {
    ctx.out.Integer(static_cast<int64_t>((*r)[0]));
    return;
  }
  if (multi) {
    ctx.out.ArrayHeader(static_cast<int64_t>(r->size()));
  }
  for (auto v : *r) {
    ctx.out.Bool(v != 0);
  }
}

void CfExists(CommandContext& ctx) {
  CfLookupCommon(ctx, false, false);
}
void CfMExists(CommandContext& ctx) {
  CfLookupCommon(ctx, true, false);
}
void CfCount(CommandContext& ctx) {
  CfLookupCommon(ctx, false, true);
}

void CfDel(CommandContext& ctx) {
  auto r = ctx.server.db().CfDelete(ctx.scope, ctx.ns, ctx.argv[1], ctx.argv[2],
                                    ctx.server.cf_settings());
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  ctx.out.Bool(*r);
}

void CfCompact(CommandContext& ctx) {
  auto s = ctx.server.db().CfCompact(ctx.scope, ctx.ns, ctx.argv[1], ctx.server.cf_settings());
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

void CfInfo(CommandContext& ctx) {
  auto m = ctx.server.db().CfInfo(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  const auto& f = m->cuckoo.filter;
  auto field = [&](std::string_view name, uint64_t v) {
    ctx.out.SimpleString(name);
    ctx.out.Integer(static_cast<int64_t>(v));  // RedisBloom sends these as signed 64-bit
  };
  ctx.out.MapHeader(8);
  field("Size", core::InfoSize(f));
  field("Number of buckets", f.base_num_buckets);
  field("Number of filters", f.num_filters);
  field("Number of items inserted", f.num_items);
  field("Number of items deleted", f.num_deletes);
  field("Bucket size", f.bucket_size);
  field("Expansion rate", f.expansion);
  field("Max iterations", f.max_iterations);
}

void CfDebug(CommandContext& ctx) {
  auto m = ctx.server.db().CfInfo(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  const auto& f = m->cuckoo.filter;
  ctx.out.Bulk(fmt::format(
      "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
      f.bucket_size, f.base_num_buckets, f.num_items, f.num_deletes, f.num_filters,
      f.max_iterations, f.expansion));
}

void CfScanDump(CommandContext& ctx) {
  auto iter = ParseInt64(ctx.argv[2]);
  if (!iter || *iter < 0) {
    ctx.out.Error(kInvalidPosition);
    return;
  }
  auto r = ctx.server.db().CfScanDump(ctx.scope, ctx.ns, ctx.argv[1], *iter);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  ctx.out.ArrayHeader(2);
  ctx.out.Integer(r->data ? r->next : 0);
  if (r->data) {
    ctx.out.Bulk(*r->data);
  } else {
    ctx.out.Null();
  }
}

void CfLoadChunk(CommandContext& ctx) {
  auto iter = ParseInt64(ctx.argv[2]);
  if (!iter || *iter == 0) {
    ctx.out.Error(kInvalidPosition);
    return;
  }
  auto s = ctx.server.db().CfLoadChunk(ctx.scope, ctx.ns, ctx.argv[1], *iter, ctx.argv[3],
                                       ctx.server.cf_settings());
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

CommandArgDoc Key() {
  return {"key", "key", "", false, false};
}
CommandArgDoc Arg(std::string name, std::string type, bool optional = false, bool multiple = false,
                  std::string token = "") {
  return {std::move(name), std::move(type), std::move(token), optional, multiple};
}

CommandSpec Row(std::string name, int arity, uint32_t flags, Handler h, std::string summary,
                std::string complexity, std::vector<CommandArgDoc> args,
                std::vector<std::string> acl) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = arity;
  // RedisBloom 2.8 registers no arity and checks it in each handler: inside MULTI a call with
  // the wrong number of arguments is queued and fails at EXEC.
  s.flags = flags | kHandlerArity;
  s.first_key = 1;
  s.last_key = 1;
  s.step = 1;
  s.handler = h;
  s.summary = std::move(summary);
  s.since = "1.0.0";
  s.group = "cf";
  s.complexity = std::move(complexity);
  s.args = std::move(args);
  acl.push_back("cuckoo");
  s.acl_categories = std::move(acl);
  return s;
}

}  // namespace

void RegisterCfCommands(CommandTable& table) {
  const uint32_t kW = kWrite | kDenyOom;
  const uint32_t kWG = kW | kGroupCommit;  // filter writes that may join a write group
  const uint32_t kR = kReadOnly | kFast;
  table.Add(Row(
      "cf.reserve", -3, kWG, CfReserve, "Creates a new Cuckoo Filter", "O(1)",
      {Key(), Arg("capacity", "integer"), Arg("bucketsize", "integer", true, false, "BUCKETSIZE"),
       Arg("maxiterations", "integer", true, false, "MAXITERATIONS"),
       Arg("expansion", "integer", true, false, "EXPANSION")},
      {"write", "fast"}));
  table.Add(Row("cf.add", 3, kWG, CfAdd, "Adds an item to a Cuckoo Filter", "O(k + i)",
                {Key(), Arg("item", "string")}, {"write"}));
  table.Add(Row("cf.addnx", 3, kWG, CfAddNx,
                "Adds an item to a Cuckoo Filter if the item did not exist previously.", "O(k + i)",
                {Key(), Arg("item", "string")}, {"write"}));
  table.Add(
      Row("cf.insert", -4, kWG, CfInsert,
          "Adds one or more items to a Cuckoo Filter. A filter will be created if it does "
          "not exist",
          "O(n * (k + i))",
          {Key(), Arg("capacity", "integer", true, false, "CAPACITY"),
           Arg("nocreate", "pure-token", true, false, "NOCREATE"),
           Arg("items", "pure-token", false, false, "ITEMS"), Arg("item", "string", false, true)},
          {"write"}));
  table.Add(
      Row("cf.insertnx", -4, kWG, CfInsertNx,
          "Adds one or more items to a Cuckoo Filter if the items did not exist "
          "previously. A filter will be created if it does not exist",
          "O(n * (k + i))",
          {Key(), Arg("capacity", "integer", true, false, "CAPACITY"),
           Arg("nocreate", "pure-token", true, false, "NOCREATE"),
           Arg("items", "pure-token", false, false, "ITEMS"), Arg("item", "string", false, true)},
          {"write"}));
  table.Add(Row("cf.exists", 3, kR, CfExists,
                "Checks whether one or more items exist in a "
                "Cuckoo Filter",
                "O(k), where k is the number of sub-filters", {Key(), Arg("item", "string")},
                {"read"}));
  table.Add(Row("cf.mexists", -3, kR, CfMExists,
                "Checks whether one or more items exist in a Cuckoo Filter",
                "O(k * n), where k is the number of sub-filters and n is the number of items",
                {Key(), Arg("item", "string", false, true)}, {"read"}));
  table.Add(Row(
      "cf.count", 3, kR, CfCount, "Return the number of times an item might be in a Cuckoo Filter",
      "O(k), where k is the number of sub-filters", {Key(), Arg("item", "string")}, {"read"}));
  table.Add(
      Row("cf.del", 3, kWrite | kFast | kGroupCommit, CfDel, "Deletes an item from a Cuckoo Filter",
          "O(k), where k is the number of sub-filters", {Key(), Arg("item", "string")}, {"write"}));
  // CF.COMPACT mutates the filter: flagged as a write here although RedisBloom flags it read-only.
  table.Add(Row("cf.compact", 2, kWrite | kBackground, CfCompact,
                "Moves items from newer sub-filters into older ones and frees empty sub-filters",
                "O(n), where n is the size of the filter", {Key()}, {"read"}));
  table.Add(Row("cf.info", 2, kR, CfInfo, "Returns information about a Cuckoo Filter", "O(1)",
                {Key()}, {"read", "fast"}));
  table.Add(Row("cf.debug", 2, kR, CfDebug, "Returns the internal counters of a Cuckoo Filter",
                "O(1)", {Key()}, {"read"}));
  table.Add(Row("cf.scandump", 3, kR, CfScanDump, "Begins an incremental save of the bloom filter",
                "O(n), where n is the capacity", {Key(), Arg("iterator", "integer")}, {"read"}));
  table.Add(Row("cf.loadchunk", 4, kW, CfLoadChunk,
                "Restores a filter previously saved using SCANDUMP",
                "O(n), where n is the capacity",
                {Key(), Arg("iterator", "integer"), Arg("data", "string")}, {"write"}));
}

}  // namespace cuckood::server
