//===- FormKernels.cpp - fusec-form-kernels -------------------------------===//
//
// Partitions a graph into fuse.kernel regions, one per GPU kernel, and
// explains each decision with a remark.
//
//===----------------------------------------------------------------------===//

#include "fusec/Transforms/FusionPolicy.h"
#include "fusec/Transforms/Passes.h"

#include "Fuse/FuseOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace fusec {
#define GEN_PASS_DEF_FORMKERNELS
#include "fusec/Transforms/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace mlir::fuse;
namespace policy = fusec::policy;

static StringRef shortName(Operation *op) {
  return op->getName().stripDialect();
}

static int64_t normalisedAxis(ConcatOp op) {
  auto axis = static_cast<int64_t>(op.getAxis());
  return axis < 0 ? axis + op.getType().getRank() : axis;
}

/// A remark at `op`'s location. Not op->emitRemark(): that prints the op
/// after the message, which numbers the values of the whole function, so a
/// chain of n ops took O(n^2) (2000 ops: 5 s).
static InFlightDiagnostic remarkAt(Operation *op) {
  return emitRemark(op->getLoc());
}

namespace {

/// One future kernel: its ops in program order.
struct Group {
  std::string name;
  llvm::SetVector<Operation *> ops;
  /// Operands the anchor's family reads by address rather than element by
  /// element (a concat's parts, under an attention's operand views): only
  /// views that keep such an address may join through them.
  llvm::SmallPtrSet<OpOperand *, 8> byAddress;
};

class KernelFormer {
public:
  explicit KernelFormer(func::FuncOp func) : func(func) {}

  void run();

private:
  bool isParameterOnly(Operation *op);
  Group &startGroup(Operation *root);
  void growEpilogue(Group &group);
  void growPrologue(Group &group);
  void growOperandViews(Group &group);
  void pullInProducers(Group &group);
  void materialise(Group &group);

  func::FuncOp func;
  std::vector<std::unique_ptr<Group>> groups;
  llvm::DenseMap<Operation *, Group *> groupOf;
  llvm::DenseMap<Operation *, bool> parameterOnly;
};

} // namespace

/// True for an elementwise op whose operands all derive, through other such
/// ops, from graph arguments alone: a computation on parameters that a
/// kernel can redo per element instead of reading from memory.
bool KernelFormer::isParameterOnly(Operation *op) {
  if (!isElementwise(op))
    return false;
  auto it = parameterOnly.find(op);
  if (it != parameterOnly.end())
    return it->second;
  bool result = llvm::all_of(op->getOperands(), [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner() == &func.getBody().front();
    return isParameterOnly(v.getDefiningOp());
  });
  parameterOnly[op] = result;
  return result;
}

Group &KernelFormer::startGroup(Operation *root) {
  groups.push_back(std::make_unique<Group>());
  Group &group = *groups.back();
  group.name = llvm::formatv("k{0}_{1}", groups.size() - 1, shortName(root));
  group.ops.insert(root);
  groupOf[root] = &group;
  return group;
}

