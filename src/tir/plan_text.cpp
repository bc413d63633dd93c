#include "tir/plan_text.h"

#include <fmt/format.h>

#include <optional>

#include "tir/printer.h"

namespace tilefuse::tir {

PlanValue PlanValue::integer(int64_t v) {
  PlanValue p;
  p.kind = Kind::Int;
  p.i = v;
  return p;
}
PlanValue PlanValue::string(std::string v) {
  PlanValue p;
  p.kind = Kind::String;
  p.s = std::move(v);
  return p;
}
PlanValue PlanValue::word(std::string v) {
  PlanValue p;
  p.kind = Kind::Word;
  p.s = std::move(v);
  return p;
}
PlanValue PlanValue::expr(tir::Expr v) {
  PlanValue p;
  p.kind = Kind::Expr;
  p.e = std::move(v);
  return p;
}
PlanValue PlanValue::list(std::vector<PlanItem> v) {
  PlanValue p;
  p.kind = Kind::List;
  p.items = std::move(v);
  return p;
}
PlanValue PlanValue::clause(std::vector<PlanItem> v) {
  PlanValue p;
  p.kind = Kind::Clause;
  p.items = std::move(v);
  return p;
}

namespace {

// ---- building clauses --------------------------------------------------------

PlanItem word(std::string_view w) {
  return {"", PlanValue::word(std::string(w))};
}
PlanItem num(const char* key, int64_t v) {
  return {key, PlanValue::integer(v)};
}
PlanItem str(const char* key, std::string v) {
  return {key, PlanValue::string(std::move(v))};
}
template <class T>
PlanItem ints(const char* key, const std::vector<T>& v) {
  std::vector<PlanItem> items;
  for (T x : v) items.push_back({"", PlanValue::integer(static_cast<int64_t>(x))});
  return {key, PlanValue::list(std::move(items))};
}

// ---- reading clauses ---------------------------------------------------------

[[noreturn]] void bad(const std::string& what) {
  throw PlanTextError(what);
}

const PlanValue* find(const PlanClause& c, std::string_view key) {
  for (const PlanItem& it : c)
    if (it.key == key) return &it.value;
  return nullptr;
}
// The clause's kind: its first item, a word.
const std::string& kind_word(const PlanClause& c, const char* what) {
  if (c.empty() || !c[0].key.empty() || c[0].value.kind != PlanValue::Kind::Word)
    bad(std::string("a ") + what + " plan starts with its kind");
  return c[0].value.s;
}
int64_t get_int(const PlanClause& c, std::string_view key, std::optional<int64_t> dflt = {}) {
  const PlanValue* v = find(c, key);
  if (!v) {
    if (dflt) return *dflt;
    bad("missing `" + std::string(key) + "=`");
  }
  if (v->kind != PlanValue::Kind::Int) bad("`" + std::string(key) + "` takes an integer");
  return v->i;
}
std::string get_str(const PlanClause& c, std::string_view key) {
  const PlanValue* v = find(c, key);
  if (!v) return "";
  if (v->kind != PlanValue::Kind::String) bad("`" + std::string(key) + "` takes a string");
  return v->s;
}
Expr get_expr(const PlanClause& c, std::string_view key) {
  const PlanValue* v = find(c, key);
  if (!v) return Expr();
  if (v->kind != PlanValue::Kind::Expr) bad("`" + std::string(key) + "` takes {expression}");
  return v->e;
}
template <class T>
std::vector<T> get_ints(const PlanClause& c, std::string_view key) {
  std::vector<T> out;
  const PlanValue* v = find(c, key);
  if (!v) return out;
  if (v->kind != PlanValue::Kind::List) bad("`" + std::string(key) + "` takes a list");
  for (const PlanItem& it : v->items) {
    if (it.value.kind != PlanValue::Kind::Int) bad("`" + std::string(key) + "` lists integers");
    out.push_back(static_cast<T>(it.value.i));
  }
  return out;
}
// Checks that every key is one of `keys` (and positional items are only
// the leading kind).
void only(const PlanClause& c, std::initializer_list<std::string_view> keys) {
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].key.empty()) bad("an unexpected positional item");
    bool ok = false;
    for (std::string_view k : keys) ok = ok || c[i].key == k;
    if (!ok) bad("unknown key `" + c[i].key + "`");
  }
}

