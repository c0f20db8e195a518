// The trace of one @jit call: the module under construction, a stack of functions being
// built (the host function, then a kernel while its body is traced), and helpers that the
// Python front end calls for structured control flow.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/ir.h"
#include "support/arch.h"

namespace opencute::dsl {

// Raised for mistakes in user code that C++ detects (wrong types, dynamic values where
// static ones are required); Python turns it into a DSLUserCodeError at the user's line.
struct UserError : std::runtime_error {
  std::string code;
  UserError(const std::string& code_, const std::string& msg) : std::runtime_error(msg), code(code_) {}
};

class Tracer {
 public:
  Tracer();

  ir::Module& module() { return *module_; }
  std::unique_ptr<ir::Module> take_module() { return std::move(module_); }
  ir::Builder& builder();
  bool in_kernel() const;
  ir::Function* current_function() const { return frames_.empty() ? nullptr : frames_.back().function; }

  ir::Function* begin_function(const std::string& name, ir::FunctionKind kind);
  ir::Value* add_argument(ir::Type t);
  void end_function(const std::vector<ir::Value*>& results);
  std::string unique_kernel_name(const std::string& base);

  // Whether runtime checks (cute.testing.assert_, dynamic `assert`, bounds checks) become IR:
  // set from the compile options (EnableAssertions / --enable-assertions) before tracing; off by
  // default, like NDEBUG.
  bool assertions_enabled() const { return assertions_enabled_; }
  void set_assertions_enabled(bool on) { assertions_enabled_ = on; }

  // The architecture the traced program is compiled for ("sm_80", "sm_90a"; empty when not
  // known until compiled): arch-specific atoms and ops check it while tracing. Set from the
  // compile options before the body is traced.
  const support::Arch& target_arch() const { return target_arch_; }
  void set_target_arch(const std::string& name) { target_arch_ = support::parse_arch(name); }
  // The active trace's target architecture; an empty one outside tracing (nothing to check).
  static const support::Arch& current_target_arch();

  // Region navigation for structured control flow: move the insertion point to the end of
  // region `index` of `op`, or back to just after `op`.
  void enter_region(ir::Op* op, int index);
  void exit_to_parent(ir::Op* op);

  // The thread's active tracer (null when not tracing).
  static Tracer* current();
  static Tracer& require(const char* what);
  void activate();
  void deactivate();

 private:
  struct Frame {
    ir::Function* function;
    ir::Builder builder;
  };
  std::unique_ptr<ir::Module> module_;
  std::vector<Frame> frames_;
  int kernel_counter_ = 0;
  bool assertions_enabled_ = false;
  support::Arch target_arch_;
  Tracer* previous_ = nullptr;
};

// While it lives, the ops the active trace creates carry the user's `file`:`line`, the call that
// makes them (the emulator's reports name it); the builder's own location comes back after.
// Nothing without a trace or a file.
class UserLocation {
 public:
  UserLocation(const std::string& file, int line);
  ~UserLocation();
  UserLocation(const UserLocation&) = delete;
  UserLocation& operator=(const UserLocation&) = delete;

 private:
  ir::Builder* builder_ = nullptr;
  std::string file_;
  int line_ = 0;
};

}  // namespace opencute::dsl
