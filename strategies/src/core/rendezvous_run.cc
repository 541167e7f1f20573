#include "core/rendezvous_run.h"

#include "collective/distribute/replica_context.h"
#include "base/call_purpose.h"
#include "collective/errors.h"
#include "core/context_stack.h"
#include "core/replica_context.h"

namespace collective::distribute::detail {
namespace {

std::string describe_values(const std::vector<const Tensor*>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_string(values[i]->dtype());
    out += shape_string(values[i]->shape());
  }
  return out;
}

}  // namespace

RendezvousRun::RendezvousRun(StrategyImpl& impl)
    : impl_(impl),
      rendezvous_(impl.num_local_replicas, impl.timeout, impl.label(), impl.error_rank()) {}

std::vector<Tensor> RendezvousRun::all_reduce(int local_replica, ReduceOp op,
                                              const std::vector<const Tensor*>& values) {
  struct Payload {
    const std::vector<const Tensor*>* in;
    std::vector<Tensor> out;
  };
  Payload payload{&values, {}};
  // The signature lets the replicas check they make the same call; one
  // replica has no one to disagree with.
  const std::string signature = impl_.num_local_replicas == 1
                                    ? std::string()
                                    : "ReplicaContext.all_reduce(" + std::string(to_string(op)) +
                                          "; " + describe_values(values) + ")";
  rendezvous_.sync(local_replica, signature, &payload, [&](std::span<void* const> payloads) {
    // The replicas' tensors are reduced where they are: their owners wait
    // in sync() until this returns.
    const CallPurpose purpose("ReplicaContext.all_reduce");
    std::vector<std::vector<const Tensor*>> views(values.size());
    for (std::size_t v = 0; v < values.size(); ++v) {
      views[v].reserve(payloads.size());
      for (void* p : payloads) views[v].push_back((*static_cast<Payload*>(p)->in)[v]);
    }
    std::vector<Tensor> reduced = impl_.batch_reduce_views(op, views);
    // Each replica gets its own copy of the result; the last one takes it.
    for (std::size_t r = 0; r + 1 < payloads.size(); ++r)
      static_cast<Payload*>(payloads[r])->out = reduced;
    static_cast<Payload*>(payloads.back())->out = std::move(reduced);
  });
  return std::move(payload.out);
}

Tensor RendezvousRun::all_gather(int local_replica, const Tensor& value, int axis) {
  struct Payload {
    const Tensor* in;
    int axis;
    Tensor out;
  };
  Payload payload{&value, axis, {}};
  // The replicas' values and axes are checked by the gather, alike on
  // every worker, so the signature names the call only: a disagreement
  // raises the gather's error on every worker instead of this worker's.
  const std::string signature = "ReplicaContext.all_gather";
  rendezvous_.sync(local_replica, signature, &payload, [&](std::span<void* const> payloads) {
    const CallPurpose purpose("ReplicaContext.all_gather");
    std::vector<const Tensor*> values;
    std::vector<int> axes;
    for (void* p : payloads) {
      values.push_back(static_cast<Payload*>(p)->in);
      axes.push_back(static_cast<Payload*>(p)->axis);
    }
    const Tensor gathered = impl_.gather_views(values, axes, "ReplicaContext.all_gather");
    for (void* p : payloads) static_cast<Payload*>(p)->out = gathered;
  });
  return std::move(payload.out);
}

std::shared_ptr<const void> RendezvousRun::merge_call(int local_replica,
                                                      const MergeRequest& request) {
  struct Payload {
    const MergeRequest* request;
    std::shared_ptr<const void> result;
  };
  Payload payload{&request, nullptr};
  const std::string signature =
      std::string("ReplicaContext.merge_call(result ") + request.result_type->name() +
      (request.argument_type ? std::string(", argument ") + request.argument_type->name() : "") +
      ")";
  rendezvous_.sync(local_replica, signature, &payload, [&](std::span<void* const> payloads) {
    std::vector<const void*> arguments;
    arguments.reserve(payloads.size());
    for (void* p : payloads) arguments.push_back(static_cast<Payload*>(p)->request->argument);
    // merge_fn runs once, in the cross-replica context, on this thread.
    FrameGuard merge_frame(ContextFrame::Kind::kMerge, impl_.strategy, nullptr);
    const MergeRequest& first = *static_cast<Payload*>(payloads[0])->request;
    std::shared_ptr<const void> result = first.run(*impl_.strategy, arguments);
    check_merge_result(impl_, first, result.get());
    for (void* p : payloads) static_cast<Payload*>(p)->result = result;
  });
  return std::move(payload.result);
}

}  // namespace collective::distribute::detail