template <class E, size_t N>
E enum_from(const std::string& w, const std::array<std::pair<E, std::string_view>, N>& names,
            const char* what) {
  for (const auto& [e, n] : names)
    if (n == w) return e;
  bad(std::string("unknown ") + what + " `" + w + "`");
}

#define TF_TIR_PAIR(name, text) {Enum::name, text},
template <class Enum>
struct Names;
#define TF_TIR_NAMES(Enum_, LIST, count)                                          \
  template <>                                                                     \
  struct Names<Enum_> {                                                           \
    using Enum = Enum_;                                                           \
    static constexpr std::array<std::pair<Enum, std::string_view>, count> kAll = { \
        {LIST(TF_TIR_PAIR)}};                                                     \
  };
TF_TIR_NAMES(CopyMechanism, TILEFUSE_FOR_EACH_COPY_MECHANISM, 6)
TF_TIR_NAMES(SharedLayout, TILEFUSE_FOR_EACH_SHARED_LAYOUT, 4)
TF_TIR_NAMES(MmaFamily, TILEFUSE_FOR_EACH_MMA_FAMILY, 4)
TF_TIR_NAMES(PipelineForm, TILEFUSE_FOR_EACH_PIPELINE_FORM, 5)
TF_TIR_NAMES(EpilogueForm, TILEFUSE_FOR_EACH_EPILOGUE_FORM, 4)
#undef TF_TIR_NAMES
#undef TF_TIR_PAIR

template <class E>
std::optional<E> try_enum(const std::string& w) {
  for (const auto& [e, n] : Names<E>::kAll)
    if (n == w) return e;
  return std::nullopt;
}

}  // namespace

// ---- copies ------------------------------------------------------------------

PlanClause to_clause(const CopyPlan& p) {
  PlanClause c{word(copy_mechanism_name(p.mechanism)), num("width", p.width)};
  if (p.vector_load.defined()) c.push_back({"vector_load", PlanValue::expr(p.vector_load)});
  if (p.register_slots > 0) c.push_back(num("slots", p.register_slots));
  if (p.next_tile) c.push_back(num("next_tile", 1));
  if (p.mechanism == CopyMechanism::Tma) {
    c.push_back(num("map", p.tensor_map));
    std::vector<PlanItem> boxes;
    for (const TmaBox& b : p.boxes) {
      std::vector<PlanItem> box;
      for (const Expr& e : b.coords) box.push_back({"", PlanValue::expr(e)});
      box.push_back(num("smem", b.smem_offset));
      boxes.push_back({"", PlanValue::clause(std::move(box))});
    }
    c.push_back({"boxes", PlanValue::list(std::move(boxes))});
    c.push_back(num("bytes", p.tma_bytes));
    if (p.row_gather) {
      c.push_back(num("rows", p.rows));
      c.push_back(num("row_pitch", p.row_pitch));
      if (p.row_mask.defined()) c.push_back({"row_mask", PlanValue::expr(p.row_mask)});
    }
  }
  if (p.cache_all) c.push_back(num("cache_all", 1));
  if (p.no_allocate) c.push_back(num("no_allocate", 1));
  if (p.l2_prefetch) c.push_back(num("l2_prefetch", p.l2_prefetch));
  if (p.word_loads) c.push_back(num("word_loads", 1));
  if (p.multicast) c.push_back(num("multicast", 1));
  if (p.hoisted) {
    std::vector<PlanItem> idx;
    for (const Expr& e : p.hoisted_indices) idx.push_back({"", PlanValue::expr(e)});
    std::vector<PlanItem> h{{"indices", PlanValue::list(std::move(idx))}, num("step", p.step)};
    if (p.hoisted_mask.defined()) h.push_back({"mask", PlanValue::expr(p.hoisted_mask)});
    if (p.iteration_mask.defined())
      h.push_back({"iteration_mask", PlanValue::expr(p.iteration_mask)});
    if (p.cache_by_repeats) h.push_back(num("l1_by_repeats", 1));
    c.push_back({"hoist", PlanValue::clause(std::move(h))});
  }
  if (!p.row_checks.empty()) {
    std::vector<PlanItem> checks;
    for (const Stmt& s : p.row_checks) {
      const CheckNode* k = s.as<CheckNode>();
      if (!k) bad("a row check that is not a check");
      std::vector<PlanItem> args;
      for (const Expr& e : k->args) args.push_back({"", PlanValue::expr(e)});
      checks.push_back({"", PlanValue::clause({{"cond", PlanValue::expr(k->cond)},
                                               num("code", k->code), str("msg", k->message),
                                               {"args", PlanValue::list(std::move(args))}})});
    }
    c.push_back({"row_checks", PlanValue::list(std::move(checks))});
  }
  if (!p.reason.empty()) c.push_back(str("reason", p.reason));
  return c;
}