/// Follows the single-user chain of elementwise ops after the group's last
/// op, absorbing each link that keeps the shape.
void KernelFormer::growEpilogue(Group &group) {
  while (true) {
    Operation *last = group.ops.back();
    // A batch norm's (or norm backward's) full-size result, its others per
    // channel, feeds the epilogue of the pass that writes it; so does an
    // attention's output beside its row log-sum-exp.
    bool batchNorm =
        group.ops.size() == 1 &&
        isa<BatchNormTrainOp, BatchNormGradOp, NormGradOp, AttentionOp>(last);
    if (last->getNumResults() != 1 && !batchNorm)
      return;
    Value result = last->getResult(0);
    if (result.use_empty())
      return;
    if (!result.hasOneUse()) {
      remarkAt(last) << "not fused: the result of " << last->getName()
                     << " has "
                     << std::distance(result.use_begin(), result.use_end())
                     << " users, so kernel " << group.name << " ends here";
      return;
    }
    Operation *user = *result.user_begin();
    if (isa<func::ReturnOp>(user))
      return;
    if (groupOf.count(user))
      return;
    if (isa<AttentionOp>(group.ops.front()) && policy::isAnchorView(user)) {
      group.ops.insert(user);
      groupOf[user] = &group;
      remarkAt(user) << "fused " << user->getName() << " into kernel "
                     << group.name << ", which stores its result permuted";
      continue;
    }
    if (isa<ReshapeOp>(user)) {
      remarkAt(user) << "kernel " << group.name << " ends at "
                     << user->getName()
                     << ", which re-views its result in place, no copy";
      return;
    }
    if (isa<TransposeOp>(user)) {
      remarkAt(user) << "not fused: " << user->getName()
                     << " changes the layout, so kernel " << group.name
                     << " ends before it";
      return;
    }
    if (isAnchor(user)) {
      remarkAt(user) << "not fused: " << user->getName()
                     << " is an anchor and starts its own kernel after "
                     << group.name;
      return;
    }
    if (!isElementwise(user))
      return;
    // A cast changes only the element type: the epilogue computes in f32
    // and stores in the type of the group's last op.
    if (user->getResult(0).getType() != result.getType() &&
        !isa<CastOp>(user)) {
      remarkAt(user) << "not fused: " << user->getName()
                     << " changes the shape or type of the result of "
                     << group.name;
      return;
    }
    // Operands other than the chain must be available before the kernel
    // runs: defined outside every kernel formed so far, or by an earlier one.
    group.ops.insert(user);
    groupOf[user] = &group;
    remarkAt(user) << "fused " << user->getName() << " into the "
                   << (isAnchor(group.ops.front()) ? "epilogue of " : "")
                   << "kernel " << group.name;
  }
}

/// Row reductions (layer_norm, rms_norm, softmax) can compute their input
/// in the kernel: the elementwise op producing it joins as a prologue, and
/// if others use its result too (a residual sum), the kernel writes it as a
/// second result. Others kinds of anchor read their operands from memory.
void KernelFormer::growPrologue(Group &group) {
  Operation *anchor = group.ops.front();
  if (!isRowReduction(anchor))
    return;
  Operation *producer = anchor->getOperand(0).getDefiningOp();
  if (!producer || groupOf.count(producer) || !isElementwise(producer) ||
      producer->getNumResults() != 1)
    return;
  // Every other user must come after the kernel, which takes the place of
  // the group's last op.
  Operation *last = group.ops.back();
  for (Operation *user : producer->getUsers()) {
    if (user == anchor)
      continue;
    if (!last->isBeforeInBlock(user)) {
      remarkAt(producer) << "not fused: " << user->getName()
                         << " uses the result of " << producer->getName()
                         << " before kernel " << group.name
                         << " would write it";
      return;
    }
  }
  group.ops.insert(producer);
  groupOf[producer] = &group;
  InFlightDiagnostic remark = remarkAt(producer);
  remark << "fused " << producer->getName() << " into the prologue of kernel "
         << group.name;
  if (!producer->getResult(0).hasOneUse())
    remark << ", which also writes its result for the other users";
}

