#include "bindings/tensor_argument.h"

#include <chrono>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "bindings/python_object_access.h"

namespace opencute::bindings {
namespace {

PyObject* interned(const char* s) {
  PyObject* p = PyUnicode_InternFromString(s);
  if (!p) throw nb::python_error();
  return p;  // kept for the life of the process
}

struct Names {
  PyObject* data_ptr_attr = interned("_data_ptr");
  PyObject* dl_shape = interned("_dl_shape");
  PyObject* dl_stride = interned("_dl_stride");
  PyObject* data_ptr = interned("data_ptr");
  PyObject* shape = interned("shape");
  PyObject* stride = interned("stride");
  PyObject* array_interface = interned("__array_interface__");
  PyObject* strides = interned("strides");
  PyObject* itemsize = interned("itemsize");
  PyObject* data = interned("data");
  PyObject* exchange_api = interned("__dlpack_c_exchange_api__");
  PyObject* element_type = interned("element_type");
  PyObject* name = interned("__name__");
  PyObject* is_cuda = interned("is_cuda");
  PyObject* dtype = interned("dtype");
  PyObject* typestr = interned("typestr");
};

// The C function table of DLPack >= 1.3 (dlpack.h, DLPackExchangeAPI); only the members up to
// the one used here are declared, and the major version is checked before use.
using DLTensorFromPyObject = int (*)(void* py_object, TensorArgument::DLTensorView* out);
using CurrentWorkStream = int (*)(int32_t device_type, int32_t device_id, void** out_stream);
struct DLPackExchangeApi {
  uint32_t major, minor;
  void* prev_api;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;  // int (*)(void*, DLManagedTensorVersioned**)
  void* managed_tensor_to_py_object_no_sync;
  DLTensorFromPyObject dltensor_from_py_object_no_sync;
  CurrentWorkStream current_work_stream;
};

static_assert(sizeof(TensorArgument::DLTensorView) == 48, "DLTensor layout");

const Names& names() {
  static Names* n = new Names();
  return *n;
}

int64_t to_int64(PyObject* o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

nb::object call_method(nb::handle obj, PyObject* name) {
  PyObject* args[] = {obj.ptr()};
  PyObject* r = PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object get_attr(nb::handle obj, PyObject* name) {
  PyObject* r = PyObject_GetAttr(obj.ptr(), name);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

bool has_attr(nb::handle obj, PyObject* name) {
  PyObject* r = nullptr;
  // _PyObject_LookupAttr is not public on every version; GetAttr + clear is equivalent here.
  r = PyObject_GetAttr(obj.ptr(), name);
  if (r) {
    Py_DECREF(r);
    return true;
  }
  PyErr_Clear();
  return false;
}

// The type's DLPack exchange table, or null when it has none we can use.
const DLPackExchangeApi* exchange_api_uncached(PyTypeObject* type) {
  PyObject* cap = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), names().exchange_api);
  if (!cap) {
    PyErr_Clear();
    return nullptr;
  }
  const DLPackExchangeApi* api = nullptr;
  if (PyCapsule_CheckExact(cap)) api = static_cast<const DLPackExchangeApi*>(PyCapsule_GetPointer(cap, "dlpack_exchange_api"));
  else if (PyLong_Check(cap)) api = reinterpret_cast<const DLPackExchangeApi*>(PyLong_AsVoidPtr(cap));
  Py_DECREF(cap);  // the table itself lives as long as the process
  PyErr_Clear();
  if (!api || api->major != 1 || !api->dltensor_from_py_object_no_sync) return nullptr;
  return api;
}

DLTensorFromPyObject exchange_function(PyTypeObject* type) {
  const DLPackExchangeApi* api = exchange_api_uncached(type);
  return api ? api->dltensor_from_py_object_no_sync : nullptr;
}

struct TypeInfo {
  TensorArgument::Kind kind;
  DLTensorFromPyObject to_dltensor;
};

TypeInfo classify_uncached(nb::handle obj) {
  const Names& n = names();
  if (has_attr(obj, n.data_ptr_attr)) return {TensorArgument::Kind::Runtime, nullptr};
  if (DLTensorFromPyObject f = exchange_function(Py_TYPE(obj.ptr())))
    return {TensorArgument::Kind::DLPackExchange, f};
  if (has_attr(obj, n.data_ptr) && has_attr(obj, n.stride)) return {TensorArgument::Kind::Torch, nullptr};
  if (PyObject_CheckBuffer(obj.ptr())) return {TensorArgument::Kind::Buffer, nullptr};
  if (has_attr(obj, n.array_interface)) return {TensorArgument::Kind::ArrayInterface, nullptr};
  throw dsl::UserError("ARG_UNSUPPORTED_TYPE",
                       "expected a tensor argument (a cute tensor, a torch tensor or a numpy array), got " +
                           std::string(nb::type_name(obj.type()).c_str()));
}

TypeInfo classify(nb::handle obj) {
  // Types are few and long-lived; each cached type is kept alive so its address cannot be reused.
  static std::vector<std::pair<PyTypeObject*, TypeInfo>> cache;
  PyTypeObject* t = Py_TYPE(obj.ptr());
  for (auto& [type, info] : cache)
    if (type == t) return info;
  TypeInfo info = classify_uncached(obj);
  Py_INCREF(reinterpret_cast<PyObject*>(t));
  cache.emplace_back(t, info);
  return info;
}

}  // namespace

const DLPackExchangeFunctions* dlpack_exchange_functions(PyTypeObject* type) {
  // Types are few and long-lived; each cached type is kept alive so its address cannot be
  // reused. The last hit is checked first: a call's tensors are mostly of one type.
  struct Entry {
    PyTypeObject* type;
    DLPackExchangeFunctions functions;
    bool has;
  };
  // A deque: callers keep the returned pointer while reading a call's tensors, and another
  // thread may add a type meanwhile (whenever this one runs Python code); entries never move.
  static std::deque<Entry> cache;
  static size_t last = 0;
  if (last < cache.size() && cache[last].type == type) return cache[last].has ? &cache[last].functions : nullptr;
  for (size_t i = 0; i < cache.size(); ++i)
    if (cache[i].type == type) {
      last = i;
      return cache[i].has ? &cache[i].functions : nullptr;
    }
  const DLPackExchangeApi* api = exchange_api_uncached(type);
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  Entry e{type, {}, api != nullptr};
  if (api) e.functions = {api->dltensor_from_py_object_no_sync, api->current_work_stream};
  cache.push_back(e);
  last = cache.size() - 1;
  return e.has ? &cache[last].functions : nullptr;
}

void unpack_fp4_pairs(int ndim, int64_t* shape, const int64_t* stride, int64_t* stride_out) {
  std::vector<int64_t> st(size_t(ndim > 0 ? ndim : 0));
  int64_t compact = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    st[size_t(i)] = stride ? stride[i] : compact;
    compact *= shape[i];
  }
  int packed = -1;  // the pairs' mode: the last of stride 1 (a size-1 mode of stride 1 only if no other)
  for (int i = ndim - 1; i >= 0 && packed < 0; --i)
    if (st[size_t(i)] == 1 && shape[i] != 1) packed = i;
  for (int i = ndim - 1; i >= 0 && packed < 0; --i)
    if (st[size_t(i)] == 1 || shape[i] == 1) packed = i;
  if (packed < 0)
    throw dsl::UserError("ARG_UNSUPPORTED_TYPE",
                         "a float4_e2m1fn_x2 tensor needs a mode of stride 1 (its packed pairs); make it contiguous");
  for (int i = 0; i < ndim; ++i) {
    if (i == packed) {
      shape[i] *= 2;
      stride_out[i] = 1;
    } else {
      stride_out[i] = st[size_t(i)] * 2;
    }
  }
}

TensorArgument::DLTensorReader TensorArgument::exchange_reader(nb::handle obj) {
  TypeInfo info = classify(obj);
  return info.kind == Kind::DLPackExchange ? info.to_dltensor : nullptr;
}

TensorArgument::TensorArgument(nb::handle obj) : obj_(obj) {
  TypeInfo info = classify(obj);
  kind_ = info.kind;
  if (kind_ == Kind::DLPackExchange) {
    if (info.to_dltensor(obj.ptr(), &dl_) != 0) throw nb::python_error();
    if (is_packed_fp4_pairs(dl_.dtype_code, dl_.dtype_bits, dl_.dtype_lanes)) {
      // Copies: dl_'s arrays belong to the framework's tensor.
      const size_t n = size_t(dl_.ndim);
      unpacked_.assign(dl_.shape, dl_.shape + n);
      unpacked_.resize(2 * n);
      unpack_fp4_pairs(dl_.ndim, unpacked_.data(), dl_.strides, unpacked_.data() + n);
      dl_.shape = unpacked_.data();
      dl_.strides = unpacked_.data() + n;
      dl_.dtype_lanes = 1;
    }
  } else if (kind_ == Kind::Buffer) {
    if (PyObject_GetBuffer(obj.ptr(), &buffer_, PyBUF_STRIDES | PyBUF_FORMAT) != 0) throw nb::python_error();
    has_buffer_ = true;
  }
}

TensorArgument::~TensorArgument() {
  if (has_buffer_) PyBuffer_Release(&buffer_);
}

int64_t TensorArgument::data_slow() {
  const Names& n = names();
  switch (kind_) {
    case Kind::Runtime: return to_int64(get_attr(obj_, n.data_ptr_attr).ptr());
    case Kind::DLPackExchange: return int64_t(reinterpret_cast<intptr_t>(dl_.data)) + int64_t(dl_.byte_offset);
    case Kind::Torch: return to_int64(call_method(obj_, n.data_ptr).ptr());
    case Kind::Buffer: return int64_t(reinterpret_cast<intptr_t>(buffer_.buf));
    case Kind::ArrayInterface: {
      nb::object ai = get_attr(obj_, n.array_interface);
      PyObject* d = PyDict_GetItem(ai.ptr(), n.data);  // borrowed
      if (!d || !PyTuple_Check(d) || tuple_size(d) < 1)
        throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "__array_interface__ has no data pointer");
      return to_int64(tuple_item(d, 0));
    }
  }
  return 0;
}