CopyPlan copy_plan_from(const PlanClause& c) {
  only(c, {"width", "vector_load", "slots", "next_tile", "map", "boxes", "bytes", "rows",
           "row_pitch", "row_mask", "cache_all", "no_allocate", "l2_prefetch", "word_loads", "multicast", "hoist",
           "row_checks", "reason"});
  CopyPlan p;
  p.mechanism = enum_from(kind_word(c, "copy"), Names<CopyMechanism>::kAll, "copy mechanism");
  p.width = get_int(c, "width");
  p.vector_load = get_expr(c, "vector_load");
  p.register_slots = static_cast<int>(get_int(c, "slots", 0));
  p.next_tile = get_int(c, "next_tile", 0) != 0;
  p.reason = get_str(c, "reason");
  p.cache_all = get_int(c, "cache_all", 0) != 0;
  p.no_allocate = get_int(c, "no_allocate", 0) != 0;
  p.l2_prefetch = static_cast<int>(get_int(c, "l2_prefetch", 0));
  p.word_loads = get_int(c, "word_loads", 0) != 0;
  p.multicast = get_int(c, "multicast", 0) != 0;
  if (const PlanValue* h = find(c, "hoist")) {
    if (h->kind != PlanValue::Kind::Clause) bad("`hoist=(indices=[...], step=N, ...)`");
    const PlanClause& hc = h->items;
    p.hoisted = true;
    p.step = get_int(hc, "step");
    p.hoisted_mask = get_expr(hc, "mask");
    p.iteration_mask = get_expr(hc, "iteration_mask");
    p.cache_by_repeats = get_int(hc, "l1_by_repeats", 0) != 0;
    const PlanValue* idx = find(hc, "indices");
    if (!idx || idx->kind != PlanValue::Kind::List) bad("`hoist` needs `indices=[{...}, ...]`");
    for (const PlanItem& it : idx->items) {
      if (it.value.kind != PlanValue::Kind::Expr) bad("hoisted indices are {expressions}");
      p.hoisted_indices.push_back(it.value.e);
    }
  }
  if (const PlanValue* rc = find(c, "row_checks")) {
    if (rc->kind != PlanValue::Kind::List) bad("`row_checks=[(cond={...}, ...), ...]`");
    for (const PlanItem& it : rc->items) {
      if (it.value.kind != PlanValue::Kind::Clause)
        bad("a row check is `(cond={...}, code=N, msg=\"...\", args=[{...}, ...])`");
      const PlanClause& k = it.value.items;
      for (const PlanItem& x : k)
        if (x.key != "cond" && x.key != "code" && x.key != "msg" && x.key != "args")
          bad("a row check has `cond`, `code`, `msg` and `args`");
      const Expr cond = get_expr(k, "cond");
      if (!cond.defined()) bad("a row check needs `cond={...}`");
      std::vector<Expr> args;
      if (const PlanValue* a = find(k, "args")) {
        if (a->kind != PlanValue::Kind::List) bad("a row check's `args` is a list");
        for (const PlanItem& e : a->items) {
          if (e.value.kind != PlanValue::Kind::Expr) bad("a row check's args are {expressions}");
          args.push_back(e.value.e);
        }
      }
      p.row_checks.push_back(CheckNode::make(cond, get_int(k, "code"), get_str(k, "msg"), args));
    }
  }
  if (p.mechanism == CopyMechanism::Tma) {
    p.tensor_map = static_cast<int>(get_int(c, "map"));
    p.tma_bytes = get_int(c, "bytes");
    const PlanValue* boxes = find(c, "boxes");
    if (!boxes || boxes->kind != PlanValue::Kind::List) bad("a tma plan needs `boxes=[...]`");
    for (const PlanItem& it : boxes->items) {
      if (it.value.kind != PlanValue::Kind::Clause) bad("a box is `({coord}, ..., smem=N)`");
      TmaBox b;
      for (const PlanItem& x : it.value.items) {
        if (x.key == "smem" && x.value.kind == PlanValue::Kind::Int) {
          b.smem_offset = x.value.i;
        } else if (x.key.empty() && x.value.kind == PlanValue::Kind::Expr) {
          b.coords.push_back(x.value.e);
        } else {
          bad("a box is `({coord}, ..., smem=N)`");
        }
      }
      p.boxes.push_back(std::move(b));
    }
    p.rows = get_int(c, "rows", 0);
    p.row_gather = p.rows > 0;
    p.row_pitch = get_int(c, "row_pitch", 0);
    p.row_mask = get_expr(c, "row_mask");
  }
  return p;
}

