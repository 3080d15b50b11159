// Reward Studio's charts read together (loaded in the page's <head> before chart_memory.js,
// whose wrapper of `Plotly.react` calls `before` and `after` below for every figure drawn).
//
// Charts of one link (`layout.meta.xlink`: the Runs view's panels of one run on one x axis)
// zoom their x axis as one, as W&B's panels do: a drag-zoom (or a double click back out) on
// one is applied to every other, and to each one drawn later (a live redraw, a panel that
// appears), until another run or another x axis is picked (another link). Hovering one shows
// the same x on every other: its hover label and the vertical spike line (the crosshair).
// Any chart can be expanded to fill most of the window, and back (its toolbar's button, a
// click beside it or Escape); it stays expanded across live redraws.
(() => {
  const zooms = new Map(); // link -> the x range the user zoomed to; null: the whole series
  const expanded = new Set(); // ids of the charts shown large
  const heights = new Map(); // chart id -> the height its figure asks for
  const EXPAND = "studio-expanded";
  const BACKDROP = "studio-backdrop";
  const TITLES = { expand: "Expand chart", back: "Back to the grid" };
  // Four corners pointing out (expand) or in (back), on a 1000 x 1000 grid.
  const ICONS = {
    expand:
      "M50 50h350v100H150v250H50zM600 50h350v350H850V150H600z" +
      "M50 600h100v250h250v100H50zM850 600h100v350H600V850h250z",
    back:
      "M400 50v350H50v-100h250V50zM600 50h100v250h250v100H600z" +
      "M50 600h350v350H300V700H50zM600 600h350v100H700v250H600z",
  };

  const linkOf = (gd) => gd?.layout?.meta?.xlink;
  const peers = (gd) =>
    [...document.querySelectorAll(".js-plotly-plot")].filter(
      (other) =>
        other !== gd && other.isConnected && other._fullLayout && linkOf(other) === linkOf(gd),
    );
  const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const bigHeight = () => Math.max(320, Math.round(window.innerHeight * 0.88 - 24));

  const style = document.createElement("style");
  style.textContent = `
    .${EXPAND} { position: fixed !important; inset: 5vh 3vw !important; z-index: 1001 !important;
      width: auto !important; height: auto !important; min-width: 0 !important;
      background: var(--block-background-fill, white); border-radius: 8px; padding: 8px;
      box-shadow: 0 12px 48px rgba(0, 0, 0, 0.4); overflow: auto; }
    .${BACKDROP} { position: fixed; inset: 0; z-index: 1000; background: rgba(0, 0, 0, 0.45); }`;
  document.head.appendChild(style);

  // The zoom of a chart's link wins over the chart's own memory: a panel drawn after the zoom
  // (or hidden when it happened) takes the range the others show.
  function before(gd, id, data, layout) {
    const link = layout.meta?.xlink;
    if (link && zooms.has(link)) {
      const range = zooms.get(link);
      const xaxis = { ...(layout.xaxis || {}) };
      if (range) Object.assign(xaxis, { range: [...range], autorange: false });
      else {
        delete xaxis.range;
        xaxis.autorange = true;
      }
      layout.xaxis = xaxis;
    }
    heights.set(id, layout.height);
    if (expanded.has(id)) layout.height = bigHeight();
  }

  function relayoutPeers(gd, update) {
    for (const other of peers(gd)) {
      Promise.resolve(window.Plotly.relayout(other, update)).catch(() => {});
    }
  }

  function followZoom(gd, event) {
    const link = linkOf(gd);
    const keys = Object.keys(event || {});
    if (!link || !keys.some((k) => k.startsWith("xaxis.range") || k === "xaxis.autorange")) return;
    const range = event["xaxis.autorange"] ? null : [...(gd.layout.xaxis?.range || [])];
    if (range && range.length !== 2) return;
    if (zooms.has(link) && same(zooms.get(link), range)) return; // a peer following: done
    zooms.set(link, range);
    relayoutPeers(gd, range ? { "xaxis.range": range } : { "xaxis.autorange": true });
  }

  // Only the pointer's own hover is followed: a peer hovered from here (its event carries our
  // {xval}, not a DOM event) must not hover, or unhover, the others in turn.
  const byPointer = (event) => event?.event instanceof Event;

  // Each peer is hovered at the x of the point hovered here (the step under the cursor, which
  // the other panels have points at too), in the peer's own axis units (milliseconds on a
  // date axis), firing no hover event of its own.
  function followHover(gd, event) {
    const x = event?.points?.[0]?.x;
    if (!byPointer(event) || x === undefined || !window.Plotly?.Fx) return;
    for (const other of peers(gd)) {
      try {
        const xval = other._fullLayout.xaxis.d2c(x);
        window.Plotly.Fx.hover(other, { xval }, "xy", true);
      } catch (error) {
        console.warn("chart hover", error);
      }
    }
  }

  function unhoverPeers(gd, event) {
    if (!byPointer(event)) return;
    for (const other of peers(gd)) window.Plotly?.Fx?.unhover(other);
  }

  function backdrop() {
    let el = document.querySelector(`.${BACKDROP}`);
    if (!el && expanded.size) {
      el = document.createElement("div");
      el.className = BACKDROP;
      el.addEventListener("click", collapseAll);
      document.body.appendChild(el);
    }
    if (el && !expanded.size) el.remove();
  }

  function setExpanded(id, on) {
    const block = document.getElementById(id);
    const gd = block?.querySelector(".js-plotly-plot");
    if (on) expanded.add(id);
    else expanded.delete(id);
    if (block) {
      // The chart's place in the grid keeps its height while the chart is out of it.
      const holder = block.parentElement;
      if (holder) holder.style.minHeight = on ? `${holder.getBoundingClientRect().height}px` : "";
      block.classList.toggle(EXPAND, on);
    }
    backdrop();
    // The toolbar drawn before says what the button does now (the next draw builds it anew).
    const titles = [TITLES.expand, TITLES.back].map((t) => `.modebar-btn[data-title='${t}']`);
    block?.querySelector(titles.join())?.setAttribute("data-title", TITLES[on ? "back" : "expand"]);
    if (gd?._fullLayout && window.Plotly) {
      const height = on ? bigHeight() : heights.get(id) || gd._fullLayout.height;
      // autosize kept on: a relayout of the height alone turns it off and pins the width.
      Promise.resolve(window.Plotly.relayout(gd, { height, width: null, autosize: true }))
        .then(() => window.Plotly.Plots.resize(gd))
        .catch(() => {});
    }
  }

  function collapseAll() {
    for (const id of [...expanded]) setExpanded(id, false);
  }

  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && expanded.size) collapseAll();
  });

  // The expand button of a chart's toolbar (Plotly's own icons have no "expand").
  function button(id) {
    const large = expanded.has(id);
    return {
      name: "expand",
      title: TITLES[large ? "back" : "expand"],
      icon: {
        width: 1000,
        height: 1000,
        path: large ? ICONS.back : ICONS.expand,
      },
      click: () => setExpanded(id, !expanded.has(id)),
    };
  }

  function after(gd, id) {
    const block = document.getElementById(id);
    if (block) block.classList.toggle(EXPAND, expanded.has(id));
    if (gd.__studioLinked || typeof gd.on !== "function") return;
    gd.__studioLinked = true;
    gd.on("plotly_relayout", (event) => followZoom(gd, event));
    gd.on("plotly_hover", (event) => followHover(gd, event));
    gd.on("plotly_unhover", (event) => unhoverPeers(gd, event));
  }

  window.studioChartLinks = { before, after, button, expanded: () => [...expanded] };
})();
