#include "bindings/tvm_ffi_function.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <climits>
#include <cstdlib>
#include <exception>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/compiled_function_plan.h"
#include "bindings/tensor_argument.h"
#include "bindings/tvm_ffi_library.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "bindings/python_object_access.h"

namespace opencute::bindings {
namespace {

using namespace runtime::tvm_ffi_abi;  // NOLINT: the C ABI's names are this file's vocabulary
using DLTensorView = TensorArgument::DLTensorView;  // DLTensor
enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };

// ---- the function's state -----------------------------------------------------------------
enum LeafKind { kLeafTensor = 0, kLeafScalar = 1, kLeafStream = 2, kLeafPointer = 3 };

struct Source {       // one runtime value of the traced function
  std::string label;  // "a", "a[0]": for messages
  int kind;           // LeafKind
  std::string type_name;  // what a type error says is expected: "Tensor", "float32", ...
  int param;          // the TVM-FFI argument holding it
  int item;           // its index in that argument's tuple, -1 for a plain argument
  bool env_stream;    // read from TVM-FFI's environment stream, not from the arguments
};

// A parameter compiled with None (a compile-time value): the call passes None there or leaves
// it out (jit.py NONE_PARAM_ARITY).
constexpr int kNoneParamArity = -2;

struct Param {
  int arity;             // -1 for a single value, n for a tuple of n, kNoneParamArity
  std::string type_name; // for type errors: "Tensor", "Tuple[...]" ...
};

struct TvmFfiFunction {
  Executor ex;
  std::string signature;
  std::vector<Source> sources;
  std::vector<Param> params;
  // Scalar defaults of trailing parameters (type kNone where a parameter has none), so that a
  // positional call may leave them out.
  std::vector<FfiAny> defaults;
  size_t num_none_params = 0;  // parameters of arity kNoneParamArity
  bool single_values = true;   // every parameter one value (no tuples, no None parameters)
  bool uses_env_stream = false;  // a source read from TVM-FFI's environment stream
};

struct CallError {
  const char* kind;  // "TypeError", "ValueError", "RuntimeError"
  std::string message;
};

[[noreturn]] void fail(const char* kind, std::string message) { throw CallError{kind, std::move(message)}; }

std::string where(const TvmFfiFunction& f, int param) {
  return " on argument #" + std::to_string(param) + " when calling: `" + f.signature + "`, ";
}

// An argument of the wrong kind for its parameter (the seed's message).
[[noreturn]] void mismatched_type(const TvmFfiFunction& f, const Source& src) {
  fail("TypeError", "Mismatched type" + where(f, src.param) + "expected " + src.type_name);
}

// Whether a tensor is in GPU memory, as the device that runs the kernels is chosen.
bool on_gpu(const DLTensorView& t) { return t.device_type == kDLCUDA || t.device_type == kDLCUDAManaged; }

const DLTensorView* as_dltensor(const FfiAny& a) {
  if (a.type_index == kTensor) return reinterpret_cast<const DLTensorView*>(reinterpret_cast<const char*>(a.v_obj) +
                                                                          sizeof(FfiObject));
  if (a.type_index == kDLTensorPtr) return static_cast<const DLTensorView*>(a.v_ptr);
  return nullptr;
}

using runtime::dltensor_stride;
using runtime::KernelMemory;

// What the compact record did not decide: the argument contract's full check, raising TVM-FFI's
// wording of what fails. Not inlined: it is off the common path, and inlined into call() it
// costs the common path registers (~10 instructions per tensor).
__attribute__((noinline)) void check_tensor(const TvmFfiFunction& f, const TensorCheck& c, const DLTensorView& t, KernelMemory memory,
                  const std::vector<ir::Scalar>& vals) {
  runtime::DLTensorContractView view{t};
  const runtime::ContractFindings found = runtime::check_tensor(c, view, memory, vals.data());
  if (found.ok()) return;
  const Source& src = f.sources[size_t(c.source)];
  runtime::MessageInputs in;
  in.label = src.label;
  in.at = where(f, src.param);
  for (const runtime::PlanSameAs& e : c.same_as) in.first_labels.push_back(f.sources[size_t(e.first_source)].label);
  runtime::ArgumentError e = runtime::argument_error(runtime::MessageStyle::TvmFfi, c, found, in);
  if (e.code) fail(e.kind, e.message);
}

// A tensor entry that does not fit the Int32 it was compiled as (out of line: off the common path).
[[noreturn]] __attribute__((noinline)) void entry_does_not_fit(const TvmFfiFunction& f, const Source& src,
                                                               const ArgSlot& slot, int64_t v) {
  runtime::ArgumentError e = runtime::int32_entry_error(runtime::MessageStyle::TvmFfi, src.label,
                                                        slot.kind == kTensorShape, slot.mode, v, where(f, src.param));
  fail(e.kind, e.message);
}

ir::Scalar scalar_argument(const TvmFfiFunction& f, const Source& src, const FfiAny& a, ir::Type to) {
  switch (a.type_index) {
    case kBool: return ir::eval_cast(ir::bool_type(), to, ir::Scalar::of_int(a.v_int64 != 0));
    case kInt:
      if (to->is_int() || to->is_float()) return ir::eval_cast(ir::int_type(64, true), to, ir::Scalar::of_int(a.v_int64));
      break;
    case kFloat:
      if (to->is_float()) return ir::eval_cast(ir::f64(), to, ir::Scalar::of_float(a.v_float64));
      break;
  }
  mismatched_type(f, src);
}

int64_t handle_argument(const TvmFfiFunction& f, const Source& src, const FfiAny& a) {
  switch (a.type_index) {
    case kNone: return 0;
    case kOpaquePtr: return int64_t(reinterpret_cast<intptr_t>(a.v_ptr));
    case kInt: return a.v_int64;
  }
  mismatched_type(f, src);
}

// The stream TVM-FFI's Python binding would have made the environment stream for the call: the
// framework's current stream of the first non-CPU tensor argument's device.
struct EnvStream {
  int32_t device_type = -1, device_id = -1;
  void* stream = nullptr;
};

struct CallScratch {
  std::vector<FfiAny> with_defaults;
  std::vector<const FfiAny*> values, items;
  std::vector<ir::Scalar> vals;
  std::vector<std::vector<FfiAny>> shape_items;  // tvm_ffi.Shape arguments as ints
  // float4_e2m1fn_x2 tensors (packed pairs) seen as 4-bit elements, by source; see unpack_fp4_pairs.
  std::vector<DLTensorView> unpacked_views;
  std::vector<std::vector<int64_t>> unpacked_layouts;
  std::vector<char> has_unpacked;
};

// This thread's scratch, through a call that is not inlined: each use of a thread-local in a
// shared library may cost a __tls_get_addr call, and the compiler repeats it rather than keep
// the address (~60 instructions per tensor argument); a returned pointer is kept.
__attribute__((noinline)) CallScratch* call_scratch() {
  thread_local CallScratch scratch;
  return &scratch;
}

// What the Python call slot learnt while reading the arguments (fast_call): the first GPU
// tensor's device and whether any tensor holds packed fp4 pairs, so that call() need not look
// at every tensor twice.
struct TensorSummary {
  int device_id = -1;
  bool any_packed_fp4 = false;
};

void call(TvmFfiFunction& f, const FfiAny* args, int32_t num_args, FfiAny* result,
          const EnvStream* env = nullptr, const TensorSummary* summary = nullptr) {
  const Executor& ex = f.ex;
  // Scratch reused across calls of this thread: a call allocates nothing when sizes repeat.
  CallScratch& sc = *call_scratch();
  std::vector<FfiAny>& with_defaults = sc.with_defaults;
  std::vector<const FfiAny*>& values = sc.values;
  std::vector<const FfiAny*>& items = sc.items;
  std::vector<ir::Scalar>& vals = sc.vals;
  std::vector<std::vector<FfiAny>>& shape_items = sc.shape_items;
  bool runtime_only = false;  // the runtime arguments alone (None parameters left out)?
  if (f.num_none_params > 0 && size_t(num_args) == f.params.size() - f.num_none_params)
    // As many arguments as either that or the full list with trailing defaults left out: the
    // full list holds None at the None parameters it reaches.
    for (size_t p = 0; p < size_t(num_args) && !runtime_only; ++p)
      runtime_only = f.params[p].arity == kNoneParamArity && args[p].type_index != kNone;
  if (runtime_only) {
    with_defaults.clear();
    const FfiAny* next = args;
    for (const Param& p : f.params) with_defaults.push_back(p.arity == kNoneParamArity ? FfiAny{} : *next++);
    args = with_defaults.data();
    num_args = int32_t(with_defaults.size());
  }
  if (size_t(num_args) < f.params.size()) {
    bool have = true;
    for (size_t p = size_t(num_args); p < f.params.size(); ++p)
      have = have && (f.defaults[p].type_index != kNone || f.params[p].arity == kNoneParamArity);
    if (have) {
      with_defaults.assign(args, args + num_args);
      with_defaults.insert(with_defaults.end(), f.defaults.begin() + num_args, f.defaults.end());
      args = with_defaults.data();
      num_args = int32_t(with_defaults.size());
    }
  }
  if (size_t(num_args) != f.params.size())
    fail("TypeError", "Expected " + std::to_string(f.params.size()) + " arguments but got " +
                          std::to_string(num_args) + " when calling: `" + f.signature + "`");
  // The value of each source: arguments, and items of tuple arguments.
  values.assign(f.sources.size(), nullptr);
  items.assign(f.params.size(), nullptr);
  for (size_t p = 0; p < f.params.size() && !f.single_values; ++p) {
    const Param& param = f.params[p];
    if (param.arity == kNoneParamArity) {
      if (args[p].type_index != kNone)
        fail("TypeError", "Mismatched type" + where(f, int(p)) +
                              "expected None: the function was compiled with None there (a compile-time value); "
                              "compile it with a value to pass one");
      continue;
    }
    if (param.arity < 0) continue;
    const FfiAny& a = args[p];
    const char* cell = a.type_index >= 64 ? reinterpret_cast<const char*>(a.v_obj) + sizeof(FfiObject) : nullptr;
    if (a.type_index == kShape) {  // a tvm_ffi.Shape for a tuple of integers
      auto* shape = reinterpret_cast<const FfiShapeCell*>(cell);
      if (int64_t(shape->size) != param.arity)
        fail("TypeError", "Mismatched type" + where(f, int(p)) + "expected " + param.type_name);
      if (shape_items.size() < f.params.size()) shape_items.resize(f.params.size());
      std::vector<FfiAny>& ints = shape_items[p];
      ints.assign(shape->size, FfiAny{});
      for (size_t i = 0; i < shape->size; ++i) {
        ints[i].type_index = kInt;
        ints[i].v_int64 = shape->data[i];
      }
      items[p] = ints.data();
      continue;
    }
    const FfiSeqCell* seq = nullptr;
    if (a.type_index == kArray || a.type_index == kList) seq = reinterpret_cast<const FfiSeqCell*>(cell);
    if (!seq || seq->size != param.arity)
      fail("TypeError", "Mismatched type" + where(f, int(p)) + "expected " + param.type_name);
    items[p] = static_cast<const FfiAny*>(seq->data);
  }
  // One pass over the sources: their values, tensors' type, the first GPU tensor's device (it
  // runs the kernels and owns the environment stream), and whether any holds packed fp4 pairs.
  int device_id = summary ? summary->device_id : -1;
  bool any_packed_fp4 = summary && summary->any_packed_fp4;
  for (size_t s = 0; s < f.sources.size(); ++s) {
    const Source& src = f.sources[s];
    if (src.env_stream) continue;
    values[s] = src.item < 0 ? &args[src.param] : &items[size_t(src.param)][src.item];
    if (src.kind != kLeafTensor || summary) continue;  // the slot loop checks the type then
    const DLTensorView* t = as_dltensor(*values[s]);
    if (!t) mismatched_type(f, src);
    if (device_id < 0 && on_gpu(*t)) device_id = t->device_id;
    any_packed_fp4 = any_packed_fp4 || is_packed_fp4_pairs(t->dtype_code, t->dtype_bits, t->dtype_lanes);
  }
  if (any_packed_fp4) {
    sc.has_unpacked.assign(f.sources.size(), 0);
    for (size_t s = 0; s < f.sources.size(); ++s) {
      if (f.sources[s].kind != kLeafTensor || !values[s]) continue;
      const DLTensorView* t = as_dltensor(*values[s]);
      if (!t || !is_packed_fp4_pairs(t->dtype_code, t->dtype_bits, t->dtype_lanes)) continue;
      if (sc.unpacked_views.size() < f.sources.size()) {
        sc.unpacked_views.resize(f.sources.size());
        sc.unpacked_layouts.resize(f.sources.size());
      }
      DLTensorView& v = sc.unpacked_views[s];
      std::vector<int64_t>& layout = sc.unpacked_layouts[s];
      v = *t;
      const size_t n = size_t(t->ndim);
      layout.assign(t->shape, t->shape + n);
      layout.resize(2 * n);
      unpack_fp4_pairs(t->ndim, layout.data(), t->strides, layout.data() + n);
      v.shape = layout.data();
      v.strides = layout.data() + n;
      v.dtype_lanes = 1;
      sc.has_unpacked[s] = 1;
    }
  }
  auto tensor_of = [&](int source, const FfiAny& a) -> const DLTensorView& {
    if (any_packed_fp4 && sc.has_unpacked[size_t(source)]) return sc.unpacked_views[size_t(source)];
    const DLTensorView* t = as_dltensor(a);
    if (!t) mismatched_type(f, f.sources[size_t(source)]);
    return *t;
  };
  const bool emulated = ex.program->runs_on_emulator();
  const KernelMemory memory = !ex.program->has_kernels() || ex.program->discards_launches() ? KernelMemory::Any
                              : emulated                                                     ? KernelMemory::Host
                                                                                             : KernelMemory::Device;
  vals.resize(ex.slots.size());  // every slot below writes its value (or the call fails)
  std::vector<emulator::MemoryRegion> regions;
  for (size_t i = 0; i < ex.slots.size(); ++i) {
    const ArgSlot& slot = ex.slots[i];
    const Source& src = f.sources[size_t(slot.source)];
    const FfiAny* a = values[size_t(slot.source)];
    switch (slot.kind) {
      case kScalar: vals[i] = scalar_argument(f, src, *a, slot.type); break;
      case kStream: {
        if (!src.env_stream) {
          vals[i] = ir::Scalar::of_int(handle_argument(f, src, *a));
          break;
        }
        int32_t id = device_id < 0 ? 0 : device_id;
        void* stream = env && env->device_type == kDLCUDA && env->device_id == id ? env->stream
                                                                                  : ffi_api().EnvGetStream(kDLCUDA, id);
        vals[i] = ir::Scalar::of_int(int64_t(reinterpret_cast<intptr_t>(stream)));
        break;
      }
      case kPointer: vals[i] = ir::Scalar::of_int(handle_argument(f, src, *a)); break;
      case kCPointer:
        throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "a user object with __c_pointers__ cannot be passed through "
                                                     "TVM-FFI; compile without --enable-tvm-ffi");
      case kTensorData:
      case kTensorShape:
      case kTensorStride: {
        const DLTensorView& t = tensor_of(slot.source, *a);
        // The tensor's slots in one step (not for the emulator, which also records its memory).
        if (slot.read >= 0 && !emulated) {
          const TensorRead& r = ex.tensor_reads.reads[size_t(slot.read)];
          if (runtime::read_dltensor(ex.tensor_reads, r, t, memory, vals.data())) {
            i += size_t(r.num_slots) - 1;
            break;
          }
        }
        if (slot.check >= 0) check_tensor(f, ex.plan.checks[size_t(slot.check)], t, memory, vals);
        if (slot.kind == kTensorData) {
          uintptr_t base = reinterpret_cast<uintptr_t>(t.data) + uintptr_t(t.byte_offset);
          vals[i] = ir::Scalar::of_int(int64_t(base));
          if (emulated) {
            // Extents in bits, so that packed 4-bit elements count as half a byte.
            int64_t lo = 0, hi = 0, bits = slot.type->element ? slot.type->element->bit_size() : 8;
            bool empty = false;
            for (int d = 0; d < t.ndim; ++d) {
              int64_t n = t.shape[d], st = dltensor_stride(t, d);
              if (n <= 0) empty = true;
              else (st > 0 ? hi : lo) += (n - 1) * st;
            }
            emulator::MemoryRegion r;
            r.begin = base + uintptr_t((lo * bits) >> 3);
            r.end = empty ? r.begin : base + uintptr_t(((hi + 1) * bits + 7) >> 3);
            r.name = runtime::tensor_region_name(slot.source, src.label);
            regions.push_back(std::move(r));
          }
        } else {
          int64_t v = slot.kind == kTensorShape ? t.shape[slot.mode] : dltensor_stride(t, slot.mode);
          if (slot.type->width == 32 && (v < INT32_MIN || v > INT32_MAX)) entry_does_not_fit(f, src, slot, v);
          vals[i] = ir::Scalar::of_int(slot.type->width == 32 ? slot.type->is_signed ? int64_t(int32_t(v))
                                                                                      : int64_t(uint32_t(v))
                                                              : ir::wrap_int(slot.type, v));
        }
        break;
      }
    }
  }
  if (ex.flush_python_stdout) {
    // Host printf writes to the C stdout; flush Python's buffer first so output stays in order.
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* out = PySys_GetObject("stdout");  // borrowed
    if (out) {
      PyObject* r = PyObject_CallMethod(out, "flush", nullptr);
      Py_XDECREF(r);
    }
    PyErr_Clear();
    PyGILState_Release(gil);
  }
  if (device_id >= 0 && !emulated && !ex.program->discards_launches())
    runtime::CudaDriver::get().initialize_context(device_id);
  std::vector<ir::Scalar> results =
      emulated ? ex.program->run(vals, regions, ex.strict_regions) : ex.program->run(vals);
  result->type_index = kNone;
  result->v_int64 = 0;
  if (ex.result_types.size() == 1) {
    ir::Type t = ex.result_types[0];
    if (t->is_bool()) {
      result->type_index = kBool;
      result->v_int64 = results[0].i != 0;
    } else if (t->is_int()) {
      result->type_index = kInt;
      result->v_int64 = results[0].i;
    } else if (t->is_float()) {
      result->type_index = kFloat;
      result->v_float64 = results[0].f;
    }
  }
}

