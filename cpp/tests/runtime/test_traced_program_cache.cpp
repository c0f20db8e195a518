// The trace-key entries of the disk cache: round trip through DiskCache, their own key space,
// the switches that disable them, and the ops' source locations that the IR text leaves out.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/traced_program_cache.h"

using namespace opencute;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("opencute_traced_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

runtime::TracedProgramEntry sample() {
  runtime::TracedProgramEntry e;
  e.front_end = R"({"runtime_positions": [0, 1]})";
  e.nvvm_text = "define void @k() {\n  ret void\n}\n";
  e.locations = std::string("\x01\0\0\0\0\0\0\0", 8);
  e.program = std::string("blob\0with a zero", 16);
  return e;
}

// A host function with a loop: ops inside regions as well as at the top.
std::unique_ptr<ir::Module> looping_module() {
  auto m = std::make_unique<ir::Module>();
  ir::Function* f = m->add_function("host", ir::FunctionKind::Host);
  ir::Value* n = f->body->add_arg(ir::i32());
  ir::Builder b(f->body.get());
  ir::Op* loop = b.create_for(b.const_int(ir::i32(), 0), n, b.const_int(ir::i32(), 1), {n}, 0);
  b.set_results(loop, {ir::i32()});
  b.set_block(loop->region_block(0));
  ir::Value* carried = loop->region_block(0)->args[1].get();
  b.yield({b.binary(ir::OpCode::Add, carried, b.const_int(ir::i32(), 3))});
  b.set_block(f->body.get());
  b.ret({loop->result(0)});
  return m;
}

template <class Visit>
void each_op(ir::Block& block, const Visit& visit) {
  for (auto& op : block.ops) {
    visit(*op);
    for (auto& r : op->regions) each_op(*r.block, visit);
  }
}

}  // namespace

TEST(TracedProgramCache, StoresAndLoadsAnEntryUnderItsOwnKeys) {
  runtime::DiskCache cache(fresh_dir("roundtrip").string());
  EXPECT_FALSE(runtime::load_traced_program(cache, "trace key A").has_value());
  runtime::store_traced_program(cache, "trace key A", sample());
  auto hit = runtime::load_traced_program(cache, "trace key A");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->front_end, sample().front_end);
  EXPECT_EQ(hit->nvvm_text, sample().nvvm_text);
  EXPECT_EQ(hit->locations, sample().locations);
  EXPECT_EQ(hit->program, sample().program);
  EXPECT_FALSE(runtime::load_traced_program(cache, "trace key B").has_value());
  // Not an IR-keyed entry: the same text as an IR key finds nothing.
  EXPECT_FALSE(cache.load("trace key A").has_value());
  EXPECT_NE(runtime::traced_program_cache_key("trace key A").find(runtime::library_build_identity()),
            std::string::npos);
}

TEST(TracedProgramCache, DisabledCachesStoreAndLoadNothing) {
  runtime::DiskCache off("");
  runtime::store_traced_program(off, "k", sample());
  EXPECT_FALSE(runtime::load_traced_program(off, "k").has_value());

  fs::path dir = fresh_dir("switch");
  runtime::DiskCache cache(dir.string());
  ::setenv("CUTE_DSL_DISABLE_FILE_CACHING", "True", 1);
  runtime::store_traced_program(cache, "k", sample());
  EXPECT_FALSE(fs::exists(dir));
  ::unsetenv("CUTE_DSL_DISABLE_FILE_CACHING");
  runtime::store_traced_program(cache, "k", sample());
  ::setenv("CUTE_DSL_DISABLE_FILE_CACHING", "1", 1);
  EXPECT_FALSE(runtime::load_traced_program(cache, "k").has_value());  // read at each call
  ::unsetenv("CUTE_DSL_DISABLE_FILE_CACHING");
  EXPECT_TRUE(runtime::load_traced_program(cache, "k").has_value());
}

TEST(TracedProgramCache, SourceLocationsComeBackOnTheModuleReadFromItsText) {
  auto original = looping_module();
  int line = 10;
  each_op(*original->functions[0]->body, [&](ir::Op& op) {
    op.file = line % 20 ? "/src/user.py" : "/src/helpers.py";
    op.line = line++;
  });
  std::string text = ir::print_module(*original);
  ASSERT_EQ(text.find("user.py"), std::string::npos);  // what the locations are for
  std::string locations = runtime::op_locations(*original);

  auto read = ir::parse_module(text);
  ASSERT_TRUE(runtime::restore_op_locations(*read, locations));
  std::vector<std::pair<std::string, int>> want, got;
  each_op(*original->functions[0]->body, [&](ir::Op& op) { want.emplace_back(op.file, op.line); });
  each_op(*read->functions[0]->body, [&](ir::Op& op) { got.emplace_back(op.file, op.line); });
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 7u);  // 3 constants, the loop, the add and yield inside it, the return

  // Another module (one op fewer) is left as it is.
  auto other = ir::parse_module(text);
  other->functions[0]->body->ops.pop_back();
  EXPECT_FALSE(runtime::restore_op_locations(*other, locations));
  EXPECT_FALSE(runtime::restore_op_locations(*read, locations.substr(0, locations.size() - 1)));
}
