#include "bindings/compiled_function.h"

#include <cstring>
#include "bindings/compiled_function_plan.h"
#include "bindings/device_staging.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>

#include "bindings/num_convert.h"
#include "bindings/python_errors.h"
#include "bindings/tensor_argument.h"
#include "bindings/type_handle.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "ir/parser.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/export.h"
#include "runtime/tensor_spec.h"
#include "target/nvvm/nvvm_compiler.h"
#include "bindings/python_object_access.h"

namespace opencute::bindings {
namespace {

using dsl::Num;

int64_t as_int64(nb::handle h) {
  if (PyLong_Check(h.ptr())) return PyLong_AsLongLong(h.ptr());
  return nb::cast<int64_t>(nb::int_(h));
}

// Where the memory of tensor arguments must be: the program's kernels read it on the GPU or on
// the CPU emulator; a program without kernels only passes it around in host code.
using runtime::KernelMemory;

// A TensorArgument as the argument contract's check reads it.
struct TensorArgumentView {
  TensorArgument& t;
  bool element_matches(ir::Type element) { return t.element_type() == element; }
  runtime::TensorMemory memory() {
    switch (t.memory()) {
      case TensorArgument::Memory::Device: return runtime::TensorMemory::Device;
      case TensorArgument::Memory::Managed: return runtime::TensorMemory::Managed;
      case TensorArgument::Memory::Host: break;
    }
    return runtime::TensorMemory::Host;
  }
  uint64_t address() { return uint64_t(t.data()); }
  size_t rank() { return t.rank(); }
  int64_t shape(size_t m) { return t.shape(m); }
  int64_t stride(size_t m) { return t.stride(m); }
};

// `vals`: the host parameters read so far (symbols shared with earlier tensors are there).
void check_tensor_argument(const TensorCheck& c, TensorArgument& t, KernelMemory where, const ir::Scalar* vals) {
  TensorArgumentView view{t};
  const runtime::ContractFindings found = runtime::check_tensor(c, view, where, vals);
  if (found.ok()) return;
  runtime::MessageInputs in;
  if (found.has(runtime::ContractFindings::kDtype)) {
    ir::Type element = t.element_type();
    in.got_element = element ? dsl::framework_dtype_name(element) : "an element type OpenCuTe does not know";
  }
  in.layout = t.layout_string();
  runtime::ArgumentError e = runtime::argument_error(runtime::MessageStyle::CompiledFunction, c, found, in);
  if (e.code) throw dsl::UserError(e.code, e.message);
}

// One value of a user object's JIT-argument protocol: `__c_pointers__()[index]` is the address
// (an int or a ctypes pointer) of storage holding the value at `offset` bytes (a C struct's field;
// 0 for a scalar). The slot's mode packs both (jit.py, c_pointer_slot_mode).
constexpr int kCPointerIndexBits = 16;

// `pointers`: the argument's __c_pointers__() (asked once for all the slots of one argument).
ir::Scalar c_pointer_argument(nb::handle pointers, const ArgSlot& s) {
  const int index = s.mode & ((1 << kCPointerIndexBits) - 1);
  const int offset = s.mode >> kCPointerIndexBits;
  nb::object p = pointers[nb::int_(index)];
  if (!PyLong_Check(p.ptr())) p = nb::module_::import_("ctypes").attr("cast")(p, nb::module_::import_("ctypes").attr("c_void_p")).attr("value");
  if (p.is_none()) throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "argument #" + std::to_string(s.source) +
                                                                   ": __c_pointers__() gave a null pointer");
  const unsigned char* at = reinterpret_cast<const unsigned char*>(uintptr_t(as_int64(p))) + offset;
  if (s.type->is_float()) {
    if (s.type->width == 64) { double d; std::memcpy(&d, at, 8); return ir::Scalar::of_float(d); }
    if (s.type->width == 32) { float f; std::memcpy(&f, at, 4); return ir::Scalar::of_float(double(f)); }
    throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "argument #" + std::to_string(s.source) + ": a " +
                                                     ir::to_string(s.type) + " value cannot be read from __c_pointers__()");
  }
  int bytes = s.type->is_pointer() ? 8 : std::max(1, s.type->width / 8);
  int64_t v = 0;
  std::memcpy(&v, at, size_t(std::min(bytes, 8)));
  return ir::Scalar::of_int(s.type->is_pointer() ? v : ir::wrap_int(s.type, v));
}

