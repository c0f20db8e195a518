#include "ir/parser.h"

#include <cstdlib>
#include <cstdio>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "ir/arch_attributes.h"
#include "ir/builder.h"

namespace opencute::ir {
namespace {

OpCode opcode_from_name(const std::string& name, int line) {
  static const std::unordered_map<std::string, OpCode> table = [] {
    std::unordered_map<std::string, OpCode> t;
    // Every named opcode, wherever the enum ends (op families append to it).
    for (int c = 0; c < 256; ++c)
      if (std::string(opcode_name(OpCode(c))) != "?") t[opcode_name(OpCode(c))] = OpCode(c);
    return t;
  }();
  auto it = table.find(name);
  if (it == table.end()) throw ParseError("line " + std::to_string(line) + ": unknown operation '" + name + "'");
  return it->second;
}

CmpPredicate predicate_from_name(const std::string& name, int line) {
  for (int p = 0; p <= int(CmpPredicate::Ge); ++p)
    if (name == predicate_name(CmpPredicate(p))) return CmpPredicate(p);
  throw ParseError("line " + std::to_string(line) + ": unknown predicate '" + name + "'");
}

// A cursor over one line of text.
class Cursor {
 public:
  Cursor(const std::string& s, int line) : s_(s), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError("line " + std::to_string(line_) + ", column " + std::to_string(pos_ + 1) + ": " + what +
                     " in: " + s_);
  }
  void skip_spaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool at_end() {
    skip_spaces();
    return pos_ >= s_.size();
  }
  bool peek(const std::string& tok) {
    skip_spaces();
    return s_.compare(pos_, tok.size(), tok) == 0;
  }
  bool accept(const std::string& tok) {
    if (!peek(tok)) return false;
    pos_ += tok.size();
    return true;
  }
  void expect(const std::string& tok) {
    if (!accept(tok)) fail("expected '" + tok + "'");
  }
  std::string word() {  // identifier-like: letters, digits, '_', '.'
    skip_spaces();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    if (b == pos_) fail("expected a name");
    return s_.substr(b, pos_ - b);
  }
  std::string symbol() {  // after '@'
    expect("@");
    return word();
  }
  std::string number_text() {
    skip_spaces();
    size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != ' ' && s_[pos_] != ',' && s_[pos_] != ')' && s_[pos_] != ']') ++pos_;
    if (b == pos_) fail("expected a number");
    return s_.substr(b, pos_ - b);
  }
  int64_t integer() {
    skip_spaces();
    size_t b = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == b || (pos_ == b + 1 && s_[b] == '-')) fail("expected an integer");
    return std::strtoll(s_.substr(b, pos_ - b).c_str(), nullptr, 10);
  }
  std::string value_name() {
    skip_spaces();
    if (pos_ >= s_.size() || s_[pos_] != '%') fail("expected a value name");
    size_t b = pos_++;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool peek_value() {
    skip_spaces();
    return pos_ < s_.size() && s_[pos_] == '%';
  }
  std::string quoted() {
    expect("\"");
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += c;
      }
    }
    expect("\"");
    return out;
  }
  Type type() {
    skip_spaces();
    if (accept("!ptr<")) {
      Type elem = type();
      expect(",");
      std::string space = word();
      expect(",");
      expect("align<");
      int64_t align = integer();
      expect(">");
      expect(">");
      AddrSpace as = space == "generic" ? AddrSpace::Generic : space == "gmem" ? AddrSpace::Gmem
                   : space == "smem"    ? AddrSpace::Smem    : space == "cmem" ? AddrSpace::Cmem : space == "tmem" ? AddrSpace::Tmem
                   : space == "rmem"    ? AddrSpace::Rmem    : space == "param" ? AddrSpace::Param : (fail("unknown address space '" + space + "'"), AddrSpace::Generic);
      return pointer_type(elem, as, int(align));
    }
    if (accept("vector<")) {
      skip_spaces();
      size_t b = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      int lanes = std::atoi(s_.substr(b, pos_ - b).c_str());
      expect("x");
      Type elem = type();
      expect(">");
      return vector_type(elem, lanes);
    }
    std::string w = word();
    if (w == "i1") return bool_type();
    if (w == "f16") return f16();
    if (w == "bf16") return bf16();
    if (w == "f8E4M3FN") return f8e4m3();
    if (w == "f8E5M2") return f8e5m2();
    if (w == "f4E2M1FN") return f4e2m1();
    if (w == "f8E8M0FNU") return f8e8m0();
    if (w == "f6E2M3FN") return f6e2m3();
    if (w == "f6E3M2FN") return f6e3m2();
    if (w == "f32") return f32();
    if (w == "tf32") return tf32();
    if (w == "f64") return f64();
    if (w == "void") return void_type();
    if (w.size() > 1 && (w[0] == 'i' || w[0] == 'u')) {
      char* end = nullptr;
      long width = std::strtol(w.c_str() + 1, &end, 10);
      if (!*end && width > 0) return int_type(int(width), w[0] == 'i');
    }
    fail("unknown type '" + w + "'");
  }
  std::vector<Type> type_list() {  // "T, T, T" to the end of the line or a ')'
    std::vector<Type> out;
    out.push_back(type());
    while (accept(",")) out.push_back(type());
    return out;
  }

 private:
  const std::string& s_;
  int line_;
  size_t pos_ = 0;
};