// ---- buffers -------------------------------------------------------------------

PlanClause to_clause(const BufferPlan& p) {
  if (const auto* s = std::get_if<SharedPlan>(&p)) {
    PlanClause c{word(shared_layout_name(s->layout)), num("stages", s->stages)};
    if (s->offset >= 0) c.push_back(num("offset", s->offset));
    if (s->bytes > 0) c.push_back(num("bytes", s->bytes));
    return c;
  }
  if (const auto* f = std::get_if<FragmentPlan>(&p)) {
    PlanClause c{word(mma_family_name(f->family)),
                 {"operand", PlanValue::word(std::string(dtype_name(f->operand)))},
                 ints("block", std::vector<int>{f->block_m, f->block_n, f->block_k})};
    if (f->family == MmaFamily::SimtFma)
      c.push_back(num("threads", f->threads));
    else
      c.push_back(ints("warps", std::vector<int>{f->warps_m, f->warps_n}));
    if (f->chains > 1) c.push_back(num("chains", f->chains));
    return c;
  }
  return {};
}

BufferPlan buffer_plan_from(const PlanClause& c, MemScope scope) {
  const std::string& k = kind_word(c, "buffer");
  if (scope == MemScope::Shared) {
    only(c, {"stages", "offset", "bytes"});
    SharedPlan s;
    s.layout = enum_from(k, Names<SharedLayout>::kAll, "shared layout");
    s.stages = static_cast<int>(get_int(c, "stages"));
    s.offset = get_int(c, "offset", -1);
    s.bytes = get_int(c, "bytes", 0);
    return s;
  }
  if (scope == MemScope::Fragment) {
    only(c, {"operand", "block", "warps", "threads", "chains"});
    FragmentPlan f;
    f.family = enum_from(k, Names<MmaFamily>::kAll, "MMA family");
    const PlanValue* op = find(c, "operand");
    if (!op || op->kind != PlanValue::Kind::Word || !dtype_from_text(op->s))
      bad("a fragment plan needs `operand=DTYPE`");
    f.operand = *dtype_from_text(op->s);
    std::vector<int> block = get_ints<int>(c, "block"), warps = get_ints<int>(c, "warps");
    if (block.size() != 3) bad("`block=[BLOCK_M, BLOCK_N, BLOCK_K]`");
    f.block_m = block[0], f.block_n = block[1], f.block_k = block[2];
    if (!warps.empty()) {
      if (warps.size() != 2) bad("`warps=[M, N]`");
      f.warps_m = warps[0], f.warps_n = warps[1];
    }
    f.threads = static_cast<int>(get_int(c, "threads", 0));
    f.chains = static_cast<int>(get_int(c, "chains", 1));
    return f;
  }
  bad("only shared and fragment buffers have a plan");
}

// ---- loops -----------------------------------------------------------------------