void check_pointer_argument(const PointerCheck& c, nb::handle arg) {
  nb::object key = nb::getattr(arg, "_type_key", nb::none());
  const std::string type_key = key.is_none() ? std::string() : nb::cast<std::string>(key);
  const int64_t address = type_key.empty() ? 0 : as_int64(arg.attr("_address"));
  // The message shows the argument when its type does not fit.
  const std::string shown = runtime::pointer_type_fits(c.type_key, type_key, address, c.align) ? std::string()
                                                                                              : nb::str(arg).c_str();
  runtime::ArgumentError e = runtime::check_pointer(c, type_key, address, shown);
  if (e.code) throw dsl::UserError(e.code, e.message);
}

// A short array on the stack (a longer one on the heap): the call path allocates nothing
// for the usual argument counts. For trivially destructible element types.
template <class T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t n) : size_(n) {
    if (n <= N) {
      data_ = reinterpret_cast<T*>(stack_);
      std::uninitialized_value_construct_n(data_, n);
    } else {
      heap_.reset(new T[n]());
      data_ = heap_.get();
    }
  }
  T& operator[](size_t i) { return data_[i]; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  alignas(T) unsigned char stack_[N * sizeof(T)];
  std::unique_ptr<T[]> heap_;
  T* data_;
  size_t size_;
};

constexpr size_t kStackArguments = 64;
using FlatArguments = SmallArray<PyObject*, kStackArguments>;

size_t flat_argument_count(const Executor& ex, PyObject* args) {
  const size_t n = size_t(tuple_size(args));
  if (ex.plan.arg_lengths.empty()) return n;
  if (n != ex.plan.arg_lengths.size())
    throw dsl::UserError("ARG_BIND_FAILED", "compiled function takes " + std::to_string(ex.plan.arg_lengths.size()) +
                                                " runtime arguments, got " + std::to_string(n));
  size_t total = 0;
  for (int len : ex.plan.arg_lengths) total += len < 0 ? 1 : size_t(len);
  return total;
}

// The leaves of a (nested) list or tuple argument, depth first, appended at flat[out...] (at
// most `room` of them); returns how many there are.
size_t flatten_sequence(PyObject* a, FlatArguments& flat, size_t out, size_t room) {
  size_t n = 0;
  for (Py_ssize_t j = 0, size = sequence_size(a); j < size; ++j) {
    PyObject* item = sequence_item(a, j);
    if (PyList_Check(item) || PyTuple_Check(item)) {
      n += flatten_sequence(item, flat, out + n, room > n ? room - n : 0);
    } else {
      if (n < room) flat[out + n] = item;
      ++n;
    }
  }
  return n;
}

// The call's arguments with list/tuple arguments expanded into their items (the leaves of a
// nested one, depth first), as compiled.
void flatten_arguments(const Executor& ex, PyObject* args, FlatArguments& flat) {
  const size_t n = size_t(tuple_size(args));
  if (ex.plan.arg_lengths.empty()) {
    for (size_t i = 0; i < n; ++i) flat[i] = tuple_item(args, Py_ssize_t(i));
    return;
  }
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    int len = ex.plan.arg_lengths[i];
    PyObject* a = tuple_item(args, Py_ssize_t(i));
    if (len < 0) {
      flat[out++] = a;
      continue;
    }
    if (!(PyList_Check(a) || PyTuple_Check(a)) || flatten_sequence(a, flat, out, size_t(len)) != size_t(len))
      throw dsl::UserError("ARG_BIND_FAILED", "argument #" + std::to_string(i + 1) + " was compiled as a list of " +
                                                  std::to_string(len) + " items, got " +
                                                  std::string(nb::str(nb::handle(a).type()).c_str()));
    out += size_t(len);
  }
}

// True when every source from `given` on is a stream: those may be left out of a call (NVIDIA's
// sgemm compiles with `stream=` and calls with the tensors only).
bool trailing_streams_only(const Executor& ex, size_t given) {
  for (const ArgSlot& s : ex.slots)
    if (size_t(s.source) >= given && s.kind != kStream) return false;
  return true;
}

