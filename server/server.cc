#include "server/server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <asio/ssl.hpp>
#include <csignal>
#include <filesystem>
#include <random>
#include <sstream>

#include "replication/fullsync.h"
#include "server/cluster_mode.h"
#include "server/connection.h"
#include "server/pubsub.h"
#include "server/replication.h"
#include "server/slot_migration.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr size_t kLockStripes = 4096;
constexpr std::string_view kLoadingError =
    "LOADING cuckood is loading the dataset from its primary (full sync)";
constexpr std::string_view kReadOnlyReplicaError =
    "READONLY You can't write against a read only replica.";

storage::FsyncMode FsyncFromName(const std::string& s) {
  if (s == "always") {
    return storage::FsyncMode::kAlways;
  }
  if (s == "no") {
    return storage::FsyncMode::kNo;
  }
  return storage::FsyncMode::kEverySec;
}

std::string RandomHex(size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::random_device rd;
  std::mt19937_64 rng(rd());
  std::string s(n, '0');
  for (auto& c : s) {
    c = kHex[rng() % 16];
  }
  return s;
}

// Redis's text for an unknown command: the name and the first arguments, quoted.
std::string UnknownCommandError(const Argv& argv) {
  std::string args;
  for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
    size_t room = 128 - args.size();
    args += "'" + std::string(argv[i].substr(0, room)) + "' ";
  }
  std::string msg = "ERR unknown command '" + std::string(argv[0].substr(0, 128)) +
                    "', with args beginning with: " + args;
  for (auto& c : msg) {
    if (c == '\r' || c == '\n') {
      c = ' ';
    }
  }
  return msg;
}

// The server's TLS context from the tls-* options; throws with a clear message when a file is
// missing or unusable (start-up fails rather than serving without TLS).
std::unique_ptr<asio::ssl::context> MakeTlsContext(const Config& cfg) {
  if (cfg.tls_cert_file.empty() || cfg.tls_key_file.empty()) {
    throw std::runtime_error("tls-port needs tls-cert-file and tls-key-file");
  }
  const bool verify = cfg.tls_auth_clients != "no";
  if (verify && cfg.tls_ca_cert_file.empty()) {
    throw std::runtime_error(
        "tls-auth-clients " + cfg.tls_auth_clients +
        " needs tls-ca-cert-file (or set tls-auth-clients no to accept any client)");
  }
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
  auto step = [](const char* what, const std::string& file, auto&& fn) {
    asio::error_code ec;
    fn(ec);
    if (ec) {
      throw std::runtime_error(std::string("cannot load ") + what + " '" + file +
                               "': " + ec.message());
    }
  };
  step("tls-cert-file", cfg.tls_cert_file,
       [&](asio::error_code& ec) { ctx->use_certificate_chain_file(cfg.tls_cert_file, ec); });
  step("tls-key-file", cfg.tls_key_file, [&](asio::error_code& ec) {
    ctx->use_private_key_file(cfg.tls_key_file, asio::ssl::context::pem, ec);
  });
  if (!cfg.tls_ca_cert_file.empty()) {
    step("tls-ca-cert-file", cfg.tls_ca_cert_file,
         [&](asio::error_code& ec) { ctx->load_verify_file(cfg.tls_ca_cert_file, ec); });
  }
  if (cfg.tls_auth_clients == "yes") {
    ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  } else if (cfg.tls_auth_clients == "optional") {
    ctx->set_verify_mode(asio::ssl::verify_peer);
  } else {
    ctx->set_verify_mode(asio::ssl::verify_none);
  }
  return ctx;
}

}  // namespace

Server::Server(Config config) : config_(std::move(config)) {
  for (const auto& row : OptionTable()) {
    (void)row;
  }
  auto apply = [this](const Config& c) {
    cf_initial_size_ = c.cf_initial_size;
    cf_bucket_size_ = c.cf_bucket_size;
    cf_max_iterations_ = c.cf_max_iterations;
    cf_expansion_factor_ = c.cf_expansion_factor;
    cf_max_expansions_ = c.cf_max_expansions;
    cf_page_size_ = c.cf_page_size;
    cf_max_filter_bytes_ = c.cf_max_filter_bytes;
    cf_sizing_ = c.cf_sizing == "load-factor" ? 1 : 0;
    slowlog_slower_than_ = c.slowlog_log_slower_than;
    slowlog_max_len_ = c.slowlog_max_len;
    client_output_buffer_limit_ = c.client_output_buffer_limit;
    pubsub_hard_ = c.pubsub_output_hard_limit;
    pubsub_soft_ = c.pubsub_output_soft_limit;
    pubsub_soft_seconds_ = c.pubsub_output_soft_seconds;
    group_commit_ = c.group_commit;
  };
  apply(config_);
  pubsub_ = std::make_unique<PubSub>();
  run_id_ = RandomHex(40);
  start_unix_ = static_cast<int64_t>(storage::NowMs() / 1000);
  RegisterConnectionCommands(table_);
  RegisterTransactionCommands(table_);
  RegisterKeyspaceCommands(table_);
  RegisterStringCommands(table_);
  RegisterServerCommands(table_);
  RegisterReplicationCommands(table_);
  RegisterIntrospectionCommands(table_);
  RegisterCfCommands(table_);
  RegisterPubSubCommands(table_);
  RegisterDumpCommands(table_);
  RegisterClusterCommands(table_);
}

