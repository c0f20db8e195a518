// PTX text -> Module: statements, declarations, register scopes, operands; then each
// instruction decoded by its family (ptx_families()).
//
// What it reads is the subset libNVVM writes, inline assembly included: module directives,
// .global variables with initialisers, module- and kernel-level .shared (static and extern),
// kernels (.entry) with their .param list, .reg / .local declarations, labels, `{ }` scopes that
// declare registers and labels of their own (inline asm blocks), predicated instructions and the
// operand forms (registers, special registers, immediates including 0f/0d floats, [addresses],
// {vectors}, `_` sinks, labels and symbols). Anything else is a PtxError naming the line.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "emulator/ptx/ptx_program.h"

namespace opencute::emulator::ptx {

namespace {

struct Stmt {
  enum Kind { Plain, Open, Close, Label } kind = Plain;
  std::string text;
  int line = 0;
  UserLine user;  // the OpenCuTe source line of the inline asm it comes from, if marked
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// OpenCuTe's lowering starts some inline asm with `// opencute-loc <line> <file>` (the file's
// unusual bytes as %XX; target/nvvm/lower_sm100.cpp); libNVVM brackets each inline asm with `// begin inline asm` and
// `// end inline asm`, so the mark holds until the end of its asm.
void read_comment(const std::string& comment, UserLine* user) {
  static const std::string mark = "// opencute-loc ";
  if (comment.rfind(mark, 0) == 0) {
    const size_t sp = comment.find(' ', mark.size());
    if (sp == std::string::npos) return;
    user->line = std::atoi(comment.c_str() + mark.size());
    user->file.clear();
    std::string f = trim(comment.substr(sp + 1));
    for (size_t k = 0; k < f.size(); ++k) {  // %XX: a byte the lowering escaped
      if (f[k] == '%' && k + 2 < f.size() && std::isxdigit(static_cast<unsigned char>(f[k + 1])) &&
          std::isxdigit(static_cast<unsigned char>(f[k + 2]))) {
        user->file += char(std::stoi(f.substr(k + 1, 2), nullptr, 16));
        k += 2;
      } else {
        user->file += f[k];
      }
    }
  } else if (comment.find("inline asm") != std::string::npos) {
    *user = UserLine{};
  }
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' || c == '%'; }

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

[[noreturn]] void fail(int line, const std::string& what) {
  throw PtxError("PTX line " + std::to_string(line) + ": " + what);
}

std::vector<Stmt> split_statements(const std::string& src) {
  std::vector<Stmt> out;
  std::string buf;
  int line = 1, buf_line = 0, depth = 0;
  UserLine user;
  auto flush = [&](Stmt::Kind kind) {
    std::string t = trim(buf);
    if (!t.empty() || kind != Stmt::Plain) out.push_back(Stmt{kind, t, buf_line ? buf_line : line, user});
    buf.clear();
    buf_line = 0;
  };
  for (size_t i = 0; i < src.size(); ++i) {
    char c = src[i];
    if (c == '\n') {
      // .version, .target, .address_size and the debug directives .file / .loc end at the end of
      // their line (no semicolon).
      const std::string t = trim(buf);
      if (depth == 0 && (t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 || t.rfind(".address_size", 0) == 0 ||
                         t.rfind(".file", 0) == 0 || t.rfind(".loc", 0) == 0))
        flush(Stmt::Plain);
      ++line;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      const size_t start = i;
      while (i + 1 < src.size() && src[i + 1] != '\n') ++i;  // the newline is read next
      read_comment(src.substr(start, i + 1 - start), &user);
      buf += ' ';
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < src.size() && !(src[i] == '*' && src[i + 1] == '/')) line += src[i++] == '\n';
      ++i;
      continue;
    }
    if (!buf_line && !std::isspace(static_cast<unsigned char>(c))) buf_line = line;
    if (c == '"') {
      buf += c;
      for (++i; i < src.size() && src[i] != '"'; ++i) buf += src[i];
      buf += '"';
      continue;
    }
    if (c == '{') {
      std::string t = trim(buf);
      if (t.empty()) {
        buf_line = line;
        flush(Stmt::Open);
      } else if (depth == 0 &&
                 (t.find(".entry") != std::string::npos || t.find(".func") != std::string::npos ||
                  t.rfind(".section", 0) == 0) &&
                 t.find('=') == std::string::npos) {
        flush(Stmt::Plain);
        buf_line = line;
        flush(Stmt::Open);
      } else {
        ++depth;
        buf += c;
      }
      continue;
    }
    if (c == '}') {
      if (depth > 0) {
        --depth;
        buf += c;
        continue;
      }
      flush(Stmt::Plain);
      buf_line = line;
      flush(Stmt::Close);
      continue;
    }
    if (c == ';' && depth == 0) {
      flush(Stmt::Plain);
      continue;
    }
    if (c == ':' && depth == 0 && (i + 1 >= src.size() || src[i + 1] != ':') && (i == 0 || src[i - 1] != ':')) {
      std::string t = trim(buf);
      if (is_identifier(t) && t[0] != '.' && t[0] != '%') {
        buf = t;
        flush(Stmt::Label);
        continue;
      }
    }
    buf += c;
  }
  if (!trim(buf).empty()) fail(line, "the text ends inside a statement: '" + trim(buf) + "'");
  return out;
}

// Splits at top-level separators (commas outside [] {} ()).
std::vector<std::string> split_top(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const std::unordered_map<std::string, Special>& special_registers() {
  static const std::unordered_map<std::string, Special> m = {
      {"%tid.x", Special::TidX}, {"%tid.y", Special::TidY}, {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX}, {"%ntid.y", Special::NtidY}, {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX}, {"%ctaid.y", Special::CtaidY}, {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX}, {"%nctaid.y", Special::NctaidY}, {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::LaneId}, {"%warpid", Special::WarpId}, {"%nwarpid", Special::NWarpId},
      {"%clusterid.x", Special::ClusterIdX}, {"%clusterid.y", Special::ClusterIdY},
      {"%clusterid.z", Special::ClusterIdZ}, {"%nclusterid.x", Special::NClusterIdX},
      {"%nclusterid.y", Special::NClusterIdY}, {"%nclusterid.z", Special::NClusterIdZ},
      {"%cluster_ctaid.x", Special::ClusterCtaidX}, {"%cluster_ctaid.y", Special::ClusterCtaidY},
      {"%cluster_ctaid.z", Special::ClusterCtaidZ}, {"%cluster_nctaid.x", Special::ClusterNctaidX},
      {"%cluster_nctaid.y", Special::ClusterNctaidY}, {"%cluster_nctaid.z", Special::ClusterNctaidZ},
      {"%cluster_ctarank", Special::ClusterCtaRank}, {"%cluster_nctarank", Special::ClusterNctaRank},
      {"%is_explicit_cluster", Special::IsExplicitCluster}, {"%lanemask_eq", Special::LanemaskEq},
      {"%lanemask_lt", Special::LanemaskLt}, {"%lanemask_le", Special::LanemaskLe},
      {"%lanemask_gt", Special::LanemaskGt}, {"%lanemask_ge", Special::LanemaskGe}, {"%clock", Special::Clock},
      {"%clock64", Special::Clock64}, {"%globaltimer", Special::GlobalTimer}, {"%smid", Special::SmId},
      {"%nsmid", Special::NSmId}, {"%gridid", Special::GridId}, {"%dynamic_smem_size", Special::DynamicSmemSize},
      {"%total_smem_size", Special::TotalSmemSize}, {"%aggr_smem_size", Special::AggrSmemSize}};
  return m;
}

int64_t parse_int(const std::string& s, int line) {
  try {
    size_t pos = 0;
    int64_t v;
    std::string t = s;
    if (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.pop_back();
    bool neg = !t.empty() && t[0] == '-';
    std::string body = neg ? t.substr(1) : t;
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X'))
      v = int64_t(std::stoull(body.substr(2), &pos, 16)), pos += 2;
    else
      v = int64_t(std::stoull(body, &pos, 10));
    if (pos != body.size()) fail(line, "not a number: '" + s + "'");
    return neg ? -v : v;
  } catch (const std::logic_error&) {
    fail(line, "not a number: '" + s + "'");
  }
}

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
}

int64_t parse_immediate(const std::string& s, int line) {
  if (s.size() == 10 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F'))
    return int64_t(std::stoull(s.substr(2), nullptr, 16));
  if (s.size() == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D'))
    return int64_t(std::stoull(s.substr(2), nullptr, 16));
  return parse_int(s, line);
}

struct Scope {
  int parent = -1;
  std::unordered_map<std::string, int> regs;
  std::unordered_map<std::string, int> labels;  // -> pc
};

struct SymbolInfo {
  Space space;
  int64_t address;
};

class Parser {
 public:
  explicit Parser(Module& m) : m_(m) {}
  void run(const std::vector<Stmt>& stmts);

 private:
  void module_statement(const Stmt& s);
  void begin_kernel(const Stmt& header);
  void kernel_statement(const Stmt& s);
  void declare_registers(const std::vector<std::string>& w, int line);
  VarDecl parse_var(const std::string& text, Space space, int line);
  Operand parse_operand(const std::string& s, int line);
  int find_reg(const std::string& name) const;
  void finish_kernel();

  Module& m_;
  std::vector<VarDecl> module_shared_;
  std::unordered_map<std::string, SymbolInfo> module_symbols_;
  Kernel* k_ = nullptr;  // the kernel being parsed
  int depth_ = 0;
  std::vector<Scope> scopes_;
  int scope_ = -1;
  std::vector<int> inst_scope_;
  std::unordered_map<std::string, SymbolInfo> kernel_symbols_;
};

void Parser::run(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts) {
    if (!k_) {
      module_statement(s);
      continue;
    }
    kernel_statement(s);
  }
  if (k_) fail(stmts.empty() ? 0 : stmts.back().line, "the text ends inside a function");
}

VarDecl Parser::parse_var(const std::string& text, Space space, int line) {
  VarDecl v;
  v.space = space;
  std::string decl = text, init;
  size_t eq = text.find('=');
  if (eq != std::string::npos) decl = text.substr(0, eq), init = trim(text.substr(eq + 1));
  std::vector<std::string> w = words(decl);
  int elem_bytes = 0;
  std::string name;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == ".align") {
      v.align = int(parse_int(w.at(i + 1), line));
      ++i;
    } else if (w[i] == ".extern") {
      v.dynamic = true;
    } else if (w[i][0] == '.') {
      PType t = ptype_from_name(w[i].substr(1));
      if (t != PType::None) elem_bytes = std::max(1, ptype_bits(t) / 8);
    } else {
      name = w[i];
    }
  }
  if (name.empty() || !elem_bytes) fail(line, "cannot read the declaration '" + text + "'");
  int64_t count = 1;
  size_t lb = name.find('[');
  if (lb != std::string::npos) {
    std::string n = name.substr(lb + 1, name.find(']') - lb - 1);
    count = n.empty() ? 0 : parse_int(n, line);
    name = name.substr(0, lb);
  }
  v.name = name;
  v.size = count * elem_bytes;
  if (!init.empty()) {
    if (elem_bytes != 1) fail(line, "initialisers of elements wider than a byte are not supported: '" + text + "'");
    std::string body = init;
    if (body.front() == '{') body = body.substr(1, body.size() - 2);
    for (auto& x : split_top(body, ',')) v.init.push_back(uint8_t(parse_int(x, line)));
  }
  if (v.dynamic && space != Space::Shared) fail(line, "only shared memory may be extern: '" + text + "'");
  return v;
}

void Parser::module_statement(const Stmt& s) {
  if (s.kind == Stmt::Open || s.kind == Stmt::Close || s.kind == Stmt::Label)
    fail(s.line, "unexpected '" + s.text + "' outside a function");
  std::vector<std::string> w = words(s.text);
  if (w.empty()) return;
  const std::string& d = w[0];
  if (d == ".version" || d == ".address_size" || d == ".file") return;
  if (d == ".target") {
    m_.target = w.size() > 1 ? w[1] : "";
    return;
  }
  bool is_entry = s.text.find(".entry") != std::string::npos;
  bool is_func = !is_entry && s.text.find(".func") != std::string::npos;
  if (is_entry) {
    begin_kernel(s);
    return;
  }
  if (is_func) {
    return;  // a declaration (vprintf); definitions were taken out before parsing
  }
  bool shared = s.text.find(".shared") != std::string::npos, global = s.text.find(".global") != std::string::npos;
  bool constant = s.text.find(".const") != std::string::npos;
  if (shared) {
    VarDecl v = parse_var(s.text, Space::Shared, s.line);
    module_shared_.push_back(v);
    return;
  }
  if (global || constant) {
    VarDecl v = parse_var(s.text, Space::Global, s.line);
    auto storage = std::make_unique<std::vector<uint8_t>>(size_t(std::max<int64_t>(v.size, 1)) + 64, 0);
    uintptr_t base = (reinterpret_cast<uintptr_t>(storage->data()) + 63) & ~uintptr_t(63);
    std::memcpy(reinterpret_cast<void*>(base), v.init.data(), std::min<size_t>(v.init.size(), size_t(v.size)));
    v.offset = int64_t(base);
    module_symbols_[v.name] = SymbolInfo{Space::Global, v.offset};
    m_.globals.push_back(v);
    m_.global_storage.push_back(std::move(storage));
    return;
  }
  if (d == ".visible" || d == ".weak" || d == ".extern") fail(s.line, "cannot read the declaration '" + s.text + "'");
  fail(s.line, "unsupported module directive '" + s.text + "'");
}

void Parser::begin_kernel(const Stmt& s) {
  m_.kernels.emplace_back();
  k_ = &m_.kernels.back();
  size_t lp = s.text.find('('), rp = s.text.rfind(')');
  std::vector<std::string> head = words(s.text.substr(0, lp));
  k_->name = head.back();
  if (lp != std::string::npos && rp != std::string::npos) {
    int offset = 0;
    for (const std::string& p : split_top(s.text.substr(lp + 1, rp - lp - 1), ',')) {
      std::vector<std::string> w = words(p);
      ParamDecl pd;
      int elem = 0;
      int64_t count = 1;
      for (size_t i = 0; i < w.size(); ++i) {
        if (w[i] == ".param" || w[i] == ".ptr" || w[i] == ".global" || w[i] == ".shared" || w[i] == ".const" ||
            w[i] == ".local")
          continue;
        if (w[i] == ".align") {
          pd.align = int(parse_int(w.at(++i), s.line));
          continue;
        }
        if (w[i][0] == '.') {
          PType t = ptype_from_name(w[i].substr(1));
          if (t == PType::None) fail(s.line, "unsupported parameter '" + p + "'");
          elem = std::max(1, ptype_bits(t) / 8);
          continue;
        }
        pd.name = w[i];
      }
      size_t lb = pd.name.find('[');
      if (lb != std::string::npos) {
        count = parse_int(pd.name.substr(lb + 1, pd.name.find(']') - lb - 1), s.line);
        pd.name = pd.name.substr(0, lb);
      } else if (pd.align == 1) {
        pd.align = elem;
      }
      pd.size = int(count * elem);
      offset = (offset + pd.align - 1) / pd.align * pd.align;
      pd.offset = offset;
      offset += pd.size;
      k_->params.push_back(pd);
    }
    k_->param_bytes = offset;
  }
  kernel_symbols_.clear();
  for (auto& p : k_->params) kernel_symbols_[p.name] = SymbolInfo{Space::Param, p.offset};
  // Module-level shared variables are every kernel's; static ones first, then the dynamic window.
  int64_t off = 0;
  for (const VarDecl& v : module_shared_)
    if (!v.dynamic) {
      off = (off + v.align - 1) / v.align * v.align;
      VarDecl d = v;
      d.offset = off;
      off += v.size;
      kernel_symbols_[v.name] = SymbolInfo{Space::Shared, d.offset};
      k_->shared.push_back(d);
    }
  k_->static_shared_bytes = off;
  // The dynamic window starts 1024-aligned, so that a kernel's own alignment of it (swizzled
  // TMA / wgmma tiles) holds for the shared-window addresses the executor computes with.
  k_->dynamic_shared_offset = (off + 1023) / 1024 * 1024;
  for (const VarDecl& v : module_shared_)
    if (v.dynamic) kernel_symbols_[v.name] = SymbolInfo{Space::Shared, k_->dynamic_shared_offset};
  depth_ = 0;
  scopes_.clear();
  inst_scope_.clear();
  scope_ = -1;
}

int Parser::find_reg(const std::string& name) const {
  for (int s = scope_; s >= 0; s = scopes_[size_t(s)].parent) {
    auto it = scopes_[size_t(s)].regs.find(name);
    if (it != scopes_[size_t(s)].regs.end()) return it->second;
  }
  return -1;
}

void Parser::declare_registers(const std::vector<std::string>& w, int line) {
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i][0] == '.') continue;  // the type, .v2 ...
    const std::string& n = w[i];
    size_t lt = n.find('<');
    auto add = [&](const std::string& name) {
      scopes_[size_t(scope_)].regs[name] = k_->num_regs++;
      k_->reg_names.push_back(name);
    };
    if (lt == std::string::npos) {
      add(n);
    } else {
      int64_t count = parse_int(n.substr(lt + 1, n.find('>') - lt - 1), line);
      std::string stem = n.substr(0, lt);
      for (int64_t r = 0; r < count; ++r) add(stem + std::to_string(r));
    }
  }
}

