#include "ddp/sharded_parameters.hpp"

#include <algorithm>

#include "runtime/process_tuning.hpp"
#include "util/error.hpp"
#include "util/releasable_storage.hpp"

namespace ddpt {

namespace {

std::vector<int64_t> numels_of(const std::vector<NamedTensor>& params) {
  std::vector<int64_t> numels;
  for (const auto& p : params) numels.push_back(p.tensor.numel());
  return numels;
}

}  // namespace

ShardedParameters::ShardedParameters(std::vector<NamedTensor> params, UnitPlan plan,
                                     Communicator& comm, const Options& options)
    : params_(std::move(params)),
      plan_(std::move(plan)),
      shards_(plan_shards(plan_.buckets, numels_of(params_), comm.size(), comm.rank())),
      comm_(comm),
      prefetch_(options.prefetch),
      waits_(options.waits),
      units_(plan_.buckets.size()),
      casts_(plan_.buckets.size()) {
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < plan_.buckets.size(); ++b) {
    const BucketSpec& spec = plan_.buckets[b];
    const torch::Tensor& first = params_[spec.params.front()].tensor;
    const int64_t block = shards_[b].block;
    Unit& unit = units_[b];
    // On the communicator's device: the parameters may still be on the host, so that no device
    // holds more than one unit of them before they are sharded.
    const torch::TensorOptions on_device =
        first.options().device(comm_.device()).requires_grad(false);
    torch::Tensor values = torch::zeros({block * comm_.size()}, on_device);
    const bool own_block = options.values && options.source != nullptr;
    if (own_block) fill_block(b, options, values.narrow(0, block * comm_.rank(), block));
    if (options.values && !own_block && options.materialize) {
      std::vector<NamedTensor> unit_params;
      for (const size_t i : spec.params) unit_params.push_back(params_[i]);
      options.materialize(unit_params);
    }
    for (size_t k = 0; k < spec.params.size(); ++k) {
      const torch::Tensor& param = params_[spec.params[k]].tensor;
      if (param.scalar_type() != first.scalar_type() || param.device() != first.device()) {
        throw Error("ZeRO-3: the parameters of one unit differ in dtype or device ('" +
                        params_[spec.params[k]].name + "')",
                    ExitCode::kInternal, Raised::kAllRanks);
      }
      if (options.values && !own_block) {
        values.narrow(0, spec.offsets[k], param.numel()).copy_(param.detach().reshape(-1));
      }
    }
    // Every rank starts from rank 0's values, or from its own block of the source's.
    if (options.values && !own_block) comm_.broadcast(values, 0);
    unit.shard = values.narrow(0, block * comm_.rank(), block).clone();
    unit.gathered = values;
    // set_data keeps each parameter's identity (the model's references, its autograd metadata)
    // and replaces only its memory by its slot in the unit's buffer.
    for (size_t k = 0; k < spec.params.size(); ++k) {
      torch::Tensor& param = params_[spec.params[k]].tensor;
      param.set_data(unit.gathered.narrow(0, spec.offsets[k], param.numel()).view(param.sizes()));
    }
    release_storage(unit.gathered);
    // The unit's whole values are gone; malloc would keep them, and not reuse them for the next
    // unit (models/deferred_values.cpp, release_parameters).
    values = torch::Tensor();
    return_freed_memory();
  }
  // One slot to start with (collective): whether the node's memory can be had at all.
  if (options.shared_memory && comm_.node_shared_memory() != nullptr && !units_.empty()) {
    add_slot();
    shared_ = !slots_.empty();
  }
}

void ShardedParameters::fill_block(size_t b, const Options& options, torch::Tensor block) {
  for (const ShardPiece& piece : shards_[b].pieces) {
    const NamedTensor& param = params_[piece.param];
    torch::Tensor out = block.narrow(0, piece.block_offset, piece.numel);
    if (options.source->holds(param.name)) {
      // Read on the host, straight into the block where it is there.
      const bool host = out.device().is_cpu() && out.scalar_type() == torch::kFloat;
      torch::Tensor values = host ? out : torch::empty({piece.numel}, torch::kFloat);
      options.source->read(param.name, piece.param_offset, values);
      if (!host) out.copy_(values);
      continue;
    }
    if (options.materialize) options.materialize({param});
    out.copy_(param.tensor.detach().reshape(-1).narrow(0, piece.param_offset, piece.numel));
  }
}