// A call that passes more arguments than the runtime ones passes None for the parameters that
// were compiled with None: checks them and returns the arguments without them (in `holder`).
PyObject* drop_none_arguments(const Executor& ex, PyObject* args, nb::object& holder) {
  const size_t n = size_t(tuple_size(args));
  const size_t runtime_count = ex.plan.arg_lengths.empty() ? size_t(ex.plan.num_sources) : ex.plan.arg_lengths.size();
  if (n <= runtime_count) return args;  // the runtime arguments only
  size_t given_nones = 0;
  while (given_nones < ex.none_positions.size() && size_t(ex.none_positions[given_nones]) < n) ++given_nones;
  PyObject* kept = PyTuple_New(Py_ssize_t(n - given_nones));
  if (!kept) throw nb::python_error();
  holder = nb::steal(kept);
  size_t out = 0, next_none = 0;
  for (size_t i = 0; i < n; ++i) {
    PyObject* a = tuple_item(args, Py_ssize_t(i));
    if (next_none < given_nones && size_t(ex.none_positions[next_none]) == i) {
      if (a != Py_None)
        throw dsl::UserError("ARG_BIND_FAILED", "argument #" + std::to_string(i + 1) + " (" +
                                                    ex.none_names[next_none] +
                                                    ") was compiled as None, a compile-time value; pass None there, "
                                                    "or compile the function with a value to pass one");
      ++next_none;
      continue;
    }
    Py_INCREF(a);
    PyTuple_SetItem(kept, Py_ssize_t(out++), a);
  }
  return kept;
}

// A None where the function was compiled with a value (a None there must be compiled as None).
[[noreturn]] void none_for_a_value(const Executor& ex, int source) {
  std::string name = ex.plan.arg_lengths.empty() && size_t(source) < ex.plan.arg_names.size()
                         ? " (" + ex.plan.arg_names[size_t(source)] + ")"
                         : "";
  throw dsl::UserError("ARG_BIND_FAILED", "runtime argument #" + std::to_string(source + 1) + name +
                                              " is None, but the function was compiled with a value there; compile "
                                              "it with None to leave the argument out");
}

// The host parameter of tensor slot `s` (its data pointer, one extent or one stride); for the
// CPU emulator, a data slot also records the tensor's memory region.
__attribute__((noinline)) void add_memory_region(const Executor& ex, const ArgSlot& s, TensorArgument& tensor,
                                                 std::vector<emulator::MemoryRegion>& regions) {
  // Extents in bits, so that packed 4-bit elements count as half a byte.
  int64_t lo = 0, hi = 0, bits = s.type->element ? s.type->element->bit_size() : 8;
  bool empty = false;
  for (size_t d = 0; d < tensor.rank(); ++d) {
    int64_t n = tensor.shape(d), st = tensor.stride(d);
    if (n <= 0) empty = true;
    else (st > 0 ? hi : lo) += (n - 1) * st;
  }
  uintptr_t base = uintptr_t(tensor.data());
  emulator::MemoryRegion r;
  r.begin = base + uintptr_t((lo * bits) >> 3);
  r.end = empty ? r.begin : base + uintptr_t(((hi + 1) * bits + 7) >> 3);
  r.name = runtime::tensor_region_name(s.source, s.check >= 0 ? ex.plan.checks[size_t(s.check)].name : std::string());
  regions.push_back(std::move(r));
}

inline __attribute__((always_inline)) void read_tensor_slot(const Executor& ex, const ArgSlot& s, TensorArgument& tensor,
                                                            bool emulated, ir::Scalar& out,
                                                            std::vector<emulator::MemoryRegion>& regions) {
  if (s.kind == kTensorData) {
    out = ir::Scalar::of_int(tensor.data());
    if (emulated) add_memory_region(ex, s, tensor, regions);
    return;
  }
  int64_t v = s.kind == kTensorShape ? tensor.shape(size_t(s.mode)) : tensor.stride(size_t(s.mode));
  if (s.type->width == 32) {
    if (v < INT32_MIN || v > INT32_MAX) {
      runtime::ArgumentError e = runtime::int32_entry_error(runtime::MessageStyle::CompiledFunction,
                                                            "argument #" + std::to_string(s.source),
                                                            s.kind == kTensorShape, s.mode, v);
      throw dsl::UserError(e.code, e.message);
    }
    out = ir::Scalar::of_int(s.type->is_signed ? int64_t(int32_t(v)) : int64_t(uint32_t(v)));
  } else {
    out = ir::Scalar::of_int(ir::wrap_int(s.type, v));
  }
}

// True when `a`, passed in a stream slot, is an event (launch_completion_event and the like share
// the slot kind): the driver must not be asked about it as a stream.
bool is_event_handle(nb::handle a) {
  // The type's name through its attribute: the stable ABI hides tp_name.
  const std::string name = nb::cast<std::string>(a.type().attr("__name__"));
  return name.find("Event") != std::string::npos;
}

