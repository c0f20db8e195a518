#include "bindings/xla_ffi_call.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/compiled_function.h"
#include "bindings/compiled_function_plan.h"
#include "dsl/dtype.h"
#include "dsl/tracer.h"
#include "ir/parser.h"
#include "ir/scalar_semantics.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "runtime/export.h"
#include "runtime/xla_ffi_abi.h"

namespace nb = nanobind;

namespace opencute::bindings {
namespace {

namespace x = xla_ffi;

// The attributes a custom call of ours carries (jax.ffi.ffi_call keywords, cutlass/jax/call.py).
constexpr const char* kCallAttr = "opencute_call";        // index of the registered call
constexpr const char* kProcessAttr = "opencute_process";  // the token of the process that made it
// For a call traced in another process (a deserialized jax.export): the compiled function as
// export_to_c's blob (runtime/export.h) in base64, and its buffers ("r:i:m0.m1:label|...").
constexpr const char* kProgramAttr = "opencute_program";
constexpr const char* kBuffersAttr = "opencute_buffers";

// XLA's element types that OpenCuTe tensors can have, by the framework name of dsl/dtype.
struct DtypeName {
  x::DataType xla;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {x::kPred, "bool"},         {x::kS8, "int8"},       {x::kS16, "int16"},     {x::kS32, "int32"},
    {x::kS64, "int64"},         {x::kU8, "uint8"},      {x::kU16, "uint16"},    {x::kU32, "uint32"},
    {x::kU64, "uint64"},        {x::kF16, "float16"},   {x::kF32, "float32"},   {x::kF64, "float64"},
    {x::kBF16, "bfloat16"},     {x::kF8E5M2, "float8_e5m2"}, {x::kF8E4M3FN, "float8_e4m3fn"},
    {x::kF8E8M0FNU, "float8_e8m0fnu"},
};

x::DataType xla_dtype_of(ir::Type element) {
  for (const DtypeName& d : kDtypes)
    if (dsl::dtype_from_framework_name(d.name) == element) return d.xla;
  return x::kInvalid;
}

const char* xla_dtype_name(int dtype) {
  for (const DtypeName& d : kDtypes)
    if (d.xla == dtype) return d.name;
  return "an element type OpenCuTe does not know";
}

// A tensor source of the traced function: an operand or result buffer of the custom call, seen
// by the kernel with its modes remapped (kernel mode i is buffer dimension mode[i]).
struct BufferSource {
  bool is_result = false;
  int index = 0;
  std::vector<int> mode;
  std::string label;             // "input 0", "output 1": for messages
  x::DataType dtype = x::kInvalid;
  int check = -1;                // its TensorCheck
  int64_t element_bytes = 1;
};

constexpr int kMaxDevices = 64;

struct XlaCall {
  Executor ex;
  std::string name;
  std::vector<int> source_buffer;  // per source: -1 for the stream, else an index into buffers
  std::vector<BufferSource> buffers;
  int64_t num_args = 0, num_rets = 0;
  bool emulated = false;
  // One program per GPU: a loaded module belongs to one device's context. The first device to
  // call uses ex.program; others get a copy made from its IR and cubin (no recompilation).
  std::array<std::atomic<runtime::CompiledProgram*>, kMaxDevices> per_device{};
  std::mutex device_mu;
  std::vector<std::shared_ptr<runtime::CompiledProgram>> copies;
  std::atomic<int> first_device{-1};
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<XlaCall>> calls;  // never shrinks: custom calls hold indices
  int64_t token = 0;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    std::random_device rd;
    reg->token = int64_t((uint64_t(rd()) << 32 | rd()) & INT64_MAX);
    if (reg->token == 0) reg->token = 1;
    return reg;
  }();
  return *r;
}

using BufferDesc = std::tuple<bool, int, std::vector<int>, std::string>;  // is_result, index, mode, label

// Registers a compiled function as a custom call; returns its index. `buffers`: per tensor source
// (in source order, the stream's source excluded).
int64_t register_call(Executor ex, const std::string& name, int stream_source, const std::vector<BufferDesc>& buffers,
                      int64_t num_args, int64_t num_rets, XlaCall** made = nullptr) {
  auto c = std::make_unique<XlaCall>();
  c->ex = std::move(ex);
  c->name = name;
  c->num_args = num_args;
  c->num_rets = num_rets;
  c->emulated = c->ex.program->runs_on_emulator();
  if (int(buffers.size()) + (stream_source >= 0 ? 1 : 0) != c->ex.plan.num_sources)
    throw std::logic_error("xla_ffi_register_call: " + std::to_string(buffers.size()) + " buffers for " +
                           std::to_string(c->ex.plan.num_sources) + " sources");
  c->source_buffer.assign(size_t(c->ex.plan.num_sources), -1);
  size_t next = 0;
  for (int s = 0; s < c->ex.plan.num_sources; ++s) {
    if (s == stream_source) continue;
    const auto& [is_result, index, mode, label] = buffers[next];
    if (index < 0 || index >= (is_result ? num_rets : num_args))
      throw std::logic_error("xla_ffi_register_call: buffer index " + std::to_string(index) + " out of range");
    BufferSource b;
    b.is_result = is_result;
    b.index = index;
    b.mode = mode;
    b.label = label;
    c->source_buffer[size_t(s)] = int(next++);
    c->buffers.push_back(std::move(b));
  }
  for (size_t k = 0; k < c->ex.plan.checks.size(); ++k) {
    const TensorCheck& t = c->ex.plan.checks[k];
    int b = c->source_buffer.at(size_t(t.source));
    if (b < 0) throw std::logic_error("xla_ffi_register_call: a tensor check on the stream");
    if (!t.same_as.empty()) throw std::logic_error("xla_ffi_register_call: shared symbolic extents");
    BufferSource& src = c->buffers[size_t(b)];
    src.check = int(k);
    src.dtype = xla_dtype_of(t.element);
    if (t.element && t.element->is_sub_byte())
      throw dsl::UserError("ARG_UNSUPPORTED_TYPE", name + ": " + src.label + " has the packed 4-bit element type " +
                                                       dsl::dtype_name(t.element) + ", which the XLA path does not support");
    src.element_bytes = t.element ? std::max<int64_t>(1, t.element->byte_size()) : 1;
    if (src.dtype == x::kInvalid)
      throw dsl::UserError("ARG_UNSUPPORTED_TYPE", name + ": " + src.label + " has element type " +
                                                       dsl::dtype_name(t.element) + ", which XLA has no buffer type for");
    if (src.mode.size() != t.shape.size())
      throw std::logic_error("xla_ffi_register_call: mode and rank differ for " + src.label);
    for (int d : src.mode)
      if (d < 0 || d >= int(src.mode.size())) throw std::logic_error("xla_ffi_register_call: bad mode for " + src.label);
  }
  for (const BufferSource& b : c->buffers)
    if (b.check < 0) throw std::logic_error("xla_ffi_register_call: no tensor check for " + b.label);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (made) *made = c.get();
  r.calls.push_back(std::move(c));
  return int64_t(r.calls.size() - 1);
}

XlaCall* find_call(int64_t index) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (index < 0 || size_t(index) >= r.calls.size()) return nullptr;
  return r.calls[size_t(index)].get();
}

