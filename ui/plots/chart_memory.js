// Reward Studio's charts, kept as the user left them (loaded once in the page's <head>).
//
// Gradio mounts a new plot element for every new figure value (a keyed block), so Plotly's own
// `uirevision` cannot keep a zoom or a hidden series across the Runs view's live redraws. This
// wraps `Plotly.react` once the plotly bundle sets `window.Plotly`: per chart (its elem_id) and
// per `layout.uirevision` (the run, the panel, the axis mode) it remembers the user's axis
// ranges and the series hidden by a legend click, and draws each new figure with them. It also
// adds a "Download data as CSV" button to every chart, draws charts dark in the dark theme, and
// fits each chart to its box whenever the box's width changes. chart_links.js (loaded first)
// links charts: synced x-zoom and hover, and the expand button.
(() => {
  const memory = new Map(); // chart id -> { rev, axes: { xaxis: [a, b], ... }, hidden: Set }
  const AXIS = /^([xy]axis\d*)\.(range\[[01]\]|range|autorange)$/;
  const MINDRAG = 8; // Plotly's zoom box: pixels below which a drag is a click (dragbox.js)
  const MINZOOM = 20; // and below which one side of the box does not zoom its axis

  const chartId = (gd) => gd.closest(".block[id]")?.id || gd.closest("[id]")?.id;
  const seriesOf = (trace) => trace.legendgroup ?? trace.name;

  function entry(id, rev) {
    let m = memory.get(id);
    if (!m || m.rev !== rev) {
      m = { rev, axes: {}, hidden: new Set() };
      memory.set(id, m);
    }
    return m;
  }

  function restore(m, data, layout) {
    for (const [axis, range] of Object.entries(m.axes)) {
      if (range.length === 2 && range.every((v) => v !== null && v !== undefined)) {
        layout[axis] = { ...(layout[axis] || {}), range: [...range], autorange: false };
      }
    }
    for (const trace of data) {
      if (m.hidden.has(seriesOf(trace))) trace.visible = "legendonly";
    }
  }

  function rememberRelayout(m, event) {
    for (const [key, value] of Object.entries(event || {})) {
      const match = AXIS.exec(key);
      if (!match) continue;
      const [, axis, part] = match;
      if (part === "autorange") {
        if (value) delete m.axes[axis]; // a double click: back to the whole series
      } else if (part === "range") {
        m.axes[axis] = [...value];
      } else {
        const range = m.axes[axis] || [null, null];
        range[part === "range[0]" ? 0 : 1] = value;
        m.axes[axis] = range;
      }
    }
  }

  const dark = () => document.body.classList.contains("dark");
  const THEME_KEY = "reward-studio-theme";
  // The figures' own (light) colours, and the dark theme's.
  const COLORS = {
    light: { bg: "white", font: "#444", grid: "#e5e7eb", zero: "#d1d5db" },
    dark: { bg: "rgba(0,0,0,0)", font: "#e5e7eb", grid: "#374151", zero: "#4b5563" },
  };

  // The layout keys to set for a theme, as Plotly.relayout takes them.
  function themeUpdate(layout, isDark) {
    const c = COLORS[isDark ? "dark" : "light"];
    const update = { paper_bgcolor: c.bg, plot_bgcolor: c.bg, "font.color": c.font };
    for (const key of Object.keys(layout)) {
      if (/^[xy]axis\d*$/.test(key)) {
        update[`${key}.gridcolor`] = c.grid;
        update[`${key}.zerolinecolor`] = c.zero;
      }
    }
    return update;
  }

  function followTheme(layout) {
    if (!dark()) return;
    for (const [path, value] of Object.entries(themeUpdate(layout, true))) {
      const [head, tail] = path.split(".");
      if (tail) layout[head] = { ...(layout[head] || {}), [tail]: value };
      else layout[head] = value;
    }
  }

  // The header's switch: the page and every chart drawn in it change theme at once, and the
  // choice is kept in this browser (a ?__theme= in the address still decides first).
  function setTheme(isDark) {
    document.body.classList.toggle("dark", isDark);
    localStorage.setItem(THEME_KEY, isDark ? "dark" : "light");
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      if (!gd.layout || !window.Plotly) continue;
      try {
        // A chart in a hidden column may refuse: the others still change.
        Promise.resolve(window.Plotly.relayout(gd, themeUpdate(gd.layout, isDark))).catch(() => {});
      } catch (error) {
        console.warn("chart theme", error);
      }
    }
  }

  window.studioTheme = {
    toggle: () => setTheme(!dark()),
    restore: () => {
      const saved = localStorage.getItem(THEME_KEY);
      if (!new URLSearchParams(location.search).get("__theme") && saved) {
        setTheme(saved === "dark");
      }
    },
  };

  function cell(value) {
    const text = value === null || value === undefined ? "" : String(value);
    return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  }

  // The chart's series as drawn: one row per point (the raw values and, with smoothing, the
  // smoothed ones) with the run and the step, also by time (a trace's `customdata` holds each
  // point's step); traces without `meta.series` (markers of totals, bars) are left out.
  function csvOf(gd) {
    const x = gd.layout?.meta?.x_name || "x";
    const run = gd.layout?.meta?.run || "";
    const byStep = x === "step";
    const rows = [byStep ? ["run", "series", "step", "value"] : ["run", "series", "step", x, "value"]];
    for (const trace of gd.data || []) {
      const series = trace.meta?.series;
      if (!series) continue;
      (trace.x || []).forEach((xv, i) => {
        const y = trace.y?.[i];
        rows.push(byStep ? [run, series, xv, y] : [run, series, trace.customdata?.[i], xv, y]);
      });
    }
    return rows.map((row) => row.map(cell).join(",")).join("\n") + "\n";
  }

  function download(gd, id) {
    const blob = new Blob([csvOf(gd)], { type: "text/csv" });
    const a = document.createElement("a");
    const run = gd.layout?.meta?.run;
    a.href = URL.createObjectURL(blob);
    a.download = `${run ? `${run}-` : ""}${id || "chart"}.csv`;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => {
      URL.revokeObjectURL(a.href);
      a.remove();
    }, 1000);
  }

  // A drag-zoom that a live redraw outlives: Gradio puts a new chart in the old one's place
  // mid-drag and Plotly's drag ends with the old (detached) element, zooming nothing. The page
  // keeps where the drag began and, when it ends on a replaced chart, zooms the chart shown now
  // as Plotly would have (its zoom box rules: x only, y only or both, by the drag's shape).
  let drag = null;
  document.addEventListener(
    "pointerdown",
    (e) => {
      const gd = e.target.closest?.(".nsewdrag")?.closest(".js-plotly-plot");
      const zooming = gd && e.button === 0 && gd._fullLayout?.dragmode === "zoom";
      drag = zooming ? { gd, id: chartId(gd), x0: e.clientX, y0: e.clientY } : null;
    },
    true,
  );
  document.addEventListener(
    "pointerup",
    (e) => {
      const d = drag;
      drag = null;
      if (!d || d.gd.isConnected || !window.Plotly) return; // Plotly finished it itself
      const shown = document.getElementById(d.id)?.querySelector(".js-plotly-plot");
      const xa = shown?._fullLayout?.xaxis;
      const ya = shown?._fullLayout?.yaxis;
      if (!xa || !ya) return;
      const dx = Math.abs(e.clientX - d.x0);
      const dy = Math.abs(e.clientY - d.y0);
      if (dx < MINDRAG && dy < MINDRAG) return; // a click
      const xOnly = dy < Math.min(Math.max(dx * 0.6, MINDRAG), MINZOOM);
      const yOnly = !xOnly && dx < Math.min(dy * 0.6, MINZOOM);
      const at = shown.getBoundingClientRect();
      const update = {};
      if (!yOnly) {
        const [a, b] = [d.x0, e.clientX].map((x) => xa.p2r(x - at.left - xa._offset));
        update["xaxis.range"] = [Math.min(a, b), Math.max(a, b)];
      }
      if (!xOnly) {
        const [a, b] = [d.y0, e.clientY].map((y) => ya.p2r(y - at.top - ya._offset));
        update["yaxis.range"] = [Math.min(a, b), Math.max(a, b)];
      }
      Promise.resolve(window.Plotly.relayout(shown, update)).catch(() => {});
    },
    true,
  );

  // Plotly's own `responsive` follows the window's resize event only, and skips a hidden chart:
  // narrowed while another tab showed, a chart stayed 600 px wide in a 344 px box. One observer
  // watches every chart's box and fits the chart drawn in it when the box's width changes
  // (from 0 too: a tab shown again).
  const boxes = new WeakMap(); // chart box -> { gd: the plot drawn in it now, width }
  const resizer =
    window.ResizeObserver &&
    new ResizeObserver((entries) => {
      for (const { target, contentRect } of entries) {
        const box = boxes.get(target);
        const width = Math.round(contentRect.width);
        if (!box || !width || width === box.width || !box.gd.isConnected) continue;
        box.width = width;
        Promise.resolve(window.Plotly?.Plots?.resize(box.gd)).catch(() => {});
      }
    });

  function fitToBox(gd) {
    const target = gd.closest(".block") || gd.parentElement;
    if (!resizer || !target) return;
    const box = boxes.get(target);
    if (box) {
      box.gd = gd;
      return;
    }
    boxes.set(target, { gd, width: Math.round(target.getBoundingClientRect().width) });
    resizer.observe(target);
  }

  function wrap(Plotly) {
    if (!Plotly || Plotly.__studioWrapped) return Plotly;
    const react = Plotly.react;
    Plotly.react = function (gd, data, layout, config) {
      const id = chartId(gd);
      if (!id || !Array.isArray(data) || !layout) return react.call(this, gd, data, layout, config);
      const m = entry(id, String(layout.uirevision ?? ""));
      restore(m, data, layout);
      followTheme(layout);
      const links = window.studioChartLinks; // chart_links.js: synced zoom, hover, expand
      links?.before(gd, id, data, layout);
      const csvButton = {
        name: "csv",
        title: "Download data as CSV",
        icon: Plotly.Icons?.disk || { width: 1000, height: 1000, path: "M0 0h1000v1000H0z" },
        click: (div) => download(div, id),
      };
      const buttons = links ? [csvButton, links.button(id)] : [csvButton];
      config = { ...(config || {}), displaylogo: false, modeBarButtonsToAdd: buttons };
      const drawn = react.call(this, gd, data, layout, config);
      Promise.resolve(drawn).then(() => {
        fitToBox(gd);
        links?.after(gd, id);
        if (gd.__studioListening || typeof gd.on !== "function") return;
        gd.__studioListening = true;
        const rev = () => String(gd.layout?.uirevision ?? "");
        gd.on("plotly_relayout", (event) => rememberRelayout(entry(id, rev()), event));
        gd.on("plotly_restyle", () => {
          entry(id, rev()).hidden = new Set(
            (gd.data || []).filter((t) => t.visible === "legendonly").map(seriesOf),
          );
        });
      });
      return drawn;
    };
    Plotly.__studioWrapped = true;
    return Plotly;
  }

  let plotly = window.Plotly;
  if (plotly) wrap(plotly);
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: () => plotly,
    set: (value) => {
      plotly = wrap(value);
    },
  });
})();
