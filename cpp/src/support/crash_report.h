#pragma once

namespace opencute::support {

// When OPENCUTE_CRASH_REPORT is set, a fatal signal prints the native call stack as
// "object+offset" lines (feed them to addr2line -f -C -e OBJECT OFFSET). This exists because
// the GPU machines have no debugger and some faults only reproduce there.
void install_crash_report_if_requested();

}  // namespace opencute::support
