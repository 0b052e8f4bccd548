#include "io/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace shardopt::io {

namespace {

/// A qualitative palette (Tableau 10) for up to ten runs; more runs reuse it.
const char* const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

struct series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

/// Round tick values covering [lo, hi] (1, 2, 5 times a power of ten apart).
std::vector<double> linear_ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

/// One line plot as inline SVG with axes, ticks, labels and a legend.
std::string line_plot(const std::string& title, const std::string& x_label, const std::string& y_label,
                      bool log_y, const std::vector<series>& lines, bool markers) {
  const double width = 720, height = 380, left = 70, right = 190, top = 36, bottom = 50;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& s : lines)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (log_y && s.y[i] <= 0))
        continue;
      const double y = log_y ? std::log10(s.y[i]) : s.y[i];
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  std::ostringstream svg;
  svg << "<figure><svg xmlns='http://www.w3.org/2000/svg' class='plot' width='" << width << "' height='" << height
      << "' viewBox='0 0 " << width << ' ' << height << "' role='img' aria-label='" << escape(title) << "'>\n";
  svg << "<text x='" << left << "' y='22' class='title'>" << escape(title) << "</text>\n";
  if (!std::isfinite(x_lo)) {
    svg << "<text x='" << left + 20 << "' y='" << top + plot_h / 2 << "'>no data</text>\n";
    x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  }
  if (x_hi == x_lo)
    x_hi = x_lo + 1;
  if (y_hi == y_lo) {
    y_hi += log_y ? 0.5 : std::max(1e-12, std::abs(y_hi) * 0.05);
    y_lo -= log_y ? 0.5 : std::max(1e-12, std::abs(y_lo) * 0.05);
  }
  if (log_y) {
    y_lo = std::floor(y_lo);
    y_hi = std::ceil(y_hi);
  }
  const auto px = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  const auto py = [&](double y) { return top + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h; };
  // Axes, grid and ticks.
  svg << "<rect x='" << left << "' y='" << top << "' width='" << plot_w << "' height='" << plot_h
      << "' class='frame'/>\n";
  for (double t : linear_ticks(x_lo, x_hi)) {
    svg << "<line x1='" << px(t) << "' x2='" << px(t) << "' y1='" << top << "' y2='" << top + plot_h
        << "' class='grid'/><text x='" << px(t) << "' y='" << top + plot_h + 16 << "' class='tick' text-anchor='middle'>"
        << number(t) << "</text>\n";
  }
  std::vector<double> y_ticks;
  if (log_y) {
    const int decades = static_cast<int>(y_hi - y_lo);
    const int every = std::max(1, decades / 6);
    for (int e = static_cast<int>(y_lo); e <= static_cast<int>(y_hi); e += every)
      y_ticks.push_back(e);
  } else {
    y_ticks = linear_ticks(y_lo, y_hi);
  }
  for (double t : y_ticks) {
    const std::string label = log_y ? "1e" + number(t) : number(t);
    svg << "<line x1='" << left << "' x2='" << left + plot_w << "' y1='" << py(t) << "' y2='" << py(t)
        << "' class='grid'/><text x='" << left - 6 << "' y='" << py(t) + 4 << "' class='tick' text-anchor='end'>"
        << label << "</text>\n";
  }
  svg << "<text x='" << left + plot_w / 2 << "' y='" << height - 10 << "' text-anchor='middle' class='label'>"
      << escape(x_label) << "</text>\n";
  svg << "<text transform='translate(16," << top + plot_h / 2 << ") rotate(-90)' text-anchor='middle' class='label'>"
      << escape(y_label) << (log_y ? " (log scale)" : "") << "</text>\n";
  // One path per run, and the legend.
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& s = lines[k];
    const char* colour = palette[k % 10];
    std::ostringstream d;
    bool pen_down = false;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i]) || (log_y && s.y[i] <= 0)) {
        pen_down = false;
        continue;
      }
      d << (pen_down ? " L" : " M") << number(px(s.x[i])) << ',' << number(py(log_y ? std::log10(s.y[i]) : s.y[i]));
      pen_down = true;
    }
    svg << "<path class='run-line' data-run='" << escape(s.name) << "' d='" << d.str() << "' stroke='" << colour
        << "' fill='none' stroke-width='1.8'><title>" << escape(s.name) << "</title></path>\n";
    if (markers)
      for (std::size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
          svg << "<circle cx='" << number(px(s.x[i])) << "' cy='" << number(py(s.y[i])) << "' r='3' fill='" << colour
              << "'/>\n";
    const double ly = top + 8 + static_cast<double>(k) * 16;
    svg << "<line x1='" << left + plot_w + 12 << "' x2='" << left + plot_w + 30 << "' y1='" << ly << "' y2='" << ly
        << "' stroke='" << colour << "' stroke-width='3'/><text x='" << left + plot_w + 34 << "' y='" << ly + 4
        << "' class='legend'>" << escape(s.name.size() > 24 ? s.name.substr(0, 23) + "…" : s.name) << "</text>\n";
  }
  svg << "</svg></figure>\n";
  return svg.str();
}

