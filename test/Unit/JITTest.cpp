//===- JITTest.cpp - The compiler as a library, and its kernel cache
//-------===//
//
// No GPU: compile() produces artifacts the runtime's parser accepts; errors
// are located; the cache hits in memory and on disk, rebuilds a damaged
// entry, and holds up with many threads compiling at once.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"
#include "fusec/fusec_jit.h"

#include "fusec/runtime/Plan.h"
#include "fusec/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fusec;
namespace fs = std::filesystem;

namespace {

std::string reluGraph(int n) {
  std::string t = "tensor<" + std::to_string(n) + "x33xf32>";
  return "func.func @g(%x: " + t + ") -> " + t + " {\n  %0 = fuse.relu %x : " +
         t + "\n  return %0 : " + t + "\n}\n";
}

/// A fresh cache directory per test, the tuning database off.
class JIT : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("fusec-jit-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    options.cacheDir = dir.string();
    options.tuningDb = "none";
    jit::clearMemoryCache();
  }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<fs::path> entries() {
    std::vector<fs::path> files;
    if (fs::exists(dir))
      for (const auto &e : fs::directory_iterator(dir))
        files.push_back(e.path());
    return files;
  }

  fs::path dir;
  jit::Options options;
};

TEST_F(JIT, CompilesToAnArtifactTheRuntimeAccepts) {
  jit::Result r = jit::compile(reluGraph(5), options, "relu.mlir");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.source, jit::Source::Compiled);
  runtime::Plan plan;
  runtime::Status status = runtime::parseArtifact(r.artifact, plan, "relu");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plan.arch, "sm_90");
  EXPECT_EQ(plan.graph, "g");
}

TEST_F(JIT, ErrorsAreLocatedInTheGraph) {
  jit::Result r = jit::compile(
      "func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = fuse.relu %y : tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n}\n",
      options, "bad.mlir");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error.rfind("bad.mlir:2:18: error: use of undeclared SSA value "
                          "name",
                          0),
            0u)
      << r.error;
  options.arch = "sm_61";
  r = jit::compile(reluGraph(5), options, "relu.mlir");
  EXPECT_EQ(r.error.rfind("relu.mlir: error: ", 0), 0u) << r.error;
  EXPECT_NE(r.error.find("sm_61"), std::string::npos) << r.error;
  options.arch = "sm_90";
  options.entry = "nope";
  r = jit::compile(reluGraph(5), options, "relu.mlir");
  EXPECT_EQ(r.error, "relu.mlir: error: no function @nope\n");
  // Nothing of a failed compilation is cached.
  EXPECT_TRUE(entries().empty());
  r = jit::compileFile((dir / "missing.mlir").string(), options);
  EXPECT_EQ(r.error.rfind("cannot open '", 0), 0u) << r.error;
  // Graph text is read under a bound: /dev/zero is not read to its end.
  r = jit::compileFile("/dev/zero", options);
  EXPECT_EQ(r.error, "cannot open '/dev/zero': it holds more than 268435456 "
                     "bytes, the most fusec reads of graph text");
}

TEST_F(JIT, PassesOverPrivateDeclarations) {
  // A declaration beside the graph is harmless (a graph calls nothing);
  // asked for by name, it is refused.
  std::string text =
      "func.func private @h(tensor<4xf32>) -> tensor<4xf32>\n" + reluGraph(4);
  jit::Result r = jit::compile(text, options, "decl.mlir");
  EXPECT_TRUE(r.ok()) << r.error;
  options.entry = "h";
  r = jit::compile(text, options, "decl.mlir");
  EXPECT_NE(r.error.find("is a declaration, not a graph"), std::string::npos)
      << r.error;
}

TEST_F(JIT, CachesInMemoryThenOnDisk) {
  jit::Result cold = jit::compile(reluGraph(7), options);
  ASSERT_TRUE(cold.ok()) << cold.error;
  EXPECT_EQ(cold.source, jit::Source::Compiled);
  ASSERT_EQ(entries().size(), 1u);

  jit::Result warm = jit::compile(reluGraph(7), options);
  EXPECT_EQ(warm.source, jit::Source::MemoryCache);
  EXPECT_EQ(warm.artifact, cold.artifact);

  jit::clearMemoryCache();
  jit::Result disk = jit::compile(reluGraph(7), options);
  EXPECT_EQ(disk.source, jit::Source::DiskCache);
  EXPECT_EQ(disk.artifact, cold.artifact);
  EXPECT_TRUE(disk.warnings.empty()) << disk.warnings;

  // Another graph, another architecture, another math mode: misses.
  EXPECT_EQ(jit::compile(reluGraph(8), options).source, jit::Source::Compiled);
  options.arch = "sm_80";
  EXPECT_EQ(jit::compile(reluGraph(7), options).source, jit::Source::Compiled);
  options.fp32Math = "tf32";
  EXPECT_EQ(jit::compile(reluGraph(7), options).source, jit::Source::Compiled);
  EXPECT_EQ(entries().size(), 4u);

  // Without the cache nothing is read or written.
  options.cache = false;
  EXPECT_EQ(jit::compile(reluGraph(9), options).source, jit::Source::Compiled);
  EXPECT_EQ(entries().size(), 4u);
}

