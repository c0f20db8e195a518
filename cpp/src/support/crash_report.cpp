#include "support/crash_report.h"

#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstdint>
#include <initializer_list>

#if defined(__linux__)
#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>
#endif

namespace opencute::support {

#if defined(__linux__)
namespace {

void report_and_reraise(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  std::fprintf(stderr, "opencute: fatal signal %d; native stack:\n", sig);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) && info.dli_fname) {
      auto offset = reinterpret_cast<std::uintptr_t>(frames[i]) -
                    reinterpret_cast<std::uintptr_t>(info.dli_fbase);
      std::fprintf(stderr, "  #%d %s+0x%zx %s\n", i, info.dli_fname, static_cast<size_t>(offset),
                   info.dli_sname ? info.dli_sname : "");
    } else {
      std::fprintf(stderr, "  #%d %p\n", i, frames[i]);
    }
  }
  std::fflush(stderr);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_crash_report_if_requested() {
  if (!std::getenv("OPENCUTE_CRASH_REPORT")) return;
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, report_and_reraise);
}
#else
void install_crash_report_if_requested() {}
#endif

}  // namespace opencute::support