Operand Parser::parse_operand(const std::string& raw, int line) {
  std::string s = trim(raw);
  Operand o;
  if (s.empty()) fail(line, "an empty operand");
  if (s == "_") {
    o.kind = Operand::Sink;
    return o;
  }
  if (s[0] == '!') {
    o = parse_operand(s.substr(1), line);
    o.negate = true;
    return o;
  }
  if (s[0] != '[' && s[0] != '{' && s.find('|') != std::string::npos) {  // setp's p|q
    o.kind = Operand::Vec;
    for (const std::string& e : split_top(s, '|')) o.elems.push_back(parse_operand(e, line));
    return o;
  }
  if (s[0] == '{') {
    o.kind = Operand::Vec;
    for (const std::string& e : split_top(s.substr(1, s.size() - 2), ',')) o.elems.push_back(parse_operand(e, line));
    return o;
  }
  if (s[0] == '[') {
    std::string body = trim(s.substr(1, s.size() - 2));
    std::vector<std::string> parts = split_top(body, ',');
    if (parts.size() > 1) {  // [tensorMap, {c0, c1, ...}]: a Vec of the map's address and the coordinates
      o.kind = Operand::Vec;
      for (const std::string& e : parts) o.elems.push_back(parse_operand(e, line));
      o.symbol = "[" + body + "]";
      return o;
    }
    o.kind = Operand::Addr;
    std::string base = body, off;
    size_t plus = body.find('+', 1);
    size_t minus = body.find('-', 1);
    if (plus != std::string::npos) base = trim(body.substr(0, plus)), off = trim(body.substr(plus + 1));
    else if (minus != std::string::npos && body[0] != '-') base = trim(body.substr(0, minus)), off = trim(body.substr(minus));
    if (!off.empty()) o.imm = parse_int(off, line);
    if (looks_numeric(base)) {
      o.imm += parse_int(base, line);
      return o;
    }
    if (base[0] == '%' || find_reg(base) >= 0) {  // inline asm names registers without %
      o.reg = find_reg(base);
      if (o.reg < 0) fail(line, "undeclared register " + base);
      o.symbol = base;
      return o;
    }
    auto kt = kernel_symbols_.find(base);
    const SymbolInfo* si = kt != kernel_symbols_.end() ? &kt->second : nullptr;
    if (!si) {
      auto mt = module_symbols_.find(base);
      if (mt == module_symbols_.end()) fail(line, "unknown symbol " + base);
      si = &mt->second;
    }
    o.space = si->space;
    o.imm += si->address;
    o.symbol = base;
    return o;
  }
  if (s[0] == '%') {
    int r = find_reg(s);
    if (r >= 0) {
      o.kind = Operand::Reg;
      o.reg = r;
      o.symbol = s;
      return o;
    }
    auto it = special_registers().find(s);
    if (it == special_registers().end()) fail(line, "undeclared register " + s);
    o.kind = Operand::Spec;
    o.special = it->second;
    o.symbol = s;
    return o;
  }
  if (looks_numeric(s)) {
    o.kind = Operand::Imm;
    o.imm = parse_immediate(s, line);
    return o;
  }
  // A register of an inline-asm scope (no % prefix), a symbol or a label.
  int r = find_reg(s);
  if (r >= 0) {
    o.kind = Operand::Reg;
    o.reg = r;
    o.symbol = s;
    return o;
  }
  auto kt = kernel_symbols_.find(s);
  if (kt != kernel_symbols_.end() || module_symbols_.count(s)) {
    const SymbolInfo& si = kt != kernel_symbols_.end() ? kt->second : module_symbols_.at(s);
    o.kind = Operand::Imm;
    o.space = si.space;
    o.imm = si.address;
    o.symbol = s;
    return o;
  }
  o.kind = Operand::Label;
  o.symbol = s;
  return o;
}

