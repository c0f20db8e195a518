#include "bindings/direct_call.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#if PY_VERSION_HEX < 0x030B0000 && !defined(Py_LIMITED_API)
#include <frameobject.h>
#endif

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bindings/tensor_argument.h"
#include "runtime/tensor_spec.h"
#include "bindings/python_object_access.h"

namespace opencute::bindings {
namespace {

// ---- what a trace ran ------------------------------------------------------------------
// A C-level profile function (one call per Python function call, no Python frame of its own)
// collects the distinct (code object, globals dict) pairs run during a trace, and notes whether
// the trace printed (a direct call that skips the trace would skip that output too).
struct TraceRecorder {
  struct PairHash {
    size_t operator()(const std::pair<PyObject*, PyObject*>& p) const {
      return std::hash<void*>()(p.first) * 31 + std::hash<void*>()(p.second);
    }
  };
  std::unordered_set<std::pair<PyObject*, PyObject*>, PairHash> seen;
  nb::list executed;  // (code, globals) tuples, in first-run order
  bool printed = false;
  nb::object print_fn, out, err;
  bool active = false;
};

void record_call(TraceRecorder& r, PyObject* code, PyObject* globals) {
  if (!r.seen.emplace(code, globals).second) return;
  PyObject* t = PyTuple_Pack(2, code, globals);
  if (t) {
    PyList_Append(r.executed.ptr(), t);
    Py_DECREF(t);
  } else {
    PyErr_Clear();
  }
}

void record_c_call(TraceRecorder& r, PyObject* callee) {
  if (callee == r.print_fn.ptr()) {
    r.printed = true;
  } else if (PyCFunction_Check(callee)) {
    PyObject* owner = PyCFunction_GetSelf(callee);
    if (owner && (owner == r.out.ptr() || owner == r.err.ptr())) r.printed = true;
  }
}

#ifdef Py_LIMITED_API
// The stable ABI has no C-level profile hook; the recorder runs as a sys.setprofile callback
// (slower, and only while a function is being traced).
void start_profiling(nb::handle self) {
  nb::object recorder = nb::borrow(self);
  nb::module_::import_("sys").attr("setprofile")(
      nb::cpp_function([recorder](nb::args a) {  // (frame, event, arg); arg may be None
        auto* r = nb::inst_ptr<TraceRecorder>(recorder);
        const char* event = PyUnicode_AsUTF8AndSize(a[1].ptr(), nullptr);
        if (!event) throw nb::python_error();
        if (std::strcmp(event, "call") == 0) {
          nb::object code = a[0].attr("f_code"), globals = a[0].attr("f_globals");
          record_call(*r, code.ptr(), globals.ptr());
        } else if (std::strcmp(event, "c_call") == 0) {
          record_c_call(*r, a[2].ptr());
        }
      }));
}
void stop_profiling() { nb::module_::import_("sys").attr("setprofile")(nb::none()); }
#else
int record_profile_event(PyObject* self, PyFrameObject* frame, int what, PyObject* arg) {
  auto* r = nb::inst_ptr<TraceRecorder>(self);
  if (what == PyTrace_CALL) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new references
#if PY_VERSION_HEX >= 0x030B0000
    PyObject* globals = PyFrame_GetGlobals(frame);
#else
    PyObject* globals = frame->f_globals;  // the frame struct is public before 3.11
    Py_XINCREF(globals);
#endif
    record_call(*r, reinterpret_cast<PyObject*>(code), globals);
    Py_XDECREF(globals);
    Py_DECREF(code);
  } else if (what == PyTrace_C_CALL) {
    record_c_call(*r, arg);
  }
  return 0;
}
void start_profiling(nb::handle self) { PyEval_SetProfile(record_profile_event, self.ptr()); }
void stop_profiling() { PyEval_SetProfile(nullptr, nullptr); }
#endif

// ---- argument specialisation keys --------------------------------------------------------
// How the front end treats values of a type passed for a runtime (non-Constexpr) parameter;
// decided once per type by a Python callback (direct_call._type_category), mirroring _classify.
enum Category {
  kUnkeyable = 0,
  kNone = 1,
  kScalar = 2,         // the type alone decides the trace (the value is read at call time)
  kIdentity = 3,       // a compile-time value, keyed by identity (modules, classes, functions)
  kTensorTorch = 4,    // torch-like tensor: size-1 modes count as stride 1
  kTensorArray = 5,    // numpy-like array
  kTensorRuntime = 6,  // cute.runtime.Tensor: its TensorSpec, element type and alignment
  kPointer = 7,        // cute.Pointer: its type key
  kSequence = 8,       // list or tuple: each item, or its value for a slicing coordinate
};

struct TypeCategory {
  int runtime = kUnkeyable;
  bool identity = false;  // as a compile-time value: keyed by identity
};

constexpr int kPositionalOnly = 0, kKeywordOnly = 2;  // 1: positional or keyword

struct Param {
  nb::object name;
  int kind;
  bool is_static;
};

enum GuardKind { kDictEntry = 0, kCellContents = 1, kAttribute = 2, kFunctionState = 3 };

struct GuardEntry {
  int kind;
  nb::object container, name, expected;
};

struct Entry {
  nb::object compiled;
  std::vector<int> runtime_positions;
  std::vector<GuardEntry> guard;
  std::vector<nb::object> refs;  // keeps every object whose address is part of the key alive
};

void append_raw(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }
template <class T>
void append_pod(std::string& key, const T& v) {
  append_raw(key, &v, sizeof v);
}

class DirectCallCache {
 public:
  // `environment`: os.environ's underlying dict (what the traced path reads through os.environ),
  // with `env_keys` its keys for the settings a trace reads.
  DirectCallCache(nb::object fn, nb::list params, nb::object categorize, nb::dict environment, nb::list env_keys,
                  nb::object missing)
      : fn_(std::move(fn)), categorize_(std::move(categorize)), environment_(std::move(environment)),
        env_keys_(std::move(env_keys)),
        missing_(std::move(missing)) {
    for (nb::handle h : params) {
      nb::tuple t = nb::cast<nb::tuple>(h);
      PyObject* name = t[0].ptr();
      Py_INCREF(name);
      PyUnicode_InternInPlace(&name);
      params_.push_back(Param{nb::steal(name), nb::cast<int>(t[1]), nb::cast<bool>(t[2])});
    }
  }

