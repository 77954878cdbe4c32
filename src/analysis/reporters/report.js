// The script of shakedown's HTML report (src/analysis/reporters/html.cpp inlines it after
// Chart.js). The page's data block holds every chart as a Chart.js configuration written by the
// C++ side; this script only hands them to Chart.js and adds what JSON cannot hold (functions):
// byte labels on log2 axes, a heatmap's row names, tooltips. When it is done it
// records on <body> how many charts it drew, which canvases stayed blank and any error, so a
// headless browser can check the page (tests/e2e/test_html_report.sh).
(function () {
  'use strict';
  const errors = [];
  window.addEventListener('error', (e) => errors.push(String(e.message)));

  function bytes(v) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (Math.round(v * 10) / 10) + ' ' + units[i];
  }

  function log2BytesAxis(axis) {
    axis.ticks = Object.assign({}, axis.ticks, {
      stepSize: 1,
      callback: (v) => (Number.isInteger(v) ? bytes(Math.pow(2, v)) : ''),
    });
  }

  function prepare(c) {
    const spec = c.spec;
    const options = (spec.options = spec.options || {});
    options.animation = false;
    options.responsive = true;
    options.maintainAspectRatio = false;
    const scales = (options.scales = options.scales || {});
    const plugins = (options.plugins = options.plugins || {});
    const tooltip = (plugins.tooltip = plugins.tooltip || {});
    if (c.x_log2_bytes) {
      log2BytesAxis((scales.x = scales.x || {}));
      tooltip.callbacks = {
        title: (items) => (items.length ? bytes(Math.pow(2, items[0].parsed.x)) : ''),
      };
    }
    if (c.heatmap) {
      // Floating bars [row, row + 1]: name the rows at their middles.
      const h = c.heatmap;
      const y = (scales.y = scales.y || {});
      y.afterBuildTicks = (scale) => {
        scale.ticks = h.rows.map((_, i) => ({ value: i + 0.5 }));
      };
      y.ticks = Object.assign({}, y.ticks, {
        autoSkip: true,
        callback: (v) => h.rows[Math.floor(v)] || '',
      });
      tooltip.callbacks = {
        title: (items) => (items.length ? h.rows[items[0].datasetIndex] + ', ' + h.cols[items[0].dataIndex] : ''),
        label: (item) => String(item.dataset.v[item.dataIndex]) + ' ' + h.unit,
      };
    }
    return spec;
  }

  function blank(canvas) {
    const ctx = canvas.getContext('2d');
    if (!ctx || canvas.width === 0 || canvas.height === 0) return true;
    const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < pixels.length; i += 4) {
      if (pixels[i] !== 0) return false;
    }
    return true;
  }

  function draw() {
    let drawn = 0;
    const blanks = [];
    try {
      const data = JSON.parse(document.getElementById('shakedown-data').textContent);
      for (const c of data.charts) {
        const canvas = document.getElementById(c.id);
        try {
          const chart = new Chart(canvas, prepare(c));
          drawn++;
          // Blank: nothing painted, or axes without a single data point.
          const points = chart.data.datasets.reduce((n, ds) => n + (ds.data ? ds.data.length : 0), 0);
          if (points === 0 || blank(canvas)) blanks.push(c.id);
        } catch (e) {
          errors.push(c.id + ': ' + e.message);
        }
      }
    } catch (e) {
      errors.push('report data: ' + e.message);
    }
    document.body.dataset.charts = String(drawn);
    document.body.dataset.blank = blanks.join(' ');
    document.body.dataset.errors = String(errors.length);
    const box = document.getElementById('report-errors');
    if (box && errors.length) {
      box.textContent = 'The report could not draw everything: ' + errors.join('; ');
      box.hidden = false;
    }
  }

  if (typeof Chart === 'undefined') {
    errors.push('Chart.js did not load');
    document.addEventListener('DOMContentLoaded', draw);
  } else if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', draw);
  } else {
    draw();
  }
})();
