#include "driver/explain.h"

#include "driver/tune.h"
#include "core/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "codegen/cuda/structure.h"
#include "tir/functor.h"

namespace tilefuse::driver {
namespace {

using nlohmann::json;

// A value as people know it: a parameter by its name, any other value as
// `%ID`, with the .tfs variable it was bound to: `%4(h)`.
std::string value_name(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  if (n.kind == OpKind::Parameter) return n.name;
  return n.name.empty() ? fmt::format("%{}", v) : fmt::format("%{}({})", v, n.name);
}

std::string op_name(const Node& n) {
  switch (n.kind) {
    case OpKind::Unary:
      return std::string(unary_op_name(n.unary));
    case OpKind::Binary:
      return std::string(binary_op_name(n.binary));
    default:
      return std::string(op_kind_name(n.kind));
  }
}

// One fused op with its result dtype: `%3=index(x, index): f16`; a Python
// number operand prints as its value (it is a literal in the kernel, plan.h
// "Constants").
std::string op_text(const Graph& g, ValueId v) {
  const Node& n = g.node(v);
  std::string s = fmt::format("%{}={}(", v, op_name(n));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Node& in = g.node(n.inputs[i]);
    s += (i ? ", " : "") +
         (in.kind == OpKind::Scalar
              ? (is_floating(in.dtype) ? fmt::format("{}", in.scalar) : fmt::format("{}", in.iscalar))
              : value_name(g, n.inputs[i]));
  }
  return s + "): " + std::string(dtype_name(n.dtype));
}

json op_list(const Graph& g, const std::vector<ValueId>& nodes) {
  json a = json::array();
  for (ValueId v : nodes) a.push_back(op_text(g, v));
  return a;
}

json value_list(const Graph& g, const std::vector<ValueId>& values) {
  json a = json::array();
  for (ValueId v : values) a.push_back(value_name(g, v));
  return a;
}


// The template config; the specialization's promises (index_bits,
// <param>_divisibility) are the program's `specialization`, not config.
json config_of(const tir::Kernel& k) {
  json c = json::object();
  for (const auto& [key, value] : k.attrs) {
    if (key == "index_bits" || key.ends_with("_divisibility")) continue;
    std::visit([&, &key = key](const auto& v) { c[key] = v; }, value);
  }
  return c;
}

// The CUDA lowering as the emitter made it (codegen::CudaKernel): nothing
// is compiled or launched, so this works without a GPU or NVRTC; registers
// and occupancy come from `run --verbose` on the device.
json cuda_account(const codegen::CudaKernel& ck) {
  json c;
  c["entry"] = ck.name;
  c["threads"] = ck.num_threads;
  c["producer_threads"] = ck.producer_threads;
  c["blocks"] = ck.grid;
  c["dynamic_shared_bytes"] = ck.dynamic_shared_bytes;
  json shared = json::array();
  for (const codegen::CudaSharedBuffer& b : ck.shared)
    shared.push_back(
        {{"name", b.name}, {"layout", b.layout}, {"stages", b.stages}, {"bytes", b.bytes}});
  c["shared"] = shared;
  json gemms = json::array();
  for (const codegen::CudaGemm& gm : ck.gemms) {
    // A tensor-core tile has a warp (wgmma: warpgroup) grid; simt.fma none.
    const bool mma = gm.family != "simt.fma";
    gemms.push_back({{"family", gm.family},
                     {"dtype", gm.dtype},
                     {"block_m", gm.block_m},
                     {"block_n", gm.block_n},
                     {"block_k", gm.block_k},
                     {"warps_m", mma ? json(gm.warps_m) : json(nullptr)},
                     {"warps_n", mma ? json(gm.warps_n) : json(nullptr)},
                     {"accumulators_per_thread", gm.elems_per_thread}});
  }
  c["gemms"] = gemms;
  json copies = json::array();
  for (const codegen::CudaCopy& cp : ck.copies)
    copies.push_back({{"dst", cp.dst},
                      {"mode", cp.mode},
                      {"width_bytes", cp.width},
                      {"stages", cp.stages},
                      {"cache_all", cp.cache_all},
                      {"hoisted", cp.hoisted},
                      {"l1_by_repeats", cp.l1_by_repeats},
                      {"no_allocate", cp.no_allocate},
                      {"l2_prefetch", cp.l2_prefetch},
                      {"word_loads", cp.word_loads}});
  c["copies"] = copies;
  json loops = json::array();
  for (const codegen::CudaLoop& l : ck.loops) {
    json j = {{"loop", l.var},           {"form", l.form},
              {"stages", l.stages},      {"issue_ahead", l.issue_ahead},
              {"wgmma_in_flight", l.wgmma_in_flight}};
    if (l.form == "warp_specialized") {
      j["producer_threads"] = l.producer_threads;
      j["consumer_threads"] = l.consumer_threads;
      j["single_issuer"] = l.single_issuer;
      j["registers"] = l.producer_registers > 0
                           ? json{{"producer", l.producer_registers},
                                  {"consumer", l.consumer_registers}}
                           : json(nullptr);
    }
    if (!l.why.empty()) j["why"] = l.why;
    loops.push_back(j);
  }
  c["loops"] = loops;
  json epilogues = json::array();
  for (const codegen::CudaEpilogue& e : ck.epilogues) {
    json j = {{"form", e.form},
              {"stmatrix", e.stmatrix},
              {"contiguous_chunks", e.contiguous_chunks},
              {"pair_cast", e.pair_cast},
              {"per_warp", e.per_warp},
              {"tma_store", e.tma_store}};
    if (!e.why.empty()) j["why"] = e.why;
    epilogues.push_back(j);
  }
  c["epilogues"] = epilogues;
  c["notes"] = ck.notes;
  return c;
}

// The config keys a CUDA pass declined (PERSISTENT, PINGPONG, STREAM_K, REGISTER_A, SPLIT_TAIL asked
// for by the config, not in the kernel's launch plan; the notes say why).
json declined_of(const tir::Kernel& k) {
  json d = json::array();
  if (!k.launch.defined) return d;
  auto asked = [&](const char* key) {
    auto it = k.attrs.find(key);
    return it != k.attrs.end() && it->second == tir::AttrValue(int64_t{1});
  };
  if (asked("PERSISTENT") && !k.launch.persistent) d.push_back("PERSISTENT");
  if (asked("PINGPONG") && k.launch.consumer_teams < 2) d.push_back("PINGPONG");
  // (stream-K not persistent: its pieces run as blocks of their own)
  if (k.attrs.count("STREAM_K") && k.launch.stream_k_units == 0) d.push_back("STREAM_K");
  if (asked("REGISTER_A") && !codegen::has_register_a_loop(k.body)) d.push_back("REGISTER_A");
  if (k.attrs.count("SPLIT_TAIL") && !codegen::has_split_tail_loop(k.body))
    d.push_back("SPLIT_TAIL");
  return d;
}

json kernel_account(const Graph& g, const CompiledKernel& ck, const tir::Target& target) {
  const KernelStep& step = ck.lowered.step;
  json k;
  k["name"] = ck.kernel.name;
  k["kind"] = std::string(step_kind_name(step.kind));
  k["config"] = config_of(ck.kernel);
  k["declined"] = declined_of(ck.kernel);
  // A config whose shared memory the target cannot give a block: emit and
  // explain still show it; run, bench and the tuner reject it.
  if (ck.cuda) {
    k["shared_bytes"] = ck.cuda->dynamic_shared_bytes;
    const std::string excess =
        shared_memory_excess(ck.kernel.name, ck.cuda->dynamic_shared_bytes,
                             default_max_shared_bytes(target), target.name());
    if (!excess.empty())
      k["shared_memory_error"] = excess + " (opt-in): run, bench and the tuner reject this config";
  }
  if (ck.lowered.gemm_config && ck.lowered.gemm_config->split_k > 1)
    k["split_k"] = {
        {"factor", ck.lowered.gemm_config->split_k},
        {"why", split_k_reason(*ck.lowered.gemm_config, step, assumed_sm_count(target))}};
  if (ck.lowered.gemm_config && ck.lowered.gemm_config->stream_k > 0)
    k["stream_k"] = {
        {"blocks", ck.lowered.gemm_config->stream_k},
        {"persistent", ck.kernel.launch.stream_k_units > 0},
        {"why", stream_k_reason(*ck.lowered.gemm_config, step, assumed_sm_count(target))}};

  json fused;
  if (step.kind == StepKind::kGemm) {
    json prologue;
    prologue["A"] = op_list(g, step.a.nodes);
    prologue["B"] = op_list(g, step.b.nodes);
    if (step.bias) prologue["bias"] = op_list(g, step.bias->nodes);
    fused["prologue"] = prologue;
    fused["epilogue"] = op_list(g, step.epilogue);
  } else {
    fused["compute"] = op_list(g, step.pointwise);
  }
  k["fused"] = fused;

  json hoisted = json::array();
  for (const passes::LicmHoist& h : ck.licm.hoisted) {
    hoisted.push_back({{"kind", h.kind},
                       {"what", one_line(h.what)},
                       {"from_loop", h.from_loop},
                       {"to_level", "before loop " + h.to_loop},
                       {"levels", h.levels}});
  }
  k["hoisted"] = hoisted;

  json copies = json::array();
  for (const passes::CopyDecision& d : ck.copies.copies)
    copies.push_back({{"operand", d.operand.empty() ? json(nullptr) : json(d.operand)},
                      {"role", d.role.empty() ? json(nullptr) : json(d.role)},
                      {"buffer", d.dst},
                      {"mode", d.mode},
                      {"width_bytes", d.width},
                      {"reason", d.reason}});
  k["copies"] = copies;
  k["reads"] = value_list(g, step.reads);
  k["writes"] = value_list(g, {step.output});
  if (ck.cuda) {
    k["cuda"] = cuda_account(*ck.cuda);
    // Each copy as the CUDA kernel has it: the CUDA passes may replace one
    // (register_a: A's tile loaded into wgmma fragments) or drop it (index
    // tiles nothing reads any more); null when the kernel has no such copy.
    // (matched by destination, each CUDA copy once: the first one not yet
    // matched; the CUDA kernel may issue them in another order)
    std::vector<bool> used(ck.cuda->copies.size(), false);
    for (json& cp : k["copies"]) {
      json mode = nullptr;
      for (size_t j = 0; j < ck.cuda->copies.size(); ++j)
        if (!used[j] && ck.cuda->copies[j].dst == cp.at("buffer").get<std::string>()) {
          mode = ck.cuda->copies[j].mode;
          used[j] = true;
          break;
        }
      cp["cuda_mode"] = mode;
    }
  }
  return k;
}

// The CUDA section of one kernel: a summary line, then one line per gemm,
// shared buffer, copy and note.
void render_cuda(std::ostream& out, const json& c) {
  out << "  CUDA: " << c.at("threads").get<int64_t>() << " threads x "
      << c.at("blocks").get<int64_t>() << " blocks, " << c.at("dynamic_shared_bytes").get<int64_t>()
      << " B dynamic shared\n";
  for (const json& g : c.at("gemms")) {
    out << "    gemm " << g.at("family").get<std::string>() << " "
        << g.at("dtype").get<std::string>() << " " << g.at("block_m").get<int64_t>() << "x"
        << g.at("block_n").get<int64_t>() << "x" << g.at("block_k").get<int64_t>();
    if (!g.at("warps_m").is_null())
      out << (g.at("family").get<std::string>().rfind("wgmma", 0) == 0 ? " warpgroups " : " warps ")
          << g.at("warps_m").get<int64_t>() << "x" << g.at("warps_n").get<int64_t>();
    out << ", " << g.at("accumulators_per_thread").get<int64_t>() << " accumulators/thread\n";
  }
  for (const json& b : c.at("shared")) {
    const int64_t stages = b.at("stages").get<int64_t>();
    out << "    shared " << b.at("name").get<std::string>() << " "
        << b.at("layout").get<std::string>() << " " << stages << " stage"
        << (stages == 1 ? "" : "s") << ", " << b.at("bytes").get<int64_t>() << " B\n";
  }
  for (const json& cp : c.at("copies")) {
    const std::string mode = cp.at("mode").get<std::string>();
    const int64_t stages = cp.at("stages").get<int64_t>();
    out << "    copy " << cp.at("dst").get<std::string>() << " "
        << (mode == "fragment" ? std::string("fragment") +
                                     (cp.value("no_allocate", false) ? " (.L1::no_allocate)" : "") +
                                     (cp.value("l2_prefetch", 0) == 256 ? " (.L2::256B)" : "") +
                                     (cp.value("word_loads", false) ? " (32-bit loads)" : "")
            : mode != "cp_async"                 ? mode
            : cp.at("l1_by_repeats").get<bool>() ? "cp.async .ca or .cg by the tile's repeated rows"
            : cp.at("cache_all").get<bool>()     ? "cp.async.ca"
                                                 : "cp.async")
        << " " << cp.at("width_bytes").get<int64_t>() << " B";
    if (stages > 1) out << " (" << stages << " stages)";
    if (cp.at("hoisted").get<bool>()) out << ", addresses hoisted out of the loop";
    out << "\n";
  }
  for (const json& l : c.at("loops")) {
    out << "    loop " << l.at("loop").get<std::string>() << " " << l.at("form").get<std::string>()
        << ", " << l.at("stages").get<int64_t>() << " stages";
    if (l.contains("producer_threads"))
      out << ", producer " << l.at("producer_threads").get<int64_t>() << " threads"
          << (l.value("single_issuer", false) ? " (thread 0 issues every copy, the rest leave)" : "")
          << ", consumers " << l.at("consumer_threads").get<int64_t>();
    if (l.contains("registers") && !l.at("registers").is_null())
      out << ", registers " << l.at("registers").at("producer").get<int64_t>() << "/"
          << l.at("registers").at("consumer").get<int64_t>() << " (setmaxnreg)";
    if (l.contains("why")) out << " (" << l.at("why").get<std::string>() << ")";
    out << "\n";
  }
  for (const json& e : c.at("epilogues")) {
    out << "    epilogue " << e.at("form").get<std::string>()
        << (e.value("per_warp", false) ? " per warp" : "")
        << (e.at("stmatrix").get<bool>() ? " by stmatrix" : "")
        << (e.value("pair_cast", false) ? ", f32 pairs cast together" : "")
        << (e.value("contiguous_chunks", false) ? ", proved 16-byte chunks" : "")
        << (e.value("tma_store", false) ? ", stored by TMA" : "");
    if (e.contains("why")) out << " (" << e.at("why").get<std::string>() << ")";
    out << "\n";
  }
  for (const json& n : c.at("notes")) out << "    note: " << n.get<std::string>() << "\n";
}

}  // namespace