void TensorArgument::need_layout() {
  if (shape_.is_valid()) return;
  const Names& n = names();
  switch (kind_) {
    case Kind::DLPackExchange:
      return;  // read straight from dl_
    case Kind::Runtime:
      shape_ = get_attr(obj_, n.dl_shape);
      stride_ = get_attr(obj_, n.dl_stride);
      break;
    case Kind::Torch: {
      shape_ = get_attr(obj_, n.shape);
      stride_ = call_method(obj_, n.stride);
      ir::Type e = element_type();
      if (e && e->is_sub_byte()) {  // float4_e2m1fn_x2: torch counts pairs
        nb::tuple sh(shape_), st(stride_);
        const int nd = int(nb::len(sh));
        std::vector<int64_t> ext(static_cast<size_t>(nd)), str(ext), out(ext);
        for (int i = 0; i < nd; ++i) {
          ext[size_t(i)] = to_int64(sh[size_t(i)].ptr());
          str[size_t(i)] = to_int64(st[size_t(i)].ptr());
        }
        unpack_fp4_pairs(nd, ext.data(), str.data(), out.data());
        nb::list a, b;
        for (int i = 0; i < nd; ++i) {
          a.append(nb::int_(ext[size_t(i)]));
          b.append(nb::int_(out[size_t(i)]));
        }
        shape_ = nb::tuple(a);
        stride_ = nb::tuple(b);
      }
      break;
    }
    case Kind::Buffer: {
      nb::tuple shape = nb::steal<nb::tuple>(PyTuple_New(buffer_.ndim));
      nb::tuple stride = nb::steal<nb::tuple>(PyTuple_New(buffer_.ndim));
      for (int i = 0; i < buffer_.ndim; ++i) {
        PyTuple_SetItem(shape.ptr(), i, PyLong_FromSsize_t(buffer_.shape[i]));
        Py_ssize_t st = buffer_.strides ? buffer_.strides[i] / buffer_.itemsize : 1;
        PyTuple_SetItem(stride.ptr(), i, PyLong_FromSsize_t(st));
      }
      shape_ = shape;
      stride_ = stride;
      break;
    }
    case Kind::ArrayInterface: {
      shape_ = nb::tuple(get_attr(obj_, n.shape));
      int64_t item = to_int64(get_attr(obj_, n.itemsize).ptr());
      nb::list el;
      for (nb::handle s : get_attr(obj_, n.strides)) el.append(nb::int_(to_int64(s.ptr()) / item));
      stride_ = nb::tuple(el);
      break;
    }
  }
  if (!PyTuple_Check(shape_.ptr())) shape_ = nb::tuple(shape_);
  if (!PyTuple_Check(stride_.ptr())) stride_ = nb::tuple(stride_);
}

