#include "models/torchscript_units.hpp"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace ddpt {
namespace {

namespace jit = torch::jit;

constexpr const char* kEnter = "ddptrain::unit_enter";
constexpr const char* kLeave = "ddptrain::unit_leave";

// The runner a graph's constant `slot` points to (the address of a UnitRunner*).
UnitRunner* runner_at(int64_t slot) {
  return *reinterpret_cast<UnitRunner* const*>(static_cast<intptr_t>(slot));
}

// Operators of the interpreter only (no kernel, no autograd): each passes its tensor through, so
// the graph's data flow orders it before (enter) or after (leave) the unit's call.
// CONSERVATIVE: they have effects the optimizer must neither drop nor move.
void register_unit_operators() {
  static const jit::RegisterOperators registered({
      jit::Operator(
          std::string(kEnter) + "(Tensor x, int slot, int unit) -> Tensor",
          [](jit::Stack& stack) {
            const int64_t unit = jit::pop(stack).toInt();
            const int64_t slot = jit::pop(stack).toInt();
            if (UnitRunner* runner = runner_at(slot)) runner->enter(static_cast<size_t>(unit));
          },
          c10::AliasAnalysisKind::CONSERVATIVE),
      jit::Operator(
          std::string(kLeave) + "(Tensor y, int slot, int unit) -> Tensor",
          [](jit::Stack& stack) {
            const int64_t unit = jit::pop(stack).toInt();
            const int64_t slot = jit::pop(stack).toInt();
            if (UnitRunner* runner = runner_at(slot)) {
              runner->leave(static_cast<size_t>(unit), stack.back().toTensor());
            }
          },
          c10::AliasAnalysisKind::CONSERVATIVE),
  });
}

bool is_module(const c10::TypePtr& type) {
  const auto cls = type->cast<c10::ClassType>();
  return cls && cls->is_module();
}

bool is_tensor(const c10::TypePtr& type) {
  return type->cast<c10::TensorType>() != nullptr;
}

std::string child_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

// Whether `path` is `ancestor` or below it ("" is above every path).
bool within(const std::string& path, const std::string& ancestor) {
  return ancestor.empty() || path == ancestor ||
         (path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
          path[ancestor.size()] == '.');
}

// What the model's graphs do with each submodule (by path).
struct ModuleUses {
  std::set<std::string> named;    // reached by a chain of attributes from self
  std::set<std::string> touched;  // used other than to reach a submodule or call forward
  std::map<std::string, std::vector<jit::Node*>> calls;  // forward called, in forward's graph
  std::vector<std::string> call_order;                   // first call of each, in graph order
  std::set<std::string> conditional;                     // used inside an `if` or a loop of forward
};

// The tensor argument a unit's call passes through unit_enter: the first tensor after self.
int64_t first_tensor_input(const jit::Node* call) {
  for (size_t i = 1; i < call->inputs().size(); ++i) {
    if (is_tensor(call->inputs()[i]->type())) return static_cast<int64_t>(i);
  }
  return -1;
}

// A use of submodule value `value` (path `path`) in a graph; `in_forward`: the model's forward,
// `nested`: inside an `if` or a loop of it.
void record_use(const jit::Use& use, const std::string& path, bool in_forward, bool nested,
                ModuleUses& uses) {
  const jit::Node* user = use.user;
  if (user->kind() == c10::prim::GetAttr && is_module(user->output()->type())) return;
  const bool forward_call = user->kind() == c10::prim::CallMethod && use.offset == 0 &&
                            user->s(c10::attr::name) == "forward";
  if (in_forward && nested) {
    // The module's own parameters read there; anything a submodule holds.
    const bool read = user->kind() == c10::prim::GetAttr && is_tensor(user->output()->type());
    if (read) uses.conditional.insert(child_path(path, user->s(c10::attr::name)));
    if (!path.empty()) uses.conditional.insert(path);
  }
  if (path.empty()) {
    // The model itself: its attributes read, its methods called (their graphs are read too).
    if (user->kind() == c10::prim::GetAttr || user->kind() == c10::prim::CallMethod) return;
    uses.touched.insert(path);
    return;
  }
  // A call inside an `if` or a loop may run on some ranks and not on others, or more often on
  // some (a branch or a count taken from each rank's batch): as a unit, the ranks would gather
  // different units. Such a call is a use like any other; its module stays in the root unit.
  if (forward_call && in_forward && !nested && user->outputs().size() == 1 &&
      is_tensor(user->output()->type()) && first_tensor_input(user) > 0) {
    auto& calls = uses.calls[path];
    if (calls.empty()) uses.call_order.push_back(path);
    calls.push_back(const_cast<jit::Node*>(user));
    return;
  }
  uses.touched.insert(path);
}

// Reads `block`'s nodes in order (so that calls are found in the order they run), each use of
// a submodule as it comes; `nested`: the block is inside an `if` or a loop.
void read_block(jit::Block* block, std::unordered_map<const jit::Value*, std::string>& path_of,
                bool in_forward, bool nested, ModuleUses& uses) {
  auto read_inputs = [&](jit::Node* node) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const auto found = path_of.find(node->inputs()[i]);
      if (found != path_of.end()) {
        record_use(jit::Use(node, i), found->second, in_forward, nested, uses);
      }
    }
  };
  for (jit::Node* node : block->nodes()) {
    read_inputs(node);
    if (node->kind() == c10::prim::GetAttr && is_module(node->output()->type())) {
      const auto parent = path_of.find(node->input());
      if (parent == path_of.end()) {
        uses.touched.insert("");  // a module from elsewhere: anything may be reached
      } else {
        const std::string path = child_path(parent->second, node->s(c10::attr::name));
        path_of[node->output()] = path;
        uses.named.insert(path);
      }
    }
    for (jit::Block* inner : node->blocks()) read_block(inner, path_of, in_forward, true, uses);
  }
  read_inputs(block->return_node());  // a submodule returned: anything may be done with it
}