void ShardedParameters::add_slot() {
  int64_t numel = 0;
  for (const Unit& unit : units_) numel = std::max<int64_t>(numel, unit.gathered.numel());
  const torch::Tensor memory = comm_.node_shared_memory()->allocate_gather_buffer(
      numel, units_.front().gathered.options(), "ZeRO-3's units");
  if (memory.defined()) slots_.push_back({memory, kNoUnit});
}

namespace {

void keep_mapped(void* /*data*/) {}  // the slot's tensor keeps the segment mapped

}  // namespace

size_t ShardedParameters::take_slot(size_t bucket) {
  auto free = std::find_if(slots_.begin(), slots_.end(),
                           [](const Slot& slot) { return slot.unit == kNoUnit; });
  if (free == slots_.end()) {
    // Every rank runs out at the same point of the same program: a collective allocation here
    // is matched. Undefined (a full /dev/shm) on every rank alike: this gather goes through MPI.
    add_slot();
    free = std::find_if(slots_.begin(), slots_.end(),
                        [](const Slot& slot) { return slot.unit == kNoUnit; });
    if (free == slots_.end()) return kNoUnit;
  }
  free->unit = bucket;
  // The unit's storage (which its parameters view) now points into the slot.
  const torch::Tensor& flat = units_[bucket].gathered;
  c10::StorageImpl* storage = flat.storage().unsafeGetStorageImpl();
  storage->set_data_ptr(
      c10::DataPtr(free->memory.data_ptr(), free->memory.data_ptr(), &keep_mapped, flat.device()));
  storage->set_nbytes(static_cast<size_t>(flat.numel()) * flat.element_size());
  return static_cast<size_t>(free - slots_.begin());
}

ShardedParameters::Forward::Forward(ShardedParameters& units) : units_(units) {
  const std::vector<size_t>& root = units_.plan_.buckets_of_unit[units_.plan_.root()];
  for (const size_t b : root) units_.gather(b);
  for (const size_t b : root) units_.wait(b);
  if (units_.prefetch_) {
    for (const size_t b : units_.block_buckets(0)) units_.gather(b);
  }
}

ShardedParameters::Forward::~Forward() {
  // Without autograd no backward follows: nothing needs the parameters any more.
  if (!torch::GradMode::is_enabled()) units_.release_all();
}

ShardedParameters::Whole::Whole(ShardedParameters& units) : units_(units) {
  for (size_t b = 0; b < units_.units_.size(); ++b) units_.gather(b);
  for (size_t b = 0; b < units_.units_.size(); ++b) units_.wait(b);
}

void ShardedParameters::enter(size_t unit) {
  const std::vector<size_t>& buckets = block_buckets(static_cast<int64_t>(unit));
  if (buckets.empty()) return;
  for (const size_t b : buckets) gather(b);
  for (const size_t b : buckets) wait(b);
  for (const size_t b : buckets) cast(b);
  if (prefetch_) {
    for (const size_t b : block_buckets(static_cast<int64_t>(unit) + 1)) gather(b);
  }
}

void ShardedParameters::leave(size_t unit, const torch::Tensor& output) {
  const std::vector<size_t>& buckets = block_buckets(static_cast<int64_t>(unit));
  if (buckets.empty()) return;
  // Runs when the output's gradient is complete, before any of the unit's backward: what the
  // unit's operations saved of its parameters reads the gathered memory again.
  if (output.requires_grad()) {
    output.register_hook([this, unit](const torch::Tensor&) { before_backward(unit); });
  }
  for (const size_t b : buckets) release(b);
}