  // The compiled function's result, or NotImplemented when the call must be traced.
  nb::object call(nb::handle args, nb::handle kwargs) {
    PyObject* bound[kMaxParams];
    std::string key;
    if (entries_.empty() || !bind(args, kwargs, bound) || !make_key(bound, key, nullptr)) return miss();
    auto it = entries_.find(key);
    if (it == entries_.end()) return miss();
    // Held here: a guard may run Python code (a class's __getattr__), and another thread's
    // record() may replace or drop the entry meanwhile.
    const std::shared_ptr<const Entry> held = it->second;
    const Entry& e = *held;
    if (!guard_holds(e)) return miss();
    PyObject* values = PyTuple_New(Py_ssize_t(e.runtime_positions.size()));
    if (!values) throw nb::python_error();
    for (size_t i = 0; i < e.runtime_positions.size(); ++i) {
      PyObject* v = bound[e.runtime_positions[i]];
      Py_INCREF(v);
      PyTuple_SetItem(values, Py_ssize_t(i), v);
    }
    ++hits_;
    // Held here: the call may release the GIL, and another thread's trace may replace the entry.
    nb::object compiled = e.compiled;
    PyObject* r = PyObject_Call(compiled.ptr(), values, nullptr);
    Py_DECREF(values);
    if (!r) throw nb::python_error();
    return nb::steal(r);
  }