size_t TensorArgument::rank_slow() {
  if (kind_ == Kind::DLPackExchange) return size_t(dl_.ndim);
  if (kind_ == Kind::Buffer) return size_t(buffer_.ndim);
  need_layout();
  return size_t(tuple_size(shape_.ptr()));
}

int64_t TensorArgument::shape_slow(size_t mode) {
  if (kind_ == Kind::DLPackExchange) return mode < size_t(dl_.ndim) ? dl_.shape[mode] : 1;
  if (kind_ == Kind::Buffer) return mode < size_t(buffer_.ndim) ? int64_t(buffer_.shape[mode]) : 1;
  need_layout();
  if (mode >= size_t(tuple_size(shape_.ptr()))) return 1;
  return to_int64(tuple_item(shape_.ptr(), Py_ssize_t(mode)));
}

int64_t TensorArgument::stride_slow(size_t mode) {
  if (kind_ == Kind::DLPackExchange) {
    if (mode >= size_t(dl_.ndim)) return 0;
    if (dl_.strides) return dl_.strides[mode];
    int64_t compact = 1;  // no strides: row-major compact
    for (size_t i = mode + 1; i < size_t(dl_.ndim); ++i) compact *= dl_.shape[i];
    return compact;
  }
  if (kind_ == Kind::Buffer) {
    if (mode >= size_t(buffer_.ndim)) return 0;
    return buffer_.strides ? int64_t(buffer_.strides[mode] / buffer_.itemsize) : 1;
  }
  need_layout();
  if (mode >= size_t(tuple_size(stride_.ptr()))) return 0;
  return to_int64(tuple_item(stride_.ptr(), Py_ssize_t(mode)));
}

