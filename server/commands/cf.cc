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
  auto settings = ctx.server.live_config().cf_settings();
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

// The item of each of a combined run's calls (argv[2]), in the thread's buffer.
const std::vector<std::string_view>& CallItems(std::span<const Argv> calls) {
  thread_local std::vector<std::string_view> items;
  items.clear();
  for (const Argv& call : calls) {
    items.push_back(call[2]);
  }
  return items;
}

// The reply of CF.ADD / CF.ADDNX to one item's outcome.
void AddReply(resp::Writer& out, core::InsertResult result) {
  switch (result) {
    case core::InsertResult::kInserted:
      out.Bool(true);
      break;
    case core::InsertResult::kExists:
      out.Bool(false);
      break;
    case core::InsertResult::kFull:
      out.Error(kFilterFull);
      break;
    default:
      out.Error(kGrowthFailed);
      break;
  }
}

// CF.ADD / CF.ADDNX: NX-ness comes from the command name, as in RedisBloom.
void CfAddCommon(CommandContext& ctx, bool nx) {
  auto settings = ctx.server.live_config().cf_settings();
  thread_local std::vector<std::string_view> items(1);  // (no allocation per command)
  items[0] = ctx.argv[2];
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
  AddReply(ctx.out, r->results[0]);
}

// Consecutive CF.ADD (CF.ADDNX) calls on one key as one insert of their items
// (CombinedHandler): a call that finds the chain at its maximum is refused, as are the ones
// after it (the chain never shrinks during an insert), the earlier ones stay.
void CfAddCombinedCommon(CommandContext& ctx, std::span<const Argv> calls,
                         std::vector<size_t>* starts, bool nx) {
  const std::vector<std::string_view>& items = CallItems(calls);
  const storage::InsertOptions options{.nx = nx, .separate_calls = true};
  auto r = ctx.server.db().CfInsert(ctx.scope, ctx.ns, ctx.argv[1], items, options,
                                    ctx.server.live_config().cf_settings());
  for (size_t i = 0; i < calls.size(); ++i) {
    starts->push_back(ctx.out.buffer()->size());
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());  // (nothing was stored: each call fails alike)
    } else if (r->max_expansions || i >= r->results.size()) {
      ctx.out.Error(kMaxExpansions);
    } else {
      AddReply(ctx.out, r->results[i]);
    }
  }
}

void CfAdd(CommandContext& ctx) {
  CfAddCommon(ctx, false);
}
void CfAddNx(CommandContext& ctx) {
  CfAddCommon(ctx, true);
}
void CfAddCombined(CommandContext& ctx, std::span<const Argv> calls, std::vector<size_t>* starts) {
  CfAddCombinedCommon(ctx, calls, starts, false);
}
void CfAddNxCombined(CommandContext& ctx, std::span<const Argv> calls,
                     std::vector<size_t>* starts) {
  CfAddCombinedCommon(ctx, calls, starts, true);
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
                                    ctx.server.live_config().cf_settings());
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

// Consecutive CF.EXISTS (CF.COUNT) calls on one key as one lookup of their items
// (CombinedHandler).
void CfLookupCombinedCommon(CommandContext& ctx, std::span<const Argv> calls,
                            std::vector<size_t>* starts, bool count) {
  const std::vector<std::string_view>& items = CallItems(calls);
  auto r = ctx.server.db().CfLookup(ctx.scope, ctx.ns, ctx.argv[1], items, count);
  for (size_t i = 0; i < calls.size(); ++i) {
    starts->push_back(ctx.out.buffer()->size());
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());
    } else if (count) {
      ctx.out.Integer(static_cast<int64_t>((*r)[i]));
    } else {
      ctx.out.Bool((*r)[i] != 0);
    }
  }
}

// Consecutive CF.EXISTS (CF.COUNT) calls on different keys as one lookup (CombinedHandler,
// across_keys).
void CfLookupAcrossKeysCommon(CommandContext& ctx, std::span<const Argv> calls,
                              std::vector<size_t>* starts, bool count) {
  thread_local std::vector<std::string_view> keys;
  thread_local std::vector<storage::StatusOr<uint64_t>> results;
  keys.clear();
  for (const Argv& call : calls) {
    keys.push_back(call[1]);
  }
  const std::vector<std::string_view>& items = CallItems(calls);
  ctx.server.db().CfLookupKeys(ctx.scope, ctx.ns, keys, items, count, &results);
  for (size_t i = 0; i < calls.size(); ++i) {
    starts->push_back(ctx.out.buffer()->size());
    if (!results[i].ok()) {
      ReplyStatusError(ctx.out, results[i].status());
    } else if (count) {
      ctx.out.Integer(static_cast<int64_t>(*results[i]));
    } else {
      ctx.out.Bool(*results[i] != 0);
    }
  }
}

void CfExists(CommandContext& ctx) {
  CfLookupCommon(ctx, false, false);
}
void CfExistsAcrossKeys(CommandContext& ctx, std::span<const Argv> calls,
                        std::vector<size_t>* starts) {
  CfLookupAcrossKeysCommon(ctx, calls, starts, false);
}
void CfCountAcrossKeys(CommandContext& ctx, std::span<const Argv> calls,
                       std::vector<size_t>* starts) {
  CfLookupAcrossKeysCommon(ctx, calls, starts, true);
}
void CfExistsCombined(CommandContext& ctx, std::span<const Argv> calls,
                      std::vector<size_t>* starts) {
  CfLookupCombinedCommon(ctx, calls, starts, false);
}
void CfCountCombined(CommandContext& ctx, std::span<const Argv> calls,
                     std::vector<size_t>* starts) {
  CfLookupCombinedCommon(ctx, calls, starts, true);
}
void CfMExists(CommandContext& ctx) {
  CfLookupCommon(ctx, true, false);
}
void CfCount(CommandContext& ctx) {
  CfLookupCommon(ctx, false, true);
}