// A failed call as the error TVM-FFI raises: its kind (a Python exception name) and message.
CallError call_error(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const CallError& e) {
    return e;
  } catch (const runtime::CudaError& e) {
    return {"RuntimeError", std::string("CUDA Error: ") + e.what()};
  } catch (const dsl::UserError& e) {
    return {"ValueError", e.what()};
  } catch (const std::exception& e) {
    return {"RuntimeError", e.what()};
  } catch (...) {
    return {"RuntimeError", "unknown C++ exception in a TVM-FFI function"};
  }
}

int safe_call(void* self, const FfiAny* args, int32_t num_args, FfiAny* result) {
  try {
    call(*static_cast<TvmFfiFunction*>(self), args, num_args, result);
    return 0;
  } catch (...) {
    CallError e = call_error(std::current_exception());
    ffi_api().ErrorSetRaisedFromCStr(e.kind, e.message.c_str());
  }
  return -1;
}

void delete_function(void* self) { delete static_cast<TvmFfiFunction*>(self); }

// Functions made by make_tvm_ffi_function and not yet handed to tvm-ffi, by address. The
// factory's safe call (below) turns one into a TVM-FFI function object and returns it; going
// through a call lets tvm-ffi's own Python binding wrap the object as a `tvm_ffi.Function`.
int factory_safe_call(void*, const FfiAny* args, int32_t num_args, FfiAny* result) {
  if (num_args != 1 || args[0].type_index != kInt) {
    ffi_api().ErrorSetRaisedFromCStr("TypeError", "the OpenCuTe TVM-FFI factory takes one address");
    return -1;
  }
  auto* f = reinterpret_cast<TvmFfiFunction*>(intptr_t(args[0].v_int64));
  void* handle = nullptr;
  if (ffi_api().FunctionCreate(f, safe_call, delete_function, &handle) != 0) {
    delete f;
    return -1;  // tvm-ffi has raised the error
  }
  result->type_index = kFunction;
  result->v_ptr = handle;  // the new reference goes to the caller
  return 0;
}

}  // namespace