TEST_F(JIT, RebuildsADamagedEntry) {
  jit::Result cold = jit::compile(reluGraph(3), options);
  ASSERT_TRUE(cold.ok()) << cold.error;
  ASSERT_EQ(entries().size(), 1u);
  fs::path entry = entries()[0];
  for (int damage = 0; damage < 3; ++damage) {
    std::string text;
    {
      std::ifstream in(entry);
      std::stringstream s;
      s << in.rdbuf();
      text = s.str();
    }
    // Truncated, one byte changed, emptied.
    if (damage == 0)
      text.resize(text.size() / 2);
    else if (damage == 1)
      text[text.size() - 10] ^= 1;
    else
      text.clear();
    std::ofstream(entry, std::ios::trunc) << text;
    jit::clearMemoryCache();
    jit::Result again = jit::compile(reluGraph(3), options);
    ASSERT_TRUE(again.ok()) << again.error;
    EXPECT_EQ(again.source, jit::Source::Compiled) << damage;
    EXPECT_EQ(again.artifact, cold.artifact);
    EXPECT_NE(again.warnings.find("is damaged"), std::string::npos)
        << again.warnings;
    // Replaced by a good entry.
    jit::clearMemoryCache();
    EXPECT_EQ(jit::compile(reluGraph(3), options).source,
              jit::Source::DiskCache);
  }
}

TEST_F(JIT, NeverReadsACacheEntryThatIsNotARegularFile) {
  // A link to /dev/zero was read until the process was killed, and a FIFO
  // blocked: end the test rather than hang.
  ::alarm(60);
  jit::Result cold = jit::compile(reluGraph(4), options);
  ASSERT_TRUE(cold.ok()) << cold.error;
  ASSERT_EQ(entries().size(), 1u);
  fs::path entry = entries()[0];
  for (auto [kind, why] :
       {std::pair{"link", "it is a character device, not a regular file"},
        {"fifo", "it is a FIFO, not a regular file"}}) {
    fs::remove(entry);
    if (std::string(kind) == "link")
      fs::create_symlink("/dev/zero", entry);
    else
      ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
    jit::clearMemoryCache();
    jit::Result again = jit::compile(reluGraph(4), options);
    ASSERT_TRUE(again.ok()) << again.error;
    EXPECT_EQ(again.source, jit::Source::Compiled) << kind;
    EXPECT_EQ(again.artifact, cold.artifact);
    EXPECT_EQ(again.warnings, "fusec: the kernel cache entry '" +
                                  entry.string() + "' cannot be read (" + why +
                                  "); it was compiled again and replaced\n");
    // Replaced by a good entry.
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(entry))) << kind;
    jit::clearMemoryCache();
    EXPECT_EQ(jit::compile(reluGraph(4), options).source,
              jit::Source::DiskCache);
  }
  ::alarm(0);
}

TEST_F(JIT, RefusesATuningDatabaseThatIsNotARegularFile) {
  // The cache key hashes the database: that read must not block either.
  ::alarm(60);
  fs::create_directories(dir);
  fs::path fifo = dir / "tuning.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  options.tuningDb = fifo.string();
  jit::Result r = jit::compile(reluGraph(4), options);
  ::alarm(0);
  EXPECT_TRUE(r.ok()) << r.error;
}

TEST_F(JIT, ManyThreadsCompileTheSameAndDifferentGraphs) {
  constexpr int kThreads = 8, kRounds = 3;
  std::vector<std::vector<jit::Result>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round)
        results[t].push_back(jit::compile(reluGraph(1 + t % 3), options));
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < kThreads; ++t)
    for (const jit::Result &r : results[t]) {
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_TRUE(r.warnings.empty()) << r.warnings;
      EXPECT_EQ(r.artifact, results[t % 3][0].artifact);
    }
  // One entry per graph, no temporary file left behind.
  EXPECT_EQ(entries().size(), 3u);
}

} // namespace

namespace {

TEST_F(JIT, CApi) {
  fusec_jit_options c;
  fusec_jit_options_init(&c);
  std::string cacheDir = dir.string();
  c.cache_dir = cacheDir.c_str();
  c.tuning_db = "none";
  fusec_jit_result *r = fusec_jit_compile(reluGraph(4).c_str(), "g.mlir", &c);
  ASSERT_TRUE(fusec_jit_ok(r)) << fusec_jit_error(r);
  size_t size = 0;
  const char *artifact = fusec_jit_artifact(r, &size);
  EXPECT_EQ(std::string(artifact).size(), size);
  EXPECT_EQ(fusec_jit_result_source(r), FUSEC_JIT_COMPILED);
  fusec_jit_result_free(r);
  r = fusec_jit_compile(reluGraph(4).c_str(), "g.mlir", &c);
  EXPECT_EQ(fusec_jit_result_source(r), FUSEC_JIT_MEMORY_CACHE);
  fusec_jit_result_free(r);

  r = fusec_jit_compile("func.func @g(", "bad.mlir", &c);
  EXPECT_FALSE(fusec_jit_ok(r));
  EXPECT_EQ(std::string(fusec_jit_error(r)).rfind("bad.mlir:1:", 0), 0u)
      << fusec_jit_error(r);
  fusec_jit_result_free(r);
  r = fusec_jit_compile(nullptr, nullptr, nullptr);
  EXPECT_STREQ(fusec_jit_error(r), "fusec_jit_compile: the graph text is null");
  fusec_jit_result_free(r);
  EXPECT_EQ(std::string(fusec_jit_version()), jit::version());
}

} // namespace