/// Linear layers read concatenated weights, convolutions inputs joined
/// along channels, in place.
/// Attention reads its operands through transposes that keep rows
/// contiguous (splitting heads) and applies rotary embeddings to its Q and K
/// tiles: such producers that only it uses join its kernel.
void KernelFormer::growOperandViews(Group &group) {
  // A concat only the anchor reads, along `axis`, joins its kernel, which
  // reads the parts in place.
  auto absorbConcat = [&](Value operand, int64_t axis) {
    auto concat = operand ? operand.getDefiningOp<ConcatOp>() : nullptr;
    if (!concat || groupOf.count(concat) || !concat->hasOneUse() ||
        normalisedAxis(concat) != axis)
      return;
    group.ops.insert(concat);
    groupOf[concat] = &group;
    for (OpOperand &part : concat->getOpOperands())
      group.byAddress.insert(&part);
    remarkAt(concat) << "fused fuse.concat into kernel " << group.name
                     << ", which reads the parts in place";
  };
  // A linear layer: weights and biases joined along the output features
  // (merged projections, fusec-simplify).
  if (auto linear = dyn_cast<LinearOp>(group.ops.front())) {
    absorbConcat(linear.getWeight(), 0);
    absorbConcat(linear.getBias(), 0);
    return;
  }
  // A convolution: inputs joined along its channel axis (a U-Net skip).
  if (auto conv = dyn_cast<Conv2dOp>(group.ops.front())) {
    absorbConcat(conv.getInput(), channelAxis(conv.getLayout(), 4));
    return;
  }
  auto attention = dyn_cast<AttentionOp>(group.ops.front());
  if (!attention)
    return;
  for (Value operand : {attention.getQuery(), attention.getKey(),
                        attention.getValue()}) {
    Operation *producer = operand.getDefiningOp();
    while (producer && !groupOf.count(producer) &&
           policy::isAnchorView(producer) &&
           producer->getResult(0).hasOneUse()) {
      group.ops.insert(producer);
      groupOf[producer] = &group;
      group.byAddress.insert(&producer->getOpOperand(0));
      remarkAt(producer) << "fused " << producer->getName() << " into kernel "
                         << group.name
                         << (isa<RopeOp>(producer)
                                 ? ", which rotates the tiles it loads"
                                 : ", which loads its operand through it");
      producer = producer->getOperand(0).getDefiningOp();
    }
  }
}

/// Adds the elementwise producers whose results only this group uses, which
/// the kernel then recomputes per element. For an anchored group only
/// parameter computations qualify, and only those feeding its epilogue: the
/// anchor itself reads its operands from memory. A transpose or rope reads
/// its operands through slices instead (ViewReader), so its slices join:
/// a transpose of one head's slice of a fused QKV projection is one pass.
void KernelFormer::pullInProducers(Group &group) {
  Operation *anchor = isAnchor(group.ops.front()) ? group.ops.front() : nullptr;
  bool gather = isa_and_nonnull<TransposeOp, RopeOp>(anchor);
  auto linear = dyn_cast_or_null<LinearOp>(anchor);
  // A linear layer reads its bias element by element in its epilogue
  // (readThroughViews), but its input and weight by address.
  auto isBias = [&](OpOperand &use) {
    if (!linear || linear.getBiasMutable().empty())
      return false;
    return &use == &linear.getBiasMutable()[0];
  };
  // The uses of an anchor's operand that read it through what fusion
  // puts in front: a gather kernel's input (and rope tables), a bias.
  auto readsThrough = [&](OpOperand &use) {
    return use.getOwner() == anchor && (gather || isBias(use));
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation *op : llvm::to_vector(group.ops)) {
      if (op == anchor && !gather && !linear)
        continue;
      for (OpOperand &use : op->getOpOperands()) {
        Operation *producer = use.get().getDefiningOp();
        if (op == anchor) {
          // The gather kernels read through slices and transposes only
          // (ViewReader::viewSource); a transpose is an anchor of its own.
          // A linear layer recomputes autocast's cast of its bias: no
          // kernel of its own.
          if (gather ? !isa_and_nonnull<SliceOp>(producer)
                     : !(isBias(use) && isa_and_nonnull<CastOp>(producer)))
            continue;
        }
        // Views cost nothing to read through, in any kernel; but where the
        // family reads an operand by address, only an attention's operand
        // views keep one (an add or a misaligned slice there has no
        // address to copy from).
        bool addressed = group.byAddress.contains(&use);
        if (!producer || groupOf.count(producer) ||
            (addressed && !(isa_and_nonnull<AttentionOp>(anchor) &&
                            policy::isAnchorView(producer))) ||
            !(isView(producer) || (isElementwise(producer) &&
                                   (!anchor || isParameterOnly(producer)))))
          continue;
        bool onlyHere = llvm::all_of(producer->getUses(), [&](OpOperand &u) {
          return groupOf.lookup(u.getOwner()) == &group &&
                 (u.getOwner() != anchor || readsThrough(u));
        });
        if (!onlyHere)
          continue;
        group.ops.insert(producer);
        groupOf[producer] = &group;
        if (addressed)
          group.byAddress.insert(&producer->getOpOperand(0));
        if (isView(producer))
          remarkAt(producer)
              << "fused " << producer->getName() << " into kernel "
              << group.name << ", which reads through it";
        else if (anchor)
          remarkAt(producer)
              << "fused " << producer->getName() << " into kernel "
              << group.name << ", which recomputes it from graph parameters";
        else
          remarkAt(producer) << "fused " << producer->getName()
                             << " into kernel " << group.name;
        changed = true;
      }
    }
  }
}

