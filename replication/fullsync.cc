#include "replication/fullsync.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

namespace cuckood::replication {
namespace fs = std::filesystem;

namespace {

constexpr size_t kChunk = 1 << 20;

std::string Hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

// A file name RocksDB writes in its folder (the ones an install replaces).
bool IsDatabaseFile(const std::string& name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  auto starts = [&](std::string_view prefix) { return name.rfind(prefix, 0) == 0; };
  return name == "CURRENT" || name == "IDENTITY" || name == "LOCK" || name == "LOG" ||
         starts("LOG.old") || starts("MANIFEST-") || starts("OPTIONS-") || ends(".sst") ||
         ends(".log") || ends(".blob") || ends(".dbtmp") || name == "archive";
}

// A plain file name (no folder parts), as a checkpoint holds.
bool SafeName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == ".." || name[0] == '.') {
    return false;
  }
  for (char c : name) {
    if (c == '/' || c == '\0') {
      return false;
    }
  }
  return true;
}

Status SyncPath(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {Code::kIoError, "cannot open " + p.string()};
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok ? Status::Ok() : Status(Code::kIoError, "cannot sync " + p.string());
}

Status WriteMarker(const fs::path& p, const std::string& text) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return {Code::kIoError, "cannot write " + p.string()};
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) {
    return {Code::kIoError, "cannot write " + p.string()};
  }
  return SyncPath(p.parent_path());
}

}  // namespace

Status SendCheckpoint(Link& link, storage::Engine& engine, const std::string& dir,
                      const std::string& replid, uint64_t rate_bytes, uint64_t* seq) {
  static std::atomic<uint64_t> counter{0};
  const fs::path cp = fs::path(dir) / (".repl-checkpoint-" + std::to_string(getpid()) + "-" +
                                       std::to_string(++counter));
  std::error_code ec;
  fs::remove_all(cp, ec);
  if (auto s = engine.CreateCheckpoint(cp.string(), seq); !s.ok()) {
    return s;
  }
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{cp};
  if (auto s = link.WriteAll("+FULLSYNC " + replid + " " + std::to_string(*seq) + "\r\n");
      !s.ok()) {
    return s;
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t sent = 0;
  std::string chunk(kChunk, '\0');
  for (const auto& entry : fs::directory_iterator(cp, ec)) {
    if (!entry.is_regular_file()) {
      continue;
    }
    const std::string name = entry.path().filename().string();
    const uint64_t size = entry.file_size();
    int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return {Code::kIoError, "cannot read checkpoint file " + name};
    }
    auto s = link.WriteAll("+FILE " + name + " " + std::to_string(size) + "\r\n");
    uint32_t crc = 0;
    uint64_t left = size;
    while (s.ok() && left > 0) {
      const ssize_t n = ::read(fd, chunk.data(), std::min<uint64_t>(left, kChunk));
      if (n <= 0) {
        s = Status(Code::kIoError, "cannot read checkpoint file " + name);
        break;
      }
      crc = Crc32c(crc, chunk.data(), static_cast<size_t>(n));
      s = link.WriteAll(std::string_view(chunk.data(), static_cast<size_t>(n)));
      left -= static_cast<uint64_t>(n);
      sent += static_cast<uint64_t>(n);
      if (rate_bytes > 0) {
        // Ahead of the rate: wait until the bytes sent so far are due.
        const auto due = start + std::chrono::microseconds(sent * 1000000 / rate_bytes);
        std::this_thread::sleep_until(due);
      }
    }
    ::close(fd);
    if (s.ok()) {
      s = link.WriteAll("+CRC " + Hex32(crc) + "\r\n");
    }
    if (!s.ok()) {
      return s;
    }
  }
  if (ec) {
    return {Code::kIoError, "cannot list checkpoint: " + ec.message()};
  }
  return link.WriteAll("+ENDFILES " + std::to_string(*seq) + "\r\n");
}

