#include "communicator_binding.h"

#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "buffer_view.h"
#include "collective/collective.h"
#include "mpi_environment.h"
#include "plan_binding.h"
#include "work_binding.h"

namespace collective::python {
namespace {

namespace py = pybind11;
using Counts = std::vector<std::size_t>;

// Runs a library call with the GIL released, so that other Python threads
// run meanwhile. A Ctrl-C that arrived during the call is raised when it
// returns: the call itself is bounded by its timeout, not interrupted.
template <class Call>
void run_released(Call&& call) {
  {
    py::gil_scoped_release release;
    call();
  }
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// The options every call takes, from its keyword arguments.
struct CommonArgs {
  std::string algorithm = "auto";
  std::optional<double> timeout;  // seconds
  std::uint64_t call_tag = 0;
};

void apply(CommonOptions& options, const CommonArgs& args, const std::string& operation, int rank) {
  const auto algorithm = parse_algorithm(args.algorithm);
  if (!algorithm) {
    throw InvalidArgumentError(operation, rank,
                               "algorithm '" + args.algorithm +
                                   "' is not known (auto, ring, recursive_doubling, mpi, "
                                   "shared_memory, hierarchical, nccl, pairwise, bruck)");
  }
  options.algorithm = *algorithm;
  if (args.timeout) {
    if (!(*args.timeout > 0) || !std::isfinite(*args.timeout)) {
      throw InvalidArgumentError(
          operation, rank,
          "timeout must be a positive number of seconds, not " + std::to_string(*args.timeout));
    }
    options.timeout = std::chrono::milliseconds(
        std::max<long long>(1, std::llround(std::min(*args.timeout, 3.1536e9) * 1000.0)));
  }
  options.call_tag = args.call_tag;
}

ReduceOp parse_op(const std::string& name, const std::string& operation, int rank) {
  std::string names;
  for (int i = 0; i < kNumReduceOps; ++i) {
    const auto op = static_cast<ReduceOp>(i);
    if (to_string(op) == name) return op;
    names += (i == 0 ? "" : ", ") + std::string(to_string(op));
  }
  throw InvalidArgumentError(operation, rank, "op '" + name + "' is not one of " + names);
}

std::optional<DataType> declared_type(const std::optional<std::string>& dtype,
                                      const std::string& operation, int rank) {
  if (!dtype) return std::nullopt;
  return parse_data_type(*dtype, operation, rank);
}

void require_same_type(const BufferView& a, const char* a_name, const BufferView& b,
                       const char* b_name, const std::string& operation, int rank) {
  if (a.type == b.type) return;
  throw InvalidArgumentError(operation, rank,
                             std::string(a_name) + " holds " + std::string(to_string(a.type)) +
                                 " but " + b_name + " holds " + std::string(to_string(b.type)) +
                                 ": both must have one element type");
}

[[noreturn]] void wrong_length(const std::string& operation, int rank, const char* argument,
                               std::size_t has, std::size_t needs, const std::string& why) {
  throw InvalidArgumentError(operation, rank,
                             std::string(argument) + " holds " + std::to_string(has) +
                                 " elements but needs " + std::to_string(needs) + " (" + why + ")");
}

// Displacements as given, or packed in rank order from the counts.
Counts displacements_or_packed(const std::optional<Counts>& given, const Counts& counts) {
  if (given) return *given;
  Counts packed(counts.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    packed[i] = offset;
    offset += counts[i];
  }
  return packed;
}

// Every block (displacements[q] + counts[q] elements) ends inside the
// buffer `argument` ("send" or "recv") of `length` elements. The library
// checks counts and displacements against its own rules; the buffers'
// lengths only the binding knows.
void require_blocks_fit(const std::string& operation, int rank, const char* argument,
                        std::size_t length, const Counts& counts, const Counts& displacements) {
  for (std::size_t q = 0; q < counts.size() && q < displacements.size(); ++q) {
    if (displacements[q] + counts[q] > length) {
      const std::string index = "[" + std::to_string(q) + "]";
      wrong_length(
          operation, rank, argument, length, displacements[q] + counts[q],
          std::string(argument) + "_displacements" + index + " + " + argument + "_counts" + index);
    }
  }
}

// The argument's view, or none where the argument is None.
std::optional<BufferView> optional_view(const py::object& object, const std::string& operation,
                                        int rank, const char* argument, bool writable,
                                        std::optional<DataType> declared) {
  if (object.is_none()) return std::nullopt;
  return view_of(object, operation, rank, argument, writable, declared);
}

// What an `_async` call keeps alive until it finished: the views (which pin
// each buffer's memory and size) and the Python objects.
void keep_one(KeptAlive& kept, BufferView& view) { kept.views.push_back(std::move(view)); }
void keep_one(KeptAlive& kept, std::optional<BufferView>& view) {
  if (view) kept.views.push_back(std::move(*view));
}
void keep_one(KeptAlive& kept, const py::object& object) { kept.objects.push_back(object); }

// Moves the views out (their data, count and type stay readable).
template <class... Items>
KeptAlive keep(Items&... items) {
  KeptAlive kept;
  (keep_one(kept, items), ...);
  return kept;
}

// The three forms each collective is bound in: `name` (blocking), `name_async`
// (returns a collective.Work) and `name_init` (returns a collective.Plan).
enum class Form { blocking, started, planned };
template <Form F>
using FormTag = std::integral_constant<Form, F>;
template <class Tag>
constexpr bool is_started = Tag::value != Form::blocking;

// Starts an `_async` call (or makes an `_init` plan: a collective call too)
// with the GIL released and wraps its Work (or Plan). `started` and
// `planned` are the Communicator methods of the two forms, which take the
// same arguments.
template <Form F, class Started, class Planned, class... Args>
py::object start_form(FormTag<F>, Communicator& self, KeptAlive kept, Started started,
                      Planned planned, const Args&... args) {
  release_finished_orphans();
  if constexpr (F == Form::planned) {
    Plan plan;
    {
      py::gil_scoped_release release;
      plan = (self.*planned)(args...);
    }
    return py::cast(std::make_unique<PyPlan>(std::move(plan), std::move(kept), self.rank()));
  } else {
    Work work;
    {
      py::gil_scoped_release release;
      work = (self.*started)(args...);
    }
    return py::cast(std::make_unique<PyWork>(std::move(work), std::move(kept), self.rank()));
  }
}

// Defines `name` (blocking), `name_async` (returning a collective.Work) and
// `name_init` (returning a collective.Plan) from one factory:
// factory(FormTag<...>) gives each form's callable; the three share their
// argument checks.
template <class Factory, class... Extra>
void def_forms(py::class_<Communicator>& cls, const std::string& name, Factory factory,
               const Extra&... extra) {
  cls.def(name.c_str(), factory(FormTag<Form::blocking>{}), extra...);
  cls.def((name + "_async").c_str(), factory(FormTag<Form::started>{}), extra...);
  cls.def((name + "_init").c_str(), factory(FormTag<Form::planned>{}), extra...);
}

#define COMMON_ARGS                                                                        \
  py::arg("algorithm") = "auto", py::arg("timeout") = py::none(), py::arg("call_tag") = 0, \
  py::arg("dtype") = py::none()

CommonArgs common(const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag) {
  return CommonArgs{algorithm, timeout, call_tag};
}

}  // namespace

void bind_communicator(py::module_& module) {
  using Opt = std::optional<std::string>;
  py::class_<Communicator> cls(module, "Communicator", R"doc(
A group of MPI processes that run collectives together (the C++ Communicator).
Each collective comes in three forms: blocking (the GIL released meanwhile),
`_async` (returns a collective.Work) and `_init` (returns a collective.Plan
whose start() repeats it); send and recv in the first two. Buffers are anything with the
buffer protocol (numpy arrays, memoryview, array.array, bytearray), C-contiguous,
used in place without a copy. Counts and the element type come from the buffers;
dtype="bfloat16" reads 2-byte elements as bfloat16.)doc");

  cls.def_static(
         "world",
         [] {
           ensure_mpi();
           return Communicator::world();
         },
         "MPI_COMM_WORLD, duplicated (MPI is initialised on first use when no one has).")
      .def_static(
          "from_mpi4py",
          [](const py::object& comm) {
            ensure_mpi();
            const int handle = comm.attr("py2f")().cast<int>();
            return Communicator::from_mpi(handle);
          },
          py::arg("comm"), "Wraps an mpi4py communicator (duplicated: the caller keeps its own).")
      .def(
          "to_mpi4py",
          [](const Communicator& self) {
            int handle = 0;
            {
              py::gil_scoped_release release;
              handle = self.to_mpi();
            }
            return py::module_::import("mpi4py.MPI").attr("Intracomm").attr("f2py")(handle);
          },
          "A new mpi4py Intracomm with this communicator's group; the caller frees it (Free()).")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("is_null", &Communicator::is_null)
      .def(
          "split",
          [](const Communicator& self, int color, int key) {
            py::gil_scoped_release release;
            return self.split(color, key);
          },
          py::arg("color"), py::arg("key") = 0)
      .def(
          "subset",
          [](const Communicator& self, const std::vector<int>& ranks) {
            py::gil_scoped_release release;
            return self.subset(ranks);
          },
          py::arg("ranks"),
          "The listed ranks as a new communicator, ranked in the listed order; called by the "
          "listed ranks only (MPI_Comm_create_group, torch's new_group).")
      .def(
          "shrink",
          [](const Communicator& self) {
            py::gil_scoped_release release;
            return self.shrink();
          },
          "After a PeerFailedError: every survivor calls it and gets a communicator of the "
          "survivors, in their order here; this one stays failed.")
      .def_property_readonly("failed_ranks", &Communicator::failed_ranks,
                             "The ranks known to have failed, ascending; empty while healthy.")
      .def("free", [](Communicator& self) { self.free(); })
      .def(
          "abort", [](Communicator& self, const std::string& reason) { self.abort(reason); },
          py::arg("reason"))
      .def_property_readonly("aborted", &Communicator::aborted)
      .def_property_readonly(
          "last_algorithm",
          [](const Communicator& self) { return std::string(to_string(self.last_algorithm())); })
      .def_property_readonly("sequence_number", &Communicator::sequence_number)
      .def_property_readonly("node_count",
                             [](const Communicator& self) { return self.topology().node_count(); });

  def_forms(
      cls, "all_reduce",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const std::string& op, bool deterministic, const std::string& algorithm,
                  std::optional<double> timeout, std::uint64_t call_tag,
                  const Opt& dtype) -> py::object {
          const std::string operation = "all_reduce";
          const int rank = self.rank();
          const py::object out = recv.is_none() ? send : recv;
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", recv.is_none(), type);
          BufferView result = view_of(out, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          if (result.count != in.count) {
            wrong_length(operation, rank, "recv", result.count, in.count, "as many as send");
          }
          AllReduceOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.op = parse_op(op, operation, rank);
          options.deterministic = deterministic;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::all_reduce_async, &Communicator::all_reduce_init,
                              in.data, result.data, in.count, in.type, options);
          }
          run_released([&] { self.all_reduce(in.data, result.data, in.count, in.type, options); });
          return out;
        };
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("op") = "sum",
      py::arg("deterministic") = false, COMMON_ARGS,
      "recv = op over every rank's send (in place when recv is None or send itself); returns "
      "recv.");