class Parser {
 public:
  explicit Parser(const std::string& text) {
    std::istringstream in(text);
    std::string l;
    while (std::getline(in, l)) lines_.push_back(l);
  }

  std::unique_ptr<Module> module() {
    auto m = std::make_unique<Module>();
    Cursor c = cursor();
    c.expect("module {");
    ++at_;
    while (true) {
      if (at_ >= lines_.size()) throw ParseError("unexpected end of text: missing the module's closing '}'");
      Cursor h = cursor();
      if (h.accept("}")) break;
      function(*m);
    }
    return m;
  }

 private:
  Cursor cursor() { return Cursor(at_ < lines_.size() ? lines_[at_] : empty_, int(at_ + 1)); }

  Value* lookup(Cursor& c, const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) c.fail("use of undefined value " + name);
    return it->second;
  }
  Value* operand(Cursor& c) { return lookup(c, c.value_name()); }
  std::vector<Value*> operand_list(Cursor& c) {  // "%a, %b" (possibly empty before ')' or ':')
    std::vector<Value*> out;
    if (!c.peek_value()) return out;
    out.push_back(operand(c));
    while (c.accept(",")) out.push_back(operand(c));
    return out;
  }
  void define(Cursor& c, const std::string& name, Value* v) {
    if (!values_.emplace(name, v).second) c.fail("value " + name + " is defined twice");
  }

  void function(Module& m) {
    Cursor c = cursor();
    FunctionKind kind;
    if (c.accept("func.func")) kind = FunctionKind::Host;
    else if (c.accept("gpu.kernel")) kind = FunctionKind::Kernel;
    else c.fail("expected 'func.func' or 'gpu.kernel'");
    Function* f = m.add_function(c.symbol(), kind);
    values_.clear();
    c.expect("(");
    if (!c.accept(")")) {
      do {
        std::string name = c.value_name();
        c.expect(":");
        define(c, name, f->body->add_arg(c.type()));
      } while (c.accept(","));
      c.expect(")");
    }
    if (c.accept("-> (")) {
      f->result_types = c.type_list();
      c.expect(")");
    }
    if (c.accept("reqntid(")) {
      for (int i = 0; i < 3; ++i) {
        if (i) c.expect(",");
        f->reqntid[i] = int(c.integer());
      }
      c.expect(")");
    }
    if (c.accept("minctasm(")) {
      f->minctasm = int(c.integer());
      c.expect(")");
    }
    c.expect("{");
    if (!c.at_end()) c.fail("unexpected text after '{'");
    ++at_;
    Builder b(f->body.get());
    block_body(b);
    Cursor e = cursor();
    e.expect("}");
    ++at_;
  }

  // Parses ops until a line that closes the block ('}' or '} else {' / '} do (...) {').
  void block_body(Builder& b) {
    while (true) {
      if (at_ >= lines_.size()) throw ParseError("unexpected end of text inside a block");
      Cursor c = cursor();
      if (c.peek("}")) return;
      op(b, c);
    }
  }

  void op(Builder& b, Cursor& c) {
    std::vector<std::string> result_names;
    if (c.peek_value()) {
      result_names.push_back(c.value_name());
      while (c.accept(",")) result_names.push_back(c.value_name());
      c.expect("=");
    }
    OpCode code = opcode_from_name(c.word(), int(at_ + 1));
    auto finish = [&](Op* o) {
      if (o->results.size() != result_names.size()) c.fail("result count does not match the operation");
      for (size_t i = 0; i < result_names.size(); ++i) define(c, result_names[i], o->results[i].get());
      if (!c.at_end()) c.fail("unexpected text at the end of the operation");
    };
    switch (code) {
      case OpCode::Constant: {
        std::string text = c.number_text();
        c.expect(":");
        Type t = c.type();
        Op* o = b.create(code, {}, {t});
        if (t->is_float()) o->float_attr = std::strtod(text.c_str(), nullptr);
        else o->int_attr = std::strtoll(text.c_str(), nullptr, 10);
        ++at_;
        return finish(o);
      }
      case OpCode::Cmp: {
        CmpPredicate p = predicate_from_name(c.word(), int(at_ + 1));
        std::vector<Value*> ops = operand_list(c);
        c.expect(":");
        c.type();
        Op* o = b.create(code, ops, {bool_type()});
        o->int_attr = int64_t(p);
        ++at_;
        return finish(o);
      }
      case OpCode::Cast: case OpCode::Bitcast: case OpCode::PtrToInt: case OpCode::IntToPtr: case OpCode::Load: {
        std::vector<Value*> ops = operand_list(c);
        c.expect(":");
        c.type();
        c.expect("->");
        Op* o = b.create(code, ops, c.type_list());
        ++at_;
        return finish(o);
      }
      case OpCode::Math: {
        std::string fn = c.word();
        std::vector<Value*> ops = operand_list(c);
        c.expect(":");
        Op* o = b.create(code, ops, c.type_list());
        o->str_attr = fn;
        ++at_;
        return finish(o);
      }
      case OpCode::Shuffle: case OpCode::Vote: case OpCode::Atomic: {
        std::string kind = c.word();
        std::vector<int64_t> memory;
        try {
          if (code == OpCode::Shuffle) kind = std::to_string(int(shuffle_kind_from_name(kind)));
          else if (code == OpCode::Vote) kind = std::to_string(int(vote_kind_from_name(kind)));
          else {
            kind = std::to_string(int(atomic_kind_from_name(kind)));
            memory.push_back(int64_t(memory_order_from_name(c.word())));
            memory.push_back(int64_t(memory_scope_from_name(c.word())));
          }
        } catch (const std::invalid_argument& e) {
          c.fail(e.what());
        }
        std::vector<Value*> ops = operand_list(c);
        c.expect(":");
        Op* o = b.create(code, ops, c.type_list());
        o->int_attr = std::atoll(kind.c_str());
        o->ints = memory;
        ++at_;
        return finish(o);
      }
      case OpCode::Assert: {
        std::vector<Value*> ops = {operand(c)};
        c.expect(",");
        std::string message = c.quoted();
        c.expect("at");
        std::string file = c.quoted();
        c.expect(":");
        int64_t line = c.integer();
        Op* o = b.create(code, ops, {});
        o->str_attr = message;
        o->file = file;
        o->line = int(line);
        ++at_;
        return finish(o);
      }
      case OpCode::Alloca: case OpCode::SmemAlloc: {
        int64_t n = c.integer();
        c.expect(":");
        Op* o = b.create(code, {}, c.type_list());
        o->int_attr = n;
        ++at_;
        return finish(o);
      }
      case OpCode::VecExtract: case OpCode::VecInsert: {
        std::vector<Value*> ops = operand_list(c);
        c.expect("[");
        int64_t lane = c.integer();
        c.expect("]");
        c.expect(":");
        Op* o = b.create(code, ops, c.type_list());
        o->int_attr = lane;
        ++at_;
        return finish(o);
      }
      case OpCode::ThreadIdx: case OpCode::BlockIdx: case OpCode::BlockDim: case OpCode::GridDim: {
        std::string dim = c.word();
        if (dim != "x" && dim != "y" && dim != "z") c.fail("expected a dimension x, y or z");
        c.expect(":");
        Op* o = b.create(code, {}, c.type_list());
        o->int_attr = dim[0] - 'x';
        ++at_;
        return finish(o);
      }
      case OpCode::Printf: {
        std::string fmt = c.quoted();
        std::vector<Value*> ops;
        if (c.accept("(")) {
          ops = operand_list(c);
          c.expect(")");
          c.expect(":");
          c.type_list();
        }
        Op* o = b.create(code, ops, {});
        o->str_attr = fmt;
        ++at_;
        return finish(o);
      }
      case OpCode::CpAsync: case OpCode::CpAsyncCommit: case OpCode::CpAsyncWait: case OpCode::LdMatrix:
      case OpCode::CpAsyncMbarrierArrive:
      case OpCode::StMatrix: case OpCode::Wgmma: case OpCode::WgmmaFence: case OpCode::WgmmaCommit:
      case OpCode::WgmmaWait: case OpCode::MbarrierInit: case OpCode::MbarrierArrive: case OpCode::MbarrierWait:
      case OpCode::Fence: case OpCode::TmaLoad: case OpCode::TmaStore: case OpCode::BulkLoad: case OpCode::BulkCommit:
      case OpCode::BulkWait: case OpCode::TmaDescOp: case OpCode::TmaEncode:
      case OpCode::TmaDescCopy: case OpCode::TmaDescReplace: case OpCode::TmaDescCpFenceRelease:
      case OpCode::ClusterSreg: case OpCode::ClusterBarrier: case OpCode::MapSharedRank: case OpCode::ElectOne:
      case OpCode::SyncWarp: case OpCode::SetMaxNReg: case OpCode::Prmt: case OpCode::WarpUniform:
      case OpCode::ClcTryCancel: case OpCode::ClcQueryCancel:
      case OpCode::TmemAlloc: case OpCode::TmemDealloc: case OpCode::TmemRelinquish: case OpCode::Tcgen05Mma:
      case OpCode::Tcgen05Commit: case OpCode::Tcgen05Ld: case OpCode::Tcgen05St: case OpCode::Tcgen05Wait:
      case OpCode::Tcgen05Fence: case OpCode::Tcgen05Cp: case OpCode::WarpRedux: case OpCode::MmaSyncBlockScaled: {
        // SM80 copies, wgmma, the SM90 async ops and the SM90 warp / cluster ops: `[int_attr, ints...] operands : result types`
        std::vector<int64_t> attrs;
        if (c.accept("[")) {
          attrs.push_back(c.integer());
          while (c.accept(",")) attrs.push_back(c.integer());
          c.expect("]");
        }
        std::vector<Value*> ops;
        if (c.peek_value()) ops = operand_list(c);
        std::vector<Type> types;
        if (c.accept(":")) types = c.type_list();
        Op* o = b.create(code, ops, types);
        if (!attrs.empty()) o->int_attr = attrs[0];
        o->ints.assign(attrs.size() > 1 ? attrs.begin() + 1 : attrs.end(), attrs.end());
        ++at_;
        return finish(o);
      }
      case OpCode::MmaSync: {
        // `mNnNkK operands : operand types -> result types`
        std::string shape = c.word();
        int64_t m = 0, n = 0, k = 0;
        if (std::sscanf(shape.c_str(), "m%lldn%lldk%lld", (long long*)&m, (long long*)&n, (long long*)&k) != 3)
          c.fail("expected the mma shape mMnNkK, got '" + shape + "'");
        std::vector<Value*> ops = operand_list(c);
        c.expect(":");
        c.type_list();  // the operands' types, which the operands already have
        c.expect("->");
        Op* o = b.create(code, ops, c.type_list());
        o->ints = {m, n, k};
        ++at_;
        return finish(o);
      }
      case OpCode::NamedBarrier: {
        // `sync|arrive id, count`
        std::string kind = c.word();
        if (kind != "sync" && kind != "arrive") c.fail("expected sync or arrive, got '" + kind + "'");
        Op* o = b.create(code, operand_list(c), {});
        o->int_attr = int64_t(kind == "arrive" ? NamedBarrierKind::Arrive : NamedBarrierKind::Sync);
        ++at_;
        return finish(o);
      }
      case OpCode::InlineAsm: {
        // `[sideeffect] "asm text", "constraints" [(operands) : operand types] [-> result type]`
        const bool side_effects = c.accept("sideeffect");
        std::string text = c.quoted();
        c.expect(",");
        std::string constraints = c.quoted();
        std::vector<Value*> ops;
        if (c.accept("(")) {
          ops = operand_list(c);
          c.expect(")");
          c.expect(":");
          c.type_list();  // the operands' types, which the operands already have
        }
        std::vector<Type> results;
        if (c.accept("->")) results = c.type_list();
        Op* o = b.create(code, ops, results);
        o->str_attr = constraints + std::string(1, '\0') + text;
        o->int_attr = side_effects ? 1 : 0;
        ++at_;
        return finish(o);
      }
      case OpCode::Launch: return launch(b, c, result_names);
      case OpCode::For: return for_op(b, c, result_names);
      case OpCode::If: return if_op(b, c, result_names);
      case OpCode::While: return while_op(b, c, result_names);
      default: {
        std::vector<Value*> ops = operand_list(c);
        std::vector<Type> types;
        if (c.accept(":")) types = c.type_list();
        bool types_are_operands = code == OpCode::Yield || code == OpCode::Return || code == OpCode::Condition ||
                                  code == OpCode::Store;
        Op* o = b.create(code, ops, types_are_operands ? std::vector<Type>{} : types);
        ++at_;
        return finish(o);
      }
    }
  }

  void launch(Builder& b, Cursor& c, const std::vector<std::string>& results) {
    if (!results.empty()) c.fail("launch has no results");
    std::string kernel = c.symbol();
    auto group = [&](const char* name) {
      c.expect(std::string(name) + "(");
      std::vector<Value*> v = operand_list(c);
      c.expect(")");
      return v;
    };
    std::vector<Value*> grid = group("grid"), block = group("block"), smem = group("smem"), stream = group("stream");
    std::vector<Value*> cluster;
    if (c.peek("cluster(")) cluster = group("cluster");
    int64_t flags = 0;
    if (c.accept("cooperative")) flags |= kLaunchCooperative;
    if (c.accept("pdl")) flags |= kLaunchPdl;
    std::vector<Value*> events;
    std::vector<int64_t> event_attrs(3, 0);
    // "completion_event(%e, flags)" / "programmatic_event(%e, flags, trigger)"
    auto event = [&](const char* name, int64_t flag, std::initializer_list<size_t> attr_slots) {
      if (!c.accept(std::string(name) + "(")) return;
      flags |= flag;
      events.push_back(operand(c));
      for (size_t slot : attr_slots) {
        c.expect(",");
        event_attrs[slot] = c.integer();
      }
      c.expect(")");
    };
    event("completion_event", kLaunchCompletionEvent, {0});
    event("programmatic_event", kLaunchProgrammaticEvent, {1, 2});
    std::vector<Value*> args = group("args");
    if (c.accept(":")) c.type_list();
    if (grid.size() != 3 || block.size() != 3 || smem.size() != 1 || stream.size() != 1 ||
        (!cluster.empty() && cluster.size() != 3))
      c.fail("malformed launch");
    std::vector<Value*> ops = grid;
    ops.insert(ops.end(), block.begin(), block.end());
    ops.push_back(smem[0]);
    ops.push_back(stream[0]);
    // Without a cluster the builder repeats the grid in the cluster slots (see Builder::launch).
    const std::vector<Value*>& cl = cluster.empty() ? grid : cluster;
    ops.insert(ops.end(), cl.begin(), cl.end());
    ops.insert(ops.end(), events.begin(), events.end());
    ops.insert(ops.end(), args.begin(), args.end());
    Op* o = b.create(OpCode::Launch, ops, {});
    if (!events.empty()) o->ints = event_attrs;
    o->str_attr = kernel;
    o->int_attr = flags | (cluster.empty() ? int64_t(0) : int64_t(kLaunchCluster));
    ++at_;
    if (!c.at_end()) c.fail("unexpected text at the end of the launch");
  }

  std::vector<Type> result_types_suffix(Cursor& c) {
    std::vector<Type> out;
    if (c.accept("-> (")) {
      out = c.type_list();
      c.expect(")");
    }
    return out;
  }

  void define_results(Cursor& c, Op* o, const std::vector<std::string>& names) {
    if (o->results.size() != names.size()) c.fail("result count does not match the operation");
    for (size_t i = 0; i < names.size(); ++i) define(c, names[i], o->results[i].get());
  }

  // Parses a region's ops; the current line must then be a closing line.
  void region(Block* block) {
    Builder inner(block);
    block_body(inner);
  }

  void for_op(Builder& b, Cursor& c, const std::vector<std::string>& results) {
    std::string iv = c.value_name();
    c.expect("=");
    Value* lb = operand(c);
    c.expect("to");
    Value* ub = operand(c);
    c.expect("step");
    Value* step = operand(c);
    std::vector<std::string> iter_names;
    std::vector<Value*> inits;
    if (c.accept("iter(")) {
      do {
        iter_names.push_back(c.value_name());
        c.expect("=");
        inits.push_back(operand(c));
      } while (c.accept(","));
      c.expect(")");
    }
    int64_t unroll = 0;
    if (c.accept("{unroll =")) {
      unroll = c.integer();
      c.expect("}");
    }
    c.expect(":");
    c.type();
    std::vector<Type> rtypes = result_types_suffix(c);
    c.expect("{");
    std::vector<Value*> ops = {lb, ub, step};
    ops.insert(ops.end(), inits.begin(), inits.end());
    Op* o = b.create(OpCode::For, ops, rtypes, 1);
    o->int_attr = unroll;
    Block* body = o->region_block(0);
    define(c, iv, body->add_arg(lb->type));
    for (size_t i = 0; i < inits.size(); ++i) define(c, iter_names[i], body->add_arg(inits[i]->type));
    ++at_;
    region(body);
    Cursor e = cursor();
    e.expect("}");
    ++at_;
    define_results(c, o, results);
  }

  void if_op(Builder& b, Cursor& c, const std::vector<std::string>& results) {
    Value* cond = operand(c);
    std::vector<Type> rtypes = result_types_suffix(c);
    c.expect("{");
    Op* o = b.create(OpCode::If, {cond}, rtypes, 2);
    ++at_;
    region(o->region_block(0));
    Cursor mid = cursor();
    mid.expect("} else {");
    ++at_;
    region(o->region_block(1));
    Cursor e = cursor();
    e.expect("}");
    ++at_;
    define_results(c, o, results);
  }

  void while_op(Builder& b, Cursor& c, const std::vector<std::string>& results) {
    c.expect("(");
    std::vector<std::string> before_names;
    std::vector<Value*> inits;
    if (!c.accept(")")) {
      do {
        before_names.push_back(c.value_name());
        c.expect("=");
        inits.push_back(operand(c));
      } while (c.accept(","));
      c.expect(")");
    }
    std::vector<Type> rtypes = result_types_suffix(c);
    c.expect("{");
    Op* o = b.create(OpCode::While, inits, rtypes, 2);
    Block* before = o->region_block(0);
    for (size_t i = 0; i < inits.size(); ++i) define(c, before_names[i], before->add_arg(inits[i]->type));
    ++at_;
    region(before);
    Cursor mid = cursor();
    mid.expect("} do (");
    Op* cond = before->terminator();
    if (!cond || cond->code != OpCode::Condition) mid.fail("the before region of a while must end with condition");
    Block* after = o->region_block(1);
    size_t k = 1;
    if (!mid.accept(")")) {
      do {
        if (k >= cond->operands.size()) mid.fail("more after-region arguments than forwarded values");
        define(mid, mid.value_name(), after->add_arg(cond->operands[k++]->type));
      } while (mid.accept(","));
      mid.expect(")");
    }
    mid.expect("{");
    ++at_;
    region(after);
    Cursor e = cursor();
    e.expect("}");
    ++at_;
    define_results(c, o, results);
  }

  std::vector<std::string> lines_;
  std::string empty_;
  size_t at_ = 0;
  std::unordered_map<std::string, Value*> values_;
};

}  // namespace

std::unique_ptr<Module> parse_module(const std::string& text) { return Parser(text).module(); }

}  // namespace opencute::ir