PlanClause to_clause(const LoopPlan& p) {
  if (const auto* q = std::get_if<PipelinePlan>(&p)) {
    PlanClause c{word(pipeline_form_name(q->form)), num("stages", q->stages),
                 num("issue_ahead", q->issue_ahead)};
    if (q->wgmma_in_flight > 0) c.push_back(num("wgmma_in_flight", q->wgmma_in_flight));
    if (q->form == PipelineForm::WarpSpecialized) {
      c.push_back(num("producer_threads", q->producer_threads));
      c.push_back(num("consumer_threads", q->consumer_threads));
      if (q->producer_registers > 0)
        c.push_back(ints("registers",
                         std::vector<int>{q->producer_registers, q->consumer_registers}));
    }
    if (q->setup_at_entry) c.push_back(num("setup_at_entry", 1));
    if (q->affine_lead > 0) c.push_back(num("affine_lead", q->affine_lead));
    if (!q->barrier_after) c.push_back(num("barrier_after", 0));
    if (q->single_issuer) c.push_back(num("single_issuer", 1));
    if (!q->consumer_fence) c.push_back(num("consumer_fence", 0));
    if (q->register_a_ahead) c.push_back(num("register_a", q->register_a_ahead));
    if (q->split_tail) c.push_back(num("split_tail", q->split_tail));
    if (q->mbarrier_offset >= 0) c.push_back(num("mbarriers", q->mbarrier_offset));
    if (!q->why.empty()) c.push_back(str("why", q->why));
    return c;
  }
  if (const auto* e = std::get_if<EpiloguePlan>(&p)) {
    PlanClause c{word(epilogue_form_name(e->form))};
    if (e->pitch > 0) c.push_back(num("pitch", e->pitch));
    if (e->stmatrix) c.push_back(num("stmatrix", 1));
    if (e->contiguous_chunks) c.push_back(num("contiguous_chunks", 1));
    if (e->chunk_mask_varies) c.push_back(num("chunk_mask_varies", 1));
    if (e->pair_cast) c.push_back(num("pair_cast", 1));
    if (e->offset > 0) c.push_back(num("offset", e->offset));
    if (e->team_stride > 0) c.push_back(num("team_stride", e->team_stride));
    if (e->tma_store >= 0) c.push_back(num("tma_store", e->tma_store));
    if (e->per_warp) c.push_back(num("per_warp", 1));
    if (e->slab_buffers > 0) c.push_back(num("slab_buffers", e->slab_buffers));
    if (!e->why.empty()) c.push_back(str("why", e->why));
    return c;
  }
  return {};
}

LoopPlan loop_plan_from(const PlanClause& c) {
  const std::string& k = kind_word(c, "loop");
  if (auto form = try_enum<PipelineForm>(k)) {
    only(c, {"stages", "issue_ahead", "wgmma_in_flight", "producer_threads", "consumer_threads",
             "registers", "setup_at_entry", "affine_lead", "barrier_after", "single_issuer",
             "consumer_fence", "register_a", "split_tail", "mbarriers", "why"});
    PipelinePlan q;
    q.form = *form;
    q.stages = static_cast<int>(get_int(c, "stages"));
    q.issue_ahead = static_cast<int>(get_int(c, "issue_ahead"));
    q.wgmma_in_flight = static_cast<int>(get_int(c, "wgmma_in_flight", 0));
    q.producer_threads = static_cast<int>(get_int(c, "producer_threads", 0));
    q.consumer_threads = static_cast<int>(get_int(c, "consumer_threads", 0));
    q.mbarrier_offset = get_int(c, "mbarriers", -1);
    q.setup_at_entry = get_int(c, "setup_at_entry", 0) != 0;
    q.affine_lead = static_cast<int>(get_int(c, "affine_lead", 0));
    q.barrier_after = get_int(c, "barrier_after", 1) != 0;
    q.single_issuer = get_int(c, "single_issuer", 0) != 0;
    q.consumer_fence = get_int(c, "consumer_fence", 1) != 0;
    q.register_a_ahead = static_cast<int>(get_int(c, "register_a", 0));
    q.split_tail = static_cast<int>(get_int(c, "split_tail", 0));
    const std::vector<int> regs = get_ints<int>(c, "registers");
    if (!regs.empty()) {
      if (regs.size() != 2) bad("`registers=[PRODUCER, CONSUMER]`");
      q.producer_registers = regs[0], q.consumer_registers = regs[1];
    }
    q.why = get_str(c, "why");
    return q;
  }
  if (auto form = try_enum<EpilogueForm>(k)) {
    only(c, {"pitch", "stmatrix", "contiguous_chunks", "chunk_mask_varies", "pair_cast", "offset",
             "team_stride", "tma_store", "per_warp", "slab_buffers", "why"});
    EpiloguePlan e;
    e.form = *form;
    e.pitch = get_int(c, "pitch", 0);
    e.stmatrix = get_int(c, "stmatrix", 0) != 0;
    e.contiguous_chunks = get_int(c, "contiguous_chunks", 0) != 0;
    e.chunk_mask_varies = get_int(c, "chunk_mask_varies", 0) != 0;
    e.pair_cast = get_int(c, "pair_cast", 0) != 0;
    e.offset = get_int(c, "offset", 0);
    e.team_stride = get_int(c, "team_stride", 0);
    e.tma_store = static_cast<int>(get_int(c, "tma_store", -1));
    e.per_warp = get_int(c, "per_warp", 0) != 0;
    e.slab_buffers = static_cast<int>(get_int(c, "slab_buffers", 0));
    e.why = get_str(c, "why");
    return e;
  }
  bad("unknown loop plan `" + k + "`");
}