std::string TensorArgument::layout_string() {
  size_t r = rank();
  std::string s = "(";
  for (size_t i = 0; i < r; ++i) s += (i ? "," : "") + std::to_string(shape(i));
  s += "):(";
  for (size_t i = 0; i < r; ++i) s += (i ? "," : "") + std::to_string(stride(i));
  return s + ")";
}

namespace {

// numpy's type characters (buffer formats and __array_interface__ typestrs) with the item size.
ir::Type type_from_kind_char_uncached(char kind, int64_t bytes) {
  switch (kind) {
    case 'b': return bytes == 1 ? ir::bool_type() : nullptr;  // typestr 'b1' is bool
    case 'i': return ir::int_type(int(bytes * 8), true);
    case 'u': return ir::int_type(int(bytes * 8), false);
    case 'f':
      if (bytes == 2) return ir::f16();
      if (bytes == 4) return ir::f32();
      if (bytes == 8) return ir::f64();
      return nullptr;
  }
  return nullptr;
}

// Interned types cost a locked lookup each; this runs once per tensor per call.
ir::Type type_from_kind_char(char kind, int64_t bytes) {
  static ir::Type cache[4][9];
  static bool known[4][9];
  const int k = kind == 'b' ? 0 : kind == 'i' ? 1 : kind == 'u' ? 2 : kind == 'f' ? 3 : -1;
  if (k < 0 || bytes < 0 || bytes > 8) return nullptr;
  if (!known[k][bytes]) {  // the GIL is held: no other thread fills the table at the same time
    cache[k][bytes] = type_from_kind_char_uncached(kind, bytes);
    known[k][bytes] = true;
  }
  return cache[k][bytes];
}

// The element type a framework dtype object (torch.float32, a runtime tensor's element class)
// stands for, by identity: such objects are few and live as long as the process.
template <class Compute>
ir::Type cached_by_identity(PyObject* key, Compute compute) {
  static std::vector<std::pair<PyObject*, ir::Type>> cache;
  for (auto& [k, t] : cache)
    if (k == key) return t;
  ir::Type t = compute();
  Py_INCREF(key);
  cache.emplace_back(key, t);
  return t;
}

ir::Type type_from_buffer_format(const char* fmt, int64_t itemsize) {
  if (!fmt) return ir::int_type(8, false);  // PEP 3118: a null format means unsigned bytes
  while (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '>' || *fmt == '!') ++fmt;
  if (fmt[0] == 0 || fmt[1] != 0) return nullptr;
  switch (fmt[0]) {
    case '?': return ir::bool_type();
    case 'e': case 'f': case 'd': return type_from_kind_char('f', itemsize);
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return type_from_kind_char('i', itemsize);
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return type_from_kind_char('u', itemsize);
  }
  return nullptr;
}

// torch.dtype's type, recognised by its qualified name once and by address after that.
bool is_torch_dtype(PyObject* o) {
  static PyTypeObject* torch_dtype = nullptr;
  PyTypeObject* type = Py_TYPE(o);
  if (torch_dtype) return type == torch_dtype;
  if (std::string_view(nb::type_name(nb::handle(reinterpret_cast<PyObject*>(type))).c_str()) != "torch.dtype") return false;
  Py_INCREF(reinterpret_cast<PyObject*>(type));  // kept: its address identifies the type from now on
  torch_dtype = type;
  return true;
}

// A framework's `dtype` attribute by name (torch.float32, numpy's dtype('bfloat16') ...).
ir::Type type_from_dtype_attribute(nb::handle obj) {
  PyObject* dt = PyObject_GetAttr(obj.ptr(), names().dtype);
  if (!dt) {
    PyErr_Clear();
    return nullptr;
  }
  nb::object d = nb::steal(dt);
  auto by_name = [&]() -> ir::Type {
    nb::object name = nb::getattr(d, "name", nb::none());
    std::string text = name.is_none() ? std::string(nb::str(d).c_str()) : std::string(nb::str(name).c_str());
    return dsl::dtype_from_framework_name(text);
  };
  // torch dtypes are singletons; numpy's dtype objects need not be, so only torch's are cached.
  if (is_torch_dtype(d.ptr())) return cached_by_identity(d.ptr(), by_name);
  return by_name();
}

}  // namespace