  // After a trace: remembers `compiled` for calls with the same argument specialisation while
  // every guard entry holds. Returns False when the arguments cannot be keyed.
  bool record(nb::handle args, nb::handle kwargs, nb::object compiled, std::vector<int> runtime_positions,
              nb::list guard) {
    PyObject* bound[kMaxParams];
    std::string key;
    Entry e;
    std::vector<PyObject*> refs;
    if (!is_python_function(fn_.ptr()) || !bind(args, kwargs, bound) || !make_key(bound, key, &refs)) return false;
    for (PyObject* r : refs) e.refs.push_back(nb::borrow(r));
    e.compiled = std::move(compiled);
    e.runtime_positions = std::move(runtime_positions);
    for (int p : e.runtime_positions)
      if (p < 0 || p >= int(params_.size())) throw std::invalid_argument("runtime position out of range");
    for (nb::handle h : guard) {
      nb::tuple t = nb::cast<nb::tuple>(h);
      e.guard.push_back(GuardEntry{nb::cast<int>(t[0]), nb::borrow(t[1]), nb::borrow(t[2]), nb::borrow(t[3])});
    }
    if (entries_.size() >= kMaxEntries) entries_.clear();  // argument churn: start afresh
    entries_[key] = std::make_shared<const Entry>(std::move(e));
    return true;
  }

  void clear() { entries_.clear(); }

  // Garbage-collector support: a guard may hold the module dict that holds the @jit function
  // that holds this cache.
  int traverse(visitproc visit, void* arg) {
    Py_VISIT(fn_.ptr());
    Py_VISIT(categorize_.ptr());
    Py_VISIT(missing_.ptr());
    Py_VISIT(environment_.ptr());
    Py_VISIT(env_keys_.ptr());
    for (auto& [type, c] : categories_) Py_VISIT(type.ptr());
    for (auto& [key, e] : entries_) {
      Py_VISIT(e->compiled.ptr());
      for (auto& g : e->guard) {
        Py_VISIT(g.container.ptr());
        Py_VISIT(g.name.ptr());
        Py_VISIT(g.expected.ptr());
      }
      for (auto& r : e->refs) Py_VISIT(r.ptr());
    }
    return 0;
  }
  void release_all() {
    entries_.clear();
    categories_.clear();
    fn_ = nb::none();
    categorize_ = nb::none();
    missing_ = nb::none();
  }
  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  static constexpr size_t kMaxParams = 64;
  static constexpr size_t kMaxEntries = 256;

  nb::object miss() {
    ++misses_;
    return nb::borrow(Py_NotImplemented);
  }

  // Binds positional and keyword arguments to parameters like Python does for a plain
  // signature; defaults are read from the function now. False: let the traced path handle it.
  bool bind(nb::handle args_h, nb::handle kwargs_h, PyObject** bound) {
    const size_t n = params_.size();
    if (n > kMaxParams || !PyTuple_Check(args_h.ptr())) return false;
    PyObject* args = args_h.ptr();
    const size_t nargs = size_t(tuple_size(args));
    if (nargs > n) return false;
    for (size_t i = 0; i < n; ++i) bound[i] = nullptr;
    for (size_t i = 0; i < nargs; ++i) {
      if (params_[i].kind == kKeywordOnly) return false;
      bound[i] = tuple_item(args, Py_ssize_t(i));
    }
    PyObject* kwargs = kwargs_h.is_none() ? nullptr : kwargs_h.ptr();
    if (kwargs && PyDict_Size(kwargs) > 0) {
      Py_ssize_t pos = 0;
      PyObject *k, *v;
      while (PyDict_Next(kwargs, &pos, &k, &v)) {
        size_t i = 0;
        for (; i < n; ++i)
          if (params_[i].name.ptr() == k) break;
        if (i == n)
          for (i = 0; i < n; ++i)
            if (PyUnicode_Check(k) && PyUnicode_Compare(params_[i].name.ptr(), k) == 0) break;
        if (i == n || bound[i] || params_[i].kind == kPositionalOnly) return false;
        bound[i] = v;
      }
    }
    PyObject* fn = fn_.ptr();
    PyObject* defaults = function_defaults(fn);
    PyObject* kwdefaults = function_kw_defaults(fn);
    size_t positional = 0;
    for (const Param& p : params_) positional += p.kind != kKeywordOnly;
    const size_t ndefaults = defaults ? size_t(tuple_size(defaults)) : 0;
    for (size_t i = 0; i < n; ++i) {
      if (bound[i]) continue;
      if (params_[i].kind != kKeywordOnly) {
        if (i + ndefaults < positional) return false;
        bound[i] = tuple_item(defaults, Py_ssize_t(i + ndefaults - positional));
      } else {
        PyObject* d = kwdefaults ? PyDict_GetItem(kwdefaults, params_[i].name.ptr()) : nullptr;
        if (!d) return false;
        bound[i] = d;
      }
    }
    return true;
  }

