// shardopt._core: the Python module's native half. It runs `shardopt train` (apps::train) on a
// thread of its own while the calling Python thread, with the GIL released, waits for it: the
// iteration callback runs on the Python thread, Ctrl-C stops the run at its next pass over the data,
// and failures arrive as Python exceptions by kind. shardopt/__init__.py turns keyword arguments
// and arrays into what this module takes, and the report into a result object.

#include "apps/commands/eval.hpp"
#include "apps/options/keywords.hpp"
#include "apps/commands/train/train.hpp"
#include "io/arrays.hpp"
#include "io/model_file.hpp"
#include "python/errors.hpp"
#include "python/reading.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace py = pybind11;

namespace shardopt::python {

namespace {


template <class T>
io::strided_matrix<T> strided(const py::array& a, const std::string& name) {
  const auto size = static_cast<py::ssize_t>(sizeof(T));
  if (a.strides(0) % size != 0 || a.strides(1) % size != 0)
    throw py::value_error(name + ": strides that are not whole elements; pass np.ascontiguousarray(" +
                          name + ")");
  return {static_cast<const T*>(a.data()), a.shape(0), a.shape(1), a.strides(0) / size, a.strides(1) / size};
}

template <class I>
result<io::raw_dataset> csr_dataset(const py::tuple& csr, const double* labels, std::int64_t count,
                                    const std::string& x_name, const std::string& y_name) {
  const auto values = csr[1].cast<py::array>();
  const auto indices = csr[2].cast<py::array_t<I, py::array::c_style>>();
  const auto indptr = csr[3].cast<py::array_t<I, py::array::c_style>>();
  const auto shape = csr[4].cast<std::pair<std::int64_t, std::int64_t>>();
  if (indptr.size() != shape.first + 1)
    throw py::value_error(x_name + ".indptr has " + std::to_string(indptr.size()) + " entries, not rows + 1 = " +
                          std::to_string(shape.first + 1));
  const auto stored = static_cast<std::int64_t>(indices.size());
  if (values.size() != stored || (shape.first >= 0 && indptr.size() > 0 && indptr.data()[shape.first] > stored))
    throw py::value_error(x_name + ": indptr, indices and data do not agree on the stored entries");
  if (py::isinstance<py::array_t<float>>(values)) {
    const auto v = values.cast<py::array_t<float, py::array::c_style>>();
    return io::dataset_from_arrays(io::csr_arrays<I, float>{v.data(), indices.data(), indptr.data(), shape.first, shape.second},
                                   labels, count, x_name, y_name);
  }
  const auto v = values.cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
  return io::dataset_from_arrays(io::csr_arrays<I, double>{v.data(), indices.data(), indptr.data(), shape.first, shape.second},
                                 labels, count, x_name, y_name);
}

/// Keeps a Python object alive from C++: released with the GIL held, on whatever thread lets go of
/// it last (the training thread, while the calling thread waits with the GIL released).
std::shared_ptr<void> keep_alive(const py::object& object) {
  return std::shared_ptr<void>(new py::object(object), [](void* held) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(held);
  });
}

/// A dataset from what __init__.py hands over: a 2-D float32 or float64 array in any order, or a
/// tuple ("csr", data, indices, indptr, (rows, cols)); labels a 1-D float64 array (or None for
/// predictions: zeros). A float32 array in C order is used where it is, kept alive by the dataset
/// (the caller may drop it); the others are copied once, into shardopt's float32 rows.
io::raw_dataset dataset(const py::object& x, const py::object& y, const std::string& x_name,
                        const std::string& y_name) {
  using label_array = py::array_t<double, py::array::c_style | py::array::forcecast>;
  std::int64_t rows = 0;
  if (py::isinstance<py::tuple>(x))
    rows = x.cast<py::tuple>()[4].cast<std::pair<std::int64_t, std::int64_t>>().first;
  else
    rows = x.cast<py::array>().ndim() > 0 ? x.cast<py::array>().shape(0) : 0;
  label_array labels = y.is_none() ? label_array(rows) : y.cast<label_array>();
  if (y.is_none())
    std::fill(labels.mutable_data(), labels.mutable_data() + rows, 0.0);
  const double* l = labels.data();
  const auto count = static_cast<std::int64_t>(labels.size());
  if (py::isinstance<py::tuple>(x)) {
    const auto csr = x.cast<py::tuple>();
    if (py::isinstance<py::array_t<std::int32_t>>(csr[2]))
      return value_or_raise(csr_dataset<std::int32_t>(csr, l, count, x_name, y_name));
    return value_or_raise(csr_dataset<std::int64_t>(csr, l, count, x_name, y_name));
  }
  const auto a = x.cast<py::array>();
  if (a.ndim() != 2)
    throw py::value_error(x_name + " must be 2-D (examples x features), got " + std::to_string(a.ndim()) +
                          " dimensions");
  // isinstance compares dtypes by equivalence (an unpickled float64 dtype is another object).
  if (py::isinstance<py::array_t<float>>(a) && (a.flags() & py::array::c_style) && a.shape(1) > 0)
    return value_or_raise(io::dataset_over_array(static_cast<const float*>(a.data()), a.shape(0),
                                                 a.shape(1), keep_alive(a), l, count, x_name, y_name));
  if (py::isinstance<py::array_t<float>>(a))
    return value_or_raise(io::dataset_from_arrays(strided<float>(a, x_name), l, count, x_name, y_name));
  if (py::isinstance<py::array_t<double>>(a))
    return value_or_raise(io::dataset_from_arrays(strided<double>(a, x_name), l, count, x_name, y_name));
  throw py::value_error(x_name + " must hold float32 or float64 values");
}

/// A (rows x cols) float64 NumPy array holding a copy of `m`.
py::array_t<double> matrix(const Eigen::MatrixXd& m) {
  py::array_t<double> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  auto view = out.mutable_unchecked<2>();
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index k = 0; k < m.cols(); ++k)
      view(i, k) = m(i, k);
  return out;
}