void read_graph(jit::Graph& graph, bool in_forward, ModuleUses& uses) {
  std::unordered_map<const jit::Value*, std::string> path_of{{graph.inputs()[0], ""}};
  read_block(graph.block(), path_of, in_forward, /*nested=*/false, uses);
}

// Whether `path` holds no parameters, or one that is also held outside it (weights tied across
// modules): either way, not a unit.
bool unshardable(const torch::jit::Module& module, const std::string& path) {
  std::set<const c10::TensorImpl*> inside;
  std::set<const c10::TensorImpl*> outside;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    (within(p.name, path) ? inside : outside).insert(p.value.unsafeGetTensorImpl());
  }
  return inside.empty() || std::any_of(inside.begin(), inside.end(),
                                       [&](const auto* t) { return outside.count(t) > 0; });
}

bool is_unit(const torch::jit::Module& module, const std::string& path, const ModuleUses& uses) {
  for (const std::string& touched : uses.touched) {
    if (within(path, touched) || within(touched, path)) return false;  // itself, above, below
  }
  for (const std::string& named : uses.named) {
    if (named != path && within(named, path)) return false;  // something inside it reached
  }
  for (const auto& [called, nodes] : uses.calls) {
    if (called != path && within(path, called)) return false;  // a module above it called
  }
  return !unshardable(module, path);
}

// Routes each call of unit `unit` through unit_enter and unit_leave.
void route_calls(jit::Graph& graph, const std::vector<jit::Node*>& calls, int64_t slot,
                 int64_t unit) {
  for (jit::Node* call : calls) {
    const jit::WithInsertPoint before(call);
    const int64_t argument = first_tensor_input(call);
    jit::Value* input = call->inputs()[static_cast<size_t>(argument)];
    jit::Value* slot_value = graph.insertConstant(slot);
    jit::Value* unit_value = graph.insertConstant(unit);
    jit::Node* enter =
        graph.create(c10::Symbol::fromQualString(kEnter), {input, slot_value, unit_value});
    enter->output()->setType(input->type());
    graph.insertNode(enter);
    call->replaceInput(static_cast<size_t>(argument), enter->output());
    jit::Value* output = call->output();
    jit::Node* leave =
        graph.create(c10::Symbol::fromQualString(kLeave), {output, slot_value, unit_value});
    leave->output()->setType(output->type());
    leave->insertAfter(call);
    output->replaceAllUsesAfterNodeWith(leave, leave->output());
  }
}

}  // namespace

TorchScriptUnits find_units(const torch::jit::Module& module, UnitRunner* const* runner) {
  TorchScriptUnits units;
  const auto forward = module.find_method("forward");
  if (!forward) return units;
  std::shared_ptr<jit::Graph> graph = forward->graph()->copy();
  ModuleUses uses;
  read_graph(*graph, /*in_forward=*/true, uses);
  for (const jit::Method& method : module.get_methods()) {
    if (method.name() != "forward") read_graph(*method.graph(), /*in_forward=*/false, uses);
  }
  units.conditional.assign(uses.conditional.begin(), uses.conditional.end());
  const auto slot = static_cast<int64_t>(reinterpret_cast<intptr_t>(runner));
  for (const std::string& path : uses.call_order) {
    if (!is_unit(module, path, uses)) continue;
    route_calls(*graph, uses.calls.at(path), slot, static_cast<int64_t>(units.paths.size()));
    units.paths.push_back(path);
  }
  if (units.paths.empty()) return units;
  register_unit_operators();
  units.forward = std::make_shared<jit::GraphFunction>(
      c10::QualifiedName("ddptrain.forward_by_units"), graph, nullptr);
  return units;
}

}  // namespace ddpt