nb::object call_executor(Executor& ex, nb::args call_args) {
  PyObject* arg_tuple = call_args.ptr();
  nb::object without_nones;
  if (!ex.none_positions.empty()) arg_tuple = drop_none_arguments(ex, arg_tuple, without_nones);
  const size_t num_args = flat_argument_count(ex, arg_tuple);
  // An omitted trailing stream is the default stream.
  const bool omitted_streams = int(num_args) < ex.plan.num_sources && trailing_streams_only(ex, num_args);
  if (int(num_args) != ex.plan.num_sources && !omitted_streams)
    throw dsl::UserError("ARG_BIND_FAILED", "compiled function takes " + std::to_string(ex.plan.num_sources) +
                                                " runtime arguments, got " + std::to_string(num_args));
  FlatArguments args(omitted_streams ? size_t(ex.plan.num_sources) : num_args);
  flatten_arguments(ex, arg_tuple, args);
  for (size_t i = num_args; i < size_t(ex.plan.num_sources); ++i) args[i] = Py_None;
  for (auto& c : ex.plan.pointer_checks) check_pointer_argument(c, args[size_t(c.source)]);
  SmallArray<ir::Scalar, kStackArguments> vals(ex.slots.size());
  // Kernels on the CPU emulator check each access against the tensors' extents.
  const bool emulated = ex.program->runs_on_emulator();
  // (A program that discards its launches, for measurement, takes tensors in either memory.)
  // On the emulator, with a GPU present, GPU memory is staged through host memory (host_staging.h).
  const KernelMemory where = runtime::kernel_memory(ex.program->has_kernels() && !ex.program->discards_launches(),
                                                    emulated, emulated && runtime::CudaDriver::get().available());
  std::vector<emulator::MemoryRegion> regions;
  DeviceStaging staging;  // what this call stages: nothing on the hot path
  std::vector<int64_t> streams;  // of a staged call: its streams, one of which may be capturing
  // Slots of one tensor are adjacent, so one reader serves them all.
  std::optional<bindings::TensorArgument> tensor;
  int tensor_source = -1;
  TensorArgument::DLTensorView dl;  // the current tensor, when read through an exchange table
  PyTypeObject* reader_type = nullptr;  // the type `reader` reads
  TensorArgument::DLTensorReader reader = nullptr;
  nb::object c_pointers;  // of the user object the previous C-pointer slot read (its slots are adjacent)
  int c_pointers_source = -1;
  for (size_t i = 0; i < ex.slots.size(); ++i) {
    const ArgSlot& s = ex.slots[i];
    nb::handle a(args[size_t(s.source)]);
    switch (s.kind) {
      case kScalar: {
        if (a.is_none()) none_for_a_value(ex, s.source);
        Num n = to_num(a);
        if (!n.is_static) throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "a dynamic value cannot be passed from Python");
        vals[i] = ir::eval_cast(n.type, s.type, n.s);
        break;
      }
      case kTensorData:
      case kTensorShape:
      case kTensorStride: {
        if (tensor_source != s.source) {
          if (a.is_none()) none_for_a_value(ex, s.source);
          tensor_source = s.source;
          // A type with DLPack's exchange table (torch) is read into `dl` with one C call, and its
          // check and slots come from the tensor's compact record in one step (read_dltensor);
          // anything else, and what the record cannot decide, is read in full as TensorArgument.
          // (Not on the emulator, which also records each tensor's memory.)
          if (s.read >= 0 && !emulated) {
            if (Py_TYPE(a.ptr()) != reader_type) {  // a call's tensors are mostly of one type
              reader_type = Py_TYPE(a.ptr());
              reader = TensorArgument::exchange_reader(a);
            }
            if (reader) {
              if (reader(a.ptr(), &dl) != 0) throw nb::python_error();
              const TensorRead& r = ex.tensor_reads.reads[size_t(s.read)];
              if (!is_packed_fp4_pairs(dl.dtype_code, dl.dtype_bits, dl.dtype_lanes) &&
                  runtime::read_dltensor(ex.tensor_reads, r, dl, where, &vals[0])) {
                i += size_t(r.num_slots) - 1;
                break;
              }
            }
          }
          tensor.emplace(a);
        }
        if (s.check >= 0) check_tensor_argument(ex.plan.checks[size_t(s.check)], *tensor, where, &vals[0]);
        read_tensor_slot(ex, s, *tensor, emulated, vals[i], regions);
        if (s.kind == kTensorData && where == KernelMemory::HostStaged &&
            tensor->memory() == TensorArgument::Memory::Device)
          staging.add_tensor(i, regions.size() - 1, regions.back());
        break;
      }
      case kStream: {
        int64_t h = 0;
        if (a.is_none()) h = 0;
        else if (PyLong_Check(a.ptr())) h = PyLong_AsLongLong(a.ptr());
        else if (nb::hasattr(a, "cuda_stream")) h = as_int64(a.attr("cuda_stream"));
        else h = as_int64(nb::int_(a));  // cuda.bindings CUstream: int() is the handle (getPtr() is not)
        vals[i] = ir::Scalar::of_int(h);
        if (where == KernelMemory::HostStaged && !is_event_handle(a)) streams.push_back(h);
        break;
      }
      case kPointer: {
        if (a.is_none()) none_for_a_value(ex, s.source);
        if (nb::hasattr(a, "_address")) vals[i] = ir::Scalar::of_int(as_int64(a.attr("_address")));
        else vals[i] = ir::Scalar::of_int(as_int64(a));
        if (where == KernelMemory::HostStaged) staging.add_pointer(i, uintptr_t(vals[i].i));
        break;
      }
      case kCPointer:
        if (c_pointers_source != s.source) {
          if (nb::hasattr(a, "__c_pointers__")) {
            c_pointers = a.attr("__c_pointers__")();
          } else {  // a type given the protocol by cutlass.register_jit_arg_adapter
            // Leaked: a static nb::object would be released after the interpreter is gone.
            static nb::object* adapt = new nb::object(nb::module_::import_("cutlass._dsl.jit_arg_adapter").attr("adapt"));
            c_pointers = (*adapt)(a).attr("__c_pointers__")();
          }
          c_pointers_source = s.source;
        }
        vals[i] = c_pointer_argument(c_pointers, s);
        break;
    }
  }
  tensor.reset();
  if (ex.flush_python_stdout) {
    // Host printf writes to the C stdout; flush Python's buffer first so output stays in order.
    nb::module_::import_("sys").attr("stdout").attr("flush")();
  }
  std::vector<ir::Scalar> results;
  const ir::Scalar* values = vals.data();
  const size_t num_values = vals.size();
  const emulator::DeviceAddressMap* device_memory = nullptr;
  if (where == KernelMemory::HostStaged) {
    const std::string replay_error = runtime::HostStaging::take_replay_error();
    if (!replay_error.empty())
      throw emulator::ExecutionError("an emulated launch replayed from a CUDA graph failed: " + replay_error);
    // A call on a stream being captured into a CUDA graph is recorded, to run at each replay.
    if (void* stream = capturing_stream(streams)) {
      if (!ex.result_types.empty())
        throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "a function that returns values cannot be captured into a CUDA "
                                                     "graph when its kernels run on the emulator");
      staging.capture(stream, ex.program, ex.strict_regions, values, num_values, std::move(regions));
      return nb::none();
    }
  }
  // Without a GPU too: an address the kernels reach that is no mapped memory is an error at the
  // kernel's line, not a crash of the process.
  if (emulated && where != KernelMemory::Any) device_memory = staging.map();
  if (!staging.empty()) staging.copy_in(&vals[0], regions);
  try {
    if (ex.release_gil) {
      nb::gil_scoped_release release;
      results = emulated ? ex.program->run(values, num_values, regions, ex.strict_regions, device_memory)
                         : ex.program->run(values, num_values);
    } else {
      results = emulated ? ex.program->run(values, num_values, regions, ex.strict_regions, device_memory)
                         : ex.program->run(values, num_values);
    }
  } catch (...) {
    // What the kernels wrote before failing lands on the device, as it would on a GPU.
    if (!staging.empty()) staging.copy_out();
    throw;
  }
  if (!staging.empty()) staging.copy_out();
  if (ex.result_types.empty()) return nb::none();
  nb::list out;
  for (size_t i = 0; i < ex.result_types.size(); ++i) {
    Num n;
    n.type = ex.result_types[i];
    n.s = results[i];
    out.append(python_value(n));
  }
  if (out.size() == 1) return out[0];
  return nb::tuple(out);
}