// ---- the kernel ----------------------------------------------------------------------

PlanClause to_clause(const LaunchPlan& p) {
  PlanClause c{num("threads", p.num_threads)};
  if (p.consumer_threads > 0) c.push_back(num("consumer_threads", p.consumer_threads));
  c.push_back(num("shared_bytes", p.dynamic_shared_bytes));
  c.push_back(num("shared_align", p.shared_align));
  if (p.async_barriers) c.push_back(num("async_barriers", 1));
  if (p.persistent) c.push_back(num("persistent", 1));
  if (p.consumer_teams > 1) c.push_back(num("consumer_teams", p.consumer_teams));
  if (p.stream_k_units > 0) {
    c.push_back(num("stream_k_units", p.stream_k_units));
    c.push_back(num("stream_k_dp_tiles", p.stream_k_dp_tiles));
    c.push_back(num("stream_k_pieces", p.stream_k_pieces));
  }
  if (p.ring_fold_at != 0) c.push_back(num("ring_fold_at", p.ring_fold_at));
  if (p.cluster_size > 1) c.push_back(num("cluster", p.cluster_size));
  if (p.workspace_fragment_order >= 0)
    c.push_back(num("workspace_fragment_order", p.workspace_fragment_order));
  if (p.workspace_vector != 1) c.push_back(num("workspace_vector", p.workspace_vector));
  if (p.split_k_cluster) c.push_back(num("split_k_cluster", 1));
  if (p.block_timeline()) c.push_back(num("timeline_slot", p.timeline_slot));
  if (!p.tensor_maps.empty()) {
    std::vector<PlanItem> maps;
    for (const TensorMapPlan& m : p.tensor_maps)
      maps.push_back({"", PlanValue::clause({num("param", m.param), num("elem", m.elem_bytes),
                                             ints("dims", m.dims), ints("strides", m.strides),
                                             ints("box", m.box), num("swizzle", m.swizzle_bytes)})});
    c.push_back({"tensor_maps", PlanValue::list(std::move(maps))});
  }
  if (!p.notes.empty()) {
    std::vector<PlanItem> notes;
    for (const std::string& n : p.notes) notes.push_back({"", PlanValue::string(n)});
    c.push_back({"notes", PlanValue::list(std::move(notes))});
  }
  return c;
}