Server::~Server() {
  if (!stopped_) {
    StopAll();
  }
}

void Server::UpdateConfig(const std::function<void(Config&)>& change) {
  std::lock_guard lock(config_mu_);
  change(config_);
}

storage::CfSettings Server::cf_settings() const {
  storage::CfSettings s;
  s.initial_capacity = cf_initial_size_.load(std::memory_order_relaxed);
  s.bucket_size = static_cast<uint16_t>(cf_bucket_size_.load(std::memory_order_relaxed));
  s.max_iterations = static_cast<uint16_t>(cf_max_iterations_.load(std::memory_order_relaxed));
  s.expansion = static_cast<uint16_t>(cf_expansion_factor_.load(std::memory_order_relaxed));
  s.max_expansions = static_cast<uint32_t>(cf_max_expansions_.load(std::memory_order_relaxed));
  s.sizing = cf_sizing_.load(std::memory_order_relaxed) == 1 ? core::SizingPolicy::kLoadFactor
                                                             : core::SizingPolicy::kRedisBloom;
  s.page_size = static_cast<uint32_t>(cf_page_size_.load(std::memory_order_relaxed));
  s.max_filter_bytes = cf_max_filter_bytes_.load(std::memory_order_relaxed);
  return s;
}

Config Server::config() const {
  std::lock_guard lock(config_mu_);
  return config_;
}

std::optional<std::string> Server::SetConfig(const std::string& name, const std::string& value) {
  const OptionRow* row = FindOption(name);
  if (row == nullptr) {
    return "unknown option";
  }
  if (!row->mutable_at_runtime) {
    return "can't set immutable config";
  }
  std::lock_guard lock(config_mu_);
  Config next = config_;
  if (auto err = row->set(next, value)) {
    return err;
  }
  config_ = next;
  cf_initial_size_ = next.cf_initial_size;
  cf_bucket_size_ = next.cf_bucket_size;
  cf_max_iterations_ = next.cf_max_iterations;
  cf_expansion_factor_ = next.cf_expansion_factor;
  cf_max_expansions_ = next.cf_max_expansions;
  cf_max_filter_bytes_ = next.cf_max_filter_bytes;
  cf_sizing_ = next.cf_sizing == "load-factor" ? 1 : 0;
  slowlog_slower_than_ = next.slowlog_log_slower_than;
  slowlog_max_len_ = next.slowlog_max_len;
  client_output_buffer_limit_ = next.client_output_buffer_limit;
  pubsub_hard_ = next.pubsub_output_hard_limit;
  pubsub_soft_ = next.pubsub_output_soft_limit;
  pubsub_soft_seconds_ = next.pubsub_output_soft_seconds;
  group_commit_ = next.group_commit;
  if (replication_) {
    replication_->ApplyConfig(next);
  }
  if (engine_) {
    engine_->SetFsync(FsyncFromName(next.appendfsync));
  }
  if (row->name == "loglevel") {
    const auto& l = next.loglevel;
    spdlog::set_level(l == "debug"     ? spdlog::level::debug
                      : l == "verbose" ? spdlog::level::debug
                      : l == "warning" ? spdlog::level::warn
                                       : spdlog::level::info);
  }
  return std::nullopt;
}