ir::Type TensorArgument::element_type() {
  const Names& n = names();
  switch (kind_) {
    case Kind::Runtime: {
      nb::object cls = get_attr(obj_, n.element_type);
      return cached_by_identity(cls.ptr(), [&]() -> ir::Type {
        try {
          return dsl::dtype_from_name(nb::cast<std::string>(get_attr(cls, n.name)));
        } catch (const std::invalid_argument&) {
          return nullptr;
        }
      });
    }
    case Kind::DLPackExchange: {
      if (dl_.dtype_lanes != 1) return nullptr;
      // A table by (type code, bytes) in front of the row search: this runs per tensor per call.
      static ir::Type table[8][9];
      static bool known[8][9];
      const uint8_t code = dl_.dtype_code, bits = dl_.dtype_bits;
      if (code >= 8 || bits % 8 != 0 || bits > 64) return dsl::dtype_from_dlpack(code, bits);
      if (!known[code][bits / 8]) {  // the GIL is held: one thread fills the table at a time
        table[code][bits / 8] = dsl::dtype_from_dlpack(code, bits);
        known[code][bits / 8] = true;
      }
      return table[code][bits / 8];
    }
    case Kind::Torch: return type_from_dtype_attribute(obj_);
    case Kind::Buffer: {
      ir::Type t = type_from_buffer_format(buffer_.format, buffer_.itemsize);
      return t ? t : type_from_dtype_attribute(obj_);
    }
    case Kind::ArrayInterface: {
      nb::object ai = get_attr(obj_, n.array_interface);
      PyObject* ts = PyDict_GetItem(ai.ptr(), n.typestr);  // borrowed
      if (ts && PyUnicode_Check(ts)) {
        Py_ssize_t length = 0;
        const char* chars = PyUnicode_AsUTF8AndSize(ts, &length);
        std::string s = chars ? std::string(chars, size_t(length)) : std::string();
        if (s.size() >= 3) {
          char* end = nullptr;
          long bytes = std::strtol(s.c_str() + 2, &end, 10);
          if (ir::Type t = type_from_kind_char(s[1], bytes)) return t;
        }
      }
      return type_from_dtype_attribute(obj_);
    }
  }
  return nullptr;
}

