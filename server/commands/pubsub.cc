// Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB
// (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB, HELP). The registry and the RESP2
// subscribed-mode rules are in server/pubsub.h; messages reach other connections through their
// own io threads (Connection::Deliver).
//
// Replies are Redis 7's: one (p)(un)subscribe frame per name, carrying the client's count of
// channels plus patterns after that name; push frames (>) in RESP3, arrays in RESP2. cuckood has
// no shard channels, so SHARDCHANNELS and SHARDNUMSUB answer as Redis does without any.
#include "server/pubsub.h"

#include <string>
#include <vector>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kSubscribe = "subscribe";
constexpr std::string_view kUnsubscribe = "unsubscribe";
constexpr std::string_view kPSubscribe = "psubscribe";
constexpr std::string_view kPUnsubscribe = "punsubscribe";

// One (un)subscribe frame: kind, name (null when there was nothing to unsubscribe), count.
void WriteSubscriptionFrame(CommandContext& ctx, std::string_view kind, const std::string* name) {
  ctx.out.PushHeader(3);
  ctx.out.Bulk(kind);
  if (name != nullptr) {
    ctx.out.Bulk(*name);
  } else {
    ctx.out.Null();
  }
  ctx.out.Integer(static_cast<int64_t>(SubscriptionCount(ctx.client)));
}

void SubscribeCommand(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    const std::string channel(ctx.argv[i]);
    ctx.server.pubsub().Subscribe(ctx.client, channel);
    WriteSubscriptionFrame(ctx, kSubscribe, &channel);
  }
}

void PSubscribeCommand(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    const std::string pattern(ctx.argv[i]);
    ctx.server.pubsub().PSubscribe(ctx.client, pattern);
    WriteSubscriptionFrame(ctx, kPSubscribe, &pattern);
  }
}

// UNSUBSCRIBE / PUNSUBSCRIBE [name ...]: without names, every subscription of that kind; with
// none at all, one frame with a null name.
void UnsubscribeFrom(CommandContext& ctx, bool patterns) {
  PubSub& ps = ctx.server.pubsub();
  const std::string_view kind = patterns ? kPUnsubscribe : kUnsubscribe;
  std::vector<std::string> names;
  if (ctx.argv.size() > 1) {
    names.assign(ctx.argv.begin() + 1, ctx.argv.end());
  } else {
    const auto& current = patterns ? ctx.client.patterns : ctx.client.channels;
    names.assign(current.begin(), current.end());
    if (names.empty()) {
      WriteSubscriptionFrame(ctx, kind, nullptr);
      return;
    }
  }
  for (const auto& name : names) {
    if (patterns) {
      ps.PUnsubscribe(ctx.client, name);
    } else {
      ps.Unsubscribe(ctx.client, name);
    }
    WriteSubscriptionFrame(ctx, kind, &name);
  }
}

void UnsubscribeCommand(CommandContext& ctx) {
  UnsubscribeFrom(ctx, false);
}

void PUnsubscribeCommand(CommandContext& ctx) {
  UnsubscribeFrom(ctx, true);
}

void PublishCommand(CommandContext& ctx) {
  const size_t receivers =
      ctx.server.pubsub().Publish(ctx.argv[1], ctx.argv[2], &ctx.client, &ctx.out);
  ctx.out.Integer(static_cast<int64_t>(receivers));
}

// PUBSUB CHANNELS [pattern] and SHARDCHANNELS [pattern].
bool OptionalPatternArg(CommandContext& ctx) {
  if (ctx.argv.size() > 3) {
    ReplySubcommandSyntaxError(ctx);
    return false;
  }
  return true;
}

void PubSubChannelsCommand(CommandContext& ctx) {
  if (!OptionalPatternArg(ctx)) {
    return;
  }
  std::optional<std::string_view> pattern;
  if (ctx.argv.size() == 3) {
    pattern = ctx.argv[2];
  }
  const auto channels = ctx.server.pubsub().Channels(pattern);
  ctx.out.ArrayHeader(static_cast<int64_t>(channels.size()));
  for (const auto& c : channels) {
    ctx.out.Bulk(c);
  }
}

void PubSubShardChannelsCommand(CommandContext& ctx) {
  if (OptionalPatternArg(ctx)) {
    ctx.out.ArrayHeader(0);
  }
}

// NUMSUB / SHARDNUMSUB: each named channel and its subscriber count, as one flat array (in
// RESP3 too: Redis 7.0 does not answer a map here).
void WriteNumSub(CommandContext& ctx, bool shard) {
  ctx.out.ArrayHeader(static_cast<int64_t>(2 * (ctx.argv.size() - 2)));
  for (size_t i = 2; i < ctx.argv.size(); ++i) {
    ctx.out.Bulk(ctx.argv[i]);
    ctx.out.Integer(shard ? 0 : static_cast<int64_t>(ctx.server.pubsub().NumSub(ctx.argv[i])));
  }
}

void PubSubNumSubCommand(CommandContext& ctx) {
  WriteNumSub(ctx, false);
}

void PubSubShardNumSubCommand(CommandContext& ctx) {
  WriteNumSub(ctx, true);
}

void PubSubNumPatCommand(CommandContext& ctx) {
  ctx.out.Integer(static_cast<int64_t>(ctx.server.pubsub().NumPat()));
}

void PubSubHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "PUBSUB",
            {"CHANNELS [<pattern>]",
             "    Return the currently active channels matching a <pattern> (default: '*').",
             "NUMPAT", "    Return number of subscriptions to patterns.", "NUMSUB [<channel> ...]",
             "    Return the number of subscribers for the specified channels, excluding",
             "    pattern subscriptions(default: no channels).", "SHARDCHANNELS [<pattern>]",
             "    Return the currently active shard level channels matching a <pattern> "
             "(default: '*').",
             "SHARDNUMSUB [<shardchannel> ...]",
             "    Return the number of subscribers for the specified shard level channel(s)"});
}

CommandSpec PubSubSpec() {
  constexpr uint32_t kIntro = kPubSub | kLoading | kStale;
  CommandSpec spec = CommandSpec{
      .name = "pubsub",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for Pub/Sub commands",
      .since = "2.8.0",
      .group = "pubsub",
      .complexity = "Depends on subcommand.",
  };
  auto& subs = spec.subcommands;
  const std::vector<CommandArgDoc> pattern = {{"pattern", "pattern", "", true, false}};
  subs.push_back(CommandSpec{
      .name = "pubsub|channels",
      .arity = -2,
      .flags = kIntro,
      .handler = PubSubChannelsCommand,
      .summary = "List active channels",
      .since = "2.8.0",
      .group = "pubsub",
      .complexity = "O(N) where N is the number of active channels, and assuming constant time "
                    "pattern matching (relatively short channels and patterns)",
      .args = pattern,
  });
  subs.push_back(CommandSpec{
      .name = "pubsub|numpat",
      .arity = 2,
      .flags = kIntro,
      .handler = PubSubNumPatCommand,
      .summary = "Get the count of unique patterns pattern subscriptions",
      .since = "2.8.0",
      .group = "pubsub",
      .complexity = "O(1)",
  });
  subs.push_back(CommandSpec{
      .name = "pubsub|numsub",
      .arity = -2,
      .flags = kIntro,
      .handler = PubSubNumSubCommand,
      .summary = "Get the count of subscribers for channels",
      .since = "2.8.0",
      .group = "pubsub",
      .complexity = "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
      .args = {{"channel", "string", "", true, true}},
  });
  subs.push_back(CommandSpec{
      .name = "pubsub|shardchannels",
      .arity = -2,
      .flags = kIntro,
      .handler = PubSubShardChannelsCommand,
      .summary = "List active shard channels",
      .since = "7.0.0",
      .group = "pubsub",
      .complexity = "O(N) where N is the number of active shard channels, and assuming constant "
                    "time pattern matching (relatively short shard channels).",
      .args = pattern,
  });
  subs.push_back(CommandSpec{
      .name = "pubsub|shardnumsub",
      .arity = -2,
      .flags = kIntro,
      .handler = PubSubShardNumSubCommand,
      .summary = "Get the count of subscribers for shard channels",
      .since = "7.0.0",
      .group = "pubsub",
      .complexity = "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested "
                    "shard channels",
      .args = {{"shardchannel", "string", "", true, true}},
  });
  subs.push_back(CommandSpec{
      .name = "pubsub|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = PubSubHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "6.2.0",
      .group = "pubsub",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  return spec;
}

}  // namespace

void RegisterPubSubCommands(CommandTable& table) {
  constexpr uint32_t kSub = kPubSub | kNoScript | kLoading | kStale;
  const char* kPerName = "O(N) where N is the number of channels to subscribe to.";
  table.Add(CommandSpec{
      .name = "subscribe",
      .arity = -2,
      .flags = kSub,
      .handler = SubscribeCommand,
      .summary = "Listen for messages published to the given channels",
      .since = "2.0.0",
      .group = "pubsub",
      .complexity = kPerName,
      .args = {{"channel", "string", "", false, true}},
  });
  table.Add(CommandSpec{
      .name = "unsubscribe",
      .arity = -1,
      .flags = kSub,
      .handler = UnsubscribeCommand,
      .summary = "Stop listening for messages posted to the given channels",
      .since = "2.0.0",
      .group = "pubsub",
      .complexity = "O(N) where N is the number of clients already subscribed to a channel.",
      .args = {{"channel", "string", "", true, true}},
  });
  table.Add(CommandSpec{
      .name = "psubscribe",
      .arity = -2,
      .flags = kSub,
      .handler = PSubscribeCommand,
      .summary = "Listen for messages published to channels matching the given patterns",
      .since = "2.0.0",
      .group = "pubsub",
      .complexity = "O(N) where N is the number of patterns the client is already subscribed to.",
      .args = {{"pattern", "pattern", "", false, true}},
  });
  table.Add(CommandSpec{
      .name = "punsubscribe",
      .arity = -1,
      .flags = kSub,
      .handler = PUnsubscribeCommand,
      .summary = "Stop listening for messages posted to channels matching the given patterns",
      .since = "2.0.0",
      .group = "pubsub",
      .complexity =
          "O(N+M) where N is the number of patterns the client is already subscribed and M "
          "is the number of total patterns subscribed in the system (by any client).",
      .args = {{"pattern", "pattern", "", true, true}},
  });
  table.Add(CommandSpec{
      .name = "publish",
      .arity = 3,
      .flags = kPubSub | kLoading | kStale | kFast,
      .handler = PublishCommand,
      .summary = "Post a message to a channel",
      .since = "2.0.0",
      .group = "pubsub",
      .complexity =
          "O(N+M) where N is the number of clients subscribed to the receiving channel and "
          "M is the total number of subscribed patterns (by any client).",
      .args = {{"channel", "string", "", false, false}, {"message", "string", "", false, false}},
  });
  table.Add(PubSubSpec());
}

}  // namespace cuckood::server
