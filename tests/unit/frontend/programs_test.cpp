// The shared example programs and whole-program structure: imports,
// comments, blank lines, indentation, multiple returns, load_program.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include "frontend/frontend.h"
#include "frontend_test_util.h"

namespace tilefuse::testing {
namespace {

namespace fs = std::filesystem;

// The shared programs as the repository holds them (a fresh clone has no
// ../shared): ../shared/cases is copied to tests/cases, ../shared/bench to
// bench/programs. "cases/x.tfs" and "bench/x.tfs" name them as the shared
// set does.
fs::path shared_program(const std::string& name) {
  const fs::path root(TILEFUSE_SOURCE_DIR);
  if (name.rfind("cases/", 0) == 0) return root / "tests" / name;
  return root / "bench" / "programs" / name.substr(std::string("bench/").size());
}

std::vector<fs::path> shared_programs() {
  std::vector<fs::path> out;
  for (const fs::path dir :
       {shared_program("cases/x").parent_path(), shared_program("bench/x").parent_path()}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".tfs") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The copies are part of the repository: missing ones are a failure, never
// a skip.
TEST(SharedPrograms, EveryProgramParses) {
  std::vector<fs::path> programs = shared_programs();
  ASSERT_GE(programs.size(), 10u) << "the shared programs are missing from tests/cases and "
                                     "bench/programs";
  for (const fs::path& path : programs) {
    SCOPED_TRACE(path.string());
    try {
      Program p = load_program(path.string());
      EXPECT_EQ(p.file, path.string());
      EXPECT_FALSE(p.name.empty());
      EXPECT_GE(p.graph.parameters().size(), 2u);
      EXPECT_EQ(p.graph.outputs().size(), 1u);
    } catch (const UserError& e) {
      ADD_FAILURE() << format_diagnostic(path.string(), "", e);
    }
  }
}

struct Expected {
  const char* file;
  const char* name;
  DType dtype;
  Shape shape;
};

TEST(SharedPrograms, OutputTypes) {
  const Expected expected[] = {
      {"cases/seed_gather_mm_f16.tfs", "gather_mm", DType::F16, {2048, 2048}},
      {"cases/batched_gather.tfs", "bgather", DType::F16, {4, 96, 80}},
      {"cases/dequant_int8_prologue.tfs", "w8a16", DType::BF16, {256, 512}},
      {"cases/gather_b_rows_along_k.tfs", "along_k", DType::F16, {256, 256}},
      {"cases/gather_mm_bf16_repeats.tfs", "moe_rows", DType::BF16, {3000, 768}},
      {"cases/gather_negative_index.tfs", "neg", DType::F32, {50, 80}},
      {"cases/gather_odd_k_f16.tfs", "odd_k", DType::F16, {300, 129}},
      {"cases/pointwise_both_operands.tfs", "scaled", DType::F32, {200, 64}},
      {"cases/upcast_prologue_epilogue.tfs", "mlp", DType::F32, {333, 1000}},
      {"bench/moe_up_proj_bf16.tfs", "moe_up", DType::BF16, {8192, 14336}},
      {"bench/decode_m32_f16.tfs", "decode_m32", DType::F16, {32, 11008}},
      {"bench/fewtiles_f16.tfs", "fewtiles", DType::F16, {512, 1024}},
      {"bench/pointcloud_gather_f16.tfs", "pointcloud", DType::F16, {1048576, 128}},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.file);
    fs::path path = shared_program(e.file);
    ASSERT_TRUE(fs::exists(path)) << path;
    Program p = load_program(path.string());
    EXPECT_EQ(p.name, e.name);
    EXPECT_EQ(output(p).dtype, e.dtype);
    EXPECT_EQ(output(p).shape, e.shape);
  }
}

TEST(SharedPrograms, SeedIsGatherThenMatmul) {
  fs::path path = shared_program("cases/seed_gather_mm_f16.tfs");
  ASSERT_TRUE(fs::exists(path)) << path;
  Program p = load_program(path.string());
  const Node& mm = output(p);
  ASSERT_EQ(mm.kind, OpKind::Matmul);
  const Node& gather = p.graph.node(mm.inputs[0]);
  EXPECT_EQ(gather.kind, OpKind::Index);
  EXPECT_EQ(gather.dim, 0);
  EXPECT_EQ(p.graph.node(gather.inputs[0]).name, "x");
  EXPECT_EQ(p.graph.node(gather.inputs[1]).name, "index");
  EXPECT_EQ(p.graph.node(mm.inputs[1]).name, "y");
  // The matmul is located at its '@' (line 5 of the file, after 4 comment lines).
  EXPECT_EQ(mm.loc.line, 5);
  EXPECT_EQ(mm.loc.col, 21);
}

TEST(SharedPrograms, RangesAndBatchedGather) {
  fs::path path = shared_program("cases/batched_gather.tfs");
  ASSERT_TRUE(fs::exists(path)) << path;
  Program p = load_program(path.string());
  const Node& idx = p.graph.node(p.graph.parameters()[1]);
  ASSERT_TRUE(idx.range.has_value());
  EXPECT_EQ(idx.range->lo, 0);
  EXPECT_EQ(idx.range->hi, 128);
  auto gathers = nodes_of(p, OpKind::Index);
  ASSERT_EQ(gathers.size(), 1u);
  EXPECT_EQ(gathers[0]->dim, 1);  // x[:, idx] gathers dim 1
  EXPECT_EQ(gathers[0]->shape, shape({4, 96, 64}));
}

TEST(Program, ParametersInOrderWithTypes) {
  Program p = parse(
      "def f(a: f16[2, 3], b: torch.float32[3], c: i64[] , d: torch.bfloat16[1, 2, 3],\n"
      "      e: i32[5] in [-4, 4), g: bool[2], h: torch.half[1], k: torch.long[2],\n"
      "      m: float64[2], n: u8[1], o: i8[3] in [-128, 128), q: f8e4m3[16], r: f8e5m2[16]):\n"
      "    return a\n");
  const auto& params = p.graph.parameters();
  ASSERT_EQ(params.size(), 13u);
  const std::pair<const char*, DType> expected[] = {
      {"a", DType::F16},   {"b", DType::F32},  {"c", DType::I64}, {"d", DType::BF16},
      {"e", DType::I32},   {"g", DType::Bool}, {"h", DType::F16}, {"k", DType::I64},
      {"m", DType::F64},   {"n", DType::U8},   {"o", DType::I8},  {"q", DType::F8E4M3},
      {"r", DType::F8E5M2}};
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& n = p.graph.node(params[i]);
    EXPECT_EQ(n.kind, OpKind::Parameter);
    EXPECT_EQ(n.name, expected[i].first);
    EXPECT_EQ(n.dtype, expected[i].second) << n.name;
  }
  EXPECT_EQ(p.graph.node(params[2]).shape, Shape{});
  EXPECT_EQ(p.graph.node(params[3]).shape, shape({1, 2, 3}));
  const Node& e = p.graph.node(params[4]);
  ASSERT_TRUE(e.range);
  EXPECT_EQ(e.range->lo, -4);
  EXPECT_EQ(e.range->hi, 4);
  EXPECT_FALSE(p.graph.node(params[0]).range);
  EXPECT_EQ(p.graph.node(params[0]).loc.line, 1);
  EXPECT_EQ(p.graph.node(params[0]).loc.col, 7);
}

TEST(Program, ImportsCommentsBlankLinesAndContinuations) {
  Program p = parse(
      "# leading comment\n"
      "import torch\n"
      "import torch.nn.functional as F\n"
      "from torch import nn\n"
      "\n"
      "@torch.compile(mode='max-autotune')\n"
      "def mlp(x: f16[8, 16],   # the activations\n"
      "        w: f16[16, 4],\n"
      "        b: f16[4]) -> torch.Tensor:\n"
      "    \"\"\"A docstring,\n"
      "    on two lines.\"\"\"\n"
      "\n"
      "    # a comment line, then a blank one\n"
      "\n"
      "    h = (x @\n"
      "         w) + \\\n"
      "        b\n"
      "    h = nn.functional.relu(h)   # rebinding a name\n"
      "    return F.gelu(h,\n"
      "                  approximate='none')\n"
      "# trailing comment\n");
  EXPECT_EQ(p.name, "mlp");
  EXPECT_EQ(output(p).kind, OpKind::Unary);
  EXPECT_EQ(output(p).unary, UnaryOp::Gelu);
  EXPECT_EQ(output(p).shape, shape({8, 4}));
  EXPECT_EQ(output(p).loc.line, 19);
  EXPECT_EQ(output(p).loc.col, 12);  // "F.gelu"
  EXPECT_EQ(output(p).loc.length, 6);
  const Node& relu = p.graph.node(output(p).inputs[0]);
  EXPECT_EQ(relu.unary, UnaryOp::Relu);
  EXPECT_EQ(relu.name, "h");
  const Node& add = p.graph.node(relu.inputs[0]);
  EXPECT_EQ(add.kind, OpKind::Binary);
  EXPECT_EQ(add.binary, BinaryOp::Add);
  EXPECT_EQ(add.name, "h");
  EXPECT_EQ(add.loc.line, 16);  // the '+' after the continued line
  EXPECT_EQ(add.loc.col, 13);
}

TEST(Program, CrlfTabsSemicolonsAndOneLineDef) {
  Program p1 = parse("def f(x: f32[2]):\r\n\ty = x + 1\r\n\treturn y * 2\r\n");
  EXPECT_EQ(output(p1).binary, BinaryOp::Mul);
  EXPECT_EQ(output(p1).loc.line, 3);
  EXPECT_EQ(output(p1).loc.col, 11);

  Program p2 = parse("def f(x: f32[2]): return x");
  EXPECT_EQ(p2.graph.outputs()[0], p2.graph.parameters()[0]);

  Program p3 = parse("def f(x: f32[2]): y = -x; return y;\n");
  EXPECT_EQ(output(p3).unary, UnaryOp::Neg);

  Program p4 = parse("def f(x: f32[2]):\n    y = x; z = y + y\n    return z\n\n\n");
  EXPECT_EQ(output(p4).binary, BinaryOp::Add);
}

TEST(Program, MultipleReturnsInOrder) {
  Program p = parse(
      "def f(x: f32[4, 4], y: f32[4, 4]):\n"
      "    a = x @ y\n"
      "    return a, x.relu(), a  # the same value twice\n");
  ASSERT_EQ(p.graph.outputs().size(), 3u);
  EXPECT_EQ(output(p, 0).kind, OpKind::Matmul);
  EXPECT_EQ(output(p, 1).unary, UnaryOp::Relu);
  EXPECT_EQ(p.graph.outputs()[0], p.graph.outputs()[2]);

  Program t = parse("def f(x: f32[4]):\n    return (x, -x)\n");
  EXPECT_EQ(t.graph.outputs().size(), 2u);
  Program trailing = parse("def f(x: f32[4]):\n    return x,\n");
  EXPECT_EQ(trailing.graph.outputs().size(), 1u);
}

TEST(Program, NamesAreRecordedOnValues) {
  Program p = parse(
      "def f(x: f32[4, 4]):\n"
      "    h = x * 2\n"
      "    g = h\n"      // an alias keeps the first name
      "    h = h + 1\n"  // rebinding makes a new value
      "    y = x\n"      // a parameter keeps its own name
      "    return g, h, y\n");
  EXPECT_EQ(output(p, 0).name, "h");
  EXPECT_EQ(output(p, 0).binary, BinaryOp::Mul);
  EXPECT_EQ(output(p, 1).name, "h");
  EXPECT_EQ(output(p, 1).binary, BinaryOp::Add);
  EXPECT_EQ(output(p, 2).name, "x");
}

TEST(Program, AugmentedAssignment) {
  Program p = parse(
      "def f(x: f32[4, 4], w: f32[4, 4]):\n"
      "    y = x\n"
      "    y += 1\n"
      "    y -= x\n"
      "    y *= 2.0\n"
      "    y /= 3\n"
      "    y @= w\n"
      "    return y\n");
  const Node& mm = output(p);
  ASSERT_EQ(mm.kind, OpKind::Matmul);
  EXPECT_EQ(mm.loc.line, 7);
  EXPECT_EQ(mm.loc.col, 7);
  EXPECT_EQ(mm.loc.length, 2);
  const Node& div = p.graph.node(mm.inputs[0]);
  EXPECT_EQ(div.binary, BinaryOp::Div);
  const Node& mul = p.graph.node(div.inputs[0]);
  EXPECT_EQ(mul.binary, BinaryOp::Mul);
  EXPECT_EQ(p.graph.node(mul.inputs[0]).binary, BinaryOp::Sub);
}

TEST(Program, LoadProgramReadsAFile) {
  fs::path path = fs::temp_directory_path() / "tilefuse_frontend_load_test.tfs";
  {
    std::ofstream out(path);
    out << "def g(x: f32[3]):\n    return x.exp()\n";
  }
  Program p = load_program(path.string());
  EXPECT_EQ(p.file, path.string());
  EXPECT_EQ(p.name, "g");
  EXPECT_EQ(output(p).unary, UnaryOp::Exp);
  fs::remove(path);
}

TEST(Program, LoadProgramNamesAnUnreadablePath) {
  try {
    load_program("/nonexistent/dir/prog.tfs");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/prog.tfs"), std::string::npos);
    EXPECT_FALSE(e.loc().valid());
  }
  try {
    load_program(fs::temp_directory_path().string());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos);
  }
}