// Fills the executor's call plan from `plan` (the host parameters' types come from the program).
void install_plan(Executor& ex, runtime::ArgumentPlan plan, const std::vector<ir::Type>& result_types) {
  const ir::Function& host = ex.program->host_function();
  std::vector<ir::Type> types;
  for (const auto& a : host.args()) types.push_back(a->type);
  runtime::resolve_argument_plan(plan, types);
  const std::vector<int> check_of_slot = runtime::check_of_slots(plan);
  ex.tensor_reads = runtime::build_tensor_reads(plan, types);
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const runtime::PlanSlot& s = plan.slots[i];
    ex.slots.push_back(ArgSlot{s.source, int(s.kind), s.mode, types[i], check_of_slot[i],
                               ex.tensor_reads.read_of_slot[i]});
    if (ex.slots.back().kind == kPointer || ex.slots.back().kind == kCPointer) ex.strict_regions = false;
  }
  ex.plan = std::move(plan);
  ex.result_types = result_types;
  // Emulated kernels print on the C stdout too: flush Python's buffer first.
  ex.flush_python_stdout = ex.program->host_has_printf() ||
                           (ex.program->has_device_printf() && ex.program->runs_on_emulator());
  ex.release_gil = ex.program->run_may_take_long() || ex.program->runs_on_emulator();
}