struct CallError {
  x::ErrorCode code;
  std::string message;
};

[[noreturn]] void fail(x::ErrorCode code, std::string message) { throw CallError{code, std::move(message)}; }

// An error XLA's API returned (passed back to XLA as it is).
struct ApiError {
  x::Error* error;
};

runtime::CompiledProgram& program_for_device(XlaCall& c, int device) {
  if (device < 0 || device >= kMaxDevices) fail(x::kInvalidArgument, "device ordinal " + std::to_string(device) + " is out of range");
  if (runtime::CompiledProgram* p = c.per_device[size_t(device)].load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(c.device_mu);
  if (runtime::CompiledProgram* p = c.per_device[size_t(device)].load(std::memory_order_relaxed)) return *p;
  int expected = -1;
  runtime::CompiledProgram* p = nullptr;
  if (c.first_device.compare_exchange_strong(expected, device)) {
    p = c.ex.program.get();
  } else {
    const runtime::CompiledProgram& first = *c.ex.program;
    runtime::CompileOptions opts;
    opts.arch = first.arch();
    opts.target = first.target();
    opts.use_disk_cache = false;
    runtime::PrebuiltCode code{first.ptx(), first.cubin()};
    c.copies.push_back(std::make_shared<runtime::CompiledProgram>(ir::parse_module(first.ir_text()), opts, &code));
    p = c.copies.back().get();
  }
  c.per_device[size_t(device)].store(p, std::memory_order_release);
  return *p;
}

// Row-major stride of dimension d of a buffer.
int64_t row_major_stride(const x::Buffer& b, int d) {
  int64_t s = 1;
  for (int64_t i = d + 1; i < b.rank; ++i) s *= b.dims[i];
  return s;
}

// A buffer as the argument contract's check reads it: row-major, its kernel modes permuted.
struct BufferView {
  const BufferSource& src;
  const x::Buffer& b;
  bool element_matches(ir::Type) const { return b.dtype == src.dtype; }  // src.dtype: the contract's, in XLA's terms
  runtime::TensorMemory memory() const { return runtime::TensorMemory::Host; }  // XLA's placement: not checked
  uint64_t address() const { return uint64_t(reinterpret_cast<uintptr_t>(b.data)); }
  size_t rank() const { return size_t(b.rank); }
  int64_t shape(size_t m) const { return b.dims[src.mode[m]]; }
  int64_t stride(size_t m) const { return row_major_stride(b, src.mode[m]); }
};

void check_buffer(const XlaCall& c, const BufferSource& src, const x::Buffer& b) {
  const TensorCheck& t = c.ex.plan.checks[size_t(src.check)];
  BufferView view{src, b};
  const runtime::ContractFindings found = runtime::check_tensor(t, view, runtime::KernelMemory::Any, nullptr);
  if (found.ok()) return;
  runtime::MessageInputs in;
  in.function = c.name;
  in.label = src.label;
  in.got_element = xla_dtype_name(b.dtype);
  in.want_element = xla_dtype_name(src.dtype);
  runtime::ArgumentError e = runtime::argument_error(runtime::MessageStyle::Xla, t, found, in);
  if (e.code) fail(x::kInvalidArgument, e.message);
}

bool attr_named(const x::ByteSpan* name, const char* want) {
  size_t n = std::strlen(want);
  return name && name->len == n && std::memcmp(name->ptr, want, n) == 0;
}

int64_t scalar_attr(const x::CallFrame& frame, const char* want) {
  for (int64_t i = 0; i < frame.attrs.size; ++i) {
    if (!attr_named(frame.attrs.names[i], want)) continue;
    if (frame.attrs.types[i] != x::kAttrScalar) break;
    auto* s = static_cast<const x::Scalar*>(frame.attrs.attrs[i]);
    switch (s->dtype) {
      case x::kS64: return *static_cast<const int64_t*>(s->value);
      case x::kS32: return *static_cast<const int32_t*>(s->value);
      case x::kU64: return int64_t(*static_cast<const uint64_t*>(s->value));
      default: break;
    }
    break;
  }
  fail(x::kInvalidArgument, std::string("an OpenCuTe custom call needs the integer attribute `") + want +
                                "` (made by cutlass.jax.cutlass_call)");
}

const x::ByteSpan* string_attr(const x::CallFrame& frame, const char* want) {
  for (int64_t i = 0; i < frame.attrs.size; ++i)
    if (attr_named(frame.attrs.names[i], want) && frame.attrs.types[i] == x::kAttrString)
      return static_cast<const x::ByteSpan*>(frame.attrs.attrs[i]);
  return nullptr;
}

std::string base64_decode(const char* p, size_t n) {
  auto value = [](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(n / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n && p[i] != '='; ++i) {
    int v = value(p[i]);
    if (v < 0) fail(x::kInvalidArgument, "OpenCuTe custom call: the program attribute is not base64");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

// "r:i:m0.m1:label|..." -> buffer descriptions.
std::vector<BufferDesc> parse_buffers(const std::string& text) {
  std::vector<BufferDesc> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('|', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    size_t a = item.find(':'), b = item.find(':', a + 1), c = item.find(':', b + 1);
    if (a == std::string::npos || b == std::string::npos || c == std::string::npos)
      fail(x::kInvalidArgument, "OpenCuTe custom call: malformed buffers attribute");
    std::vector<int> mode;
    std::string modes = item.substr(b + 1, c - b - 1);
    for (size_t m = 0; m < modes.size();) {
      size_t dot = modes.find('.', m);
      if (dot == std::string::npos) dot = modes.size();
      mode.push_back(std::stoi(modes.substr(m, dot - m)));
      m = dot + 1;
    }
    out.emplace_back(item.substr(0, a) == "1", std::stoi(item.substr(a + 1, b - a - 1)), std::move(mode),
                     item.substr(c + 1));
    pos = end + 1;
  }
  return out;
}

// Calls traced in other processes, rebuilt from their attributes once and kept by content.
struct ForeignCall {
  const char* data;  // where XLA keeps the attribute (a hint; the content decides)
  std::string program;
  std::string buffers;
  XlaCall* call;
};

XlaCall* foreign_call(const x::CallFrame& frame) {
  const x::ByteSpan* program = string_attr(frame, kProgramAttr);
  const x::ByteSpan* buffers = string_attr(frame, kBuffersAttr);
  if (!program || !buffers)
    fail(x::kFailedPrecondition,
         "this OpenCuTe custom call was compiled in another process and carries no program to rebuild it from; "
         "trace the function again here");
  static std::mutex mu;
  static std::vector<ForeignCall> known;
  std::lock_guard<std::mutex> lock(mu);
  auto same = [&](const ForeignCall& f) {
    return f.program.size() == program->len && f.buffers.size() == buffers->len &&
           std::memcmp(f.program.data(), program->ptr, program->len) == 0 &&
           std::memcmp(f.buffers.data(), buffers->ptr, buffers->len) == 0;
  };
  for (const ForeignCall& f : known)
    if (f.data == program->ptr && same(f)) return f.call;
  for (const ForeignCall& f : known)
    if (same(f)) return f.call;
  std::string blob = base64_decode(program->ptr, program->len);
  std::vector<runtime::ExportedFunction> found = runtime::find_exported_functions(blob.data(), blob.size());
  if (found.size() != 1) fail(x::kInvalidArgument, "OpenCuTe custom call: the program attribute holds no function");
  std::unique_ptr<Executor> ex = executor_from_exported_function(found[0]);
  XlaCall* made = nullptr;
  register_call(std::move(*ex), found[0].function_name, 0, parse_buffers(std::string(buffers->ptr, buffers->len)),
                frame.args.size, frame.rets.size, &made);
  known.push_back(ForeignCall{program->ptr, std::string(program->ptr, program->len),
                              std::string(buffers->ptr, buffers->len), made});
  return made;
}

void execute(const x::CallFrame& frame, bool gpu) {
  int64_t index = scalar_attr(frame, kCallAttr);
  XlaCall* cp = scalar_attr(frame, kProcessAttr) == registry().token ? find_call(index) : foreign_call(frame);
  if (!cp) fail(x::kInvalidArgument, "no OpenCuTe custom call is registered as #" + std::to_string(index));
  XlaCall& c = *cp;
  if (gpu == c.emulated)
    fail(x::kFailedPrecondition,
         c.name + (gpu ? ": the kernel was compiled for the CPU emulator but runs in a GPU computation"
                       : ": the kernel was compiled for the GPU but runs in a CPU computation"));
  if (frame.args.size != c.num_args || frame.rets.size != c.num_rets)
    fail(x::kInvalidArgument, c.name + ": the custom call has " + std::to_string(frame.args.size) + " operands and " +
                                  std::to_string(frame.rets.size) + " results, but the kernel was registered for " +
                                  std::to_string(c.num_args) + " and " + std::to_string(c.num_rets));
  auto buffer = [&](const BufferSource& s) -> const x::Buffer& {
    void* p = s.is_result ? frame.rets.rets[s.index] : frame.args.args[s.index];
    return *static_cast<const x::Buffer*>(p);
  };
  int64_t stream = 0;
  int device = 0;
  if (gpu) {
    const x::Api* api = frame.api;
    x::StreamGetArgs sa{x::kStreamGetArgsSize, nullptr, frame.ctx, nullptr};
    if (x::Error* e = api->Stream_Get(&sa)) throw ApiError{e};
    stream = int64_t(reinterpret_cast<intptr_t>(sa.stream));
    if (api->struct_size >= x::kApiSizeWithDeviceOrdinal && api->DeviceOrdinal_Get) {
      x::DeviceOrdinalGetArgs da{x::kDeviceOrdinalGetArgsSize, nullptr, frame.ctx, 0};
      if (x::Error* e = api->DeviceOrdinal_Get(&da)) throw ApiError{e};
      device = da.device_ordinal;
    }
  }
  runtime::CompiledProgram& program = gpu ? program_for_device(c, device) : *c.ex.program;
  thread_local std::vector<ir::Scalar> vals;
  thread_local std::vector<emulator::MemoryRegion> regions;
  vals.assign(c.ex.slots.size(), ir::Scalar{});
  regions.clear();
  for (size_t i = 0; i < c.ex.slots.size(); ++i) {
    const ArgSlot& slot = c.ex.slots[i];
    int b = c.source_buffer[size_t(slot.source)];
    if (slot.kind == kStream) {
      vals[i] = ir::Scalar::of_int(stream);
      continue;
    }
    if (b < 0) fail(x::kInternal, c.name + ": a tensor parameter reads the stream");
    const BufferSource& src = c.buffers[size_t(b)];
    const x::Buffer& buf = buffer(src);
    switch (slot.kind) {
      case kTensorData: {
        check_buffer(c, src, buf);
        vals[i] = ir::Scalar::of_int(int64_t(reinterpret_cast<intptr_t>(buf.data)));
        if (c.emulated) {
          int64_t n = 1;
          for (int64_t d = 0; d < buf.rank; ++d) n *= buf.dims[d];
          emulator::MemoryRegion r;
          r.begin = reinterpret_cast<uintptr_t>(buf.data);
          r.end = r.begin + uintptr_t(n * src.element_bytes);
          r.name = src.label;
          regions.push_back(std::move(r));
        }
        break;
      }
      case kTensorShape:
      case kTensorStride: {
        int d = src.mode[size_t(slot.mode)];
        int64_t v = slot.kind == kTensorShape ? buf.dims[d] : row_major_stride(buf, d);
        if (slot.type->width == 32 && (v < INT32_MIN || v > INT32_MAX))
          fail(x::kInvalidArgument, runtime::int32_entry_error(runtime::MessageStyle::Xla, c.name + ": " + src.label,
                                                               slot.kind == kTensorShape, slot.mode, v)
                                        .message);
        vals[i] = ir::Scalar::of_int(ir::wrap_int(slot.type, v));
        break;
      }
      default: fail(x::kInternal, c.name + ": unexpected parameter kind " + std::to_string(slot.kind));
    }
  }
  if (gpu) runtime::CudaDriver::get().initialize_context(device);
  if (c.emulated) program.run(vals, regions, c.ex.strict_regions);
  else program.run(vals);
}

x::Error* make_error(const x::Api* api, x::ErrorCode code, const std::string& message) {
  x::ErrorCreateArgs a{x::kErrorCreateArgsSize, nullptr, message.c_str(), code};
  return api->Error_Create(&a);  // XLA copies the message
}

x::Error* handle(x::CallFrame* frame, bool gpu) {
  if (frame->extension_start && frame->extension_start->type == x::kExtensionMetadata) {
    // XLA asks, at registration, which API version and traits the handler has.
    auto* ext = reinterpret_cast<x::MetadataExtension*>(frame->extension_start);
    if (ext->extension_base.struct_size < x::kMetadataExtensionSize || ext->metadata->struct_size < x::kMetadataSize)
      return make_error(frame->api, x::kInvalidArgument, "OpenCuTe: XLA's metadata struct is smaller than expected");
    ext->metadata->api_version = x::ApiVersion{x::kApiVersionSize, nullptr, x::kApiMajor, x::kApiMinor};
    ext->metadata->traits = 0;
    ext->metadata->state_type_id = 0;
    return nullptr;
  }
  if (frame->struct_size < x::kCallFrameSize)
    return make_error(frame->api, x::kInvalidArgument, "OpenCuTe: XLA's call frame is smaller than expected");
  if (frame->stage != x::kExecute) return nullptr;  // only the execute stage is registered
  try {
    execute(*frame, gpu);
    return nullptr;
  } catch (const ApiError& e) {
    return e.error;
  } catch (const CallError& e) {
    return make_error(frame->api, e.code, e.message);
  } catch (const runtime::CudaError& e) {
    return make_error(frame->api, x::kInternal, std::string("CUDA Error: ") + e.what());
  } catch (const dsl::UserError& e) {
    return make_error(frame->api, x::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return make_error(frame->api, x::kInternal, e.what());
  } catch (...) {
    return make_error(frame->api, x::kInternal, "unknown C++ exception in an OpenCuTe custom call");
  }
}

x::Error* handler_gpu(x::CallFrame* frame) { return handle(frame, true); }
x::Error* handler_cpu(x::CallFrame* frame) { return handle(frame, false); }

// ---- a call frame without XLA, for tests of the handler on machines without JAX ------------
struct TestError {
  x::ErrorCode code;
  std::string message;
};

x::Error* test_error_create(x::ErrorCreateArgs* a) {
  return reinterpret_cast<x::Error*>(new TestError{a->errc, a->message ? a->message : ""});
}

// Buffers: (address, xla dtype, dims). Raises RuntimeError "code: message" when the handler fails.
void invoke_for_testing(const std::string& platform, const std::vector<std::tuple<int64_t, int, std::vector<int64_t>>>& args,
                        const std::vector<std::tuple<int64_t, int, std::vector<int64_t>>>& rets, int64_t call,
                        int64_t process, const std::string& program, const std::string& buffers) {
  x::Api api{};
  api.struct_size = x::kApiSizeWithDeviceOrdinal;
  api.Error_Create = test_error_create;
  std::vector<std::vector<int64_t>> dims;
  std::vector<x::Buffer> arg_buffers, ret_buffers;
  auto make = [&](const std::vector<std::tuple<int64_t, int, std::vector<int64_t>>>& in, std::vector<x::Buffer>& out) {
    for (const auto& [address, dtype, shape] : in) {
      dims.push_back(shape);
      out.push_back(x::Buffer{x::kBufferSize, nullptr, x::DataType(dtype), reinterpret_cast<void*>(intptr_t(address)),
                              int64_t(shape.size()), nullptr});
    }
  };
  make(args, arg_buffers);
  make(rets, ret_buffers);
  size_t k = 0;
  for (x::Buffer& b : arg_buffers) b.dims = dims[k++].data();
  for (x::Buffer& b : ret_buffers) b.dims = dims[k++].data();
  std::vector<void*> arg_ptrs, ret_ptrs;
  std::vector<x::ArgType> arg_types(arg_buffers.size(), x::kArgBuffer);
  std::vector<int32_t> ret_types(ret_buffers.size(), 1);
  for (x::Buffer& b : arg_buffers) arg_ptrs.push_back(&b);
  for (x::Buffer& b : ret_buffers) ret_ptrs.push_back(&b);
  // XLA sorts attributes by name; the handler looks them up by name, so the order does not matter.
  x::ByteSpan names[4] = {{kCallAttr, std::strlen(kCallAttr)}, {kProcessAttr, std::strlen(kProcessAttr)},
                          {kProgramAttr, std::strlen(kProgramAttr)}, {kBuffersAttr, std::strlen(kBuffersAttr)}};
  x::ByteSpan* name_ptrs[4] = {&names[0], &names[1], &names[2], &names[3]};
  x::Scalar scalars[2] = {{x::kS64, &call}, {x::kS64, &process}};
  x::ByteSpan strings[2] = {{program.data(), program.size()}, {buffers.data(), buffers.size()}};
  void* attr_ptrs[4] = {&scalars[0], &scalars[1], &strings[0], &strings[1]};
  x::AttrType attr_types[4] = {x::kAttrScalar, x::kAttrScalar, x::kAttrString, x::kAttrString};
  int64_t num_attrs = program.empty() ? 2 : 4;
  x::CallFrame frame{};
  frame.struct_size = x::kCallFrameSize;
  frame.api = &api;
  frame.stage = x::kExecute;
  frame.args = x::Args{sizeof(x::Args), nullptr, int64_t(arg_ptrs.size()), arg_types.data(), arg_ptrs.data()};
  frame.rets = x::Rets{sizeof(x::Rets), nullptr, int64_t(ret_ptrs.size()), ret_types.data(), ret_ptrs.data()};
  frame.attrs = x::Attrs{sizeof(x::Attrs), nullptr, num_attrs, attr_types, name_ptrs, attr_ptrs};
  x::Error* e;
  {
    nb::gil_scoped_release release;
    e = platform == "cpu" ? handler_cpu(&frame) : handler_gpu(&frame);
  }
  if (e) {
    std::unique_ptr<TestError> err(reinterpret_cast<TestError*>(e));
    throw std::runtime_error(std::to_string(int(err->code)) + ": " + err->message);
  }
}

}  // namespace

void bind_xla_ffi_calls(nb::module_& m) {
  // The handler as XLA's FFI wants it registered: a PyCapsule of the C function pointer.
  m.def("xla_ffi_handler", [](const std::string& platform) {
    void* fn = platform == "cpu" ? reinterpret_cast<void*>(&handler_cpu) : reinterpret_cast<void*>(&handler_gpu);
    return nb::steal(PyCapsule_New(fn, nullptr, nullptr));
  });
  m.def("xla_ffi_process_token", []() { return registry().token; });
  // Registers a compiled function as a custom call; returns its index. `buffers`: per tensor
  // source (in source order, the stream's source excluded) (is_result, index, mode, label);
  // `stream_source`: the source index of the stream.
  m.def("xla_ffi_register_call",
        [](nb::handle compiled, const std::string& name, int stream_source, const std::vector<BufferDesc>& buffers,
           int64_t num_args, int64_t num_rets) {
          if (!nb::isinstance<Executor>(compiled)) throw std::invalid_argument("expected a JitCompiledFunction");
          return register_call(*nb::inst_ptr<Executor>(compiled), name, stream_source, buffers, num_args, num_rets);
        });
  m.def("xla_ffi_invoke_for_testing", &invoke_for_testing, nb::arg("platform"), nb::arg("args"), nb::arg("rets"),
        nb::arg("call"), nb::arg("process"), nb::arg("program") = "", nb::arg("buffers") = "");
}

}  // namespace opencute::bindings