  def_forms(
      cls, "reduce_scatter",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const std::string& op, bool deterministic, const std::string& algorithm,
                  std::optional<double> timeout, std::uint64_t call_tag,
                  const Opt& dtype) -> py::object {
          const std::string operation = "reduce_scatter";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          const auto size = static_cast<std::size_t>(self.size());
          if (in.count != result.count * size) {
            wrong_length(operation, rank, "send", in.count, result.count * size,
                         "size x recv's length");
          }
          ReduceScatterOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.op = parse_op(op, operation, rank);
          options.deterministic = deterministic;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::reduce_scatter_async,
                              &Communicator::reduce_scatter_init, in.data, result.data,
                              result.count, in.type, options);
          }
          run_released(
              [&] { self.reduce_scatter(in.data, result.data, result.count, in.type, options); });
          return recv;
        };
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("op") = "sum",
      py::arg("deterministic") = false, COMMON_ARGS,
      "recv = block `rank` of op over every rank's send (send holds size blocks of len(recv)).");

  def_forms(
      cls, "all_gather",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "all_gather";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          const auto size = static_cast<std::size_t>(self.size());
          if (result.count != in.count * size) {
            wrong_length(operation, rank, "recv", result.count, in.count * size,
                         "size x send's length");
          }
          AllGatherOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::all_gather_async, &Communicator::all_gather_init,
                              in.data, result.data, in.count, in.type, options);
          }
          run_released([&] { self.all_gather(in.data, result.data, in.count, in.type, options); });
          return recv;
        };
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), COMMON_ARGS,
      "recv = every rank's send, in rank order.");

  def_forms(
      cls, "broadcast",
      [](auto form) {
        return [](Communicator& self, const py::object& buffer, int root,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "broadcast";
          const int rank = self.rank();
          BufferView view = view_of(buffer, operation, rank, "buffer", rank != root,
                                    declared_type(dtype, operation, rank));
          BroadcastOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.root = root;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(view, buffer),
                              &Communicator::broadcast_async, &Communicator::broadcast_init,
                              view.data, view.count, view.type, options);
          }
          run_released([&] { self.broadcast(view.data, view.count, view.type, options); });
          return buffer;
        };
      },
      py::arg("buffer"), py::kw_only(), py::arg("root") = 0, COMMON_ARGS,
      "buffer = root's buffer on every rank.");

  def_forms(
      cls, "reduce",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv, int root,
                  const std::string& op, bool deterministic, const std::string& algorithm,
                  std::optional<double> timeout, std::uint64_t call_tag,
                  const Opt& dtype) -> py::object {
          const std::string operation = "reduce";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          const bool at_root = rank == root;
          const py::object out = recv.is_none() && at_root ? send : recv;
          BufferView in = view_of(send, operation, rank, "send", at_root && recv.is_none(), type);
          auto result = optional_view(at_root ? out : py::object(py::none()), operation, rank,
                                      "recv", true, type);
          if (result) {
            require_same_type(in, "send", *result, "recv", operation, rank);
            if (result->count != in.count) {
              wrong_length(operation, rank, "recv", result->count, in.count, "as many as send");
            }
          }
          ReduceOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.op = parse_op(op, operation, rank);
          options.root = root;
          options.deterministic = deterministic;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::reduce_async, &Communicator::reduce_init, in.data,
                              result ? result->data : nullptr, in.count, in.type, options);
          }
          run_released([&] {
            self.reduce(in.data, result ? result->data : nullptr, in.count, in.type, options);
          });
          return at_root ? out : py::object(py::none());
        };
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("root") = 0,
      py::arg("op") = "sum", py::arg("deterministic") = false, COMMON_ARGS,
      "On root, recv = op over every rank's send (in place when recv is None); returns recv on "
      "root, None elsewhere.");

  def_forms(
      cls, "barrier",
      [](auto form) {
        return [](Communicator& self, const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag) -> py::object {
          BarrierOptions options;
          apply(options, common(algorithm, timeout, call_tag), "barrier", self.rank());
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(), &Communicator::barrier_async,
                              &Communicator::barrier_init, options);
          }
          run_released([&] { self.barrier(options); });
          return py::none();
        };
      },
      py::kw_only(), py::arg("algorithm") = "auto", py::arg("timeout") = py::none(),
      py::arg("call_tag") = 0);

  def_forms(
      cls, "all_to_all",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "all_to_all";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          const py::object out = recv.is_none() ? send : recv;
          BufferView in = view_of(send, operation, rank, "send", recv.is_none(), type);
          BufferView result = view_of(out, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          const auto size = static_cast<std::size_t>(self.size());
          if (in.count % size != 0) {
            throw InvalidArgumentError(operation, rank,
                                       "send holds " + std::to_string(in.count) +
                                           " elements, not a multiple of the " +
                                           std::to_string(size) + " ranks");
          }
          if (result.count != in.count) {
            wrong_length(operation, rank, "recv", result.count, in.count, "as many as send");
          }
          AllToAllOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::all_to_all_async, &Communicator::all_to_all_init,
                              in.data, result.data, in.count / size, in.type, options);
          }
          run_released(
              [&] { self.all_to_all(in.data, result.data, in.count / size, in.type, options); });
          return out;
        };
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), COMMON_ARGS,
      "Block q of send goes to rank q, which stores it as block `rank` of recv (in place when "
      "recv is None).");

  def_forms(
      cls, "all_to_all_v",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const Counts& send_counts,
                  const std::optional<Counts>& send_displacements, const py::object& recv,
                  const Counts& recv_counts, const std::optional<Counts>& recv_displacements,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "all_to_all_v";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          const Counts sd = displacements_or_packed(send_displacements, send_counts);
          const Counts rd = displacements_or_packed(recv_displacements, recv_counts);
          AllToAllOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          require_blocks_fit(operation, rank, "send", in.count, send_counts, sd);
          require_blocks_fit(operation, rank, "recv", result.count, recv_counts, rd);
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::all_to_all_v_async, &Communicator::all_to_all_v_init,
                              in.data, send_counts, sd, result.data, recv_counts, rd, in.type,
                              options);
          }
          run_released([&] {
            self.all_to_all_v(in.data, send_counts, sd, result.data, recv_counts, rd, in.type,
                              options);
          });
          return recv;
        };
      },
      py::arg("send"), py::arg("send_counts"), py::arg("send_displacements"), py::arg("recv"),
      py::arg("recv_counts"), py::arg("recv_displacements"), py::kw_only(), COMMON_ARGS,
      "send_counts[q] elements from send_displacements[q] go to rank q (None: packed).");

  def_forms(
      cls, "all_gather_v",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const Counts& recv_counts, const std::optional<Counts>& recv_displacements,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "all_gather_v";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          const Counts rd = displacements_or_packed(recv_displacements, recv_counts);
          require_blocks_fit(operation, rank, "recv", result.count, recv_counts, rd);
          AllGatherOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::all_gather_v_async, &Communicator::all_gather_v_init,
                              in.data, in.count, result.data, recv_counts, rd, in.type, options);
          }
          run_released([&] {
            self.all_gather_v(in.data, in.count, result.data, recv_counts, rd, in.type, options);
          });
          return recv;
        };
      },
      py::arg("send"), py::arg("recv"), py::arg("recv_counts"),
      py::arg("recv_displacements") = py::none(), py::kw_only(), COMMON_ARGS,
      "Rank q's send lands at recv[recv_displacements[q]:] (None: packed in rank order).");

  def_forms(
      cls, "reduce_scatter_v",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const Counts& recv_counts, const std::string& op, bool deterministic,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "reduce_scatter_v";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          require_same_type(in, "send", result, "recv", operation, rank);
          std::size_t total = 0;
          for (std::size_t c : recv_counts) total += c;
          if (in.count < total)
            wrong_length(operation, rank, "send", in.count, total, "sum of recv_counts");
          const auto mine = static_cast<std::size_t>(rank);
          if (mine < recv_counts.size() && result.count < recv_counts[mine]) {
            wrong_length(operation, rank, "recv", result.count, recv_counts[mine],
                         "recv_counts[" + std::to_string(rank) + "]");
          }
          ReduceScatterOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.op = parse_op(op, operation, rank);
          options.deterministic = deterministic;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::reduce_scatter_v_async,
                              &Communicator::reduce_scatter_v_init, in.data, result.data,
                              recv_counts, in.type, options);
          }
          run_released(
              [&] { self.reduce_scatter_v(in.data, result.data, recv_counts, in.type, options); });
          return recv;
        };
      },
      py::arg("send"), py::arg("recv"), py::arg("recv_counts"), py::kw_only(),
      py::arg("op") = "sum", py::arg("deterministic") = false, COMMON_ARGS,
      "recv = block `rank` (recv_counts[rank] elements) of op over every rank's send.");

  def_forms(
      cls, "gather",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv, int root,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "gather";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          auto result = optional_view(rank == root ? recv : py::object(py::none()), operation, rank,
                                      "recv", true, type);
          if (rank == root && !result) {
            throw InvalidArgumentError(operation, rank, "recv is None on the root");
          }
          if (result) {
            require_same_type(in, "send", *result, "recv", operation, rank);
            const std::size_t needs = in.count * static_cast<std::size_t>(self.size());
            if (result->count != needs) {
              wrong_length(operation, rank, "recv", result->count, needs, "size x send's length");
            }
          }
          GatherOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.root = root;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::gather_async, &Communicator::gather_init, in.data,
                              result ? result->data : nullptr, in.count, in.type, options);
          }
          run_released([&] {
            self.gather(in.data, result ? result->data : nullptr, in.count, in.type, options);
          });
          return rank == root ? recv : py::object(py::none());
        };
      },
      py::arg("send"), py::arg("recv") = py::none(), py::kw_only(), py::arg("root") = 0,
      COMMON_ARGS, "On root, recv = every rank's send in rank order (recv ignored elsewhere).");

  def_forms(
      cls, "gather_v",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv,
                  const Counts& recv_counts, const std::optional<Counts>& recv_displacements,
                  int root, const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "gather_v";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView in = view_of(send, operation, rank, "send", false, type);
          auto result = optional_view(rank == root ? recv : py::object(py::none()), operation, rank,
                                      "recv", true, type);
          if (rank == root && !result) {
            throw InvalidArgumentError(operation, rank, "recv is None on the root");
          }
          const Counts rd = displacements_or_packed(recv_displacements, recv_counts);
          if (result) {
            require_same_type(in, "send", *result, "recv", operation, rank);
            require_blocks_fit(operation, rank, "recv", result->count, recv_counts, rd);
          }
          GatherOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.root = root;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(in, result, send, recv),
                              &Communicator::gather_v_async, &Communicator::gather_v_init, in.data,
                              in.count, result ? result->data : nullptr, recv_counts, rd, in.type,
                              options);
          }
          run_released([&] {
            self.gather_v(in.data, in.count, result ? result->data : nullptr, recv_counts, rd,
                          in.type, options);
          });
          return rank == root ? recv : py::object(py::none());
        };
      },
      py::arg("send"), py::arg("recv"), py::arg("recv_counts"),
      py::arg("recv_displacements") = py::none(), py::kw_only(), py::arg("root") = 0, COMMON_ARGS,
      "On root, rank q's send lands at recv[recv_displacements[q]:].");

  def_forms(
      cls, "scatter",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const py::object& recv, int root,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "scatter";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          auto in = optional_view(rank == root ? send : py::object(py::none()), operation, rank,
                                  "send", false, type);
          if (rank == root && !in)
            throw InvalidArgumentError(operation, rank, "send is None on the root");
          if (in) {
            require_same_type(*in, "send", result, "recv", operation, rank);
            const std::size_t needs = result.count * static_cast<std::size_t>(self.size());
            if (in->count != needs) {
              wrong_length(operation, rank, "send", in->count, needs, "size x recv's length");
            }
          }
          ScatterOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.root = root;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(result, in, send, recv),
                              &Communicator::scatter_async, &Communicator::scatter_init,
                              in ? in->data : nullptr, result.data, result.count, result.type,
                              options);
          }
          run_released([&] {
            self.scatter(in ? in->data : nullptr, result.data, result.count, result.type, options);
          });
          return recv;
        };
      },
      py::arg("send"), py::arg("recv"), py::kw_only(), py::arg("root") = 0, COMMON_ARGS,
      "recv = block `rank` of root's send (send ignored off the root; may be None there).");

  def_forms(
      cls, "scatter_v",
      [](auto form) {
        return [](Communicator& self, const py::object& send, const Counts& send_counts,
                  const std::optional<Counts>& send_displacements, const py::object& recv, int root,
                  const std::string& algorithm, std::optional<double> timeout,
                  std::uint64_t call_tag, const Opt& dtype) -> py::object {
          const std::string operation = "scatter_v";
          const int rank = self.rank();
          const auto type = declared_type(dtype, operation, rank);
          BufferView result = view_of(recv, operation, rank, "recv", true, type);
          auto in = optional_view(rank == root ? send : py::object(py::none()), operation, rank,
                                  "send", false, type);
          if (rank == root && !in)
            throw InvalidArgumentError(operation, rank, "send is None on the root");
          const Counts sd = displacements_or_packed(send_displacements, send_counts);
          if (in) {
            require_same_type(*in, "send", result, "recv", operation, rank);
            require_blocks_fit(operation, rank, "send", in->count, send_counts, sd);
          }
          ScatterOptions options;
          apply(options, common(algorithm, timeout, call_tag), operation, rank);
          options.root = root;
          if constexpr (is_started<decltype(form)>) {
            return start_form(decltype(form){}, self, keep(result, in, send, recv),
                              &Communicator::scatter_v_async, &Communicator::scatter_v_init,
                              in ? in->data : nullptr, send_counts, sd, result.data, result.count,
                              result.type, options);
          }
          run_released([&] {
            self.scatter_v(in ? in->data : nullptr, send_counts, sd, result.data, result.count,
                           result.type, options);
          });
          return recv;
        };
      },
      py::arg("send"), py::arg("send_counts"), py::arg("send_displacements"), py::arg("recv"),
      py::kw_only(), py::arg("root") = 0, COMMON_ARGS,
      "recv = root's send_counts[rank] elements from send_displacements[rank] (None: packed).");

  // Point-to-point: blocking and `_async` (the library has no persistent
  // form of send and recv).
  const auto point_to_point = [&](const char* name, bool sending, const char* doc) {
    const auto bind = [&](auto form) {
      return [sending](Communicator& self, const py::object& buffer, int peer, int tag,
                       std::optional<double> timeout, const Opt& dtype) -> py::object {
        const std::string operation = sending ? "send" : "recv";
        const int rank = self.rank();
        BufferView view = view_of(buffer, operation, rank, "buffer", !sending,
                                  declared_type(dtype, operation, rank));
        PointToPointOptions options;
        apply(options, common("auto", timeout, 0), operation, rank);
        options.tag = tag;
        if constexpr (is_started<decltype(form)>) {
          release_finished_orphans();
          Work work;
          {
            py::gil_scoped_release release;
            work = sending ? self.send_async(view.data, view.count, view.type, peer, options)
                           : self.recv_async(view.data, view.count, view.type, peer, options);
          }
          return py::cast(
              std::make_unique<PyWork>(std::move(work), keep(view, buffer), self.rank()));
        }
        run_released([&] {
          if (sending) {
            self.send(view.data, view.count, view.type, peer, options);
          } else {
            self.recv(view.data, view.count, view.type, peer, options);
          }
        });
        return sending ? py::object(py::none()) : buffer;
      };
    };
    const auto args =
        std::make_tuple(py::arg("buffer"), py::arg("peer"), py::kw_only(), py::arg("tag") = 0,
                        py::arg("timeout") = py::none(), py::arg("dtype") = py::none());
    std::apply([&](const auto&... a) { cls.def(name, bind(FormTag<Form::blocking>{}), a..., doc); },
               args);
    std::apply(
        [&](const auto&... a) {
          cls.def((std::string(name) + "_async").c_str(), bind(FormTag<Form::started>{}), a...,
                  doc);
        },
        args);
  };
  point_to_point("send", true,
                 "Sends buffer to peer; pairs with peer's k-th recv from this rank (synchronous: "
                 "returns, or its Work completes, once peer's recv accepted it).");
  point_to_point("recv", false,
                 "Receives into buffer from peer (count and type must match the send's); returns "
                 "buffer.");
}

}  // namespace collective::python
