#include "support/log.h"

#include "support/env.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>
#include <utility>

namespace opencute::support {
namespace {

constexpr int kDefaultLevel = 10;

struct LogConfig {
  bool console = false;
  std::string file;
  int level = kDefaultLevel;
};

std::mutex& log_mutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

// CUTE_DSL_LOG_LEVEL as Python logging takes a level: a number, or a level's name in any case.
// An empty value counts as unset; anything else is reported (once per value) and ignored.
int read_level(const char* value) {
  std::string v = value;
  size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
  v = b == std::string::npos ? "" : v.substr(b, e - b + 1);
  if (v.empty()) return kDefaultLevel;
  errno = 0;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (*end == '\0') return errno == ERANGE || n > INT_MAX ? INT_MAX : n < INT_MIN ? INT_MIN : int(n);
  std::string upper;
  for (char ch : v) upper += char(std::toupper(static_cast<unsigned char>(ch)));
  static const std::pair<const char*, int> kNames[] = {{"DEBUG", 10}, {"INFO", 20},  {"WARNING", 30},
                                                       {"WARN", 30},  {"ERROR", 40}, {"CRITICAL", 50}};
  for (const auto& [name, level] : kNames)
    if (upper == name) return level;
  static std::set<std::string>* warned = new std::set<std::string>();
  if (warned->insert(v).second)
    std::fprintf(stderr,
                 "opencute: CUTE_DSL_LOG_LEVEL=%s is not a log level; use a number (10 DEBUG, 20 INFO, 30 WARNING, "
                 "40 ERROR, 50 CRITICAL, 0 off) or one of those names; logging at the default level, 10 (DEBUG)\n",
                 v.c_str());
  return kDefaultLevel;
}

LogConfig read_config() {
  LogConfig c;
  c.console = env_flag("CUTE_DSL_LOG_TO_CONSOLE");
  if (const char* v = std::getenv("CUTE_DSL_LOG_TO_FILE")) c.file = v;
  if (const char* v = std::getenv("CUTE_DSL_LOG_LEVEL")) c.level = read_level(v);
  return c;
}

LogConfig& config() {
  static LogConfig* c = new LogConfig(read_config());
  return *c;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO";
    case LogLevel::Warning: return "WARNING";
    case LogLevel::Error: return "ERROR";
    case LogLevel::Critical: return "CRITICAL";
  }
  return "LOG";
}

}  // namespace

void reload_log_configuration() {
  std::lock_guard<std::mutex> lock(log_mutex());
  config() = read_config();
}

bool log_enabled(LogLevel level) {
  const LogConfig& c = config();
  return (c.console || !c.file.empty()) && c.level > 0 && int(level) >= c.level;
}

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  std::lock_guard<std::mutex> lock(log_mutex());
  const LogConfig& c = config();
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::string line = std::string(stamp) + " - opencute - " + level_name(level) + " - " + message + "\n";
  if (c.console) {
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  if (!c.file.empty()) {
    if (std::FILE* f = std::fopen(c.file.c_str(), "a")) {
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }
}

}  // namespace opencute::support