  const TypeCategory& category(PyTypeObject* t) {
    for (auto& [type, c] : categories_)
      if (type.ptr() == reinterpret_cast<PyObject*>(t)) return c;
    nb::tuple r = nb::cast<nb::tuple>(categorize_(nb::handle(reinterpret_cast<PyObject*>(t))));
    categories_.emplace_back(nb::borrow(reinterpret_cast<PyObject*>(t)),
                             TypeCategory{nb::cast<int>(r[0]), nb::cast<bool>(r[1])});
    return categories_.back().second;
  }

  static void add_ref(std::vector<PyObject*>* refs, PyObject* o) {
    if (refs) refs->push_back(o);
  }

  // A compile-time value: by value for Python literals (and tuples of them), by identity for
  // modules, classes and functions.
  bool describe_static(PyObject* v, std::string& key, std::vector<PyObject*>* refs, int depth = 0) {
    if (depth > 8) return false;
    if (v == Py_None) {
      key += 'N';
    } else if (v == Py_True || v == Py_False) {
      key += v == Py_True ? 'T' : 'F';
    } else if (PyLong_CheckExact(v)) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (overflow) return false;
      key += 'i';
      append_pod(key, x);
    } else if (PyFloat_CheckExact(v)) {
      key += 'f';
      append_pod(key, float_value(v));
    } else if (PyUnicode_CheckExact(v)) {
      Py_ssize_t n = 0;
      const char* s = PyUnicode_AsUTF8AndSize(v, &n);
      if (!s) {
        PyErr_Clear();
        return false;
      }
      key += 's';
      append_pod(key, n);
      key.append(s, size_t(n));
    } else if (PyTuple_CheckExact(v)) {
      key += '(';
      append_pod(key, tuple_size(v));
      for (Py_ssize_t i = 0; i < tuple_size(v); ++i)
        if (!describe_static(tuple_item(v, i), key, refs, depth + 1)) return false;
    } else if (PyType_Check(v) || PyModule_CheckExact(v) || is_python_function(v) ||
               (PyCFunction_Check(v) && (!PyCFunction_GetSelf(v) || PyModule_Check(PyCFunction_GetSelf(v)))) ||
               category(Py_TYPE(v)).identity) {
      key += '@';
      append_pod(key, v);
      add_ref(refs, v);
    } else {
      return false;
    }
    return true;
  }

  // A tuple of ints and Nones with at least one None is a slicing coordinate (a compile-time
  // value), as jit._is_slicing_coordinate decides.
  static bool is_slicing_coordinate(PyObject* v) {
    if (!PyTuple_Check(v)) return false;
    bool none = false;
    std::vector<PyObject*> todo{v};
    while (!todo.empty()) {
      PyObject* x = todo.back();
      todo.pop_back();
      if (PyTuple_Check(x) || PyList_Check(x)) {
        for (Py_ssize_t i = 0; i < sequence_size(x); ++i) todo.push_back(sequence_item(x, i));
      } else if (x == Py_None) {
        none = true;
      } else if (!PyLong_CheckExact(x)) {
        return false;
      }
    }
    return none;
  }