/// Replaces the group's ops with one fuse.kernel.
void KernelFormer::materialise(Group &group) {
  // Program order, so that the clone sees definitions before uses.
  SmallVector<Operation *> ops(group.ops.begin(), group.ops.end());
  llvm::sort(ops, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  llvm::SetVector<Value> inputs, outputs;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || !group.ops.contains(def))
        inputs.insert(operand);
    }
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *u) {
            return !group.ops.contains(u);
          }))
        outputs.insert(result);
  }

  Operation *anchor = group.ops.front();
  OpBuilder builder(ops.back());
  auto kernel = KernelOp::create(builder, anchor->getLoc(), group.name,
                                 TypeRange(outputs.getArrayRef()),
                                 inputs.getArrayRef());
  Block &body = kernel.getBody().front();
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body.getArguments());
  builder.setInsertionPointToStart(&body);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(mapping.lookup(v));
  YieldOp::create(builder, anchor->getLoc(), yielded);

  for (auto [value, result] : llvm::zip_equal(outputs, kernel.getResults()))
    Value(value).replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

void KernelFormer::run() {
  Block &block = func.getBody().front();
  // Anchors first claim their epilogues and the parameter computations that
  // only they use.
  // Transposes and ropes that an attention may absorb wait for it; those
  // it leaves get kernels of their own after.
  for (bool views : {false, true}) {
    for (Operation &op : block) {
      if (!isAnchor(&op) || groupOf.count(&op) ||
          policy::isAnchorView(&op) != views)
        continue;
      Group &group = startGroup(&op);
      remarkAt(&op) << "kernel " << group.name << " is anchored on "
                    << op.getName();
      growEpilogue(group);
      growPrologue(group);
      growOperandViews(group);
      pullInProducers(group);
    }
  }
  // Then the elementwise ops and views left over, grouped backwards from the last op
  // of each chain: a producer joins when all its users are in the kernel.
  for (Operation &op : llvm::reverse(block)) {
    if (groupOf.count(&op) || !(isElementwise(&op) || isView(&op)))
      continue;
    Group &group = startGroup(&op);
    if (isView(&op))
      remarkAt(&op) << "kernel " << group.name << " materialises "
                    << op.getName()
                    << ": a user reads it from memory or returns it";
    llvm::SmallPtrSet<Group *, 4> users;
    for (Operation *user : op.getUsers())
      if (Group *g = groupOf.lookup(user))
        users.insert(g);
    if (users.size() > 1)
      remarkAt(&op) << "kernel " << group.name << " computes " << op.getName()
                    << " once for the " << users.size()
                    << " kernels that use it";
    pullInProducers(group);
  }
  for (auto &group : groups)
    materialise(*group);
}

namespace {
struct FormKernelsPass : fusec::impl::FormKernelsBase<FormKernelsPass> {
  void runOnOperation() override {
    // A declaration beside the graph has nothing to partition.
    if (!getOperation().isDeclaration())
      KernelFormer(getOperation()).run();
  }
};
} // namespace