void Parser::kernel_statement(const Stmt& s) {
  if (s.kind == Stmt::Open) {
    scopes_.push_back(Scope{scope_, {}, {}});
    scope_ = int(scopes_.size()) - 1;
    ++depth_;
    return;
  }
  if (s.kind == Stmt::Close) {
    scope_ = scopes_[size_t(scope_)].parent;
    if (--depth_ == 0) finish_kernel();
    return;
  }
  if (s.kind == Stmt::Label) {
    scopes_[size_t(scope_)].labels[s.text] = int(k_->code.size());
    return;
  }
  std::vector<std::string> w = words(s.text);
  if (w.empty()) return;
  if (w[0] == ".reg") {
    declare_registers(w, s.line);
    return;
  }
  if (w[0] == ".pragma" || w[0] == ".loc" || w[0] == ".file") return;
  if (w[0] == ".local" || w[0] == ".shared") {
    Space sp = w[0] == ".local" ? Space::Local : Space::Shared;
    VarDecl v = parse_var(s.text, sp, s.line);
    if (sp == Space::Local) {
      k_->local_bytes = (k_->local_bytes + v.align - 1) / v.align * v.align;
      v.offset = k_->local_bytes;
      k_->local_bytes += v.size;
      k_->locals.push_back(v);
    } else {
      if (v.dynamic) fail(s.line, "extern shared memory inside a function is not supported");
      int64_t off = (k_->static_shared_bytes + v.align - 1) / v.align * v.align;
      v.offset = off;
      k_->static_shared_bytes = off + v.size;
      k_->dynamic_shared_offset = (k_->static_shared_bytes + 1023) / 1024 * 1024;
      k_->shared.push_back(v);
      // Variables demoted into the function come before the dynamic window: it moves past them.
      for (const VarDecl& m : module_shared_)
        if (m.dynamic) kernel_symbols_[m.name] = SymbolInfo{Space::Shared, k_->dynamic_shared_offset};
    }
    kernel_symbols_[v.name] = SymbolInfo{sp, v.offset};
    return;
  }
  if (w[0][0] == '.') fail(s.line, "unsupported directive '" + s.text + "' in a function");
  Inst inst;
  inst.line = s.line;
  inst.user = s.user;
  inst.text = s.text;
  std::string rest = s.text;
  if (rest[0] == '@') {
    size_t sp = rest.find_first_of(" \t");
    std::string g = rest.substr(1, sp - 1);
    if (g[0] == '!') inst.guard_negated = true, g = g.substr(1);
    inst.guard = find_reg(g);
    if (inst.guard < 0) fail(s.line, "undeclared predicate " + g);
    rest = trim(rest.substr(sp));
  }
  size_t sp = rest.find_first_of(" \t");
  inst.opcode = rest.substr(0, sp);
  std::string operands = sp == std::string::npos ? "" : trim(rest.substr(sp));
  size_t dot = inst.opcode.find('.');
  inst.base = inst.opcode.substr(0, dot);
  if (dot != std::string::npos) {
    std::string m = inst.opcode.substr(dot + 1);
    size_t p = 0;
    while (p <= m.size()) {
      size_t q = m.find('.', p);
      if (q == std::string::npos) q = m.size();
      inst.mods.push_back(m.substr(p, q - p));
      p = q + 1;
    }
  }
  if (inst.base == "call") {
    // call.uni (retval), vprintf, (param0, param1): keep the parenthesised lists as operands.
    for (const std::string& o : split_top(operands, ',')) {
      Operand op;
      std::string t = trim(o);
      if (!t.empty() && t[0] == '(') {
        op.kind = Operand::Vec;
        for (const std::string& e : split_top(t.substr(1, t.size() - 2), ',')) op.elems.push_back(parse_operand(e, s.line));
      } else {
        op = parse_operand(t, s.line);
      }
      inst.ops.push_back(op);
    }
  } else {
    for (const std::string& o : split_top(operands, ',')) inst.ops.push_back(parse_operand(o, s.line));
  }
  inst_scope_.push_back(scope_);
  k_->code.push_back(std::move(inst));
}