/// Checks that `raw` (features from the array named `x_name`) fits the model, naming that array
/// (a dataset from arrays is named after its labels, for label errors).
void check_width(io::raw_dataset& raw, const io::saved_model& model, const std::string& x_name) {
  auto named = std::exchange(raw.source, x_name);
  auto ok = io::match_features(raw, model.shape.features, "the model");
  raw.source = std::move(named);
  if (!ok)
    raise(ok.error());
}

/// What the training thread and the Python thread share.
struct bridge {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<std::string> row;   ///< a metrics row waiting for the callback (JSON text)
  std::optional<bool> answer;       ///< the callback's answer: go on?
  std::optional<result<apps::train_outcome>> outcome;
};

/// A finished run's report, as Python sees it.
struct report {
  std::string summary;                    ///< JSON object
  std::string history;                    ///< JSON array of the metrics rows
  std::shared_ptr<io::saved_model> model;
};

/// Runs `train` with `keywords` ((name, value) pairs) on a thread of its own; returns (report,
/// interrupted). See the file's comment.
py::tuple train(const std::vector<std::pair<std::string, py::object>>& keywords, const py::object& x,
                const py::object& y, const py::object& x_test, const py::object& y_test,
                const py::object& callback) {
  std::vector<apps::keyword> parsed;
  for (const auto& [name, value] : keywords) {
    toml::value v;
    if (py::isinstance<py::bool_>(value))
      v = value.cast<bool>();
    else if (py::isinstance<py::int_>(value))
      v = value.cast<std::int64_t>();
    else if (py::isinstance<py::float_>(value))
      v = value.cast<double>();
    else if (py::isinstance<py::str>(value))
      v = value.cast<std::string>();
    else
      throw py::type_error("option '" + name + "': expected a bool, int, float or str, got " +
                           py::str(py::type::of(value)).cast<std::string>());
    parsed.push_back({name, std::move(v)});
  }
  const auto options = value_or_raise(apps::train_options_from(parsed));
  std::optional<apps::memory_data> memory;
  if (!x.is_none()) {
    memory.emplace();
    memory->train = dataset(x, y, "X", "y");
    if (!x_test.is_none())
      memory->test = dataset(x_test, y_test, "X_test", "y_test");
  }

  std::atomic<bool> interrupt{false};
  bridge shared;
  apps::train_controls controls;
  controls.data = memory ? &*memory : nullptr;
  controls.interrupt = &interrupt;
  controls.keep_history = true;
  if (!callback.is_none())
    controls.on_row = [&shared](const nlohmann::json& row) {
      std::unique_lock lock{shared.mutex};
      shared.row = row.dump();
      shared.changed.notify_all();
      shared.changed.wait(lock, [&] { return shared.answer.has_value(); });
      const bool go_on = *shared.answer;
      shared.answer.reset();
      return go_on;
    };

  std::optional<py::error_already_set> raised;  // by the callback, or Ctrl-C's KeyboardInterrupt
  bool interrupted = false;
  const auto loads = py::module_::import("json").attr("loads");
  {
    py::gil_scoped_release released;
    std::thread worker{[&] {
      result<apps::train_outcome> outcome = failure{"no result", failure_kind::runtime};
      try {
        outcome = apps::train_watched(options, controls);
      } catch (const std::bad_alloc&) {
        outcome = failure{"out of memory", failure_kind::runtime};
      } catch (const std::exception& e) {
        outcome = failure{e.what(), failure_kind::runtime};
      } catch (...) {
        outcome = failure{"unknown exception", failure_kind::runtime};
      }
      std::lock_guard lock{shared.mutex};
      shared.outcome.emplace(std::move(outcome));
      shared.changed.notify_all();
    }};
    // Should anything below throw, the run is stopped, a waiting row answered and the thread
    // joined before the exception leaves (a joinable std::thread must not be destroyed).
    struct stop_and_join {
      std::thread& worker;
      bridge& shared;
      std::atomic<bool>& interrupt;
      ~stop_and_join() {
        if (!worker.joinable())
          return;
        interrupt = true;
        {
          std::lock_guard lock{shared.mutex};
          shared.answer = false;
          shared.changed.notify_all();
        }
        worker.join();
      }
    } guard{worker, shared, interrupt};
    std::unique_lock lock{shared.mutex};
    while (!shared.outcome) {
      // Wake for a row, the end, or every 50 ms to let Python's signal handlers run.
      shared.changed.wait_for(lock, std::chrono::milliseconds{50},
                              [&] { return shared.outcome || shared.row; });
      std::optional<std::string> row = std::move(shared.row);
      shared.row.reset();
      lock.unlock();
      bool go_on = !raised;  // after a callback raised, the run stops
      {
        py::gil_scoped_acquire held;
        if (row && !raised) {
          try {
            const py::object answer = callback(loads(*row));
            go_on = !(py::isinstance<py::bool_>(answer) && !answer.cast<bool>());
          } catch (py::error_already_set& e) {
            // Ctrl-C lands in whatever Python code runs, often the callback: still an interrupt.
            if (e.matches(PyExc_KeyboardInterrupt)) {
              interrupt = true;
              interrupted = true;
            }
            raised = std::move(e);
            go_on = false;
          }
        }
        if (PyErr_CheckSignals() != 0) {
          // A signal handler raised: the run stops. Ctrl-C's KeyboardInterrupt returns the result
          // so far; any other exception (a SIGTERM handler's SystemExit, ...) is raised as it is.
          py::error_already_set e;
          interrupt = true;
          interrupted = interrupted || e.matches(PyExc_KeyboardInterrupt);
          if (!raised)
            raised = std::move(e);
        }
      }
      lock.lock();
      if (row) {
        shared.answer = go_on;
        shared.changed.notify_all();
      }
    }
    lock.unlock();
    worker.join();
  }
  if (raised && !interrupted)
    throw std::move(*raised);  // the callback's own exception, as it raised it
  auto& outcome = *shared.outcome;
  if (!outcome) {
    if (interrupted)
      throw std::move(*raised);
    raise(outcome.error());
  }
  if (outcome->metrics_error)
    raise(*outcome->metrics_error);
  report out;
  out.summary = outcome->summary.dump();
  out.history = nlohmann::json(outcome->history).dump();
  out.model = std::make_shared<io::saved_model>(std::move(outcome->model));
  return py::make_tuple(std::move(out), interrupted);
}