// ---- ahead-of-time export (runtime/export.h) ----
// The program and its call plan, as an exported object file carries them.
runtime::ExportedFunction exported_function(const Executor& ex, const std::string& name) {
  runtime::ExportedFunction f;
  f.name = name;
  f.function_name = ex.function_name;
  f.arch = ex.program->arch();
  f.module_text = ex.program->ir_text();
  f.ptx = ex.program->ptx();
  f.cubin = ex.program->cubin();
  f.plan = ex.plan;
  return f;
}

// A compiled function rebuilt from an export: the same call path, the exported GPU code.
std::unique_ptr<Executor> executor_from_export(const runtime::ExportedFunction& f) {
  auto ex = std::make_unique<Executor>();
  runtime::CompileOptions opts;
  opts.arch = f.arch;
  opts.function_name = f.function_name;
  opts.use_disk_cache = false;
  // Exported without a cubin (compiled for the CPU emulator): its kernels run there.
  if (f.cubin.empty()) opts.target = runtime::CompileOptions::Target::Cpu;
  runtime::PrebuiltCode code{f.ptx, f.cubin};
  ex->program = std::make_shared<runtime::CompiledProgram>(ir::parse_module(f.module_text), opts, &code);
  ex->function_name = f.function_name;
  install_plan(*ex, f.plan, ex->program->host_function().result_types);
  return ex;
}

// The type's call slot: CPython calls it with the argument tuple directly, skipping the method
// lookup and nanobind's overload dispatch that a bound __call__ would cost on every call.
PyObject* compiled_function_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    if (kwargs && PyDict_Size(kwargs) != 0)
      throw dsl::UserError("ARG_BIND_FAILED", "a compiled function takes positional arguments only");
    Executor* ex = nb::inst_ptr<Executor>(self);
    return call_executor(*ex, nb::borrow<nb::args>(args)).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (...) {
    try {
      translate_dsl_exception(std::current_exception());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
  }
  return nullptr;
}

PyType_Slot compiled_function_slots[] = {{Py_tp_call, reinterpret_cast<void*>(compiled_function_call)},
                                         {0, nullptr}};

}  // namespace

std::unique_ptr<Executor> executor_from_exported_function(const runtime::ExportedFunction& f) {
  return executor_from_export(f);
}