namespace {

TEST_F(JIT, GraphBuilderBuildsAConvBlockAndAnAttention) {
  using jit::DType;
  jit::GraphBuilder g("block");
  jit::Tensor x = g.input({1, 9, 11, 16}, DType::F16);
  jit::Tensor w = g.input({32, 3, 3, 16}, DType::F16);
  std::vector<jit::Tensor> bn;
  for (int i = 0; i < 4; ++i)
    bn.push_back(g.input({32}, DType::F16));
  jit::Conv2dOptions conv;
  conv.strides = {2, 2};
  conv.padding = {1, 1};
  jit::Tensor y = g.conv2d(x, w, conv);
  EXPECT_EQ(g.shape(y), (std::vector<int64_t>{1, 5, 6, 32}));
  y = g.relu(g.batchNorm(y, bn[0], bn[1], bn[2], bn[3]));
  g.output(y);

  jit::Tensor q = g.input({1, 4, 33, 64}, DType::BF16);
  jit::Tensor kv = g.input({1, 2, 40, 64}, DType::BF16);
  jit::AttentionOptions causal;
  causal.causal = true;
  jit::Tensor a = g.attention(q, kv, kv, causal);
  EXPECT_EQ(g.shape(a), (std::vector<int64_t>{1, 4, 33, 64}));
  jit::Tensor t = g.reshape(g.transpose(a, {0, 2, 1, 3}), {1, 33, 256});
  jit::Tensor lw = g.input({48, 256}, DType::BF16);
  jit::Tensor h = g.layerNorm(g.gelu(g.linear(t, lw)), std::nullopt,
                              std::nullopt, 1e-6);
  EXPECT_EQ(g.shape(h), (std::vector<int64_t>{1, 33, 48}));
  g.output(h);
  ASSERT_EQ(g.error(), "");
  std::string text = g.mlir();
  EXPECT_NE(text.find("func.func @block(%arg0: tensor<1x9x11x16xf16>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{epsilon = 9.9999999999999995e-07 : f64}"),
            std::string::npos)
      << text;

  jit::Result r = jit::compile(g, options);
  ASSERT_TRUE(r.ok()) << r.error << "\n" << text;
  runtime::Plan plan;
  ASSERT_TRUE(runtime::parseArtifact(r.artifact, plan, "block"));
  EXPECT_EQ(plan.graph, "block");
}

TEST_F(JIT, GraphBuilderNamesTheFirstInvalidOp) {
  jit::GraphBuilder g;
  jit::Tensor x = g.input({2, 8}, jit::DType::F32);
  jit::Tensor w = g.input({4, 7}, jit::DType::F32);
  jit::Tensor y = g.linear(x, w);
  EXPECT_EQ(y.id, -1);
  EXPECT_EQ(g.error().rfind("linear: ", 0), 0u) << g.error();
  // The error stays the first one until cleared, and the graph cannot be
  // compiled meanwhile: a caller who checks only at the end sees it.
  g.output(g.relu(x));
  EXPECT_EQ(g.error().rfind("linear: ", 0), 0u);
  EXPECT_EQ(g.mlir(), "");
  jit::Result r = jit::compile(g, options);
  EXPECT_EQ(r.error.rfind("graph builder: linear: ", 0), 0u) << r.error;

  jit::GraphBuilder h;
  h.relu(jit::Tensor{3});
  EXPECT_EQ(h.error(), "relu: operand 0 is not a value of this graph");
  jit::GraphBuilder empty;
  empty.input({1}, jit::DType::F32);
  EXPECT_EQ(jit::compile(empty, options).error,
            "graph builder: the graph has no output");
}

TEST_F(JIT, GraphBuilderGoesOnAfterAFailedCall) {
  jit::GraphBuilder g("after");
  jit::Tensor x = g.input({2, 8}, jit::DType::F32);
  jit::Tensor w = g.input({4, 7}, jit::DType::F32);
  EXPECT_EQ(g.linear(x, w).id, -1);
  // Later calls are built, not ignored; one given the failed value says so.
  jit::Tensor y = g.relu(x);
  EXPECT_GE(y.id, 0);
  EXPECT_EQ(g.shape(y), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(g.sigmoid(jit::Tensor{}).id, -1);
  EXPECT_EQ(g.error().rfind("linear: ", 0), 0u) << g.error();
  EXPECT_NE(g.error().find("(and 1 later call failed)"), std::string::npos)
      << g.error();
  g.clearError();
  EXPECT_EQ(g.error(), "");
  EXPECT_EQ(g.sigmoid(jit::Tensor{}).id, -1);
  EXPECT_EQ(g.error(), "sigmoid: operand 0 is -1, the result of a call that "
                       "failed");
  g.clearError();
  // The graph holds the calls that succeeded, and compiles.
  g.output(y);
  std::string text = g.mlir();
  EXPECT_EQ(text.find("linear"), std::string::npos) << text;
  jit::Result r = jit::compile(g, options);
  EXPECT_TRUE(r.ok()) << r.error << "\n" << text;
}

TEST_F(JIT, GraphBuilderRefusesADTypeOutsideTheEnum) {
  jit::GraphBuilder g;
  EXPECT_EQ(g.input({4}, static_cast<jit::DType>(7)).id, -1);
  EXPECT_EQ(g.error(),
            "input: dtype 7 is not a dtype: use f32 (0), f16 (1) or bf16 (2)");
  g.clearError();
  jit::Tensor x = g.input({4}, jit::DType::F32);
  EXPECT_EQ(g.cast(x, static_cast<jit::DType>(-1)).id, -1);
  EXPECT_EQ(g.error(),
            "cast: dtype -1 is not a dtype: use f32 (0), f16 (1) or bf16 (2)");

  fusec_jit_graph *c = fusec_jit_graph_new("c");
  long long shape[] = {4};
  EXPECT_EQ(fusec_jit_graph_input(c, shape, 1, static_cast<fusec_jit_dtype>(3)),
            -1);
  EXPECT_STREQ(fusec_jit_graph_error(c),
               "input: dtype 3 is not a dtype: use f32 (0), f16 (1) or bf16 "
               "(2)");
  fusec_jit_graph_clear_error(c);
  // NULL arrays with a count are refused by name, not read.
  EXPECT_EQ(fusec_jit_graph_input(c, nullptr, 2, FUSEC_JIT_F32), -1);
  EXPECT_STREQ(fusec_jit_graph_error(c),
               "input: shape is NULL but its count is 2");
  fusec_jit_graph_clear_error(c);
  EXPECT_EQ(fusec_jit_graph_op(c, "fuse.relu", nullptr, 1, nullptr), -1);
  EXPECT_STREQ(fusec_jit_graph_error(c),
               "fuse.relu: the operands are NULL but their count is 1");
  fusec_jit_graph_free(c);
  EXPECT_EQ(fusec_jit_graph_input(nullptr, shape, 1, FUSEC_JIT_F32), -1);
  EXPECT_STREQ(fusec_jit_graph_error(nullptr), "null graph");
}

TEST_F(JIT, GraphBuilderTakesAnyName) {
  // The name is printed as an MLIR symbol, quoted where needed: nothing in
  // it reaches the text as syntax.
  for (std::string name :
       {std::string("plain_name"), std::string("a \"quoted\" name"),
        std::string("with spaces"), std::string("new\nline"),
        std::string("x@y"), std::string("}"),
        std::string("g() {\n}\nfunc.func @evil(%a: tensor<4xf32>) {"),
        std::string("back\\slash\ttab"), std::string("\xc3\xa9t\xc3\xa9")}) {
    jit::GraphBuilder g(name);
    jit::Tensor x = g.input({4, 33}, jit::DType::F32);
    g.output(g.relu(x));
    ASSERT_EQ(g.error(), "") << name;
    for (const char *backend : {"ptx", "cuda"}) {
      options.backend = backend;
      jit::Result r = jit::compile(g, options);
      ASSERT_TRUE(r.ok()) << name << ": " << r.error << "\n" << g.mlir();
      runtime::Plan plan;
      ASSERT_TRUE(runtime::parseArtifact(r.artifact, plan, "named")) << name;
      EXPECT_EQ(plan.graph, name);
    }
  }
  jit::GraphBuilder unnamed("");
  EXPECT_EQ(unnamed.error(),
            "the graph name is empty: name the graph (any text will do)");
}

TEST_F(JIT, GraphBuilderBuildsEveryOp) {
  using jit::DType;
  jit::GraphBuilder g("every");
  jit::Tensor qkv = g.input({2, 12}, DType::F32);
  std::vector<jit::Tensor> pieces = g.split(qkv, 1, {4, 4, 4});
  ASSERT_EQ(pieces.size(), 3u) << g.error();
  EXPECT_EQ(g.shape(pieces[2]), (std::vector<int64_t>{2, 4}));
  jit::Tensor d = g.div(g.sub(pieces[0], pieces[1]), pieces[2]);
  jit::Tensor a = g.hardswish(g.relu6(d));
  jit::Tensor h = g.cast(a, DType::BF16);
  EXPECT_EQ(g.shape(h), (std::vector<int64_t>{2, 4}));
  jit::Tensor c = g.concat({g.slice(qkv, {0, 2}, {2, 4}), pieces[1]}, 1);
  EXPECT_EQ(g.shape(c), (std::vector<int64_t>{2, 8}));
  jit::Tensor x = g.input({1, 3, 8, 16}, DType::BF16);
  jit::Tensor cs = g.input({8, 8}, DType::BF16);
  jit::Tensor r = g.rope(x, cs, cs, /*interleaved=*/true);
  EXPECT_EQ(g.shape(r), (std::vector<int64_t>{1, 3, 8, 16}));
  jit::Tensor img = g.input({1, 8, 8, 4}, DType::F16);
  jit::Tensor p = g.avgPool2d(img, {2, 2}, {}, {0, 0}, false);
  EXPECT_EQ(g.shape(p), (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_EQ(g.shape(g.globalAvgPool(p)), (std::vector<int64_t>{1, 1, 1, 4}));
  EXPECT_EQ(g.shape(g.maxPool2d(img, {2, 2}, {}, {0, 0})),
            (std::vector<int64_t>{1, 4, 4, 4}));
  g.output(h);
  g.output(c);
  g.output(r);
  ASSERT_EQ(g.error(), "");
  std::string text = g.mlir();
  EXPECT_NE(text.find("%v1:3 = fuse.split %arg0"), std::string::npos) << text;
  EXPECT_NE(text.find("fuse.cast"), std::string::npos) << text;
  jit::Result compiled = jit::compile(g, options);
  ASSERT_TRUE(compiled.ok()) << compiled.error << "\n" << text;

  // Values: the split pieces go where fuse.split puts them.
  jit::HostTensor in{{2, 12}, DType::F32, {}};
  for (int i = 0; i < 24; ++i)
    in.data.push_back(i + 1);
  jit::HostTensor xs{{1, 3, 8, 16}, DType::F32, std::vector<double>(384, 1.0)};
  jit::HostTensor css{{8, 8}, DType::F32, std::vector<double>(64, 0.0)};
  jit::HostTensor imgs{{1, 8, 8, 4}, DType::F32, std::vector<double>(256, 1.0)};
  jit::Evaluation e = jit::evaluate(text, {in, xs, css, imgs});
  ASSERT_TRUE(e.ok()) << e.error;
  // concat(qkv[:, 2:6], qkv[:, 4:8]), row 0: 3 4 5 6 5 6 7 8.
  EXPECT_EQ(e.outputs[1].data,
            (std::vector<double>{3, 4, 5, 6, 5, 6, 7, 8, 15, 16, 17, 18, 17, 18,
                                 19, 20}));
  EXPECT_EQ(e.outputs[0].dtype, DType::BF16);
}

TEST_F(JIT, GraphBuilderOpTakesAnyFuseOpAndAttributes) {
  using jit::DType;
  jit::GraphBuilder g("generic");
  jit::Tensor x = g.input({1, 16, 64}, DType::BF16);
  jit::Tensor cs = g.input({16, 32}, DType::BF16);
  // fuse.rope lists two operand types in its custom form; op() writes the
  // generic form, which lists them all.
  jit::Tensor y = g.op("fuse.rope", {x, cs, cs});
  ASSERT_GE(y.id, 0) << g.error();
  jit::Tensor yi = g.op("rope", {x, cs, cs}, "{interleaved}");
  ASSERT_GE(yi.id, 0) << g.error();
  // Attributes with or without braces.
  jit::Tensor c1 = g.op("fuse.concat", {y, yi}, "{axis = 2 : i64}");
  jit::Tensor c2 = g.op("fuse.concat", {y, yi}, "axis = 1");
  ASSERT_EQ(g.error(), "");
  EXPECT_EQ(g.shape(c1), (std::vector<int64_t>{1, 16, 128}));
  EXPECT_EQ(g.shape(c2), (std::vector<int64_t>{1, 32, 64}));
  std::vector<jit::Tensor> parts =
      g.opResults("fuse.split", {x}, "axis = -1, sizes = array<i64: 16, 48>");
  ASSERT_EQ(parts.size(), 2u) << g.error();
  EXPECT_EQ(g.shape(parts[1]), (std::vector<int64_t>{1, 16, 48}));
  g.output(c1);
  g.output(c2);
  g.output(parts[1]);
  std::string text = g.mlir();
  EXPECT_NE(text.find("\"fuse.rope\"(%arg0, %arg1, %arg1) {interleaved}"),
            std::string::npos)
      << text;
  jit::Result r = jit::compile(g, options);
  ASSERT_TRUE(r.ok()) << r.error << "\n" << text;

  auto fails = [&](jit::Tensor t, const std::string &message) {
    EXPECT_EQ(t.id, -1);
    EXPECT_NE(g.error().find(message), std::string::npos) << g.error();
    g.clearError();
  };
  fails(g.op("fuse.nope", {x}),
        "op: 'fuse.nope' is not an op of the fuse dialect");
  fails(g.op("fuse.split", {x}, "axis = 2, sizes = array<i64: 32, 32>"),
        "split: fuse.split has 2 results; op() builds ops of one result");
  fails(g.op("fuse.cast", {x}),
        "cast: op() cannot build fuse.cast: its result type does not follow "
        "from its operands; use the builder's cast()");
  fails(g.op("fuse.concat", {x, x}, "axis = "),
        "concat: the attributes 'axis = ' are not an MLIR attribute "
        "dictionary");
  // An unknown attribute (a typo) is refused, not kept unused.
  fails(g.op("fuse.rope", {x, cs, cs}, "interleave"),
        "rope: fuse.rope has no attribute 'interleave'; its attributes are "
        "interleaved");
  // An attribute of the wrong kind is refused, not dropped.
  fails(g.op("fuse.rope", {x, cs, cs}, "interleaved = 1"),
        "rope: fuse.rope: attribute 'interleaved' failed to satisfy "
        "constraint: unit attribute");
  // Text meant to close the op and add another is not an attribute.
  fails(g.op("fuse.relu", {x},
             "} : (tensor<1x16x64xbf16>) -> "
             "tensor<1x16x64xbf16>\n  %evil = \"fuse.relu\""
             "(%arg0) {"),
        "relu: the attributes");
  fails(g.op("fuse.concat", {x, cs}, "axis = 0"), "concat: ");
  // The op is verified before its type inference reads its operands.
  fails(g.op("fuse.rope", {x, cs}),
        "rope: 'fuse.rope' op expected 3 operands, but found 2");
  fails(g.op("fuse.concat", {}, "axis = 0"),
        "concat: 'fuse.concat' op needs at least one operand");
  EXPECT_EQ(g.mlir(), text);
}

} // namespace

namespace {

TEST_F(JIT, BackendOptionSelectsCudaC) {
  options.backend = "cuda";
  jit::Result r = jit::compile(reluGraph(3), options, "relu.mlir");
  ASSERT_TRUE(r.ok()) << r.error;
  runtime::Plan plan;
  ASSERT_TRUE(runtime::parseArtifact(r.artifact, plan, "relu"));
  EXPECT_EQ(plan.targetKind, "cuda");
  // The backend is part of the cache key: PTX is compiled, not served.
  options.backend = "ptx";
  jit::Result ptx = jit::compile(reluGraph(3), options, "relu.mlir");
  ASSERT_TRUE(ptx.ok()) << ptx.error;
  EXPECT_EQ(ptx.source, jit::Source::Compiled);
  EXPECT_NE(ptx.artifact, r.artifact);
  options.backend = "metal";
  EXPECT_NE(jit::compile(reluGraph(3), options).error.find(
                "the backend must be ptx or cuda, found 'metal'"),
            std::string::npos);
}

TEST_F(JIT, TileOverridesNameKernels) {
  jit::GraphBuilder g("mm");
  jit::Tensor a = g.input({64, 128}, jit::DType::BF16);
  jit::Tensor w = g.input({96, 128}, jit::DType::BF16);
  g.output(g.linear(a, w));
  options.tiles = {{"k7_conv2d", "#fuse.tile<bm = 64>"}};
  jit::Result r = jit::compile(g, options);
  EXPECT_NE(r.error.find("a tile is given for kernel 'k7_conv2d', but the "
                         "graph's kernels are: k0_linear"),
            std::string::npos)
      << r.error;
  options.tiles = {{"k0_linear", "#fuse.nonsense"}};
  r = jit::compile(g, options);
  EXPECT_NE(r.error.find("is not a #fuse.tile"), std::string::npos) << r.error;
  const std::string tile = "#fuse.tile<bm = 64, bn = 32, bk = 32, tm = 0, "
                           "tn = 0, warps_m = 2, warps_n = 1, stages = 2>";
  options.tiles = {{"k0_linear", tile}};
  r = jit::compile(g, options);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.artifact.find("bm = 64, bn = 32, bk = 32"), std::string::npos);
}

TEST_F(JIT, EvaluatesOnTheReferenceInterpreter) {
  jit::HostTensor x{{2, 33}, jit::DType::F32, std::vector<double>(66)};
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = (i % 2 ? 1.0 : -1.0) * (0.1 + i) + 1e-9;
  jit::Evaluation e = jit::evaluate(reluGraph(2), {x});
  ASSERT_TRUE(e.ok()) << e.error;
  ASSERT_EQ(e.outputs.size(), 1u);
  EXPECT_EQ(e.outputs[0].shape, (std::vector<int64_t>{2, 33}));
  for (size_t i = 0; i < x.data.size(); ++i)
    // Inputs are rounded to f32 first.
    EXPECT_EQ(e.outputs[0].data[i],
              std::max(0.0, static_cast<double>(static_cast<float>(x.data[i]))));
  EXPECT_EQ(jit::relativeError(e.outputs[0].data, e.outputs[0].data), 0.0);

  EXPECT_NE(jit::evaluate(reluGraph(2), {}).error.find(
                "@g: the graph takes 1 inputs, 0 were given"),
            std::string::npos);
  x.shape = {33, 2};
  EXPECT_NE(jit::evaluate(reluGraph(2), {x}, "", "relu.mlir")
                .error.find("relu.mlir: error: @g: input 0 has shape [33x2]"),
            std::string::npos);
  EXPECT_NE(jit::evaluate(reluGraph(2), {x}, "nope").error.find(
                "no function @nope"),
            std::string::npos);
  EXPECT_EQ(jit::tolerance(jit::DType::BF16), 3e-2);
  EXPECT_EQ(jit::tolerance(jit::DType::F32, "tf32"), 5e-3);
}

TEST_F(JIT, EvaluateChecksShapesBeforeAllocating) {
  std::string g = "func.func @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
                  "  %0 = fuse.relu %x : tensor<4x8xf32>\n"
                  "  return %0 : tensor<4x8xf32>\n}\n";
  std::vector<double> small(32, 1.0);
  auto evaluate = [&](std::vector<long long> shape, const std::string &graph) {
    fusec_jit_host_tensor in{small.data(), shape.data(), shape.size()};
    fusec_jit_evaluation *e =
        fusec_jit_evaluate(graph.c_str(), "g.mlir", nullptr, &in, 1);
    std::string error = fusec_jit_evaluation_error(e);
    fusec_jit_evaluation_free(e);
    return error;
  };
  // [2^40, 8] for a 4x8 argument: allocated 2^43 values (bad_alloc, an
  // abort) before the shapes were compared.
  EXPECT_EQ(evaluate({1LL << 40, 8}, g),
            "g.mlir: error: @g: input 0 has shape [1099511627776x8], the "
            "graph takes tensor<4x8xf32>\n");
  // Extents whose product overflows int64, or negative: compared, not
  // multiplied.
  EXPECT_NE(evaluate({1LL << 62, 1LL << 62}, g).find("has shape ["),
            std::string::npos);
  EXPECT_NE(evaluate({-4, -8}, g).find("input 0 has shape [-4x-8]"),
            std::string::npos);
  EXPECT_EQ(evaluate({4, 8, 1}, g), "g.mlir: error: @g: input 0 has rank 3, "
                                    "the graph takes tensor<4x8xf32>\n");
  EXPECT_EQ(evaluate({4, 8}, g), "");
  // A huge shape that matches the graph: refused for the host memory it
  // would take, before anything is allocated.
  std::string huge = g;
  for (size_t at; (at = huge.find("4x8")) != std::string::npos;)
    huge.replace(at, 3, "1099511627776x8");
  EXPECT_NE(evaluate({1LL << 40, 8}, huge)
                .find("bytes of host memory for the float64 reference "
                      "interpreter"),
            std::string::npos);
  // A rank with no shape, a tensor with no data, and a count of inputs far
  // past the array (nothing is read or allocated for them).
  fusec_jit_host_tensor noShape{small.data(), nullptr, 2};
  fusec_jit_evaluation *e =
      fusec_jit_evaluate(g.c_str(), "g.mlir", nullptr, &noShape, 1);
  EXPECT_STREQ(fusec_jit_evaluation_error(e),
               "g.mlir: error: @g: input 0 has no shape\n");
  fusec_jit_evaluation_free(e);
  e = fusec_jit_evaluate(g.c_str(), "g.mlir", nullptr, &noShape,
                         size_t(1) << 40);
  EXPECT_STREQ(fusec_jit_evaluation_error(e),
               "g.mlir: error: @g: the graph takes 1 inputs, 1099511627776 "
               "were given\n");
  fusec_jit_evaluation_free(e);
  long long shape[] = {4, 8};
  fusec_jit_host_tensor noData{nullptr, shape, 2};
  e = fusec_jit_evaluate(g.c_str(), "g.mlir", nullptr, &noData, 1);
  EXPECT_STREQ(fusec_jit_evaluation_error(e),
               "g.mlir: error: @g: input 0 has no data\n");
  fusec_jit_evaluation_free(e);

  // The C++ API: a HostTensor of the right shape but too few values.
  jit::HostTensor x{{4, 8}, jit::DType::F32, std::vector<double>(31)};
  EXPECT_EQ(jit::evaluate(g, {x}, "", "g.mlir").error,
            "g.mlir: error: @g: input 0 holds 31 values, its shape 32\n");
}

/// Evaluates `graph` (one 8192x16384 f32 input) under an address-space
/// limit 512 MiB above what the process maps now, prints the error, exits.
[[noreturn]] void evaluateUnderALimit(const std::string &graph) {
  long pages = 0;
  if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld", &pages) != 1)
      pages = 0;
    std::fclose(statm);
  }
  rlimit limit;
  limit.rlim_cur = limit.rlim_max =
      rlim_t(pages) * ::sysconf(_SC_PAGESIZE) + (rlim_t(1) << 29);
  if (pages == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0)
    std::_Exit(2);
  // The shape matches; the data is never read, as the copy is what cannot
  // be allocated.
  long long shape[] = {8192, 16384};
  double one = 1;
  fusec_jit_host_tensor in{&one, shape, 2};
  fusec_jit_evaluation *e =
      fusec_jit_evaluate(graph.c_str(), "g.mlir", nullptr, &in, 1);
  std::fputs(fusec_jit_evaluation_error(e), stderr);
  std::_Exit(0);
}

TEST(JITDeathTest, EvaluateOutOfHostMemoryIsAnError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit breaks AddressSanitizer";
#endif
  // 1 GiB of values: within the machine's memory, which evaluate checks
  // first, but not within the process's limit. A bad_alloc is an error.
  std::string t = "tensor<8192x16384xf32>";
  std::string g = "func.func @g(%x: " + t + ") -> " + t +
                  " {\n  %0 = fuse.relu %x : " + t + "\n  return %0 : " + t +
                  "\n}\n";
  EXPECT_EXIT(evaluateUnderALimit(g), ::testing::ExitedWithCode(0),
              "g.mlir: error: @g: out of host memory: the float64 reference "
              "interpreter could not allocate its tensors");
}

TEST_F(JIT, CApiEvaluatesAndBuilds) {
  fusec_jit_graph *g = fusec_jit_graph_new("blk");
  long long xs[] = {1, 5, 6, 8}, ws[] = {4, 3, 3, 8}, pad[] = {1, 1};
  int x = fusec_jit_graph_input(g, xs, 4, FUSEC_JIT_F32);
  int w = fusec_jit_graph_input(g, ws, 4, FUSEC_JIT_F32);
  int y = fusec_jit_graph_conv2d(g, x, w, nullptr, pad, 2, nullptr, 1, -1);
  int r = fusec_jit_graph_unary(g, "relu", y);
  long long shape[4];
  ASSERT_EQ(fusec_jit_graph_shape(g, r, shape, 4), 4);
  EXPECT_EQ(shape[3], 4);
  fusec_jit_graph_output(g, r);
  std::string text = fusec_jit_graph_mlir(g);
  ASSERT_NE(text.find("fuse.conv2d"), std::string::npos) << text;
  EXPECT_EQ(fusec_jit_graph_binary(g, "add", x, w), -1);
  EXPECT_NE(std::string(fusec_jit_graph_error(g)).find("add"),
            std::string::npos);
  fusec_jit_graph_free(g);

  std::vector<double> xv(240, 1.0), wv(288, 0.5);
  fusec_jit_host_tensor in[] = {{xv.data(), xs, 4}, {wv.data(), ws, 4}};
  fusec_jit_evaluation *e =
      fusec_jit_evaluate(text.c_str(), "blk.mlir", nullptr, in, 2);
  ASSERT_STREQ(fusec_jit_evaluation_error(e), "");
  ASSERT_EQ(fusec_jit_evaluation_num_outputs(e), 1u);
  const long long *outShape = nullptr;
  size_t rank = 0;
  fusec_jit_dtype dtype = FUSEC_JIT_BF16;
  const double *out = fusec_jit_evaluation_output(e, 0, &outShape, &rank,
                                                  &dtype);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(rank, 4u);
  EXPECT_EQ(dtype, FUSEC_JIT_F32);
  // An interior pixel sees 3 x 3 x 8 ones times 0.5.
  EXPECT_EQ(out[(1 * 6 + 1) * 4], 36.0);
  EXPECT_EQ(fusec_jit_evaluation_output(e, 1, nullptr, nullptr, nullptr),
            nullptr);
  fusec_jit_evaluation_free(e);
  EXPECT_STREQ(fusec_jit_chip_for_device(9, 0), "sm_90a");
  EXPECT_EQ(fusec_jit_tolerance(FUSEC_JIT_F16, nullptr), 5e-3);
}

} // namespace

namespace {

/// The forward returns its arguments, %x twice: the backward sums %x's two
/// gradients (no gradient rule involved).
const char *kPairGraph =
    "func.func @f(%x: tensor<4xf32>, %y: tensor<3xf32>) -> (tensor<4xf32>, "
    "tensor<3xf32>, tensor<4xf32>) {\n"
    "  return %x, %y, %x : tensor<4xf32>, tensor<3xf32>, tensor<4xf32>\n"
    "}\n";

TEST_F(JIT, CompilesATrainingStepTheRuntimeAccepts) {
  options.train = true;
  jit::Result r = jit::compile(kPairGraph, options, "pair.mlir");
  ASSERT_TRUE(r.ok()) << r.error;
  runtime::TrainingPlan plans;
  runtime::Status status =
      runtime::parseTrainingArtifact(r.artifact, plans, "pair");
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(plans.forward.graph, "f_forward");
  EXPECT_EQ(plans.forward.training.numResults, 3);
  EXPECT_EQ(plans.backward.graph, "f_backward");
  EXPECT_EQ(plans.backward.kernels, std::vector<std::string>{"bwd_k0_add"});
  EXPECT_EQ(plans.backward.training.wrt, (std::vector<int64_t>{0, 1}));
  // Not the inference artifact of the same graph, in the cache either.
  options.train = false;
  jit::Result plain = jit::compile(kPairGraph, options, "pair.mlir");
  ASSERT_TRUE(plain.ok()) << plain.error;
  EXPECT_EQ(plain.source, jit::Source::Compiled);
  EXPECT_NE(plain.artifact, r.artifact);

  options.train = true;
  options.wrt = {7};
  r = jit::compile(kPairGraph, options, "pair.mlir");
  EXPECT_NE(r.error.find("pair.mlir:1:1: error: fusec-autodiff: argument #7 "
                         "does not exist; @f has 2"),
            std::string::npos)
      << r.error;
}

TEST_F(JIT, EvaluatesATrainingStepOnTheReference) {
  std::vector<jit::HostTensor> args = {{{4}, jit::DType::F32, {1, 2, 3, 4}},
                                       {{3}, jit::DType::F32, {5, 6, 7}}};
  std::vector<jit::HostTensor> grads = {
      {{4}, jit::DType::F32, {1, 1, 1, 1}},
      {{3}, jit::DType::F32, {2, 2, 2}},
      {{4}, jit::DType::F32, {0.5, 0.5, 0.5, 0.5}}};
  jit::TrainingEvaluation e = jit::evaluateTraining(kPairGraph, args, grads);
  ASSERT_TRUE(e.ok()) << e.error;
  ASSERT_EQ(e.outputs.size(), 3u);
  EXPECT_EQ(e.outputs[2].data, args[0].data);
  EXPECT_TRUE(e.saved.empty());
  EXPECT_EQ(e.wrt, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(e.gradResults, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(e.gradients.size(), 2u);
  EXPECT_EQ(e.gradients[0].data, (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
  EXPECT_EQ(e.gradients[1].data, (std::vector<double>{2, 2, 2}));

  e = jit::evaluateTraining(kPairGraph, args, grads, {1});
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.wrt, std::vector<int64_t>{1});
  ASSERT_EQ(e.gradients.size(), 1u);

  grads.pop_back();
  e = jit::evaluateTraining(kPairGraph, args, grads, {}, "", "pair.mlir");
  EXPECT_EQ(e.error, "pair.mlir: error: @f: the graph takes 3 result "
                     "gradients, 2 were given\n");

  // Through C.
  long long s4[] = {4}, s3[] = {3};
  fusec_jit_host_tensor in[] = {{args[0].data.data(), s4, 1},
                                {args[1].data.data(), s3, 1}};
  double ones4[] = {1, 1, 1, 1}, ones3[] = {1, 1, 1};
  fusec_jit_host_tensor g[] = {{ones4, s4, 1}, {ones3, s3, 1}, {ones4, s4, 1}};
  unsigned wrt[] = {0};
  fusec_jit_training_evaluation *c = fusec_jit_evaluate_training(
      kPairGraph, "pair.mlir", nullptr, in, 2, g, 3, wrt, 1);
  ASSERT_STREQ(fusec_jit_training_evaluation_error(c), "");
  EXPECT_EQ(fusec_jit_training_evaluation_count(c, FUSEC_JIT_TRAINING_RESULTS),
            3u);
  ASSERT_EQ(
      fusec_jit_training_evaluation_count(c, FUSEC_JIT_TRAINING_GRADIENTS), 1u);
  EXPECT_EQ(fusec_jit_training_evaluation_wrt(c, 0), 0);
  EXPECT_EQ(fusec_jit_training_evaluation_wrt(c, 1), -1);
  size_t rank = 0;
  const double *dx = fusec_jit_training_evaluation_tensor(
      c, FUSEC_JIT_TRAINING_GRADIENTS, 0, nullptr, &rank, nullptr);
  ASSERT_TRUE(dx);
  EXPECT_EQ(rank, 1u);
  EXPECT_EQ(std::vector<double>(dx, dx + 4), (std::vector<double>{2, 2, 2, 2}));
  fusec_jit_training_evaluation_free(c);

  // The C options compile a training step.
  fusec_jit_options o;
  fusec_jit_options_init(&o);
  std::string cacheDir = dir.string();
  o.cache_dir = cacheDir.c_str();
  o.tuning_db = "none";
  o.train = 1;
  o.wrt = wrt;
  o.num_wrt = 1;
  fusec_jit_result *r = fusec_jit_compile(kPairGraph, "pair.mlir", &o);
  ASSERT_TRUE(fusec_jit_ok(r)) << fusec_jit_error(r);
  runtime::TrainingPlan plans;
  runtime::Status status =
      runtime::parseTrainingArtifact(fusec_jit_artifact(r, nullptr), plans);
  EXPECT_TRUE(status) << status.message();
  EXPECT_EQ(plans.backward.training.wrt, std::vector<int64_t>{0});
  fusec_jit_result_free(r);
}

TEST_F(JIT, RunsATrainingStepOnTheGpu) {
  std::shared_ptr<runtime::Device> device;
  if (!runtime::Device::open(0, device))
    GTEST_SKIP() << "no CUDA device";
  options.train = true;
  options.arch = "sm_80";
  jit::Result r = jit::compile(kPairGraph, options, "pair.mlir");
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<jit::HostTensor> args = {{{4}, jit::DType::F32, {1, 2, 3, 4}},
                                       {{3}, jit::DType::F32, {5, 6, 7}}};
  std::vector<jit::HostTensor> grads = {
      {{4}, jit::DType::F32, {1, 1, 1, 1}},
      {{3}, jit::DType::F32, {2, 2, 2}},
      {{4}, jit::DType::F32, {0.5, 0.5, 0.5, 0.5}}};
  jit::TrainingEvaluation gpu = jit::runTraining(r.artifact, args, grads);
  ASSERT_TRUE(gpu.ok()) << gpu.error;
  jit::TrainingEvaluation ref = jit::evaluateTraining(kPairGraph, args, grads);
  ASSERT_TRUE(ref.ok()) << ref.error;
  ASSERT_EQ(gpu.outputs.size(), ref.outputs.size());
  for (size_t i = 0; i < ref.outputs.size(); ++i)
    EXPECT_EQ(gpu.outputs[i].data, ref.outputs[i].data) << "result " << i;
  ASSERT_EQ(gpu.gradients.size(), ref.gradients.size());
  for (size_t i = 0; i < ref.gradients.size(); ++i)
    EXPECT_EQ(gpu.gradients[i].data, ref.gradients[i].data) << "gradient " << i;
}

} // namespace
