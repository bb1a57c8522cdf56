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

Server::Server(Config config) : live_(std::move(config)) {
  pubsub_ = std::make_unique<PubSub>();
  replication_ = std::make_unique<Replication>(*this);
  process_.run_id = RandomHex(40);
  process_.start_unix = static_cast<int64_t>(storage::NowMs() / 1000);
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

void Server::Start() {
  Config cfg = live_.Get();
  for (const auto& rc : cfg.rename_commands) {
    auto sp = rc.find(' ');
    std::string from = rc.substr(0, sp);
    std::string to = sp == std::string::npos ? "" : rc.substr(sp + 1);
    if (!table_.Rename(from, to)) {
      throw std::runtime_error("rename-command: unknown command '" + from + "'");
    }
  }
  dispatcher_.IndexCommandStats();  // (the table does not change after this point)
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
  db_->chain_indexes().set_budget(cfg.chain_index_memory);
  background_.Open(2);
  if (cfg.cluster_enabled) {
    cluster_ = OpenClusterState(cfg);  // before the listeners: no client sees a node without it
    slot_migrator_ = std::make_unique<SlotMigrator>(*this);
  }

  int workers =
      cfg.workers > 0 ? cfg.workers : static_cast<int>(std::thread::hardware_concurrency());
  workers = std::max(workers, 1);
  for (int i = 0; i < workers; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    batches_.push_back(std::make_unique<LockBatch>(stats_));
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
  }
  io_balance_ = std::make_unique<IoBalance>(contexts_.size());
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
    (tls ? process_.tls_port : process_.port) = acc->local_endpoint().port();
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
  replication_->Start(cfg);
  if (cluster_ != nullptr) {
    FollowClusterTopology(*this);  // the topology's role drives replication from now on
  }
  // What each option's change does (the option rows name it), carried out once now.
  live_.OnChange(OptionEffect::kFsync,
                 [this](const Config& c) { engine_->SetFsync(FsyncFromName(c.appendfsync)); });
  live_.OnChange(OptionEffect::kReplication,
                 [this](const Config& c) { replication_->ApplyConfig(c); });
  live_.OnChange(OptionEffect::kLogLevel,
                 [](const Config& c) { spdlog::set_level(SpdlogLevel(c.loglevel)); });
  live_.Start();
  process_.io_threads = static_cast<int>(contexts_.size());
  for (size_t i = 0; i < contexts_.size(); ++i) {
    threads_.emplace_back([this, i, c = contexts_[i].get()] {
      io_balance_->SetThread(i, static_cast<pid_t>(::gettid()));
      c->run();
    });
  }
  io_balance_->Start([this] { return stats_.total_commands_processed.load(); },
                     [this] { return live_.adaptive_io_threads(); });
  spdlog::info("cuckood 0.1.0 ready to accept connections on {}:{} ({} io threads, dir {})",
               cfg.bind, process_.port, workers, cfg.dir);
  if (tls_ctx_) {
    spdlog::info("TLS connections on {}:{} (tls-auth-clients {})", cfg.bind, process_.tls_port,
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
  // Connections are dealt to the io threads in turn (their origin), and live on the thread of
  // that origin among those in use now (adaptive-io-threads).
  const size_t origin = next_context_++ % contexts_.size();
  auto& ctx = *contexts_[io_balance_->Place(origin)];
  acceptors_[index]->async_accept(
      ctx, [this, index, origin](const asio::error_code& ec, asio::ip::tcp::socket socket) {
        if (ec) {
          if (ec == asio::error::operation_aborted || shutting_down_) {
            return;
          }
          spdlog::warn("accept failed: {}", ec.message());
          Accept(index);
          return;
        }
        OnAccepted(index, std::move(socket), origin);
        // Every other connection already waiting is taken now (as Redis takes up to 1000 per
        // event): the acceptor's handler runs on io thread 0 behind that thread's busy connections,
        // and one connection per turn of its queue kept the last clients of a burst waiting for
        // their first reply until the others were done.
        constexpr int kMaxAcceptsPerTurn = 1000;
        for (int i = 0; i < kMaxAcceptsPerTurn && !shutting_down_; ++i) {
          const size_t next_origin = next_context_ % contexts_.size();
          asio::ip::tcp::socket next(*contexts_[io_balance_->Place(next_origin)]);
          asio::error_code aec;
          acceptors_[index]->accept(next, aec);
          if (aec) {
            if (aec != asio::error::would_block && aec != asio::error::try_again) {
              spdlog::warn("accept failed: {}", aec.message());
            }
            break;
          }
          next_context_++;
          OnAccepted(index, std::move(next), next_origin);
        }
        Accept(index);
      });
}

void Server::OnAccepted(size_t index, asio::ip::tcp::socket socket, size_t origin) {
  stats_.total_connections_received++;
  Config cfg = live_.Get();
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
  if (clients_.connected() >= static_cast<size_t>(std::max(cfg.maxclients, 1))) {
    static const std::string kMax = "-ERR max number of clients reached\r\n";
    asio::write(socket, asio::buffer(kMax), ec2);
    stats_.rejected_connections++;
    return;
  }
  socket.set_option(asio::ip::tcp::no_delay(true), ec2);
  if (cfg.tcp_keepalive > 0) {
    socket.set_option(asio::socket_base::keep_alive(true), ec2);
  }
  // The io thread the socket belongs to.
  size_t home = 0;
  for (size_t i = 0; i < contexts_.size(); ++i) {
    if (&socket.get_executor().context() == contexts_[i].get()) {
      home = i;
    }
  }
  auto conn = std::make_shared<Connection>(*this, std::move(socket), clients_.NextId(), home,
                                           origin, acceptor_tls_[index] ? tls_ctx_.get() : nullptr);
  clients_.Register(conn);
  conn->Start();
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
  if (io_balance_) {
    io_balance_->Stop();
  }
  // Let every connection finish its command in flight and flush its replies.
  for (auto& conn : clients_.All()) {
    conn->Shutdown();
  }
  clients_.WaitAllGone(std::chrono::seconds(3));
  guards_.clear();
  for (auto& ctx : contexts_) {
    ctx->stop();
  }
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
  acceptors_.clear();
  signals_.reset();
  tick_timer_.reset();
  background_.Join();  // long commands in flight finish before the database closes
  if (engine_) {
    engine_->Close();
    spdlog::info("database closed cleanly");
  }
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
  for (size_t i = 0; i < contexts_.size(); ++i) {
    asio::post(*contexts_[i], [batch = batches_[i].get(), gate] {
      batch->End();
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
    while (gate->parked < contexts_.size() || background_.running() > 0) {
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

}  // namespace cuckood::server