void ShardedParameters::before_backward(size_t unit) {
  const std::vector<size_t>& buckets = block_buckets(static_cast<int64_t>(unit));
  for (const size_t b : buckets) gather(b);
  for (const size_t b : buckets) wait(b);
  for (const size_t b : buckets) casts_.restore(b, units_[b].gathered);
  if (prefetch_) {
    for (const size_t b : block_buckets(static_cast<int64_t>(unit) - 1)) gather(b);
  }
}

const std::vector<size_t>& ShardedParameters::block_buckets(int64_t unit) const {
  if (unit < 0 || unit >= static_cast<int64_t>(plan_.root())) return none_;
  return plan_.buckets_of_unit[static_cast<size_t>(unit)];
}

void ShardedParameters::gather(size_t bucket) {
  Unit& unit = units_[bucket];
  if (unit.state != State::kReleased) return;
  unit.slot = shared_ ? take_slot(bucket) : kNoUnit;
  if (unit.slot != kNoUnit) {
    // Waits until every rank is done reading the slot's last unit (comm/node_all_gather.hpp).
    const RankWaits::Scope waiting(waits_);
    unit.work = comm_.node_shared_memory()->all_gather_into_shared_async(unit.shard, unit.gathered);
  } else {
    torch::NoGradGuard no_grad;
    memory_.restore(unit.gathered);
    const int64_t block = shards_[bucket].block;
    unit.gathered.narrow(0, block * comm_.rank(), block).copy_(unit.shard);
    unit.work = comm_.all_gather_in_place_async(unit.gathered);
  }
  unit.state = State::kGathering;
}

void ShardedParameters::wait(size_t bucket) {
  Unit& unit = units_[bucket];
  if (unit.state == State::kReleased) gather(bucket);
  if (unit.state == State::kGathering) {
    {
      const RankWaits::Scope waiting(waits_);
      unit.work->wait();
    }
    unit.work.reset();
    unit.state = State::kGathered;
  }
}

void ShardedParameters::cast(size_t bucket) {
  const BucketSpec& spec = plan_.buckets[bucket];
  std::vector<torch::Tensor> params;
  for (const size_t i : spec.params) params.push_back(params_[i].tensor);
  casts_.cast(bucket, units_[bucket].gathered, params, spec.offsets);
}

void ShardedParameters::release(size_t bucket) {
  Unit& unit = units_[bucket];
  casts_.release(bucket);
  if (unit.state == State::kReleased) return;
  // A collective may still be writing into the memory.
  if (unit.state == State::kGathering) {
    const RankWaits::Scope waiting(waits_);
    unit.work->wait();
  }
  unit.work.reset();
  if (unit.slot != kNoUnit) {
    comm_.node_shared_memory()->done_reading(unit.gathered);
    release_storage(unit.gathered);  // points nowhere again; the slot keeps the memory
    slots_[unit.slot].unit = kNoUnit;
    unit.slot = kNoUnit;
  } else {
    memory_.release(unit.gathered);
  }
  unit.state = State::kReleased;
}

void ShardedParameters::release_all() {
  for (size_t b = 0; b < units_.size(); ++b) release(b);
}

std::vector<torch::Tensor> ShardedParameters::shards() const {
  std::vector<torch::Tensor> out;
  for (const Unit& unit : units_) out.push_back(unit.shard);
  return out;
}

bool ShardedParameters::gathers_in_shared_memory() const {
  return shared_;
}

int64_t ShardedParameters::held_bytes() const {
  int64_t bytes = 0;
  for (const Unit& unit : units_) bytes += unit.shard.numel() * unit.shard.element_size();
  return bytes;
}

int64_t ShardedParameters::unit_bytes(size_t unit) const {
  int64_t bytes = 0;
  for (const size_t b : plan_.buckets_of_unit[unit]) {
    bytes += units_[b].gathered.numel() * units_[b].gathered.element_size();
  }
  return bytes;
}

int64_t ShardedParameters::largest_unit_bytes() const {
  int64_t bytes = 0;
  for (size_t u = 0; u < plan_.root(); ++u) bytes = std::max(bytes, unit_bytes(u));
  return bytes;
}

int64_t ShardedParameters::root_unit_bytes() const {
  return unit_bytes(plan_.root());
}

}  // namespace ddpt