void CfDel(CommandContext& ctx) {
  auto r = ctx.server.db().CfDelete(ctx.scope, ctx.ns, ctx.argv[1], ctx.argv[2],
                                    ctx.server.live_config().cf_settings());
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  ctx.out.Bool(*r);
}

void CfCompact(CommandContext& ctx) {
  auto s = ctx.server.db().CfCompact(ctx.scope, ctx.ns, ctx.argv[1],
                                     ctx.server.live_config().cf_settings());
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
                                       ctx.server.live_config().cf_settings());
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

}  // namespace

void RegisterCfCommands(CommandTable& table) {
  const uint32_t kW = kWrite | kDenyOom;
  const uint32_t kWG = kW | kGroupCommit;  // filter writes that may join a write group
  const uint32_t kR = kReadOnly | kFast;
  table.Add(CommandSpec{
      .name = "cf.reserve",
      .arity = -3,
      .flags = kWG | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfReserve,
      .summary = "Creates a new Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(1)",
      .args = {Key(), Arg("capacity", "integer"),
               Arg("bucketsize", "integer", true, false, "BUCKETSIZE"),
               Arg("maxiterations", "integer", true, false, "MAXITERATIONS"),
               Arg("expansion", "integer", true, false, "EXPANSION")},
      .acl_categories = {"write", "fast", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.add",
      .arity = 3,
      .flags = kWG | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfAdd,
      .combined = CfAddCombined,
      .summary = "Adds an item to a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k + i)",
      .args = {Key(), Arg("item", "string")},
      .acl_categories = {"write", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.addnx",
      .arity = 3,
      .flags = kWG | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfAddNx,
      .combined = CfAddNxCombined,
      .summary = "Adds an item to a Cuckoo Filter if the item did not exist previously.",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k + i)",
      .args = {Key(), Arg("item", "string")},
      .acl_categories = {"write", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.insert",
      .arity = -4,
      .flags = kWG | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfInsert,
      .summary = "Adds one or more items to a Cuckoo Filter. A filter will be created if it does "
                 "not exist",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(n * (k + i))",
      .args = {Key(), Arg("capacity", "integer", true, false, "CAPACITY"),
               Arg("nocreate", "pure-token", true, false, "NOCREATE"),
               Arg("items", "pure-token", false, false, "ITEMS"),
               Arg("item", "string", false, true)},
      .acl_categories = {"write", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.insertnx",
      .arity = -4,
      .flags = kWG | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfInsertNx,
      .summary = "Adds one or more items to a Cuckoo Filter if the items did not exist "
                 "previously. A filter will be created if it does not exist",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(n * (k + i))",
      .args = {Key(), Arg("capacity", "integer", true, false, "CAPACITY"),
               Arg("nocreate", "pure-token", true, false, "NOCREATE"),
               Arg("items", "pure-token", false, false, "ITEMS"),
               Arg("item", "string", false, true)},
      .acl_categories = {"write", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.exists",
      .arity = 3,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfExists,
      .combined = CfExistsCombined,
      .across_keys = CfExistsAcrossKeys,
      .summary = "Checks whether one or more items exist in a "
                 "Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k), where k is the number of sub-filters",
      .args = {Key(), Arg("item", "string")},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.mexists",
      .arity = -3,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfMExists,
      .summary = "Checks whether one or more items exist in a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k * n), where k is the number of sub-filters and n is the number of items",
      .args = {Key(), Arg("item", "string", false, true)},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.count",
      .arity = 3,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfCount,
      .combined = CfCountCombined,
      .across_keys = CfCountAcrossKeys,
      .summary = "Return the number of times an item might be in a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k), where k is the number of sub-filters",
      .args = {Key(), Arg("item", "string")},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.del",
      .arity = 3,
      .flags = kWrite | kFast | kGroupCommit | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfDel,
      .summary = "Deletes an item from a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(k), where k is the number of sub-filters",
      .args = {Key(), Arg("item", "string")},
      .acl_categories = {"write", "cuckoo"},
  });
  // CF.COMPACT mutates the filter: flagged as a write here although RedisBloom flags it read-only.
  table.Add(CommandSpec{
      .name = "cf.compact",
      .arity = 2,
      .flags = kWrite | kBackground | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfCompact,
      .summary = "Moves items from newer sub-filters into older ones and frees empty sub-filters",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(n), where n is the size of the filter",
      .args = {Key()},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.info",
      .arity = 2,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfInfo,
      .summary = "Returns information about a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(1)",
      .args = {Key()},
      .acl_categories = {"read", "fast", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.debug",
      .arity = 2,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfDebug,
      .summary = "Returns the internal counters of a Cuckoo Filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(1)",
      .args = {Key()},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.scandump",
      .arity = 3,
      .flags = kR | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfScanDump,
      .summary = "Begins an incremental save of the bloom filter",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(n), where n is the capacity",
      .args = {Key(), Arg("iterator", "integer")},
      .acl_categories = {"read", "cuckoo"},
  });
  table.Add(CommandSpec{
      .name = "cf.loadchunk",
      .arity = 4,
      .flags = kW | kHandlerArity,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = CfLoadChunk,
      .summary = "Restores a filter previously saved using SCANDUMP",
      .since = "1.0.0",
      .group = "cf",
      .complexity = "O(n), where n is the capacity",
      .args = {Key(), Arg("iterator", "integer"), Arg("data", "string")},
      .acl_categories = {"write", "cuckoo"},
  });
}

}  // namespace cuckood::server