  bool describe_runtime(PyObject* v, std::string& key, std::vector<PyObject*>* refs, int depth = 0) {
    if (depth > 4) return false;
    PyTypeObject* type = Py_TYPE(v);
    if (PyType_Check(v)) return describe_static(v, key, refs);
    const TypeCategory& c = category(type);
    switch (c.runtime) {
      case kNone: key += 'N'; return true;
      case kScalar:
        key += 'S';
        append_pod(key, type);
        add_ref(refs, reinterpret_cast<PyObject*>(type));
        return true;
      case kIdentity: return describe_static(v, key, refs);
      case kTensorTorch:
      case kTensorArray: return describe_framework_tensor(v, c.runtime == kTensorTorch, key, refs);
      case kTensorRuntime: return describe_runtime_tensor(v, key, refs);
      case kPointer: {
        PyObject* k = PyObject_GetAttrString(v, "_type_key");
        if (!k) {
          PyErr_Clear();
          return false;
        }
        nb::object type_key = nb::steal(k);
        key += 'P';
        return describe_static(type_key.ptr(), key, refs);
      }
      case kSequence: {
        if (is_slicing_coordinate(v)) {
          key += 'C';
          return describe_static(v, key, refs);
        }
        key += PyTuple_Check(v) ? 'U' : 'L';
        append_pod(key, type);
        add_ref(refs, reinterpret_cast<PyObject*>(type));
        Py_ssize_t n = sequence_size(v);
        append_pod(key, n);
        for (Py_ssize_t i = 0; i < n; ++i)
          if (!describe_runtime(sequence_item(v, i), key, refs, depth + 1)) return false;
        return true;
      }
      default: return false;
    }
  }

  // A framework tensor passed directly becomes from_dlpack(x).mark_layout_dynamic(): every
  // extent and stride is read at call time except unit and zero strides, so the trace depends
  // on the element type, the memory, the rank and which modes have stride 0 or 1 (and size > 1).
  bool describe_framework_tensor(PyObject* v, bool torch_like, std::string& key, std::vector<PyObject*>* refs) {
    TensorArgument t{nb::handle(v)};
    ir::Type element = t.element_type();
    if (!element) return false;
    key += 'R';
    append_pod(key, Py_TYPE(v));
    add_ref(refs, reinterpret_cast<PyObject*>(Py_TYPE(v)));
    append_pod(key, element);
    key += char(int(t.memory()));
    const size_t rank = t.rank();
    key += char(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t n = t.shape(i), s = t.stride(i);
      if (torch_like && n == 1) s = 1;  // as cute.runtime reads torch strides
      key += s == 0 ? 'z' : s == 1 ? (n > 1 ? 'U' : 'u') : 'd';
    }
    return true;
  }

  bool describe_runtime_tensor(PyObject* v, std::string& key, std::vector<PyObject*>* refs) {
    nb::handle h(v);
    nb::object spec_obj = nb::getattr(h, "_spec", nb::none());
    runtime::TensorSpec* spec = nullptr;
    if (!nb::try_cast<runtime::TensorSpec*>(spec_obj, spec) || !spec) return false;
    nb::object element = nb::getattr(h, "_element_type", nb::none());
    nb::object align = nb::getattr(h, "assumed_align", nb::none());
    nb::object cuda = nb::getattr(h, "is_cuda", nb::none());
    if (!PyLong_CheckExact(align.ptr())) return false;
    key += 'Q';
    append_pod(key, element.ptr());
    add_ref(refs, element.ptr());
    append_pod(key, PyLong_AsLongLong(align.ptr()));
    key += PyObject_IsTrue(cuda.ptr()) == 1 ? 'g' : 'h';
    key += char(spec->rank());
    key += spec->use_32bit_stride() ? '4' : '8';
    for (const auto* entries : {&spec->shape(), &spec->stride()})
      for (const runtime::SpecEntry& e : *entries) {
        if (e.dynamic) {
          key += 'd';
          append_pod(key, e.divisibility);
          key += char(e.width);
        } else {
          key += 's';
          append_pod(key, e.value);
        }
      }
    return true;
  }

  // False when some argument cannot be keyed, including when reading it fails: the traced
  // path then reports the problem in its own words.
  bool make_key(PyObject** bound, std::string& key, std::vector<PyObject*>* refs) {
    try {
      return make_key_or_throw(bound, key, refs);
    } catch (nb::python_error&) {  // holds the Python error; dropping it clears it
      return false;
    } catch (...) {
      PyErr_Clear();
      return false;
    }
  }