void* tvm_ffi_new_function_state(const Executor& ex, nb::handle description) {
  auto f = std::make_unique<TvmFfiFunction>();
  f->ex = ex;
  f->signature = nb::cast<std::string>(description.attr("signature"));
  for (nb::handle h : description.attr("params")) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    f->params.push_back(Param{nb::cast<int>(t[0]), nb::cast<std::string>(t[1])});
    if (f->params.back().arity == kNoneParamArity) ++f->num_none_params;
    if (f->params.back().arity != -1) f->single_values = false;
  }
  for (nb::handle h : description.attr("sources")) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    f->sources.push_back(Source{nb::cast<std::string>(t[0]), nb::cast<int>(t[1]), nb::cast<std::string>(t[2]),
                                nb::cast<int>(t[3]), nb::cast<int>(t[4]), nb::cast<bool>(t[5])});
    f->uses_env_stream = f->uses_env_stream || f->sources.back().env_stream;
  }
  f->defaults.assign(f->params.size(), FfiAny{});
  for (nb::handle h : description.attr("defaults")) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    FfiAny& d = f->defaults.at(nb::cast<size_t>(t[0]));
    nb::handle v = t[1];
    if (PyBool_Check(v.ptr())) {
      d.type_index = kBool;
      d.v_int64 = v.ptr() == Py_True;
    } else if (PyLong_Check(v.ptr())) {
      d.type_index = kInt;
      d.v_int64 = nb::cast<int64_t>(v);
    } else if (PyFloat_Check(v.ptr())) {
      d.type_index = kFloat;
      d.v_float64 = nb::cast<double>(v);
    }  // others (tuples): only through the Python binding of keyword calls
  }
  if (int(f->sources.size()) != ex.plan.num_sources)
    throw std::logic_error("TVM-FFI description: " + std::to_string(f->sources.size()) + " sources for " +
                           std::to_string(ex.plan.num_sources));
  return f.release();
}