LaunchPlan launch_plan_from(const PlanClause& c) {
  for (const PlanItem& it : c) {
    if (it.key.empty()) bad("a kernel plan has only `key=value` items");
    static const char* const kKeys[] = {"threads",         "consumer_threads",
                                        "shared_bytes",    "shared_align",
                                        "async_barriers",  "persistent",
                                        "cluster",         "tensor_maps",
                                        "notes",           "workspace_fragment_order",
                                        "consumer_teams",  "timeline_slot",
                                        "split_k_cluster", "workspace_vector",
                                        "stream_k_units",  "stream_k_dp_tiles",
                                        "stream_k_pieces", "ring_fold_at"};
    bool ok = false;
    for (const char* k : kKeys) ok = ok || it.key == k;
    if (!ok) bad("unknown key `" + it.key + "`");
  }
  LaunchPlan p;
  p.defined = true;
  p.num_threads = static_cast<int>(get_int(c, "threads"));
  p.consumer_threads = static_cast<int>(get_int(c, "consumer_threads", 0));
  p.dynamic_shared_bytes = get_int(c, "shared_bytes");
  p.shared_align = static_cast<int>(get_int(c, "shared_align", 128));
  p.async_barriers = get_int(c, "async_barriers", 0) != 0;
  p.persistent = get_int(c, "persistent", 0) != 0;
  p.consumer_teams = static_cast<int>(get_int(c, "consumer_teams", 1));
  p.stream_k_units = get_int(c, "stream_k_units", 0);
  p.stream_k_dp_tiles = get_int(c, "stream_k_dp_tiles", 0);
  p.stream_k_pieces = get_int(c, "stream_k_pieces", 0);
  p.ring_fold_at = get_int(c, "ring_fold_at", 0);
  p.cluster_size = static_cast<int>(get_int(c, "cluster", 1));
  p.workspace_fragment_order = static_cast<int>(get_int(c, "workspace_fragment_order", -1));
  p.workspace_vector = static_cast<int>(get_int(c, "workspace_vector", 1));
  p.timeline_slot = get_int(c, "timeline_slot", -1);
  if (p.timeline_slot != -1 &&
      (p.timeline_slot < 0 || p.timeline_slot % 8 != 0 ||
       p.dynamic_shared_bytes < LaunchPlan::kTimelineSlotBytes ||
       p.timeline_slot > p.dynamic_shared_bytes - LaunchPlan::kTimelineSlotBytes))
    bad("`timeline_slot` is -1 or the 8-byte-aligned offset of its " +
        std::to_string(LaunchPlan::kTimelineSlotBytes) + " bytes within `shared_bytes`");
  p.split_k_cluster = get_int(c, "split_k_cluster", 0) != 0;
  if (const PlanValue* maps = find(c, "tensor_maps")) {
    if (maps->kind != PlanValue::Kind::List) bad("`tensor_maps=[(...), ...]`");
    for (const PlanItem& it : maps->items) {
      if (it.value.kind != PlanValue::Kind::Clause) bad("a tensor map is `(param=N, ...)`");
      const PlanClause& m = it.value.items;
      TensorMapPlan t;
      t.param = static_cast<int>(get_int(m, "param"));
      t.elem_bytes = static_cast<int>(get_int(m, "elem"));
      t.dims = get_ints<int64_t>(m, "dims");
      t.strides = get_ints<int64_t>(m, "strides");
      t.box = get_ints<int>(m, "box");
      t.swizzle_bytes = static_cast<int>(get_int(m, "swizzle", 0));
      p.tensor_maps.push_back(std::move(t));
    }
  }
  if (const PlanValue* notes = find(c, "notes")) {
    if (notes->kind != PlanValue::Kind::List) bad("`notes=[\"...\", ...]`");
    for (const PlanItem& it : notes->items) {
      if (it.value.kind != PlanValue::Kind::String) bad("notes are strings");
      p.notes.push_back(it.value.s);
    }
  }
  return p;
}

// ---- printing ------------------------------------------------------------------------

namespace {

void print_value(std::string& out, const PlanValue& v,
                 const std::function<std::string(const Expr&)>& expr);

void print_items(std::string& out, const std::vector<PlanItem>& items,
                 const std::function<std::string(const Expr&)>& expr) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    if (!items[i].key.empty()) out += items[i].key + "=";
    print_value(out, items[i].value, expr);
  }
}

void print_value(std::string& out, const PlanValue& v,
                 const std::function<std::string(const Expr&)>& expr) {
  switch (v.kind) {
    case PlanValue::Kind::Int:
      out += std::to_string(v.i);
      return;
    case PlanValue::Kind::Float:
      out += format_float(v.f, DType::F64);
      return;
    case PlanValue::Kind::String: {
      out += '"';
      for (char ch : v.s) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (ch == '\n') {
          out += "\\n";
          continue;
        }
        out += ch;
      }
      out += '"';
      return;
    }
    case PlanValue::Kind::Word:
      out += v.s;
      return;
    case PlanValue::Kind::Expr:
      out += "{" + expr(v.e) + "}";
      return;
    case PlanValue::Kind::List:
      out += "[";
      print_items(out, v.items, expr);
      out += "]";
      return;
    case PlanValue::Kind::Clause:
      out += "(";
      print_items(out, v.items, expr);
      out += ")";
      return;
  }
}

}  // namespace

std::string print_clause(const PlanClause& c,
                         const std::function<std::string(const Expr&)>& expr) {
  std::string out = "plan(";
  print_items(out, c, expr);
  return out + ")";
}

}  // namespace tilefuse::tir