TensorArgument::Memory TensorArgument::memory() {
  switch (kind_) {
    case Kind::DLPackExchange:
      if (dl_.device_type == 2) return Memory::Device;    // kDLCUDA
      if (dl_.device_type == 13) return Memory::Managed;  // kDLCUDAManaged
      return Memory::Host;
    case Kind::Runtime:
    case Kind::Torch: {
      PyObject* r = PyObject_GetAttr(obj_.ptr(), names().is_cuda);
      if (!r) {
        PyErr_Clear();
        return Memory::Host;
      }
      bool cuda = PyObject_IsTrue(r) == 1;
      Py_DECREF(r);
      return cuda ? Memory::Device : Memory::Host;
    }
    case Kind::Buffer:
    case Kind::ArrayInterface: return Memory::Host;
  }
  return Memory::Host;
}

// ---- a DLPack exchange provider for tests ----------------------------------------------------
// torch (>= 2.10) is the only provider of `__dlpack_c_exchange_api__` in the wild, and CI has
// no torch: this one lets tests drive the exchange path with numpy memory. A Python class sets
// `__dlpack_c_exchange_api__ = _core._testing_dlpack_exchange_api()` and gives each instance a
// `_dlpack_view` (`_core._DLPackView`) describing its memory.
namespace {

struct DLPackView {
  int64_t data;
  std::vector<int64_t> shape, strides;
  uint8_t code, bits;
  int32_t device_type;
  uint16_t lanes = 1;
};

// How often each conversion ran, for tests that tell which path a call took.
int64_t dltensor_conversions = 0, managed_conversions = 0;

int view_from_py_object(void* py_object, TensorArgument::DLTensorView* out) {
  ++dltensor_conversions;
  static PyObject* name = PyUnicode_InternFromString("_dlpack_view");
  PyObject* v = PyObject_GetAttr(static_cast<PyObject*>(py_object), name);
  if (!v) return -1;
  DLPackView* view = nullptr;
  bool ok = nb::try_cast<DLPackView*>(nb::handle(v), view) && view;
  Py_DECREF(v);  // the view lives on the object, which the caller keeps alive
  if (!ok) {
    PyErr_SetString(PyExc_TypeError, "_dlpack_view is not a _DLPackView");
    return -1;
  }
  out->data = reinterpret_cast<void*>(intptr_t(view->data));
  out->device_type = view->device_type;
  out->device_id = 0;
  out->ndim = int32_t(view->shape.size());
  out->dtype_code = view->code;
  out->dtype_bits = view->bits;
  out->dtype_lanes = view->lanes;
  out->shape = view->shape.data();
  out->strides = view->strides.empty() ? nullptr : view->strides.data();
  out->byte_offset = 0;
  return 0;
}

// DLManagedTensorVersioned (dlpack.h), for tvm-ffi's own conversion of an argument: an owning
// copy of the view (as torch's exchange function makes one), holding a reference to the object.
struct ManagedTensor {
  uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
  uint64_t flags;
  TensorArgument::DLTensorView dl_tensor;
  // owned storage after the public part
  PyObject* owner;
  std::vector<int64_t> shape, strides;
};

void delete_managed(ManagedTensor* m) {
  PyGILState_STATE gil = PyGILState_Ensure();  // tvm-ffi may release it around a call
  Py_DECREF(m->owner);
  PyGILState_Release(gil);
  delete m;
}

int managed_from_py_object(void* py_object, ManagedTensor** out) {
  TensorArgument::DLTensorView view{};
  if (view_from_py_object(py_object, &view) != 0) return -1;
  --dltensor_conversions;
  ++managed_conversions;
  auto* m = new ManagedTensor{1, 1, nullptr, delete_managed, 0, view, static_cast<PyObject*>(py_object), {}, {}};
  Py_INCREF(m->owner);
  m->shape.assign(view.shape, view.shape + view.ndim);
  if (view.strides) m->strides.assign(view.strides, view.strides + view.ndim);
  m->dl_tensor.shape = m->shape.data();
  m->dl_tensor.strides = view.strides ? m->strides.data() : nullptr;
  m->manager_ctx = m;
  *out = m;
  return 0;
}

// The framework's current stream: the testing provider has none, it reports the null stream.
int testing_current_work_stream(int32_t, int32_t, void** out_stream) {
  *out_stream = nullptr;
  return 0;
}

DLPackExchangeApi testing_exchange_api{1, 3, nullptr, nullptr, reinterpret_cast<void*>(&managed_from_py_object),
                                       nullptr, view_from_py_object, testing_current_work_stream};

}  // namespace