namespace {

// ---- the Python call ----------------------------------------------------------------------
// tvm_ffi.Function's own call converts each tensor into an owned ffi.Tensor (the framework's
// DLManagedTensorVersioned wrapped in a new tvm-ffi object, both freed after the call): about
// half a microsecond per torch tensor on the H100. The callback only reads DLTensors, so the
// call slot of our class reads the common arguments itself - tensors through DLPack's C exchange
// table into DLTensors on a scratch array, Python ints, floats, bools, None and tuples of those -
// and calls the callback directly; any other argument (numpy arrays, tvm-ffi objects, pointers,
// streams, ...) takes tvm-ffi's path, unchanged. The environment stream is what tvm-ffi would
// set: the framework's current stream of the first non-CPU tensor's device.

struct SeqObject {  // an ffi.Array as the callback reads it, on the scratch: never given to tvm-ffi
  FfiObject header;
  FfiSeqCell cell;
};

struct PyCallScratch {
  std::vector<FfiAny> args, items;
  std::vector<DLTensorView> tensors;
  std::vector<SeqObject> seqs;
};

__attribute__((noinline)) PyCallScratch* py_call_scratch() {  // as call_scratch()
  thread_local PyCallScratch scratch;
  return &scratch;
}

enum class Read { Ok, Unsupported, Error };

struct ArgumentReader {
  PyCallScratch& s;
  bool want_stream;
  EnvStream env;
  size_t next_tensor = 0, next_item = 0, next_seq = 0;
  PyTypeObject* last_type = nullptr;  // the type last_functions reads
  const DLPackExchangeFunctions* last_functions = nullptr;
  TensorSummary tensors{};  // of the tensors read so far

