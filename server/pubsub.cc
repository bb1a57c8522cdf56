#include "server/pubsub.h"

#include <iterator>
#include <mutex>
#include <string_view>

#include "server/commands/family.h"
#include "server/server.h"
#include "storage/db.h"

namespace cuckood::server {
namespace {

// The commands Redis accepts from a RESP2 client in subscribed mode.
constexpr std::string_view kSubscribedModeCommands[] = {
    "subscribe",    "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe",
    "punsubscribe", "ping",       "quit",        "reset"};

void UpdateKind(Client& client) {
  const bool subscribed = SubscriptionCount(client) > 0;
  if (subscribed && client.kind == ClientKind::kNormal) {
    client.kind = ClientKind::kPubSub;
  } else if (!subscribed && client.kind == ClientKind::kPubSub) {
    client.kind = ClientKind::kNormal;
  }
}

}  // namespace

void WritePubSubMessage(resp::Writer& out, const PubSubMessage& msg) {
  if (msg.from_pattern) {
    out.PushHeader(4);
    out.Bulk("pmessage");
    out.Bulk(msg.pattern);
  } else {
    out.PushHeader(3);
    out.Bulk("message");
  }
  out.Bulk(msg.channel);
  out.Bulk(msg.payload);
}

bool PubSub::Add(std::unordered_map<std::string, Subscribers>& map, const Client& client,
                 std::string_view name) {
  std::unique_lock lock(mu_);
  auto& subs = map[std::string(name)];
  return subs.emplace(client.id, client.pubsub_sink).second;
}

void PubSub::Remove(std::unordered_map<std::string, Subscribers>& map, uint64_t id,
                    const std::string& name) {
  std::unique_lock lock(mu_);
  auto it = map.find(name);
  if (it == map.end()) {
    return;
  }
  it->second.erase(id);
  if (it->second.empty()) {
    map.erase(it);  // (PUBSUB CHANNELS and NUMPAT count only names with subscribers)
  }
}

bool PubSub::Subscribe(Client& client, std::string_view channel) {
  if (!client.channels.emplace(channel).second) {
    return false;
  }
  Add(channels_, client, channel);
  UpdateKind(client);
  return true;
}

bool PubSub::Unsubscribe(Client& client, std::string_view channel) {
  auto it = client.channels.find(std::string(channel));
  if (it == client.channels.end()) {
    return false;
  }
  Remove(channels_, client.id, *it);
  client.channels.erase(it);
  UpdateKind(client);
  return true;
}

bool PubSub::PSubscribe(Client& client, std::string_view pattern) {
  if (!client.patterns.emplace(pattern).second) {
    return false;
  }
  Add(patterns_, client, pattern);
  UpdateKind(client);
  return true;
}

bool PubSub::PUnsubscribe(Client& client, std::string_view pattern) {
  auto it = client.patterns.find(std::string(pattern));
  if (it == client.patterns.end()) {
    return false;
  }
  Remove(patterns_, client.id, *it);
  client.patterns.erase(it);
  UpdateKind(client);
  return true;
}

void PubSub::UnsubscribeAll(Client& client) {
  for (const auto& channel : client.channels) {
    Remove(channels_, client.id, channel);
  }
  for (const auto& pattern : client.patterns) {
    Remove(patterns_, client.id, pattern);
  }
  client.channels.clear();
  client.patterns.clear();
  UpdateKind(client);
}

void PubSub::Detach(uint64_t client_id) {
  std::unique_lock lock(mu_);
  for (auto* map : {&channels_, &patterns_}) {
    for (auto it = map->begin(); it != map->end();) {
      it->second.erase(client_id);
      it = it->second.empty() ? map->erase(it) : std::next(it);
    }
  }
}

size_t PubSub::Publish(std::string_view channel, std::string_view payload, const Client* self,
                       resp::Writer* self_out) {
  struct Delivery {
    std::shared_ptr<PubSubSink> sink;
    std::shared_ptr<const PubSubMessage> msg;
  };
  std::vector<Delivery> deliveries;
  size_t receivers = 0;
  auto message = [&](const std::string* pattern) {
    auto m = std::make_shared<PubSubMessage>();
    m->from_pattern = pattern != nullptr;
    if (pattern != nullptr) {
      m->pattern = *pattern;
    }
    m->channel = std::string(channel);
    m->payload = std::string(payload);
    return m;
  };
  auto collect = [&](const Subscribers& subs, const std::shared_ptr<const PubSubMessage>& m) {
    for (const auto& [id, weak] : subs) {
      ++receivers;
      if (self != nullptr && id == self->id && self_out != nullptr) {
        WritePubSubMessage(*self_out, *m);
      } else if (auto sink = weak.lock()) {
        deliveries.push_back({std::move(sink), m});
      }
    }
  };
  {
    std::shared_lock lock(mu_);
    if (auto it = channels_.find(std::string(channel)); it != channels_.end()) {
      collect(it->second, message(nullptr));
    }
    for (const auto& [pattern, subs] : patterns_) {
      if (storage::GlobMatch(pattern, channel)) {
        collect(subs, message(&pattern));
      }
    }
  }
  // Posted outside the lock: a delivery only queues a handler on the receiver's io thread.
  for (auto& d : deliveries) {
    d.sink->Deliver(std::move(d.msg));
  }
  return receivers;
}

std::vector<std::string> PubSub::Channels(std::optional<std::string_view> pattern) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, subs] : channels_) {
    if (!pattern || storage::GlobMatch(*pattern, name)) {
      out.push_back(name);
    }
  }
  return out;
}

size_t PubSub::NumSub(std::string_view channel) const {
  std::shared_lock lock(mu_);
  auto it = channels_.find(std::string(channel));
  return it == channels_.end() ? 0 : it->second.size();
}

size_t PubSub::NumPat() const {
  std::shared_lock lock(mu_);
  return patterns_.size();
}

size_t PubSub::NumChannels() const {
  std::shared_lock lock(mu_);
  return channels_.size();
}

bool InSubscribedMode(const Client& client) {
  return client.proto == 2 && SubscriptionCount(client) > 0;
}

bool AllowedInSubscribedMode(const CommandSpec& spec) {
  for (auto name : kSubscribedModeCommands) {
    if (spec.name == name) {
      return true;
    }
  }
  return false;
}

std::string SubscribedModeError(const CommandSpec& spec, const Argv& argv) {
  std::string name = spec.name;
  if (!spec.subcommands.empty() && argv.size() >= 2) {
    if (const CommandSpec* sub = FindSubcommand(spec, argv[1])) {
      name = sub->name;
    }
  }
  return "ERR Can't execute '" + name +
         "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
         "context";
}

size_t SubscriptionCount(const Client& client) {
  return client.channels.size() + client.patterns.size();
}

}  // namespace cuckood::server