void Server::Start() {
  Config cfg = config();
  for (const auto& rc : cfg.rename_commands) {
    auto sp = rc.find(' ');
    std::string from = rc.substr(0, sp);
    std::string to = sp == std::string::npos ? "" : rc.substr(sp + 1);
    if (!table_.Rename(from, to)) {
      throw std::runtime_error("rename-command: unknown command '" + from + "'");
    }
  }
  // The statistics of every command, found without Stats' mutex on the command path (the
  // table does not change after this point; Stats never frees an entry).
  for (const CommandSpec* spec : table_.all()) {
    command_stats_.emplace(spec, &stats_.For(spec->name));
    for (const auto& sub : spec->subcommands) {
      command_stats_.emplace(&sub, &stats_.For(sub.name));
    }
  }
  if (cfg.tls_port != 0) {
    tls_ctx_ = MakeTlsContext(cfg);
  }
  storage::EngineOptions eo;
  eo.dir = cfg.dir;
  eo.fsync = FsyncFromName(cfg.appendfsync);
  eo.block_cache_bytes = cfg.block_cache_size;
  eo.write_buffer_bytes = cfg.write_buffer_size;
  eo.page_memtable = cfg.memtable == "pages";
  eo.log = [](int level, std::string_view line) {
    const auto l = level <= 0   ? spdlog::level::debug
                   : level == 1 ? spdlog::level::info
                   : level == 2 ? spdlog::level::warn
                                : spdlog::level::err;
    if (spdlog::should_log(l)) {
      spdlog::log(l, "rocksdb: {}", line);
    }
  };
  eo.wal_ttl_seconds = static_cast<uint64_t>(cfg.repl_backlog_ttl);
  eo.wal_size_limit_bytes = cfg.repl_backlog_ttl > 0 ? cfg.repl_backlog_size : 0;
  engine_options_ = eo;
  // A full sync that was being installed when the server stopped is finished first.
  if (auto rs = replication::RecoverStaged(cfg.dir); !rs.ok()) {
    throw std::runtime_error(rs.message());
  }
  auto engine = storage::Engine::Open(eo);
  if (!engine.ok()) {
    throw std::runtime_error(engine.status().message());
  }
  engine_ = std::move(*engine);
  db_ = std::make_unique<storage::Db>(engine_.get(), kLockStripes, cfg.cache_size);
  background_ = std::make_unique<asio::thread_pool>(2);
  if (cfg.cluster_enabled) {
    cluster_ = OpenClusterState(cfg);  // before the listeners: no client sees a node without it
    slot_migrator_ = std::make_unique<SlotMigrator>(*this);
  }

  int workers =
      cfg.workers > 0 ? cfg.workers : static_cast<int>(std::thread::hardware_concurrency());
  workers = std::max(workers, 1);
  for (int i = 0; i < workers; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
  }
  auto& main_ctx = *contexts_[0];
  std::vector<std::pair<std::string, bool>> listeners;  // (address, tls)
  for (bool tls : {false, true}) {
    if (tls && cfg.tls_port == 0) {
      continue;
    }
    std::istringstream binds(cfg.bind);
    std::string a;
    while (binds >> a) {
      listeners.emplace_back(a, tls);
    }
  }
  for (const auto& [addr, tls] : listeners) {
    const int port = tls ? cfg.tls_port : cfg.port;
    asio::error_code ec;
    auto ip = asio::ip::make_address(addr == "*" ? "0.0.0.0" : addr, ec);
    if (ec) {
      throw std::runtime_error("invalid bind address '" + addr + "'");
    }
    asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(port));
    auto acc = std::make_unique<asio::ip::tcp::acceptor>(main_ctx);
    acc->open(ep.protocol(), ec);
    if (!ec) {
      acc->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
      if (ip.is_v6()) {
        acc->set_option(asio::ip::v6_only(true), ec);
      }
      acc->bind(ep, ec);
    }
    if (!ec) {
      acc->listen(asio::socket_base::max_listen_connections, ec);
    }
    if (!ec) {
      acc->non_blocking(true, ec);  // (Accept takes every waiting connection without blocking)
    }
    if (ec) {
      std::string hint;
      if (ec == asio::error::address_in_use) {
        hint =
            " (another server, perhaps a Redis, listens there: start cuckood on another port, "
            "e.g. --port " +
            std::to_string(port == 65535 ? port - 1 : port + 1) + ")";
      }
      throw std::runtime_error("could not listen on " + addr + ":" + std::to_string(port) + ": " +
                               ec.message() + hint);
    }
    (tls ? bound_tls_port_ : bound_port_) = acc->local_endpoint().port();
    acceptors_.push_back(std::move(acc));
    acceptor_tls_.push_back(tls);
  }
  if (acceptors_.empty()) {
    throw std::runtime_error("no bind address");
  }
  for (size_t i = 0; i < acceptors_.size(); ++i) {
    Accept(i);
  }
  std::signal(SIGPIPE, SIG_IGN);
  signals_ = std::make_unique<asio::signal_set>(main_ctx, SIGINT, SIGTERM);
  signals_->async_wait([this](const asio::error_code& ec, int sig) {
    if (!ec) {
      spdlog::info("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
      RequestShutdown();
    }
  });
  tick_timer_ = std::make_unique<asio::steady_timer>(main_ctx);
  Tick();
  replication_ = std::make_unique<Replication>(*this);
  replication_->Start(cfg);
  if (cluster_ != nullptr) {
    FollowClusterTopology(*this);  // the topology's role drives replication from now on
  }
  for (auto& ctx : contexts_) {
    threads_.emplace_back([c = ctx.get()] { c->run(); });
  }
  spdlog::info("cuckood 0.1.0 ready to accept connections on {}:{} ({} io threads, dir {})",
               cfg.bind, bound_port_, workers, cfg.dir);
  if (tls_ctx_) {
    spdlog::info("TLS connections on {}:{} (tls-auth-clients {})", cfg.bind, bound_tls_port_,
                 cfg.tls_auth_clients);
  }
}

void Server::Tick() {
  stats_.Sample();
  tick_timer_->expires_after(std::chrono::milliseconds(100));
  tick_timer_->async_wait([this](const asio::error_code& ec) {
    if (!ec && !shutting_down_) {
      Tick();
    }
  });
}