// A FIFO that nothing writes to is refused at once (waiting could be
// forever); were it waited on, the test opens it for writing itself after 10
// s, so it fails rather than hangs.
TEST(Program, ReadProgramFileRefusesAFifoWithNoWriter) {
  const fs::path dir = fs::temp_directory_path() / ("tilefuse_fifo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string fifo = (dir / "p.tfs").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&]() -> std::string {
    try {
      read_program_file(fifo);
      return "no error";
    } catch (const UserError& e) {
      return e.what();
    }
  });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "read_program_file waited for a writer";
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  EXPECT_EQ(read.get(),
            "cannot read '" + fifo + "': not a regular file (a FIFO) and nothing is writing to it");
  fs::remove_all(dir);
}

// A pipe with a writer (`<(gen)`, `gen | tilefuse run /dev/stdin`) is read
// until the writer closes it, however long the writer takes to start.
TEST(Program, ReadProgramFileWaitsForAPipesWriter) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = "def g(x: f32[3]):\n    return x.exp()\n";
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(::write(fds[1], text.data(), 10), 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(::write(fds[1], text.data() + 10, text.size() - 10),
              static_cast<ssize_t>(text.size() - 10));
    ::close(fds[1]);
  });
  std::string got;
  try {
    got = read_program_file("/dev/fd/" + std::to_string(fds[0]));
  } catch (const UserError& e) {
    ADD_FAILURE() << e.what();
  }
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(got, text);
}

TEST(Program, SourceAndFileAreKept) {
  std::string src = "def f(x: f32[1]):\n    return x\n";
  Program p = parse_program(src, "dir/prog.tfs");
  EXPECT_EQ(p.source, src);
  EXPECT_EQ(p.file, "dir/prog.tfs");
}

}  // namespace
}  // namespace tilefuse::testing