std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<report_run>& runs) {
  const double bar_h = 18, left = 230, width = 720, top = 36;
  const double height = top + bar_h * 1.4 * static_cast<double>(runs.size()) + 40;
  double most = 0;
  for (const auto& r : runs)
    most = std::max(most, r.throughput);
  std::ostringstream svg;
  svg << "<figure><svg xmlns='http://www.w3.org/2000/svg' class='plot' width='" << width << "' height='" << height
      << "' viewBox='0 0 " << width << ' ' << height << "' role='img' aria-label='" << escape(title) << "'>\n"
      << "<text x='10' y='22' class='title'>" << escape(title) << "</text>\n";
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const double y = top + static_cast<double>(k) * bar_h * 1.4;
    const double w = most > 0 ? runs[k].throughput / most * (width - left - 110) : 0;
    const auto& name = runs[k].name;
    svg << "<text x='" << left - 8 << "' y='" << y + 13 << "' text-anchor='end' class='legend'>"
        << escape(name.size() > 34 ? name.substr(0, 33) + "…" : name)
        << "</text><rect class='bar' x='" << left << "' y='" << y << "' width='" << number(w) << "' height='" << bar_h
        << "' fill='" << palette[k % 10] << "'/><text x='" << left + w + 6 << "' y='" << y + 13 << "' class='tick'>"
        << number(runs[k].throughput) << ' ' << escape(unit) << "</text>\n";
  }
  svg << "</svg></figure>\n";
  return svg.str();
}

const char* const style = R"(
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; }
svg.plot { background: #fff; border: 1px solid #ddd; }
svg .title { font-size: 14px; font-weight: 600; }
svg .tick, svg .legend { font-size: 11px; fill: #333; }
svg .label { font-size: 12px; fill: #111; }
svg .frame { fill: none; stroke: #999; }
svg .grid { stroke: #eee; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; }
th { background: #f4f4f4; cursor: pointer; user-select: none; }
tr.run:hover { background: #f7fbff; cursor: pointer; }
tr.failed td { color: #b00; }
pre { margin: 0; font-size: 12px; }
)";

const char* const script = R"(
function sortTable(column) {
  const table = document.getElementById('runs');
  const body = table.tBodies[0];
  const pairs = [];
  for (const row of Array.from(body.querySelectorAll('tr.run'))) pairs.push([row, row.nextElementSibling]);
  const ascending = table.dataset.column === String(column) ? table.dataset.order !== 'asc' : true;
  table.dataset.column = String(column);
  table.dataset.order = ascending ? 'asc' : 'desc';
  pairs.sort((a, b) => {
    const x = a[0].cells[column].textContent, y = b[0].cells[column].textContent;
    const nx = parseFloat(x), ny = parseFloat(y);
    const c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
    return ascending ? c : -c;
  });
  for (const [row, detail] of pairs) { body.appendChild(row); body.appendChild(detail); }
}
function toggleConfig(row) {
  const detail = row.nextElementSibling;
  detail.hidden = !detail.hidden;
}
)";

} // namespace

std::string render_report(const std::vector<report_run>& runs, const std::string& title) {
  // The best objective over every run: the gap plots measure distance from it.
  double best = std::numeric_limits<double>::infinity();
  for (const auto& r : runs)
    for (double f : r.objective)
      if (std::isfinite(f))
        best = std::min(best, f);
  const double floor = std::isfinite(best) ? 1e-16 * std::max(1.0, std::abs(best)) : 0;
  std::vector<series> by_step, by_time, accuracy;
  for (const auto& r : runs) {
    series s{r.name, r.steps, {}};
    for (double f : r.objective)
      s.y.push_back(f - best + floor);
    by_step.push_back(s);
    by_time.push_back({r.name, r.seconds, s.y});
    series a{r.name, {}, {}};
    for (const auto& [t, value] : r.accuracy) {
      a.x.push_back(t);
      a.y.push_back(value);
    }
    accuracy.push_back(a);
  }
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>" << escape(title)
       << "</title><style>" << style << "</style></head><body>\n<h1>" << escape(title) << "</h1>\n<p>"
       << runs.size() << " runs. The gap plots show f - f<sub>best</sub> over all runs, where f is the full "
       << "objective for L-BFGS runs and the mean minibatch objective for parameter-server runs.</p>\n";
  html << "<h2>Convergence</h2><div class='plots'>\n"
       << line_plot("Gap to the best objective vs iterations", "iteration (L-BFGS) / global step (PS)",
                    "f - f_best", true, by_step, false)
       << line_plot("Gap to the best objective vs time", "seconds", "f - f_best", true, by_time, false)
       << "</div>\n<h2>Accuracy and throughput</h2><div class='plots'>\n"
       << line_plot("Test accuracy vs time", "seconds", "test accuracy", false, accuracy, true)
       << bar_chart("Throughput per run", "examples/s", runs) << "</div>\n";
  // The table: every column sortable, each row opens its configuration.
  std::vector<std::string> headers{"run", "status"};
  for (const auto& r : runs)
    for (const auto& [key, value] : r.columns)
      if (std::find(headers.begin(), headers.end(), key) == headers.end())
        headers.push_back(key);
  html << "<h2>Runs</h2><p>Click a column to sort, a row to see its configuration.</p>\n<table id='runs'><thead><tr>";
  for (std::size_t c = 0; c < headers.size(); ++c)
    html << "<th onclick='sortTable(" << c << ")'>" << escape(headers[c]) << "</th>";
  html << "</tr></thead><tbody>\n";
  for (const auto& r : runs) {
    html << "<tr class='run" << (r.status == "ok" ? "" : " failed") << "' onclick='toggleConfig(this)'><td>"
         << escape(r.name) << "</td><td>" << escape(r.status) << "</td>";
    for (std::size_t c = 2; c < headers.size(); ++c) {
      std::string cell;
      for (const auto& [key, value] : r.columns)
        if (key == headers[c])
          cell = value;
      html << "<td>" << escape(cell) << "</td>";
    }
    html << "</tr>\n<tr class='config' hidden><td colspan='" << headers.size() << "'><pre>" << escape(r.config)
         << "</pre></td></tr>\n";
  }
  html << "</tbody></table>\n<script>" << script << "</script>\n</body></html>\n";
  return html.str();
}

} // namespace shardopt::io
