// One plotly.js figure that stays mounted across Streamlit reruns (hierdp_core/ui/plotly_view.py).
//
// Streamlit calls the default export at every rerun with the new data. The first call draws
// the figure (Plotly.newPlot); a later one with a different figure updates it in place
// (Plotly.react), so the page never throws the plot away. A map whose only change is the
// colour values and the title (a new release: same areas, same colour scale) is recoloured
// directly, each area's fill computed the way plotly.js computes it (linear in RGB between
// the colour scale's stops, clamped to zmin..zmax): about 40 ms for 3,000 areas instead of
// 150-250 ms for plotly's own redraw of a geo subplot. Plotly's state (hover values, what a
// zoom redraws) is brought up to date when the pointer is on the map or its width changes.

const views = new WeakMap();  // parentElement -> its view

// plotly.js by URL, each loaded once per page and one at a time, so the plotly.js that sets
// window.Plotly is the one just loaded: the bundle of the dashboard's traces, or the full
// plotly.js for a figure with other traces (each view keeps the plotly.js that drew it).
const plotlyLoads = window.__hierdpPlotly ??= {byUrl: new Map(), last: Promise.resolve()};

function loadPlotly(url) {
  if (!plotlyLoads.byUrl.has(url)) {
    const loaded = plotlyLoads.last.catch(() => {}).then(() => new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        plotlyLoads.byUrl.delete(url);  // tried again by the next figure
        reject(new Error(`plotly.js could not be loaded from ${url}`));
      };
      document.head.appendChild(script);
    }));
    plotlyLoads.byUrl.set(url, loaded);
    plotlyLoads.last = loaded;
  }
  return plotlyLoads.byUrl.get(url);
}

const TYPED = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array,
               i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array};

function numbers(array) {
  if (!array || !array.bdata) return array;
  const bytes = Uint8Array.from(atob(array.bdata), c => c.charCodeAt(0));
  return new TYPED[array.dtype](bytes.buffer);
}

// What must be equal for a recolour: the figure without the values and the title.
function skeleton(figure) {
  const data = figure.data.map(({z, customdata, ...rest}) => rest);
  const {title, ...layout} = figure.layout;
  return JSON.stringify([data, layout]);
}

function rgba(colour) {
  const ctx = rgba.ctx ??= document.createElement("canvas").getContext("2d");
  ctx.fillStyle = "#000";
  ctx.fillStyle = colour;
  const hex = ctx.fillStyle;  // "#rrggbb", or "rgba(r, g, b, a)" when not opaque
  if (hex.startsWith("#")) return [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16)).concat(1);
  return hex.slice(hex.indexOf("(") + 1, -1).split(",").map(Number);
}

function fillOf(trace) {
  const stops = trace.colorscale.map(([at, colour]) => [at, rgba(colour)]);
  const lo = trace.zmin, hi = trace.zmax;
  return z => {
    const t = hi > lo ? Math.min(Math.max((z - lo) / (hi - lo), 0), 1) : 0;
    let k = 1;
    while (k < stops.length - 1 && stops[k][0] < t) k++;
    const [a0, c0] = stops[k - 1], [a1, c1] = stops[k];
    const f = a1 > a0 ? (t - a0) / (a1 - a0) : 0;
    const c = c0.map((v, i) => v + (c1[i] - v) * f);
    const [r, g, b] = c.slice(0, 3).map(Math.round);
    return c[3] < 1 ? `rgba(${r}, ${g}, ${b}, ${c[3]})` : `rgb(${r}, ${g}, ${b})`;
  };
}

// Recolour in place; false when this figure cannot be (plotly then redraws it).
function recolour(view, figure) {
  const traces = figure.data;
  if (traces.length !== 1 || traces[0].type !== "choropleth") return false;
  const z = numbers(traces[0].z);
  const paths = view.gd.querySelectorAll("path.choroplethlocation");
  if (paths.length !== z.length || !z.every(Number.isFinite)) return false;
  const fill = fillOf(traces[0]);
  // the fill attribute, as plotly.js paints it: its next redraw (another colour scale)
  // replaces these colours (an inline style would win over it and keep them)
  for (let i = 0; i < z.length; i++) paths[i].setAttribute("fill", fill(z[i]));
  const title = view.gd.querySelector(".gtitle");
  const text = figure.layout.title?.text ?? "";
  if (title && title.textContent !== text) title.textContent = text;
  view.pending = figure;  // plotly's own state follows when the pointer is on the map
  return true;
}

async function sync(view) {
  const figure = view.pending;
  if (!figure) return;
  view.pending = null;
  const drawn = await withBoundaries(figure);
  await view.Plotly.react(view.gd, drawn.data, drawn.layout, view.config);
}

// Boundaries by URL, fetched and parsed once per page (a map redrawn, or another map of the
// same areas, does not wait for them again).
const boundaries = window.__hierdpBoundaries ??= new Map();

