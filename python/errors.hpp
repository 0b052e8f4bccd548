#pragma once

// Failures as Python exceptions, shared by the module's files: not found -> FileNotFoundError,
// runtime -> RuntimeError, invalid input -> ValueError, each with the command line's message.

#include "base/result.hpp"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <utility>

namespace shardopt::python {

namespace py = pybind11;

/// Raises a failure as the Python exception of its kind, with the CLI's message.
[[noreturn]] inline void raise(const failure& f) {
  switch (f.kind()) {
  case failure_kind::not_found:
    PyErr_SetString(PyExc_FileNotFoundError, f.message().c_str());
    throw py::error_already_set();
  case failure_kind::runtime:
    throw std::runtime_error(f.message());
  case failure_kind::invalid:
    break;
  }
  throw py::value_error(f.message());
}

/// The value of `r`, or its failure raised.
template <class T>
T value_or_raise(result<T> r) {
  if (!r)
    raise(r.error());
  return std::move(*r);
}

} // namespace shardopt::python
