// Tile IR handles: counted pointers to immutable nodes (see ir.h, which
// defines the nodes and includes this). Split from ir.h so that the kernel
// plan (tir/plan.h) can hold expressions.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "core/dtype.h"

namespace tilefuse::tir {

enum class ExprKind : uint8_t;
enum class StmtKind : uint8_t;
enum class MemScope : uint8_t;

// ---- intrusive reference counting ----------------------------------------

struct IRNode {
  mutable std::atomic<int32_t> ref_count{0};
  IRNode() = default;
  IRNode(const IRNode&) = delete;
  IRNode& operator=(const IRNode&) = delete;
  virtual ~IRNode() = default;
};

// A counted pointer to an immutable node (T is const-qualified).
template <class T>
class NodePtr {
 public:
  NodePtr() = default;
  NodePtr(T* p) : p_(p) { inc(); }  // NOLINT: implicit by design
  NodePtr(const NodePtr& o) : p_(o.p_) { inc(); }
  NodePtr(NodePtr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  NodePtr& operator=(NodePtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~NodePtr() { dec(); }
  T* get() const { return p_; }

 private:
  void inc() {
    if (p_) p_->ref_count.fetch_add(1, std::memory_order_relaxed);
  }
  void dec() {
    if (p_ && p_->ref_count.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

// ---- handles ---------------------------------------------------------------

struct ExprNode;
struct StmtNode;
struct VarNode;
struct BufferNode;

class Expr {
 public:
  Expr() = default;
  Expr(const ExprNode* node) : ptr_(node) {}  // NOLINT: lets visit() return `op`
  // A C++ int is an i32 constant, so shapes read `{128, 32}` (as in Halide).
  Expr(int value);      // NOLINT
  Expr(bool) = delete;  // say make_bool(b): an int would be an i32
  bool defined() const { return ptr_.get() != nullptr; }
  const ExprNode* get() const { return ptr_.get(); }
  const ExprNode* operator->() const { return ptr_.get(); }
  bool same_as(const Expr& o) const { return ptr_.get() == o.ptr_.get(); }
  inline ExprKind kind() const;
  inline DType dtype() const;
  // The node as T when it is one, else nullptr.
  template <class T>
  const T* as() const;

 private:
  NodePtr<const ExprNode> ptr_;
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(const VarNode* node);
  // A fresh variable; `name` is a hint for printing.
  explicit Var(std::string name, DType dtype = DType::I32);
  const VarNode* get() const;
  const VarNode* operator->() const { return get(); }
  const std::string& name() const;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(const StmtNode* node) : ptr_(node) {}  // NOLINT
  bool defined() const { return ptr_.get() != nullptr; }
  const StmtNode* get() const { return ptr_.get(); }
  const StmtNode* operator->() const { return ptr_.get(); }
  bool same_as(const Stmt& o) const { return ptr_.get() == o.ptr_.get(); }
  inline StmtKind kind() const;
  template <class T>
  const T* as() const;

 private:
  NodePtr<const StmtNode> ptr_;
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(const BufferNode* node) : ptr_(node) {}
  bool defined() const { return ptr_.get() != nullptr; }
  const BufferNode* get() const { return ptr_.get(); }
  const BufferNode* operator->() const { return ptr_.get(); }
  bool same_as(const Buffer& o) const { return ptr_.get() == o.ptr_.get(); }
  const std::string& name() const;
  DType dtype() const;
  MemScope scope() const;
  int rank() const;

 private:
  NodePtr<const BufferNode> ptr_;
};


}  // namespace tilefuse::tir