  bool make_key_or_throw(PyObject** bound, std::string& key, std::vector<PyObject*>* refs) {
    key.reserve(128);
    for (size_t i = 0; i < params_.size(); ++i) {
      bool ok = params_[i].is_static ? describe_static(bound[i], key, refs)
                                     : describe_runtime(bound[i], key, refs);
      if (!ok) return false;
      key += '|';
    }
    // The environment settings a trace and compile read.
    for (nb::handle k : env_keys_) {
      PyObject* value = PyDict_GetItemWithError(environment_.ptr(), k.ptr());  // borrowed
      if (!value) {
        if (PyErr_Occurred()) throw nb::python_error();
        key += '\x01';
      } else if (PyBytes_Check(value)) {
        key.append(PyBytes_AsString(value), size_t(PyBytes_Size(value)));
      } else if (!describe_static(value, key, nullptr)) {
        return false;
      }
      key += '\0';
    }
    return true;
  }

  // Equal values of the same type: what the trace read is what it would read now.
  bool same_value(PyObject* now, PyObject* then, int depth = 0) {
    if (now == then) return true;
    if (Py_TYPE(now) != Py_TYPE(then) || depth > 8) return false;
    if (PyFloat_CheckExact(now)) {
      double a = float_value(now), b = float_value(then);
      return std::memcmp(&a, &b, sizeof a) == 0;
    }
    if (PyLong_CheckExact(now) || PyUnicode_CheckExact(now) || PyBytes_CheckExact(now) ||
        PyComplex_CheckExact(now) || PyFrozenSet_CheckExact(now)) {
      int r = PyObject_RichCompareBool(now, then, Py_EQ);
      if (r < 0) PyErr_Clear();
      return r == 1;
    }
    if (PyTuple_CheckExact(now) || PyList_CheckExact(now)) {
      Py_ssize_t n = sequence_size(now);
      if (n != sequence_size(then)) return false;
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!same_value(sequence_item(now, i), sequence_item(then, i), depth + 1)) return false;
      return true;
    }
    if (PyDict_CheckExact(now)) {
      if (PyDict_Size(now) != PyDict_Size(then)) return false;
      Py_ssize_t pos = 0;
      PyObject *k, *v;
      while (PyDict_Next(then, &pos, &k, &v)) {
        PyObject* w = PyDict_GetItemWithError(now, k);
        if (!w) {
          PyErr_Clear();
          return false;
        }
        if (!same_value(w, v, depth + 1)) return false;
      }
      return true;
    }
    return false;  // other objects are compared by identity
  }

  bool guard_holds(const Entry& e) {
    for (const GuardEntry& g : e.guard) {
      switch (g.kind) {
        case kDictEntry: {
          PyObject* now = PyDict_GetItemWithError(g.container.ptr(), g.name.ptr());  // borrowed
          if (!now) {
            if (PyErr_Occurred()) {
              PyErr_Clear();
              return false;
            }
            now = missing_.ptr();
          }
          if (!same_value(now, g.expected.ptr())) return false;
          break;
        }
        case kCellContents: {
          PyObject* now = cell_contents(g.container.ptr());
          if (!same_value(now ? now : missing_.ptr(), g.expected.ptr())) return false;
          break;
        }
        case kAttribute: {
          PyObject* now = PyObject_GetAttr(g.container.ptr(), g.name.ptr());
          if (!now) {
            PyErr_Clear();
            now = missing_.ptr();
            Py_INCREF(now);
          }
          bool same = same_value(now, g.expected.ptr());
          Py_DECREF(now);
          if (!same) return false;
          break;
        }
        case kFunctionState: {  // expected: (code, defaults, kwdefaults)
          PyObject* f = g.container.ptr();
          PyObject* then = g.expected.ptr();
          PyObject* defaults = function_defaults(f);
          PyObject* kwdefaults = function_kw_defaults(f);
          if (function_code(f) != tuple_item(then, 0) ||
              !same_value(defaults ? defaults : Py_None, tuple_item(then, 1)) ||
              !same_value(kwdefaults ? kwdefaults : Py_None, tuple_item(then, 2)))
            return false;
          break;
        }
        default: return false;
      }
    }
    return true;
  }

  nb::object fn_;
  std::vector<Param> params_;
  nb::object categorize_;
  std::vector<std::pair<nb::object, TypeCategory>> categories_;
  nb::dict environment_;
  nb::list env_keys_;
  nb::object missing_;
  std::unordered_map<std::string, std::shared_ptr<const Entry>> entries_;
  uint64_t hits_ = 0, misses_ = 0;
};