void Server::Accept(size_t index) {
  auto& ctx = *contexts_[next_context_++ % contexts_.size()];
  acceptors_[index]->async_accept(
      ctx, [this, index](const asio::error_code& ec, asio::ip::tcp::socket socket) {
        if (ec) {
          if (ec == asio::error::operation_aborted || shutting_down_) {
            return;
          }
          spdlog::warn("accept failed: {}", ec.message());
          Accept(index);
          return;
        }
        OnAccepted(index, std::move(socket));
        // Every other connection already waiting is taken now (as Redis takes up to 1000 per
        // event): the acceptor's handler runs on io thread 0 behind that thread's busy connections,
        // and one connection per turn of its queue kept the last clients of a burst waiting for
        // their first reply until the others were done.
        constexpr int kMaxAcceptsPerTurn = 1000;
        for (int i = 0; i < kMaxAcceptsPerTurn && !shutting_down_; ++i) {
          asio::ip::tcp::socket next(*contexts_[next_context_ % contexts_.size()]);
          asio::error_code aec;
          acceptors_[index]->accept(next, aec);
          if (aec) {
            if (aec != asio::error::would_block && aec != asio::error::try_again) {
              spdlog::warn("accept failed: {}", aec.message());
            }
            break;
          }
          next_context_++;
          OnAccepted(index, std::move(next));
        }
        Accept(index);
      });
}

void Server::OnAccepted(size_t index, asio::ip::tcp::socket socket) {
  stats_.total_connections_received++;
  Config cfg = config();
  asio::error_code ec2;
  auto peer = socket.remote_endpoint(ec2);
  if (ec2) {
    return;
  }
  if (cfg.protected_mode && cfg.requirepass.empty() && !peer.address().is_loopback()) {
    static const std::string kDenied =
        "-DENIED Redis is running in protected mode because protected mode is enabled and no "
        "password is set for the default user. In this mode connections are only accepted "
        "from the loopback interface. If you want to connect from external computers to Redis "
        "you may adopt one of the following solutions: 1) Just disable protected mode sending "
        "the command 'CONFIG SET protected-mode no' from the loopback interface by connecting "
        "to Redis from the same host the server is running, however MAKE SURE Redis is not "
        "publicly accessible from internet if you do so. Use CONFIG REWRITE to make this "
        "change permanent. 2) Alternatively you can just disable the protected mode by "
        "editing the Redis configuration file, and setting the protected mode option to 'no', "
        "and then restarting the server. 3) If you started the server manually just for "
        "testing, restart it with the '--protected-mode no' option. 4) Set up an "
        "authentication password for the default user. NOTE: You only need to do one of the "
        "above things in order for the server to start accepting connections from the "
        "outside.\r\n";
    asio::write(socket, asio::buffer(kDenied), ec2);
    stats_.rejected_connections++;
    return;
  }
  if (connected_.load() >= static_cast<size_t>(std::max(cfg.maxclients, 1))) {
    static const std::string kMax = "-ERR max number of clients reached\r\n";
    asio::write(socket, asio::buffer(kMax), ec2);
    stats_.rejected_connections++;
    return;
  }
  socket.set_option(asio::ip::tcp::no_delay(true), ec2);
  if (cfg.tcp_keepalive > 0) {
    socket.set_option(asio::socket_base::keep_alive(true), ec2);
  }
  auto conn = std::make_shared<Connection>(*this, std::move(socket), NextClientId(),
                                           acceptor_tls_[index] ? tls_ctx_.get() : nullptr);
  RegisterConnection(conn);
  conn->Start();
}

void Server::RegisterConnection(const std::shared_ptr<Connection>& conn) {
  std::lock_guard lock(conns_mu_);
  conns_[conn->id()] = conn;
  connected_++;
}

void Server::UnregisterConnection(uint64_t id) {
  std::lock_guard lock(conns_mu_);
  if (conns_.erase(id) > 0) {
    connected_--;
  }
  shutdown_cv_.notify_all();
}