  Read leaf(PyObject* o, FfiAny& out) {
    out = FfiAny{};
    if (o == Py_None) return Read::Ok;
    if (PyBool_Check(o)) {
      out.type_index = kBool;
      out.v_int64 = o == Py_True;
      return Read::Ok;
    }
    if (PyLong_CheckExact(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow) return Read::Unsupported;  // tvm-ffi says what it does with it
      out.type_index = kInt;
      out.v_int64 = v;
      return Read::Ok;
    }
    if (PyFloat_CheckExact(o)) {
      out.type_index = kFloat;
      out.v_float64 = float_value(o);
      return Read::Ok;
    }
    // TVM_FFI_SKIP_DLPACK_C_EXCHANGE_API=1 turns tvm-ffi's use of the table off: ours too.
    static const bool skip_exchange = [] {
      const char* v = std::getenv("TVM_FFI_SKIP_DLPACK_C_EXCHANGE_API");
      return v && std::string(v) == "1";
    }();
    if (Py_TYPE(o) != last_type) {  // a call's tensors are mostly of one type
      last_type = Py_TYPE(o);
      last_functions = skip_exchange ? nullptr : dlpack_exchange_functions(last_type);
    }
    const DLPackExchangeFunctions* x = last_functions;
    if (!x) return Read::Unsupported;
    DLTensorView& t = s.tensors[next_tensor++];
    if (x->to_dltensor(o, &t) != 0) return Read::Error;
    out.type_index = kDLTensorPtr;
    out.v_ptr = &t;
    if (tensors.device_id < 0 && on_gpu(t)) tensors.device_id = t.device_id;
    tensors.any_packed_fp4 = tensors.any_packed_fp4 || is_packed_fp4_pairs(t.dtype_code, t.dtype_bits, t.dtype_lanes);
    if (want_stream && env.device_type == -1 && t.device_type != kDLCPU && x->current_work_stream) {
      void* stream = nullptr;
      if (x->current_work_stream(t.device_type, t.device_id, &stream) == 0) env = {t.device_type, t.device_id, stream};
      else PyErr_Clear();  // as tvm-ffi: no stream from the framework, the environment's stays
    }
    return Read::Ok;
  }