void bind_dlpack_exchange_testing(nb::module_& m) {
  nb::class_<DLPackView>(m, "_DLPackView")
      .def(nb::init<>())
      .def("__init__", [](DLPackView* v, int64_t data, std::vector<int64_t> shape, std::vector<int64_t> strides,
                          int code, int bits, int device_type, int lanes) {
        new (v) DLPackView{data, std::move(shape), std::move(strides), uint8_t(code), uint8_t(bits), device_type,
                           uint16_t(lanes)};
      }, nb::arg("data"), nb::arg("shape"), nb::arg("strides"), nb::arg("code"), nb::arg("bits"),
         nb::arg("device_type"), nb::arg("lanes") = 1);
  // (dltensor_from_py_object_no_sync calls, managed_tensor_from_py_object_no_sync calls) so far
  m.def("_testing_dlpack_exchange_counts", []() {
    return std::make_pair(dltensor_conversions, managed_conversions);
  });
  m.def("_testing_dlpack_exchange_api", []() {
    return nb::steal(PyCapsule_New(&testing_exchange_api, "dlpack_exchange_api", nullptr));
  });
  // Nanoseconds per DLTensor read through the tensors' own exchange table, `iters` passes over
  // the list: the framework's share of a call's per-tensor cost (bench_call_overhead.py).
  m.def("_time_dlpack_exchange_reads", [](nb::list tensors, int iters) {
    std::vector<PyObject*> objects;
    std::vector<TensorArgument::DLTensorReader> readers;
    for (nb::handle t : tensors) {
      TensorArgument::DLTensorReader read = TensorArgument::exchange_reader(t);
      if (!read) throw std::invalid_argument("a tensor without DLPack's C exchange table");
      objects.push_back(t.ptr());
      readers.push_back(read);
    }
    TensorArgument::DLTensorView view{};
    int64_t sink = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < iters; ++k)
      for (size_t i = 0; i < objects.size(); ++i) {
        if (readers[i](objects[i], &view) != 0) throw nb::python_error();
        sink += view.ndim;
      }
    auto t1 = std::chrono::steady_clock::now();
    asm volatile("" : : "r"(sink));
    const double reads = double(iters) * double(objects.empty() ? 1 : objects.size());
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / reads;
  }, nb::arg("tensors"), nb::arg("iters"));
}

}  // namespace opencute::bindings