void Parser::finish_kernel() {
  // Labels: innermost scope first (inline asm blocks reuse label names).
  for (size_t pc = 0; pc < k_->code.size(); ++pc) {
    Inst& inst = k_->code[pc];
    for (Operand& o : inst.ops) {
      if (o.kind != Operand::Label) continue;
      int found = -1;
      for (int s = inst_scope_[pc]; s >= 0 && found < 0; s = scopes_[size_t(s)].parent) {
        auto it = scopes_[size_t(s)].labels.find(o.symbol);
        if (it != scopes_[size_t(s)].labels.end()) found = it->second;
      }
      if (found < 0 && inst.base != "call") fail(inst.line, "unknown label or symbol " + o.symbol);
      o.imm = found;
    }
  }
  // Decoding: each family fills the instruction's run function.
  const PtxFamilyTable& fam = ptx_families();
  for (Inst& inst : k_->code) {
    DecodeFn fn = fam.find(inst.base);
    if (!fn) fail(inst.line, "the PTX executor does not support the instruction '" + inst.opcode + "' (" + inst.text + ")");
    try {
      fn(inst);
    } catch (const PtxError& e) {
      fail(inst.line, std::string(e.what()) + " (" + inst.text + ")");
    }
    if (!inst.run) fail(inst.line, "the PTX executor does not support the instruction '" + inst.opcode + "' (" + inst.text + ")");
  }
  k_ = nullptr;
}

}  // namespace

std::unique_ptr<Module> parse_ptx(const std::string& text) {
  auto m = std::make_unique<Module>();
  std::vector<Stmt> stmts = split_statements(text);
  // .func definitions are skipped whole: the executor runs kernels, and a call of one fails.
  std::vector<Stmt> kept;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const Stmt& s = stmts[i];
    // .section blocks (DWARF debug information) are skipped the same way.
    bool func_header = s.kind == Stmt::Plain &&
                       ((s.text.find(".func") != std::string::npos && s.text.find(".entry") == std::string::npos) ||
                        s.text.rfind(".section", 0) == 0) &&
                       i + 1 < stmts.size() && stmts[i + 1].kind == Stmt::Open;
    if (!func_header) {
      kept.push_back(s);
      continue;
    }
    int depth = 0;
    for (++i; i < stmts.size(); ++i) {
      if (stmts[i].kind == Stmt::Open) ++depth;
      if (stmts[i].kind == Stmt::Close && --depth == 0) break;
    }
  }
  Parser p(*m);
  p.run(kept);
  return m;
}

}  // namespace opencute::emulator::ptx