  Read argument(PyObject* o, FfiAny& out) {
    if (!PyTuple_CheckExact(o) && !PyList_CheckExact(o)) return leaf(o, out);
    Py_ssize_t n = sequence_size(o);
    FfiAny* items = s.items.data() + next_item;
    next_item += size_t(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* e = sequence_item(o, i);
      if (PyTuple_Check(e) || PyList_Check(e)) return Read::Unsupported;  // nested: tvm-ffi's path
      Read r = leaf(e, items[i]);
      if (r != Read::Ok) return r;
    }
    SeqObject& q = s.seqs[next_seq++];
    q = SeqObject{};
    q.header.type_index = kArray;
    q.cell.data = items;
    q.cell.size = n;
    q.cell.capacity = n;
    out = FfiAny{};
    out.type_index = kArray;
    out.v_obj = &q.header;
    return Read::Ok;
  }
};

PyObject* python_exception(const char* kind) {
  if (!std::strcmp(kind, "TypeError")) return PyExc_TypeError;
  if (!std::strcmp(kind, "ValueError")) return PyExc_ValueError;
  return PyExc_RuntimeError;
}

PyObject* python_result(const FfiAny& r) {
  switch (r.type_index) {
    case kBool: return PyBool_FromLong(long(r.v_int64 != 0));
    case kInt: return PyLong_FromLongLong(r.v_int64);
    case kFloat: return PyFloat_FromDouble(r.v_float64);
  }
  Py_RETURN_NONE;
}

// The call of `f` with the Python tuple `args`, or null with *handled false when an argument
// needs tvm-ffi's conversion (nothing has run then), or null with a Python error set.
PyObject* fast_call(TvmFfiFunction& f, PyObject* args, bool* handled) {
  *handled = true;
  PyCallScratch& scratch = *py_call_scratch();
  Py_ssize_t num_args = tuple_size(args);
  size_t leaves = size_t(num_args);
  for (Py_ssize_t i = 0; i < num_args; ++i) {
    PyObject* o = tuple_item(args, i);
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) leaves += size_t(sequence_size(o));
  }
  // Sized before reading: the packed values point into these arrays.
  if (scratch.tensors.size() < leaves) scratch.tensors.resize(leaves);
  if (scratch.items.size() < leaves) scratch.items.resize(leaves);
  if (scratch.seqs.size() < size_t(num_args)) scratch.seqs.resize(size_t(num_args));
  if (scratch.args.size() < size_t(num_args)) scratch.args.resize(size_t(num_args));
  ArgumentReader reader{scratch, f.uses_env_stream, {}};
  for (Py_ssize_t i = 0; i < num_args; ++i) {
    Read r = reader.argument(tuple_item(args, i), scratch.args[size_t(i)]);
    if (r == Read::Error) return nullptr;
    if (r == Read::Unsupported) {
      *handled = false;
      return nullptr;
    }
  }
  FfiAny result{};
  bool failed = false;
  CallError error{"RuntimeError", {}};
  // A kernel on the emulator may run long: let other threads run, as tvm-ffi's call does.
  PyThreadState* released = f.ex.program->runs_on_emulator() ? PyEval_SaveThread() : nullptr;
  try {
    call(f, scratch.args.data(), int32_t(num_args), &result, reader.env.device_type == -1 ? nullptr : &reader.env,
         &reader.tensors);
  } catch (...) {
    failed = true;
    error = call_error(std::current_exception());
  }
  if (released) PyEval_RestoreThread(released);
  if (failed) {
    PyErr_SetString(python_exception(error.kind), error.message.c_str());
    return nullptr;
  }
  return python_result(result);
}

