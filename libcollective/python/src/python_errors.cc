#include "python_errors.h"

#include "collective/errors.h"

#include <pybind11/stl.h>

#include <vector>

namespace collective::python {
namespace {

namespace py = pybind11;

struct ExceptionClasses {
  PyObject* error = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* mismatch = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* communication = nullptr;
  PyObject* timeout = nullptr;
  PyObject* peer_failed = nullptr;
};

ExceptionClasses& classes() {
  static ExceptionClasses instance;  // made once, at import; never freed
  return instance;
}

PyObject* make_class(py::module_& module, const char* name, std::initializer_list<PyObject*> bases,
                     const char* doc) {
  py::tuple base_tuple(bases.size());
  std::size_t i = 0;
  for (PyObject* base : bases) base_tuple[i++] = py::reinterpret_borrow<py::object>(base);
  const std::string qualified = std::string("collective.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  module.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;
}

void raise(PyObject* cls, const Error& error, const std::vector<int>* failed_ranks = nullptr) {
  py::object instance = py::reinterpret_borrow<py::object>(cls)(error.what());
  instance.attr("operation") = error.operation();
  instance.attr("rank") = error.rank();
  instance.attr("cause") = error.cause();
  if (failed_ranks != nullptr) instance.attr("failed_ranks") = py::cast(*failed_ranks);
  PyErr_SetObject(cls, instance.ptr());
}

}  // namespace

void register_errors(py::module_& module) {
  ExceptionClasses& c = classes();
  c.error = make_class(module, "Error", {PyExc_RuntimeError},
                       "Base of the library's errors: operation, rank and cause as attributes.");
  c.invalid_argument = make_class(module, "InvalidArgumentError", {c.error, PyExc_ValueError},
                                  "A call's arguments were refused before any buffer was touched.");
  c.mismatch = make_class(module, "MismatchError", {c.invalid_argument},
                          "The ranks did not make the same call (docs/errors.md).");
  c.unsupported = make_class(module, "UnsupportedError", {c.error},
                             "No algorithm (or not the forced one) can serve the call.");
  c.communication = make_class(module, "CommunicationError", {c.error},
                               "A peer failed or the communicator is unusable (poisoned).");
  c.timeout = make_class(module, "TimeoutError", {c.communication, PyExc_TimeoutError},
                         "The call did not finish within its timeout.");
  c.peer_failed =
      make_class(module, "PeerFailedError", {c.communication},
                 "A rank of the call died; failed_ranks lists the dead ranks (docs/errors.md).");
  py::register_exception_translator([](std::exception_ptr pointer) {
    if (!pointer) return;
    const ExceptionClasses& k = classes();
    try {
      std::rethrow_exception(pointer);
    } catch (const MismatchError& error) {
      raise(k.mismatch, error);
    } catch (const InvalidArgumentError& error) {
      raise(k.invalid_argument, error);
    } catch (const UnsupportedError& error) {
      raise(k.unsupported, error);
    } catch (const PeerFailedError& error) {
      raise(k.peer_failed, error, &error.failed_ranks());
    } catch (const TimeoutError& error) {
      raise(k.timeout, error);
    } catch (const CommunicationError& error) {
      raise(k.communication, error);
    } catch (const Error& error) {
      raise(k.error, error);
    }
  });
}

}  // namespace collective::python