int recorder_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  auto* r = nb::inst_ptr<TraceRecorder>(self);
  Py_VISIT(r->executed.ptr());
  Py_VISIT(r->print_fn.ptr());
  Py_VISIT(r->out.ptr());
  Py_VISIT(r->err.ptr());
  return 0;
}

int recorder_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  auto* r = nb::inst_ptr<TraceRecorder>(self);
  r->executed = nb::list();
  r->seen.clear();
  r->print_fn = r->out = r->err = nb::object();
  return 0;
}

PyType_Slot recorder_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(recorder_traverse)},
                                {Py_tp_clear, reinterpret_cast<void*>(recorder_clear)},
                                {0, nullptr}};

int cache_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<DirectCallCache>(self)->traverse(visit, arg);
}

int cache_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<DirectCallCache>(self)->release_all();
  return 0;
}

PyType_Slot cache_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(cache_traverse)},
                             {Py_tp_clear, reinterpret_cast<void*>(cache_clear)},
                             {0, nullptr}};

}  // namespace

void bind_direct_calls(nb::module_& m) {
  // The type categories and guard kinds by name, for direct_call.py's type callback and guards.
  nb::dict categories, guard_kinds;
  categories["Unkeyable"] = int(kUnkeyable), categories["None"] = int(kNone), categories["Scalar"] = int(kScalar);
  categories["Identity"] = int(kIdentity), categories["TensorTorch"] = int(kTensorTorch);
  categories["TensorArray"] = int(kTensorArray), categories["TensorRuntime"] = int(kTensorRuntime);
  categories["Pointer"] = int(kPointer), categories["Sequence"] = int(kSequence);
  guard_kinds["DictEntry"] = int(kDictEntry), guard_kinds["CellContents"] = int(kCellContents);
  guard_kinds["Attribute"] = int(kAttribute), guard_kinds["FunctionState"] = int(kFunctionState);
  m.attr("direct_call_categories") = categories;
  m.attr("direct_call_guard_kinds") = guard_kinds;
  nb::class_<TraceRecorder>(m, "TraceRecorder",
                            "Records the code objects (with their globals) a trace runs, and whether it printed.",
                            nb::type_slots(recorder_slots))
      .def(nb::init<>())
      .def("start",
           [](nb::handle self) {
             auto* r = nb::inst_ptr<TraceRecorder>(self);
             nb::module_ builtins = nb::module_::import_("builtins");
             nb::module_ sys = nb::module_::import_("sys");
             r->print_fn = builtins.attr("print");
             r->out = sys.attr("stdout");
             r->err = sys.attr("stderr");
             r->active = true;
             start_profiling(self);
           })
      .def("stop",
           [](TraceRecorder& r) {
             if (r.active) stop_profiling();
             r.active = false;
             r.print_fn = r.out = r.err = nb::object();
           })
      .def("clear",
           [](TraceRecorder& r) {
             r.executed = nb::list();
             r.seen.clear();
           })
      .def_prop_ro("executed", [](TraceRecorder& r) { return r.executed; })
      .def_prop_ro("printed", [](TraceRecorder& r) { return r.printed; });

  nb::class_<DirectCallCache>(m, "DirectCallCache",
                              "Compiled functions of one @jit function by argument specialisation, each "
                              "reused while the Python state its trace read is unchanged.",
                              nb::type_slots(cache_slots))
      .def(nb::init<nb::object, nb::list, nb::object, nb::dict, nb::list, nb::object>(), nb::arg("fn"),
           nb::arg("params"), nb::arg("categorize"), nb::arg("environment"), nb::arg("env_keys"), nb::arg("missing"))
      .def("call", &DirectCallCache::call, nb::arg("args"), nb::arg("kwargs").none())
      .def("record", &DirectCallCache::record, nb::arg("args"), nb::arg("kwargs").none(), nb::arg("compiled"),
           nb::arg("runtime_positions"), nb::arg("guard"))
      .def("clear", &DirectCallCache::clear)
      .def("__len__", &DirectCallCache::size)
      .def_prop_ro("hits", &DirectCallCache::hits)
      .def_prop_ro("misses", &DirectCallCache::misses);
}

}  // namespace opencute::bindings