// The call slot of the Python class of TVM-FFI compiled functions (a tvm_ffi.Function subclass):
// positional calls go to fast_call, or to tvm_ffi.Function's own slot, with no Python frame;
// keyword calls are bound by the class's `_bind` first.
ternaryfunc base_call = nullptr;

// The function state of a compiled function object (tvm_ffi.py stores its address as
// `_opencute_state`; the function object owns the state, so it lives as long as `self`).
TvmFfiFunction* state_of(PyObject* self) {
  static PyObject* key = PyUnicode_InternFromString("_opencute_state");
  PyObject* v = nullptr;
#ifndef Py_LIMITED_API
  PyTypeObject* type = Py_TYPE(self);
  if (type->tp_dictoffset > 0) {  // tvm_ffi.Function has a __dict__ slot: one dict look-up
    PyObject* dict = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(self) + type->tp_dictoffset);
    v = dict ? PyDict_GetItemWithError(dict, key) : nullptr;  // borrowed
  } else
#endif
  {
    v = PyObject_GetAttr(self, key);
    Py_XDECREF(v);  // the dict keeps it
  }
  if (!v) {
    PyErr_Clear();
    return nullptr;
  }
  void* p = PyLong_AsVoidPtr(v);
  if (!p) PyErr_Clear();
  return static_cast<TvmFfiFunction*>(p);
}