std::vector<std::shared_ptr<Connection>> Server::Connections() {
  std::vector<std::shared_ptr<Connection>> out;
  std::lock_guard lock(conns_mu_);
  for (auto& [id, weak] : conns_) {
    if (auto c = weak.lock()) {
      out.push_back(std::move(c));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  return out;
}

void Server::RequestShutdown() {
  {
    std::lock_guard lock(shutdown_mu_);
    shutting_down_ = true;
  }
  shutdown_cv_.notify_all();
}

void Server::Wait() {
  {
    std::unique_lock lock(shutdown_mu_);
    shutdown_cv_.wait(lock, [this] { return shutting_down_.load(); });
  }
  StopAll();
}

void Server::StopAll() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  shutting_down_ = true;
  if (replication_) {
    replication_->Stop();  // (the link and the senders use the database)
  }
  if (slot_migrator_) {
    slot_migrator_->Stop();  // (it reads the database)
  }
  if (!contexts_.empty()) {
    asio::post(*contexts_[0], [this] {
      for (auto& a : acceptors_) {
        asio::error_code ec;
        a->close(ec);
      }
      if (signals_) {
        asio::error_code ec;
        signals_->cancel(ec);
      }
      if (tick_timer_) {
        tick_timer_->cancel();
      }
    });
  }
  // Let every connection finish its command in flight and flush its replies.
  for (auto& conn : Connections()) {
    conn->Shutdown();
  }
  {
    std::unique_lock lock(conns_mu_);
    shutdown_cv_.wait_for(lock, std::chrono::seconds(3), [this] { return conns_.empty(); });
  }
  guards_.clear();
  for (auto& ctx : contexts_) {
    ctx->stop();
  }
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
  {
    std::lock_guard lock(conns_mu_);
    conns_.clear();
  }
  acceptors_.clear();
  signals_.reset();
  tick_timer_.reset();
  if (background_) {
    background_->join();  // long commands in flight finish before the database closes
  }
  if (engine_) {
    engine_->Close();
    spdlog::info("database closed cleanly");
  }
}

std::string Server::WatchId(uint16_t db, std::string_view key) {
  std::string id(2, '\0');
  id[0] = static_cast<char>(db >> 8);
  id[1] = static_cast<char>(db & 0xff);
  id.append(key);
  return id;
}

uint64_t Server::Watch(uint16_t db, std::string_view key) {
  std::lock_guard lock(watch_mu_);
  auto& e = watches_[WatchId(db, key)];
  e.watchers++;
  watch_count_ = watches_.size();
  return e.version;
}

uint64_t Server::WatchVersion(const std::string& id) {
  std::lock_guard lock(watch_mu_);
  auto it = watches_.find(id);
  return it == watches_.end() ? UINT64_MAX : it->second.version;
}

void Server::UnwatchAll(Client& client) {
  if (client.watched.empty()) {
    return;
  }
  std::lock_guard lock(watch_mu_);
  for (auto& [id, version] : client.watched) {
    auto it = watches_.find(id);
    if (it != watches_.end() && --it->second.watchers == 0) {
      watches_.erase(it);
    }
  }
  watch_count_ = watches_.size();
  client.watched.clear();
}

void Server::TouchKeys(uint16_t db, const std::vector<std::string_view>& keys) {
  if (watch_count_.load(std::memory_order_acquire) == 0) {
    return;
  }
  std::lock_guard lock(watch_mu_);
  for (auto key : keys) {
    auto it = watches_.find(WatchId(db, key));
    if (it != watches_.end()) {
      it->second.version = ++watch_clock_;
    }
  }
}

void Server::TouchAll(std::optional<uint16_t> db) {
  std::lock_guard lock(watch_mu_);
  for (auto& [id, e] : watches_) {
    if (!db || (static_cast<uint16_t>((static_cast<uint8_t>(id[0]) << 8) |
                                      static_cast<uint8_t>(id[1])) == *db)) {
      e.version = ++watch_clock_;
    }
  }
}

std::vector<std::string> Server::WatchedKeys(uint16_t db) {
  std::vector<std::string> keys;
  if (watch_count_.load(std::memory_order_acquire) == 0) {
    return keys;
  }
  std::lock_guard lock(watch_mu_);
  for (const auto& [id, e] : watches_) {
    if (static_cast<uint16_t>((static_cast<uint8_t>(id[0]) << 8) | static_cast<uint8_t>(id[1])) ==
        db) {
      keys.push_back(id.substr(2));
    }
  }
  return keys;
}

storage::Status Server::ReopenDatabase(const std::function<storage::Status()>& between,
                                       const std::atomic<bool>& cancel) {
  // Every io thread parks in a handler of its own (after ending its lock batch, so no stripe or
  // write group is held), and commands on the background pool finish: then nothing but this
  // thread touches the database.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    size_t parked = 0;
    bool release = false;
  };
  auto gate = std::make_shared<Gate>();
  for (auto& ctx : contexts_) {
    asio::post(*ctx, [this, gate] {
      EndBatch();
      std::unique_lock lock(gate->mu);
      ++gate->parked;
      gate->cv.notify_all();
      gate->cv.wait(lock, [&] { return gate->release; });
    });
  }
  auto release = [&] {
    std::lock_guard lock(gate->mu);
    gate->release = true;
    gate->cv.notify_all();
  };
  {
    std::unique_lock lock(gate->mu);
    while (gate->parked < contexts_.size() ||
           background_running_.load(std::memory_order_acquire) > 0) {
      if (cancel.load() || shutting_down_.load()) {
        lock.unlock();
        release();
        return {storage::Code::kIoError, "abandoned"};
      }
      gate->cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  engine_->Close();
  auto s = between ? between() : storage::Status::Ok();
  auto engine = storage::Engine::Open(engine_options_);
  if (!engine.ok()) {
    spdlog::critical("cannot open the database again: {}", engine.status().message());
    std::_Exit(1);
  }
  db_->SwapEngine(engine->get());
  engine_ = std::move(*engine);
  release();
  return s;
}

void Server::Dispatch(Client& client, const Argv& argv, resp::Writer& out) {
  if (argv.empty()) {
    return;
  }
  Dispatch(client, table_.Find(argv[0]), argv, out);
}

namespace {

// The lock batch of an io thread (see Client::lock_batching): the stripes it holds, the write
// group of the grouped commands run under them, and the clients whose replies wait for it.
struct IoBatch {
  bool held = false;
  bool exclusive = false;
  int uses = 0;
  storage::LockGuard guard;
  std::unique_ptr<storage::WriteGroup> group;
  struct Waiting {
    Client* client;
    std::shared_ptr<void> keepalive;  // the client's connection
  };
  std::vector<Waiting> waiting;
  bool end_posted = false;
};

thread_local IoBatch t_io_batch;

}  // namespace

void Server::Dispatch(Client& client, const CommandSpec* spec, const Argv& argv,
                      resp::Writer& out) {
  auto reject = [&](std::string_view msg) {
    if (client.in_multi) {
      client.multi_dirty = true;
    }
    stats_.CountError(msg);
    out.Error(msg);
  };
  if (spec == nullptr) {
    reject(UnknownCommandError(argv));
    return;
  }
  const bool queue_unchecked = client.in_multi && (spec->flags & kHandlerArity);
  if (!queue_unchecked && !ArityAccepts(*spec, argv.size())) {
    stats_.For(spec->name).rejected_calls++;
    reject(ArityError(spec->name));
    return;
  }
  if (!client.authenticated && !(spec->flags & kNoAuth)) {
    stats_.For(spec->name).rejected_calls++;
    stats_.CountError("NOAUTH");
    out.Error("NOAUTH Authentication required.");
    return;
  }
  // Cluster mode: the one routing check (MOVED / CROSSSLOT / CLUSTERDOWN), before queuing too.
  if (cluster_ != nullptr) {
    if (auto redirect = ClusterRedirect(*this, client, *spec, argv)) {
      stats_.For(spec->name).rejected_calls++;
      reject(*redirect);
      return;
    }
  }
  if (loading() && !(spec->flags & kLoading)) {
    reject(kLoadingError);
    return;
  }
  if ((spec->flags & kWrite) && replication_ && replication_->is_replica()) {
    reject(kReadOnlyReplicaError);
    return;
  }
  if (InSubscribedMode(client) && !AllowedInSubscribedMode(*spec)) {
    stats_.For(spec->name).rejected_calls++;
    reject(SubscribedModeError(*spec, argv));
    return;
  }
  if (client.in_multi && !(spec->flags & kNoMulti)) {
    client.queued.emplace_back(argv.begin(), argv.end());
    out.SimpleString("QUEUED");
    return;
  }
  Execute(*spec, client, argv, out, false);
}

void Server::Execute(const CommandSpec& spec, Client& client, const Argv& argv, resp::Writer& out,
                     bool locks_held) {
  const auto start = std::chrono::steady_clock::now();
  const size_t before = out.buffer()->size();
  storage::LockGuard guard;
  std::vector<std::string_view> keys;
  const bool write = (spec.flags & kWrite) != 0;
  // The io thread's lock batch keeps the stripes of consecutive commands (at most kMaxBatchUses
  // commands, kMaxStripes stripes); a command it cannot take in first gives them back.
  constexpr int kMaxBatchUses = 256;
  constexpr size_t kMaxStripes = 256;
  const bool batchable = client.lock_batching && !locks_held && spec.first_key > 0 &&
                         !(spec.flags & (kLockAll | kBackground));
  const bool groupable = batchable && write && (spec.flags & kGroupCommit) &&
                         group_commit_.load(std::memory_order_relaxed);
  IoBatch& batch = t_io_batch;
  if (!groupable && batch.group) {
    EndGroup();  // (no command but those of the group may see its uncommitted changes)
  }
  if (!batchable && !locks_held) {
    EndBatch();
  }
  auto batch_covers = [&](std::vector<size_t>& stripes, bool exclusive) {
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    if (batch.held && batch.uses < kMaxBatchUses && (batch.exclusive || !exclusive)) {
      // Commands on other keys join the batch (and its write group) when their stripes are
      // free: taken without waiting, so no thread ever waits while it holds stripes.
      if (batch.guard.covers(stripes) ||
          (batch.exclusive == exclusive && batch.guard.size() + stripes.size() <= kMaxStripes &&
           batch.guard.TryAdd(stripes))) {
        ++batch.uses;
        return true;
      }
    }
    EndBatch();
    return false;
  };
  auto batch_keep = [&](storage::LockGuard g, bool exclusive) {
    batch.guard = std::move(g);
    batch.exclusive = exclusive;
    batch.uses = 1;
    batch.held = true;
  };
  if (write) {
    keys = CommandKeys(spec, argv);
    if (!locks_held) {
      std::vector<size_t> stripes;
      if (spec.flags & kLockAll) {
        stripes.resize(db_->locks().stripes());
        for (size_t i = 0; i < stripes.size(); ++i) {
          stripes[i] = i;
        }
      } else {
        for (auto key : keys) {
          stripes.push_back(db_->locks().StripeOf(client.db, key));
        }
        if (auto other = CommandOtherDbKey(spec, argv)) {
          stripes.push_back(db_->locks().StripeOf(other->db, other->key));
        }
      }
      if (!batchable) {
        guard = storage::LockGuard(&db_->locks(), std::move(stripes));
      } else if (!batch_covers(stripes, true)) {
        batch_keep(storage::LockGuard(&db_->locks(), std::move(stripes)), true);
      }
    }
  }
  std::optional<storage::UncachedReads> uncached;
  if (!write && !locks_held && spec.first_key > 0) {
    // Readers hold their keys' stripes shared, so no writer of those keys is half-way while
    // they read the in-memory cache. When a writer holds one (a long CF.COMPACT), the reader
    // does not wait: it reads a RocksDB snapshot instead.
    std::vector<size_t> stripes;
    for (auto key : CommandKeys(spec, argv)) {
      stripes.push_back(db_->locks().StripeOf(client.db, key));
    }
    if (!batchable) {
      if (auto g = storage::LockGuard::TryShared(&db_->locks(), std::move(stripes))) {
        guard = std::move(*g);
      } else {
        uncached.emplace();
      }
    } else if (!batch_covers(stripes, false)) {
      if (auto g = storage::LockGuard::TryShared(&db_->locks(), stripes)) {
        batch_keep(std::move(*g), false);
      } else {
        uncached.emplace();
      }
    }
  }
  if (groupable) {
    if (!batch.group) {
      batch.group = std::make_unique<storage::WriteGroup>(db_->engine(), &db_->cache());
    }
    if (!client.group_pending) {
      client.group_pending = true;
      client.group_out = out.buffer();
      client.group_start = before;
      client.group_commands = 0;
      batch.waiting.push_back({&client, client.owner.lock()});
    }
    ++client.group_commands;
  }
  // Stripes are per database (client.db); the namespace it maps to changes only while SWAPDB
  // holds every stripe, so it is read now that this command's are held.
  CommandContext ctx{*this, client, out, argv, db_->Namespace(client.db), std::nullopt};
  if ((spec.flags & kHandlerArity) && !ArityAccepts(spec, argv.size())) {
    // Queued inside MULTI without the arity check, as RedisBloom 2.8's commands are (they
    // check it before opening the key, so nothing counts as modified).
    out.Error(ArityError(spec.name));
    ctx.NothingModified();
  } else {
    spec.handler(ctx);
  }
  if (write && !(spec.flags & kNoWatchBump)) {
    // Touched while the key locks are held, so EXEC (which holds them too) sees it or not at
    // all.
    TouchKeys(client.db, ctx.modified ? *ctx.modified : keys);
  }
  guard.Release();
  const auto micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  auto found = command_stats_.find(&spec);
  auto& cs = found != command_stats_.end() ? *found->second : stats_.For(spec.name);
  cs.calls++;
  cs.usec += micros;
  cs.latency.Record(micros);
  stats_.total_commands_processed++;
  const std::string& buf = *out.buffer();
  if (buf.size() > before && buf[before] == '-') {
    cs.failed_calls++;
    auto end = buf.find('\r', before);
    stats_.CountError(std::string_view(buf).substr(before + 1, end - before - 1));
  }
  client.last_command = spec.name;
  const int64_t threshold = slowlog_slower_than_.load(std::memory_order_relaxed);
  if (threshold >= 0 && static_cast<int64_t>(micros) >= threshold && !(spec.flags & kSkipSlowlog)) {
    SlowlogAdd(client, argv, static_cast<int64_t>(micros));
  }
  if (batch.group && batch.group->Full()) {
    EndGroup();
  }
}

void Server::EndGroup() {
  IoBatch& batch = t_io_batch;
  if (!batch.group) {
    return;
  }
  auto s = batch.group->Commit();
  batch.group.reset();
  auto waiting = std::move(batch.waiting);
  batch.waiting.clear();
  uint64_t commands = 0;
  std::string error_reply;
  for (auto& w : waiting) {
    Client& c = *w.client;
    commands += c.group_commands;
    if (!s.ok()) {
      // Nothing of the group was stored: each of its commands answers the error instead.
      std::string& out = *c.group_out;
      out.resize(c.group_start);
      if (error_reply.empty()) {
        resp::Writer writer(&error_reply, c.proto);
        ReplyStatusError(writer, s);
      }
      const std::string_view text =
          std::string_view(error_reply)
              .substr(1, error_reply.size() > 3 ? error_reply.size() - 3 : 0);
      for (size_t i = 0; i < c.group_commands; ++i) {
        out += error_reply;
        stats_.CountError(text);
      }
    }
    c.group_pending = false;
    c.group_commands = 0;
    if (c.flush_later) {
      c.flush_later();
    }
  }
  stats_.write_groups++;
  stats_.write_group_commands += commands;
}

void Server::EndBatch() {
  IoBatch& batch = t_io_batch;
  if (batch.group) {
    // Queued while the stripes are held (writes of a key are stored in the order they were
    // made); written after they are given back, so the other io threads' commands on these keys
    // run meanwhile. The replies still wait for the write (EndGroup).
    batch.group->Seal();
  }
  if (batch.held) {
    batch.guard.Release();
    batch.held = false;
  }
  EndGroup();
}

void Server::ScheduleBatchEnd(const asio::any_io_executor& executor) {
  IoBatch& batch = t_io_batch;
  if (!batch.group) {
    // Only a write group waits for the other clients of this round; stripes alone are given
    // back at once.
    EndBatch();
    return;
  }
  if (batch.end_posted) {
    return;
  }
  batch.end_posted = true;
  asio::post(executor, [this] {
    t_io_batch.end_posted = false;
    EndBatch();
  });
}

void Server::SlowlogAdd(const Client& client, const Argv& argv, int64_t micros) {
  SlowlogEntry e;
  e.unix_time = static_cast<int64_t>(storage::NowMs() / 1000);
  e.micros = micros;
  // Redis keeps at most 32 arguments, each cut to 128 bytes.
  const size_t n = std::min<size_t>(argv.size(), 32);
  for (size_t i = 0; i < n; ++i) {
    if (i == 31 && argv.size() > 32) {
      e.argv.push_back("... (" + std::to_string(argv.size() - 31) + " more arguments)");
      break;
    }
    std::string a(argv[i].substr(0, 128));
    if (argv[i].size() > 128) {
      a += "... (" + std::to_string(argv[i].size() - 128) + " more bytes)";
    }
    e.argv.push_back(std::move(a));
  }
  e.addr = client.addr;
  e.name = client.name;
  std::lock_guard lock(slowlog_mu_);
  e.id = slowlog_next_id_++;
  slowlog_.push_front(std::move(e));
  while (slowlog_.size() > slowlog_max_len_.load()) {
    slowlog_.pop_back();
  }
}

std::vector<SlowlogEntry> Server::SlowlogGet(int64_t count) {
  std::lock_guard lock(slowlog_mu_);
  size_t n =
      count < 0 ? slowlog_.size() : std::min<size_t>(slowlog_.size(), static_cast<size_t>(count));
  return {slowlog_.begin(), slowlog_.begin() + static_cast<std::ptrdiff_t>(n)};
}

size_t Server::SlowlogLen() {
  std::lock_guard lock(slowlog_mu_);
  return slowlog_.size();
}

void Server::SlowlogReset() {
  std::lock_guard lock(slowlog_mu_);
  slowlog_.clear();
}

}  // namespace cuckood::server

namespace cuckood::server {

void Server::Pause(std::chrono::steady_clock::time_point until, bool all) {
  const int64_t ns = until.time_since_epoch().count();
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  const int64_t current = pause_until_ns_.load(std::memory_order_acquire);
  if (current > now) {
    // Paused already: the later end and the stricter mode win.
    pause_all_.store(all || pause_all_.load(std::memory_order_acquire), std::memory_order_release);
    pause_until_ns_.store(std::max(ns, current), std::memory_order_release);
    return;
  }
  pause_all_.store(all, std::memory_order_release);
  pause_until_ns_.store(ns, std::memory_order_release);
}

std::chrono::steady_clock::duration Server::PauseRemaining(const CommandSpec* spec,
                                                           const Client& client) const {
  const int64_t until_ns = pause_until_ns_.load(std::memory_order_acquire);
  if (until_ns == 0) {
    return std::chrono::steady_clock::duration::zero();  // (no clock read on the common path)
  }
  const auto until =
      std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(until_ns));
  const auto now = std::chrono::steady_clock::now();
  if (spec == nullptr || until <= now) {
    return std::chrono::steady_clock::duration::zero();
  }
  if (pause_all_.load(std::memory_order_acquire)) {
    return until - now;
  }
  // WRITE: writes and the commands that may replicate (PUBLISH), and an EXEC that queued one.
  auto writes = [](const CommandSpec* s) {
    return s != nullptr && ((s->flags & kWrite) || s->name == "publish" || s->name == "spublish");
  };
  bool waits = writes(spec);
  if (!waits && spec->name == "exec" && client.in_multi) {
    for (const auto& q : client.queued) {
      if (!q.empty() && writes(table_.Find(q[0]))) {
        waits = true;
        break;
      }
    }
  }
  return waits ? until - now : std::chrono::steady_clock::duration::zero();
}

}  // namespace cuckood::server