json explain(const CompiledProgram& program, const std::string& name) {
  json a;
  a["program"] = name;
  a["target"] = program.target.name();
  a["plan"] = std::string(plan_kind_name(program.plan.kind));
  json kernels = json::array();
  for (const CompiledKernel& ck : program.kernels)
    kernels.push_back(kernel_account(program.graph, ck, program.target));
  a["kernels"] = kernels;
  a["decisions"] = program.plan.decisions;
  // Symbolic dims: the kernels take them as arguments; what they are
  // specialized on.
  const Graph& g = program.graph;
  if (!g.symbols().empty()) {
    json symbols = json::array();
    for (const Symbol& s : g.symbols()) symbols.push_back(s.name);
    a["symbols"] = symbols;
    a["specialization"] = program.specialization.key(g);
  } else if (!program.specialization.params.empty()) {
    // A fixed program on strided or under-aligned inputs: their layouts
    // (constant or run-time strides) and alignments.
    a["specialization"] = program.specialization.key(g);
  }
  // Which plan and config the tuner chose on this target, and by how much
  // (from the tuning cache; explain itself tunes nothing).
  if (program.target.is_cuda())
    a["tuning"] = tuning_account(program.graph, program.target.name(), program.allow_tf32,
                                 program.specialization.size_hints);
  return a;
}