PyObject* call_positional(PyObject* self, PyObject* args) {
  if (TvmFfiFunction* f = state_of(self)) {
    bool handled = false;
    PyObject* r = fast_call(*f, args, &handled);
    if (handled) return r;
  }
  return base_call(self, args, nullptr);
}

PyObject* compiled_function_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (!kwargs || PyDict_Size(kwargs) == 0) return call_positional(self, args);
  static PyObject* bind_name = PyUnicode_InternFromString("_bind");
  PyObject* bound = PyObject_CallMethodObjArgs(self, bind_name, args, kwargs, nullptr);
  if (!bound) return nullptr;
  PyObject* r = call_positional(self, bound);
  Py_DECREF(bound);
  return r;
}

}  // namespace

int tvm_ffi_safe_call(void* state, const void* args, int32_t num_args, void* result) {
  return safe_call(state, static_cast<const FfiAny*>(args), num_args, static_cast<FfiAny*>(result));
}

void tvm_ffi_delete_function_state(void* state) { delete_function(state); }

void bind_tvm_ffi_functions(nb::module_& m) {
  // What the Python side describes parameters with (tvm_ffi.py): leaf kinds by name, and the
  // arity of a parameter compiled with None.
  nb::dict leaf_kinds;
  leaf_kinds["Tensor"] = int(kLeafTensor), leaf_kinds["Scalar"] = int(kLeafScalar);
  leaf_kinds["Stream"] = int(kLeafStream), leaf_kinds["Pointer"] = int(kLeafPointer);
  m.attr("tvm_ffi_leaf_kinds") = leaf_kinds;
  m.attr("tvm_ffi_none_param_arity") = kNoneParamArity;
  m.def("tvm_ffi_load", [](const std::string& library_path) { load_ffi_api(library_path); });
  m.def("tvm_ffi_factory_address", []() { return int64_t(reinterpret_cast<intptr_t>(&factory_safe_call)); });
  // The address of a new function's state for the factory; `compiled` is a JitCompiledFunction.
  m.def("tvm_ffi_function_state", [](nb::handle compiled, nb::handle description) {
    if (!ffi_api().FunctionCreate) throw std::logic_error("tvm_ffi_load was not called");
    if (!nb::isinstance<Executor>(compiled)) throw std::invalid_argument("expected a JitCompiledFunction");
    const Executor* ex = nb::inst_ptr<Executor>(compiled);
    return int64_t(reinterpret_cast<intptr_t>(tvm_ffi_new_function_state(*ex, description)));
  });
  m.def("tvm_ffi_install_call_slot", [](nb::handle cls) {
    auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    PyTypeObject* base = PyType_Check(cls.ptr()) ? reinterpret_cast<PyTypeObject*>(PyType_GetSlot(type, Py_tp_base)) : nullptr;
    base_call = base ? reinterpret_cast<ternaryfunc>(PyType_GetSlot(base, Py_tp_call)) : nullptr;
    if (!base_call) throw std::invalid_argument("expected a subclass of tvm_ffi.Function");
#ifdef Py_LIMITED_API
    // Type slots cannot be written through the stable ABI: the class's __call__ becomes a C++
    // method instead (one bound-method hop more than the slot, still no Python frame).
    cls.attr("__call__") = nb::cpp_function(
        [](nb::handle self, nb::args args, nb::kwargs kwargs) {
          PyObject* r = compiled_function_call(self.ptr(), args.ptr(), kwargs.ptr());
          if (!r) throw nb::python_error();
          return nb::steal(r);
        },
        nb::is_method());
#else
    type->tp_call = compiled_function_call;
#endif
  });
  m.def("tvm_ffi_free_function_state", [](int64_t state) { delete_function(reinterpret_cast<void*>(intptr_t(state))); });
}

}  // namespace opencute::bindings
