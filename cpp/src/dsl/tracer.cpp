#include "dsl/tracer.h"

namespace opencute::dsl {

namespace {
thread_local Tracer* g_current = nullptr;
}

Tracer::Tracer() : module_(std::make_unique<ir::Module>()) {}

ir::Builder& Tracer::builder() {
  if (frames_.empty()) throw std::logic_error("no function is being traced");
  return frames_.back().builder;
}

bool Tracer::in_kernel() const {
  return !frames_.empty() && frames_.back().function->kind == ir::FunctionKind::Kernel;
}

ir::Function* Tracer::begin_function(const std::string& name, ir::FunctionKind kind) {
  ir::Function* f = module_->add_function(name, kind);
  frames_.push_back(Frame{f, ir::Builder(f->body.get())});
  return f;
}

ir::Value* Tracer::add_argument(ir::Type t) { return frames_.back().function->body->add_arg(t); }

void Tracer::end_function(const std::vector<ir::Value*>& results) {
  Frame& fr = frames_.back();
  fr.builder.set_block(fr.function->body.get());
  std::vector<ir::Type> types;
  for (auto* v : results) types.push_back(v->type);
  fr.function->result_types = types;
  fr.builder.ret(results);
  frames_.pop_back();
}

std::string Tracer::unique_kernel_name(const std::string& base) {
  return "kernel_cutlass_" + base + "_" + std::to_string(kernel_counter_++);
}

void Tracer::enter_region(ir::Op* op, int index) { builder().set_block(op->region_block(index)); }

void Tracer::exit_to_parent(ir::Op* op) { builder().set_block(op->parent); }

Tracer* Tracer::current() { return g_current; }

UserLocation::UserLocation(const std::string& file, int line) {
  if (file.empty() || !g_current || !g_current->current_function()) return;
  builder_ = &g_current->builder();
  file_ = builder_->file(), line_ = builder_->line();
  builder_->set_location(file, line);
}

UserLocation::~UserLocation() {
  if (builder_) builder_->set_location(file_, line_);
}

const support::Arch& Tracer::current_target_arch() {
  static const support::Arch none;
  return g_current ? g_current->target_arch_ : none;
}

Tracer& Tracer::require(const char* what) {
  if (!g_current)
    throw UserError("PHASE_OUTSIDE_JIT", std::string(what) + " needs a dynamic value, which only exists while a @jit "
                                         "function is being traced");
  return *g_current;
}

void Tracer::activate() {
  previous_ = g_current;
  g_current = this;
}

void Tracer::deactivate() {
  g_current = previous_;
  previous_ = nullptr;
}

}  // namespace opencute::dsl