function fetchBoundaries(url) {
  if (!boundaries.has(url)) {
    boundaries.set(url, fetch(url).then(response => {
      if (!response.ok) throw new Error(`boundaries ${url}: HTTP ${response.status}`);
      return response.json();
    }).catch(error => {
      boundaries.delete(url);  // fetched again next time (e.g. a file not yet written)
      throw error;
    }));
  }
  return boundaries.get(url);
}

async function withBoundaries(figure) {
  const data = await Promise.all(figure.data.map(async trace =>
    typeof trace.geojson === "string"
      ? {...trace, geojson: await fetchBoundaries(trace.geojson)} : trace));
  return {...figure, data};
}

async function draw(view, figure, config) {
  const Plotly = await loadPlotly(view.plotlyUrl);
  if (view.Plotly && view.Plotly !== Plotly) {  // drawn by the other plotly.js: start anew
    view.Plotly.purge(view.gd);
    view.shape = null;
  }
  view.Plotly = Plotly;
  const shape = skeleton(figure);
  if (view.shape === shape && recolour(view, figure)) return;
  view.pending = null;
  view.config = config;
  const drawn = await withBoundaries(figure);
  await view.Plotly.react(view.gd, drawn.data, drawn.layout, config);
  view.shape = shape;
}

// Fit the drawn figure to its element's new width (``width``, from the ResizeObserver: read
// without forcing a layout); an element out of view (no width) waits until it is shown, and
// a figure plotly.js already drew at this width is left as it is (the observer's first
// call comes after the first drawing: a second full drawing of a map would double the wait).
function resize(view, width) {
  const drawnWidth = view.gd._fullLayout?.width;
  if (drawnWidth !== undefined && Math.abs(drawnWidth - width) < 1) return;
  if (view.Plotly && view.gd.isConnected && width > 0 && view.gd.layout) {
    view.Plotly.Plots.resize(view.gd);
  }
}

// Resize on a change of the element's width only: its height is the figure's own, so the
// height changes that drawing a figure makes (0 to the figure's height) would otherwise
// redraw every figure once more as it appears (3,141 county paths on Results).
function observeWidth(view) {
  new ResizeObserver(entries => {
    const width = Math.round(entries[entries.length - 1].contentRect.width);
    if (width === view.width) return;
    view.width = width;
    then(view, () => sync(view).then(() => resize(view, width)));
  }).observe(view.gd);
}

// Run the view's next step after the ones before it; an error is shown in place of the
// figure and does not stop the steps after it.
function then(view, step) {
  view.queue = view.queue.then(step).catch(error => { view.gd.textContent = String(error); });
}

// A preload (no figure): plotly.js and the boundaries of the map the user is likely to open
// next, fetched as soon as the page has been painted; the element stays empty (marked, so a test
// waiting for every figure to be drawn can pass it by).
function preload(data, parentElement) {
  const view = views.get(parentElement);
  if (view) {  // Streamlit reuses a figure's element for the preload
    view.Plotly?.purge(view.gd);
    views.delete(parentElement);
    parentElement.replaceChildren();
  }
  if (!parentElement.querySelector(".hierdp-preload")) {
    const mark = document.createElement("div");
    mark.className = "hierdp-preload";
    parentElement.appendChild(mark);
  }
  // right after the next paint: the page shows first, and a click on it a moment later
  // finds plotly.js loaded (an idle callback could wait past that click)
  requestAnimationFrame(() => setTimeout(() => {
    loadPlotly(data.plotly).catch(() => {});  // a figure that needs it reports the error
    for (const url of data.prefetch ?? []) fetchBoundaries(url).catch(() => {});
  }, 0));
}

export default function ({data, parentElement}) {
  if (!data.figure) return preload(data, parentElement);
  let view = views.get(parentElement);
  if (!view) {
    parentElement.querySelector(".hierdp-preload")?.remove();
    const gd = document.createElement("div");
    gd.className = "hierdp-plotly";
    parentElement.appendChild(gd);
    view = {gd, queue: Promise.resolve(), latest: null};
    views.set(parentElement, view);
    for (const type of ["pointerenter", "pointermove", "pointerdown", "wheel"]) {
      gd.addEventListener(type, () => view.pending && then(view, () => sync(view)),
                          {capture: true, passive: true});
    }
    observeWidth(view);
  }
  if (view.key !== data.key) {  // Streamlit reuses this element for another figure
    view.key = data.key;
    view.shape = view.pending = null;
    view.Plotly?.purge(view.gd);  // the old figure goes at once
    view.gd.replaceChildren();
  }
  view.plotlyUrl = data.plotly;
  view.latest = [JSON.parse(data.figure), data.config];
  then(view, () => {
    if (!view.latest) return;  // a newer call already drew its figure
    const [figure, config] = view.latest;
    view.latest = null;
    return draw(view, figure, config);
  });
  for (const url of data.prefetch ?? []) fetchBoundaries(url).catch(() => {});
}