/// A view of `count` doubles of the model's theta from `offset`, shaped `shape` with `strides`
/// (bytes), that keeps the model alive.
py::array theta_view(const py::object& owner, std::int64_t offset, std::vector<py::ssize_t> shape,
                     std::vector<py::ssize_t> strides) {
  auto& model = owner.cast<io::saved_model&>();
  return py::array_t<double>(std::move(shape), std::move(strides), model.theta.data() + offset, owner);
}

} // namespace

} // namespace shardopt::python

PYBIND11_MODULE(_core, m) {
  using namespace shardopt;
  using python::report;
  m.doc() = "shardopt's native module; use the shardopt package";

  py::class_<report>(m, "Report")
    .def_readonly("summary", &report::summary)
    .def_readonly("history", &report::history)
    .def_readonly("model", &report::model);

  py::class_<io::saved_model, std::shared_ptr<io::saved_model>>(m, "Model", R"(A trained model: what
`train(save=...)` writes and `load_model` reads. `theta` and the `layers` are views of its parameters
(no copy).)")
    .def_property_readonly("theta",
                           [](const py::object& self) {
                             const auto n = static_cast<py::ssize_t>(self.cast<io::saved_model&>().theta.size());
                             return python::theta_view(self, 0, {n}, {sizeof(double)});
                           },
                           "The flat parameter vector: layer by layer, weights (column-major) then biases")
    .def_property_readonly("layers",
                           [](const py::object& self) {
                             py::list out;
                             for (const auto& layer : self.cast<io::saved_model&>().shape.layers()) {
                               const auto d = static_cast<py::ssize_t>(sizeof(double));
                               auto w = python::theta_view(self, layer.weights, {layer.in, layer.out},
                                                           {d, d * layer.in});
                               auto b = python::theta_view(self, layer.biases, {layer.out}, {d});
                               out.append(py::make_tuple(w, b));
                             }
                             return out;
                           },
                           "Per dense layer, (W, b): W is (inputs x outputs), b (outputs,); views of theta")
    .def_property_readonly("kind", [](const io::saved_model& s) { return std::string{model::to_string(s.shape.kind)}; })
    .def_property_readonly("architecture", [](const io::saved_model& s) { return model::describe(s.shape); })
    .def_property_readonly("features", [](const io::saved_model& s) { return s.shape.features; })
    .def_property_readonly("outputs", [](const io::saved_model& s) { return s.shape.outputs; })
    .def_property_readonly("hidden", [](const io::saved_model& s) { return s.shape.hidden; })
    .def_property_readonly("classes", [](const io::saved_model& s) { return s.labels.classes; },
                           "The class labels as the training data spelled them (empty for linear)")
    .def_property_readonly("lam", [](const io::saved_model& s) { return s.lambda; })
    .def_property_readonly("hashing",
                           [](const io::saved_model& s) -> py::object {
                             if (!s.hashing.enabled())
                               return py::none();
                             py::dict out;
                             out["hash_bits"] = s.hashing.bits;
                             out["pairs"] = s.hashing.pairs;
                             out["categorical"] = s.hashing.categorical;
                             out["text"] = s.hashing.text;
                             out["word_pairs"] = s.hashing.word_pairs;
                             out["columns"] = s.hashing.columns;
                             return std::move(out);
                           },
                           "How raw input was hashed into the features (train's options), or None")
    .def("_predict",
         [](const io::saved_model& s, const py::object& x) {
           auto raw = python::dataset(x, py::none(), "X", "y");
           python::check_width(raw, s, "X");
           const auto predicted = python::value_or_raise(apps::predict(s, std::move(raw)));
           py::array_t<double> out(predicted.size());
           std::copy(predicted.data(), predicted.data() + predicted.size(), out.mutable_data());
           return out;
         })
    .def("_scores",
         [](const io::saved_model& s, const py::object& x) {
           auto raw = python::dataset(x, py::none(), "X", "y");
           python::check_width(raw, s, "X");
           const Eigen::MatrixXd z = python::value_or_raise(apps::decision_values(s, std::move(raw)));
           return python::matrix(z);
         })
    .def("_proba",
         [](const io::saved_model& s, const py::object& x) {
           auto raw = python::dataset(x, py::none(), "X", "y");
           python::check_width(raw, s, "X");
           const Eigen::MatrixXd z = python::value_or_raise(apps::decision_values(s, std::move(raw)));
           const Eigen::MatrixXd p = apps::probabilities(s.shape, z);
           if (p.size() == 0 && z.rows() > 0)
             throw py::value_error("a " + std::string{model::to_string(s.shape.kind)} + " model gives no probabilities");
           return python::matrix(p);
         })
    .def("_evaluate",
         [](const io::saved_model& s, const py::object& x, const py::object& y) {
           auto raw = python::dataset(x, y, "X", "y");
           python::check_width(raw, s, "X");
           auto data = python::value_or_raise(apps::prepare_eval_data(std::move(raw), s));
           return apps::evaluate_model(s, std::move(data)).dump();
         })
    .def("save",
         [](const io::saved_model& s, const std::string& path) {
           if (auto ok = io::save_model(path, s); !ok)
             python::raise(ok.error());
         },
         py::arg("path"), "Writes the model file `shardopt eval --model-file` and `load_model` read");

  m.def("load_model",
        [](const std::string& path) {
          return std::make_shared<io::saved_model>(python::value_or_raise(io::load_model(path)));
        },
        py::arg("path"), "Reads a model file written by `shardopt train --save` or `Model.save`");
  m.def("_hash_text", &python::hash_text, py::arg("texts"), py::arg("column"), py::arg("bits"),
        py::arg("word_pairs"));
  m.def("_read_data", &python::read_data, py::arg("path"), py::arg("format"), py::arg("label_column"),
        py::arg("header"), py::arg("limit"), py::arg("hash_bits"), py::arg("pairs"), py::arg("categorical"),
        py::arg("text"), py::arg("word_pairs"), py::arg("model").none(true));
  m.def("_train", &python::train);
  m.def("_is_option", &apps::is_train_option);
}