void bind_compiled_functions(nb::module_& m) {
  // ---- compilation and execution ----
  // What cute.compile returns. Bound in C++ so that a call goes straight from Python's call
  // slot to call_executor, with no Python frame in between.
  nb::class_<Executor>(m, "JitCompiledFunction",
                       "A compiled @cute.jit function; call it with the runtime arguments only (Constexpr "
                       "parameters and `self` are omitted).",
                       nb::type_slots(compiled_function_slots))
      .def_prop_ro("__mlir__", [](const Executor& e) { return e.program->ir_text(); })
      .def_prop_ro("ir_module", [](const Executor& e) { return e.program->ir_text(); })
      .def_prop_ro("nvvm_ir", [](const Executor& e) { return e.program->nvvm_text(); })
      .def_prop_ro("__ptx__", [](const Executor& e) -> nb::object {
        if (e.program->ptx().empty()) return nb::none();
        return nb::str(e.program->ptx().c_str());
      })
      .def_prop_ro("__cubin__", [](const Executor& e) -> nb::object {
        const auto& c = e.program->cubin();
        if (c.empty()) return nb::none();
        return nb::bytes(c.data(), c.size());
      })
      .def_prop_ro("arch", [](const Executor& e) { return e.program->arch(); })
      .def_prop_ro("hash", [](const Executor& e) { return e.program->hash(); })
      .def_prop_ro("has_kernels", [](const Executor& e) { return e.program->has_kernels(); })
      .def_prop_ro("target", [](const Executor& e) {
        if (e.program->target() == runtime::CompileOptions::Target::Ptx) return "ptx";
        return e.program->runs_on_emulator() ? "cpu" : "gpu";
      })
      .def_prop_rw(
          "_discard_launches", [](const Executor& e) { return e.program->discards_launches(); },
          [](Executor& e, bool on) { e.program->set_discard_launches(on); },
          "Launches pack their parameters and stop short of the driver: the host's cost of a call "
          "without a GPU (benchmarks and tests)")
      .def_prop_ro("_discarded_launches", [](const Executor& e) { return e.program->discarded_launches(); })
      .def_rw("function_name", &Executor::function_name)
      .def_prop_rw(
          "arg_names", [](const Executor& e) { return e.plan.arg_names; },
          [](Executor& e, std::vector<std::string> names) { e.plan.arg_names = std::move(names); })
      .def_prop_rw(
          "_none_arguments", [](const Executor& e) { return nb::make_tuple(e.none_positions, e.none_names); },
          [](Executor& e, std::pair<std::vector<int>, std::vector<std::string>> v) {
            if (v.first.size() != v.second.size()) throw std::invalid_argument("_none_arguments: positions and names");
            e.none_positions = std::move(v.first);
            e.none_names = std::move(v.second);
          },
          "The positions and names of the parameters compiled with None (a call may pass None there)")
      // The blob an exported object file carries (runtime/export.h), under the exported `name`.
      .def("_export_blob", [](const Executor& e, const std::string& name) {
        std::string blob = runtime::serialize_exported_function(exported_function(e, name));
        return nb::bytes(blob.data(), blob.size());
      })
      .def_rw("trace_ms", &Executor::trace_ms)
      .def_prop_ro("timings_ms", [](const Executor& e) {
        const auto& t = e.program->timings();
        nb::dict d;
        d["trace"] = e.trace_ms;
        d["verify"] = t.verify_ms;
        d["lower"] = t.lower_ms;
        d["nvvm"] = t.nvvm_ms;
        d["link"] = t.link_ms;
        d["cache"] = t.cache_ms;
        d["load"] = t.load_ms;
        d["cache_hit"] = t.cache_hit;
        return d;
      })
      .def("__repr__", [](const Executor& e) {
        return "<JitCompiledFunction " + e.function_name + " for " + e.program->arch() + ">";
      });

  m.def("preload_toolchain", &target::preload_toolchain_async,
        "Starts loading libNVVM and nvJitLink on a background thread (once per process).");
  m.def("wait_for_toolchain_preload", &target::wait_for_toolchain_preload, nb::call_guard<nb::gil_scoped_release>(),
        "Waits for the loading thread preload_toolchain started (registered with atexit).");

  // ---- the argument plan (runtime/argument_contract.h), as the front end builds it while tracing ----
  nb::enum_<runtime::SlotKind>(m, "SlotKind", "How a host parameter is read from its runtime argument")
      .value("Scalar", runtime::SlotKind::Scalar)
      .value("TensorData", runtime::SlotKind::TensorData)
      .value("TensorShape", runtime::SlotKind::TensorShape)
      .value("TensorStride", runtime::SlotKind::TensorStride)
      .value("Stream", runtime::SlotKind::Stream)
      .value("Pointer", runtime::SlotKind::Pointer)
      .value("CPointer", runtime::SlotKind::CPointer);
  nb::class_<runtime::ArgumentPlan>(m, "ArgumentPlan",
                                    "How each host parameter of a traced function is read from the call's "
                                    "arguments and what each tensor and pointer argument was compiled for")
      .def(nb::init<>())
      .def(
          "add_slot",
          [](runtime::ArgumentPlan& p, int source, runtime::SlotKind kind, int mode) {
            p.slots.push_back(runtime::PlanSlot{source, kind, mode});
            return int(p.slots.size()) - 1;
          },
          nb::arg("source"), nb::arg("kind"), nb::arg("mode") = 0, "Adds the next host parameter; returns its slot")
      .def_prop_ro("num_slots", [](const runtime::ArgumentPlan& p) { return p.slots.size(); })
      // same_as: (is stride, mode, slot of the symbol's first occurrence) per entry that is a
      // symbol an earlier slot reads.
      .def("add_tensor",
           [](runtime::ArgumentPlan& p, int source, std::vector<int64_t> shape, std::vector<int64_t> stride,
              std::vector<int64_t> shape_div, std::vector<int64_t> stride_div, bool int32_strides,
              std::string description, std::string name, std::vector<std::tuple<bool, int, int>> same_as) {
             runtime::TensorContract c;
             c.source = source;
             c.shape = std::move(shape);
             c.stride = std::move(stride);
             c.shape_div = std::move(shape_div);
             c.stride_div = std::move(stride_div);
             if (c.stride.size() != c.shape.size() || c.shape_div.size() != c.shape.size() ||
                 c.stride_div.size() != c.shape.size())
               throw std::invalid_argument("add_tensor: shape, stride and divisibilities differ in rank");
             c.int32_strides = int32_strides;
             c.description = std::move(description);
             c.name = std::move(name);
             for (const auto& [stride_entry, mode, slot] : same_as) {
               runtime::PlanSameAs e;
               e.stride = stride_entry;
               e.mode = mode;
               e.slot = slot;
               c.same_as.push_back(e);
             }
             p.checks.push_back(std::move(c));
           })
      .def("add_pointer",
           [](runtime::ArgumentPlan& p, int source, std::string type_key, int64_t align, std::string description) {
             p.pointer_checks.push_back(runtime::PointerContract{source, std::move(type_key), align, std::move(description)});
           })
      // A runtime argument: one value (length -1) or a list of `length` values, each a source.
      .def("add_argument",
           [](runtime::ArgumentPlan& p, std::string name, int length) {
             p.arg_names.push_back(std::move(name));
             p.arg_lengths.push_back(length);
             p.num_sources += length < 0 ? 1 : length;
           })
      .def_ro("num_sources", &runtime::ArgumentPlan::num_sources)
      .def_prop_ro("arg_names", [](const runtime::ArgumentPlan& p) { return p.arg_names; });

  // `options`: arch, opt_level, generate_line_info, ptxas_options, need_cubin, use_disk_cache,
  // version, function_name, keep_ir, keep_ptx, keep_cubin, dump_dir, target (cpu|gpu|auto);
  // missing keys keep their defaults.
  m.def("compile_traced", [](dsl::Tracer& tracer, nb::dict options, const runtime::ArgumentPlan& traced,
                             std::vector<TypeHandle> result_types) {
    runtime::CompileOptions opts;
    auto get = [&](const char* key, auto& field) {
      if (options.contains(key)) field = nb::cast<std::remove_reference_t<decltype(field)>>(options[key]);
    };
    get("arch", opts.arch);
    get("opt_level", opts.opt_level);
    get("generate_line_info", opts.generate_line_info);
    get("ptxas_options", opts.ptxas_options);
    get("need_cubin", opts.need_cubin);
    get("use_disk_cache", opts.use_disk_cache);
    get("version", opts.version);
    get("function_name", opts.function_name);
    get("keep_ir", opts.keep_ir);
    get("keep_ptx", opts.keep_ptx);
    get("keep_cubin", opts.keep_cubin);
    get("dump_dir", opts.dump_dir);
    std::string target;
    get("target", target);
    if (target == "cpu") opts.target = runtime::CompileOptions::Target::Cpu;
    else if (target == "ptx") opts.target = runtime::CompileOptions::Target::Ptx;
    else if (target == "gpu") opts.target = runtime::CompileOptions::Target::Gpu;
    else if (!target.empty() && target != "auto")
      throw dsl::UserError("CONFIG_MALFORMED_COMPILE_OPTIONS", "unknown compile target '" + target + "' (cpu or gpu)");
    auto ex = std::make_unique<Executor>();
    {
      auto module = tracer.take_module();
      nb::gil_scoped_release release;
      ex->program = std::make_shared<runtime::CompiledProgram>(std::move(module), opts);
    }
    runtime::ArgumentPlan plan = traced;
    // No list arguments: the call path takes its arguments as they come.
    if (std::all_of(plan.arg_lengths.begin(), plan.arg_lengths.end(), [](int n) { return n < 0; }))
      plan.arg_lengths.clear();
    std::vector<ir::Type> results;
    for (auto& t : result_types) results.push_back(t.t);
    install_plan(*ex, std::move(plan), results);
    return ex;
  });

  // Every exported function in `data` (an exported object file or a shared library built from
  // them) as (exported name, compiled function) pairs.
  m.def("load_exported_functions", [](nb::bytes data) {
    auto found = runtime::find_exported_functions(data.c_str(), data.size());
    nb::list out;
    for (auto& f : found) {
      std::unique_ptr<Executor> ex;
      {
        nb::gil_scoped_release release;
        ex = executor_from_export(f);
      }
      out.append(nb::make_tuple(f.name, nb::cast(std::move(ex))));
    }
    return out;
  });

}

}  // namespace opencute::bindings