Status ReceiveCheckpoint(Link& link, const std::string& dir, uint64_t* seq,
                         std::atomic<uint64_t>* bytes) {
  const fs::path staged = fs::path(dir) / kStagedDirName;
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) {
    return {Code::kIoError, "cannot create " + staged.string() + ": " + ec.message()};
  }
  std::string line;
  std::string data;
  for (;;) {
    if (auto s = link.ReadLine(&line); !s.ok()) {
      return s;
    }
    auto words = SplitWords(line);
    if (!words.empty() && words[0] == "+ENDFILES" && words.size() == 2 && ParseU64(words[1], seq)) {
      break;
    }
    if (!line.empty() && line[0] == '-') {
      return {Code::kIoError, "primary: " + line.substr(1)};
    }
    uint64_t size = 0;
    if (words.size() != 3 || words[0] != "+FILE" || !SafeName(words[1]) ||
        !ParseU64(words[2], &size)) {
      return {Code::kCorruption,
              "full sync: unexpected line from the primary: " + line.substr(0, 80)};
    }
    const fs::path path = staged / words[1];
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      return {Code::kIoError, "cannot create " + path.string()};
    }
    uint32_t crc = 0;
    uint64_t left = size;
    Status s;
    while (left > 0) {
      data.clear();
      s = link.ReadExact(std::min<uint64_t>(left, kChunk), &data);
      if (!s.ok()) {
        break;
      }
      crc = Crc32c(crc, data.data(), data.size());
      if (::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
        s = Status(Code::kIoError, "cannot write " + path.string());
        break;
      }
      left -= data.size();
      bytes->fetch_add(data.size());
    }
    if (s.ok() && ::fsync(fd) != 0) {
      s = Status(Code::kIoError, "cannot sync " + path.string());
    }
    ::close(fd);
    if (!s.ok()) {
      return s;
    }
    if (s = link.ReadLine(&line); !s.ok()) {
      return s;
    }
    if (line != "+CRC " + Hex32(crc)) {
      return {Code::kCorruption, "full sync: checksum mismatch in " + words[1]};
    }
  }
  if (!fs::exists(staged / "CURRENT")) {
    return {Code::kCorruption, "full sync: the checkpoint has no CURRENT file"};
  }
  return WriteMarker(staged / "READY", std::to_string(*seq) + "\n");
}

Status InstallStaged(const std::string& dir) {
  const fs::path staged = fs::path(dir) / kStagedDirName;
  std::error_code ec;
  if (!fs::exists(staged / "READY")) {
    return {Code::kInvalid, "no complete checkpoint staged in " + staged.string()};
  }
  if (!fs::exists(staged / "CLEARED")) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (IsDatabaseFile(name)) {
        fs::remove_all(entry.path(), ec);
        if (ec) {
          return {Code::kIoError, "cannot remove " + entry.path().string() + ": " + ec.message()};
        }
      }
    }
    if (auto s = WriteMarker(staged / "CLEARED", "1\n"); !s.ok()) {
      return s;
    }
  }
  for (const auto& entry : fs::directory_iterator(staged, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "READY" || name == "CLEARED") {
      continue;
    }
    fs::rename(entry.path(), fs::path(dir) / name, ec);
    if (ec) {
      return {Code::kIoError, "cannot move " + name + " into " + dir + ": " + ec.message()};
    }
  }
  if (auto s = SyncPath(dir); !s.ok()) {
    return s;
  }
  fs::remove_all(staged, ec);
  return Status::Ok();
}

Status RecoverStaged(const std::string& dir) {
  const fs::path staged = fs::path(dir) / kStagedDirName;
  std::error_code ec;
  if (!fs::exists(staged, ec)) {
    return Status::Ok();
  }
  if (fs::exists(staged / "READY")) {
    spdlog::warn("finishing the install of a full sync interrupted by the last stop");
    return InstallStaged(dir);
  }
  fs::remove_all(staged, ec);
  return Status::Ok();
}

}  // namespace cuckood::replication