std::string render_explain_text(const json& a) {
  std::ostringstream out;
  const json& kernels = a.at("kernels");
  out << a.at("program").get<std::string>() << ": " << a.at("plan").get<std::string>()
      << " plan for " << a.at("target").get<std::string>() << ", " << kernels.size() << " kernel"
      << (kernels.size() == 1 ? "" : "s") << "\n";
  if (a.contains("symbols")) {
    out << "symbolic dims:";
    for (const json& s : a.at("symbols")) out << " " << s.get<std::string>();
    out << " (kernel arguments); specialized on: " << a.at("specialization").get<std::string>()
        << "\n";
  } else if (a.contains("specialization")) {
    out << "specialized on: " << a.at("specialization").get<std::string>() << "\n";
  }
  auto list = [](const json& items) {
    std::string s;
    for (const json& i : items) s += (s.empty() ? "" : ", ") + i.get<std::string>();
    return s.empty() ? std::string("-") : s;
  };
  for (const json& k : kernels) {
    out << "\nkernel " << k.at("name").get<std::string>() << " (" << k.at("kind").get<std::string>()
        << ")\n";
    std::string config;
    const json& declined = k.at("declined");
    for (const auto& [key, value] : k.at("config").items()) {
      config += (config.empty() ? "" : " ") + key + "=" +
                (value.is_string() ? value.get<std::string>() : value.dump());
      if (std::find(declined.begin(), declined.end(), key) != declined.end())
        config += " (declined: see the notes)";
    }
    out << "  config: " << (config.empty() ? "-" : config) << "\n";
    if (k.contains("shared_memory_error"))
      out << "  warning: " << k.at("shared_memory_error").get<std::string>() << "\n";
    if (k.contains("split_k")) out << "  " << k.at("split_k").at("why").get<std::string>() << "\n";
    if (k.contains("stream_k")) out << "  " << k.at("stream_k").at("why").get<std::string>() << "\n";
    out << "  reads: " << list(k.at("reads")) << "; writes: " << list(k.at("writes")) << "\n";
    const json& fused = k.at("fused");
    if (fused.contains("prologue")) {
      for (const auto& [operand, ops] : fused.at("prologue").items())
        out << "  prologue " << operand << ": " << list(ops) << "\n";
      out << "  epilogue: " << list(fused.at("epilogue")) << "\n";
    } else {
      out << "  compute: " << list(fused.at("compute")) << "\n";
    }
    const json& hoisted = k.at("hoisted");
    out << "  hoisted by licm:" << (hoisted.empty() ? " -" : "") << "\n";
    for (const json& h : hoisted)
      out << "    [" << h.at("kind").get<std::string>() << "] out of loop "
          << h.at("from_loop").get<std::string>() << ", " << h.at("to_level").get<std::string>()
          << ": " << h.at("what").get<std::string>() << "\n";
    const json& copies = k.at("copies");
    out << "  copies:" << (copies.empty() ? " -" : "") << "\n";
    for (const json& c : copies) {
      std::string who = c.at("operand").is_null() ? std::string()
                                                  : c.at("operand").get<std::string>() + " " +
                                                        c.at("role").get<std::string>() + ", ";
      out << "    " << who << c.at("buffer").get<std::string>() << ": "
          << c.at("mode").get<std::string>() << " " << c.at("width_bytes").get<int64_t>() << " B — "
          << c.at("reason").get<std::string>();
      if (auto cm = c.find("cuda_mode"); cm != c.end()) {
        if (cm->is_null())
          out << " [not in the CUDA kernel: its passes dropped it]";
        else if (*cm != c.at("mode"))
          out << " [the CUDA kernel: " << cm->get<std::string>() << "]";
      }
      out << "\n";
    }
    if (k.contains("cuda")) render_cuda(out, k.at("cuda"));
  }
  const json& decisions = a.at("decisions");
  out << "\ndecisions:" << (decisions.empty() ? " -" : "") << "\n";
  for (const json& d : decisions) out << "  " << d.get<std::string>() << "\n";
  if (a.contains("tuning")) out << "\n" << render_tuning_text(a.at("tuning")) << "\n";
  return out.str();
}

}  // namespace tilefuse::driver
