// The ATTENTION tab: the probe sentences' attention at every evaluation of a run.
//
// TensorBoard loads this module in an iframe whose base URL is /data/plugin/attention/ and
// calls render(). Everything is plain DOM and SVG: no library, no build step, no network
// beyond the plugin's own routes (plugin.py). Three views of one run, step, sentence and kind:
//   map    one layer, one head or the mean of heads: a heatmap with the pieces on its axes
//   lines  one layer, every head: lines from each query piece to the key pieces (as bertviz)
//   grid   every layer x head (and the mean) of the kind, small; a click opens one as a map

const VIEWS = [['map', 'heatmap'], ['lines', 'lines, all heads'], ['grid', 'all layers x heads']];
// viridis at 10 stops (matplotlib's colormap, as the PNG images use): dark = 0, yellow = top
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
const HEAD_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#ad494a', '#637939', '#8c6d31',
  '#843c39', '#7b4173'];
const SVG_NS = 'http://www.w3.org/2000/svg';
const REFRESH_MS = 30000; // a still-running run gains steps: look for them this often

const STYLE = `
  body { font-family: Roboto, sans-serif; font-size: 13px; color: #212121; margin: 16px; }
  #controls { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-bottom: 8px; }
  #controls label { display: flex; gap: 4px; align-items: center; }
  #controls select { max-width: 420px; }
  #step { width: 320px; }
  #caption { margin: 8px 0; line-height: 1.5; }
  #caption b { display: inline-block; width: 90px; color: #616161; font-weight: normal; }
  #message { padding: 24px; color: #616161; font-size: 14px; max-width: 720px; line-height: 1.5; }
  #tooltip { position: fixed; pointer-events: none; background: #212121; color: #fff;
             padding: 4px 8px; border-radius: 3px; font-size: 12px; display: none; z-index: 10; }
  svg text { font-size: 12px; fill: #212121; }
  svg text.piece { cursor: default; }
  svg text.lit { fill: #d84315; font-weight: bold; }
  .band { fill: none; stroke: #d84315; stroke-width: 1.5; pointer-events: none; }
  .panel { cursor: pointer; }
  .panel:hover rect.frame { stroke: #d84315; }
  .chip { display: inline-flex; align-items: center; gap: 4px; margin-right: 10px; cursor: pointer; user-select: none; }
  .chip span { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }
  .chip.off { opacity: 0.35; }
`;

const state = {
  runs: [], kinds: [], run: null, steps: [], stepIndex: 0, probe: 0, kind: 'cross', layer: 0,
  head: 'mean', view: 'map', stretch: false, hiddenHeads: new Set(),
  sentences: null, maps: null, mapsFor: null, request: 0,
};
const cache = new Map(); // url -> parsed JSON: a stored step never changes
const el = {}; // the page's elements by id

// --- data -----------------------------------------------------------------------------------

async function getJSON(url, cached = true) {
  if (cached && cache.has(url)) return cache.get(url);
  const response = await fetch(url);
  const body = await response.json().catch(() => ({error: `${response.status} ${response.statusText}`}));
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  if (cached) cache.set(url, body);
  return body;
}

const query = (params) => new URLSearchParams(params).toString();
const currentStep = () => state.steps[state.stepIndex];
// what a set of maps belongs to: only maps of the selection on screen are ever drawn
const mapsKey = () => `${state.run}|${currentStep()}|${state.probe}|${state.kind}`;

// --- colour ---------------------------------------------------------------------------------

function colour(t) {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const [r, g, b] = VIRIDIS[i].map((c, j) => Math.round(c + f * (VIRIDIS[i + 1][j] - c)));
  return `rgb(${r},${g},${b})`;
}

/** The top of the colour scale: 1, or with "stretch" the largest weight of the layer's heads. */
function scaleTop(heads) {
  if (!state.stretch) return 1;
  let top = 0;
  for (const head of heads) for (const row of head) for (const w of row) top = Math.max(top, w);
  return top || 1;
}

function meanOfHeads(heads) { // (H, T_q, T_k) -> (T_q, T_k)
  return heads[0].map((row, q) => row.map((_, k) => heads.reduce((sum, head) => sum + head[q][k], 0) / heads.length));
}

// --- DOM helpers ----------------------------------------------------------------------------

function node(tag, attributes = {}, parent = null, text = null) {
  const element = tag.startsWith('svg:') ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== null) element.textContent = text;
  if (parent) parent.appendChild(element);
  return element;
}

function select(id, label, options, onChange) {
  const wrapper = node('label', {}, el.controls, label);
  el[id] = node('select', {id}, wrapper);
  setOptions(el[id], options);
  el[id].addEventListener('change', () => onChange(el[id].value));
}

function setOptions(selectElement, options) {
  const previous = selectElement.value;
  selectElement.replaceChildren(...options.map(([value, text]) => node('option', {value}, null, text)));
  if (options.some(([value]) => value === previous)) selectElement.value = previous;
}

function showTooltip(event, text) {
  el.tooltip.textContent = text;
  el.tooltip.style.display = 'block';
  el.tooltip.style.left = `${event.clientX + 12}px`;
  el.tooltip.style.top = `${event.clientY + 12}px`;
}

const hideTooltip = () => { el.tooltip.style.display = 'none'; };

function message(text) {
  el.message.textContent = text;
  el.message.style.display = text ? 'block' : 'none';
  if (text) { el.view.replaceChildren(); el.legend.replaceChildren(); el.caption.replaceChildren(); }
}

// --- views ----------------------------------------------------------------------------------

/** A colour bar from 0 to `top` with three ticks. */
function drawLegend(top) {
  const svg = node('svg:svg', {width: 400, height: 40, id: 'legend-bar'});
  const gradient = node('svg:linearGradient', {id: 'viridis'}, node('svg:defs', {}, svg));
  VIRIDIS.forEach((_, i) => node('svg:stop', {offset: `${(100 * i) / (VIRIDIS.length - 1)}%`,
    'stop-color': colour(i / (VIRIDIS.length - 1))}, gradient));
  node('svg:rect', {x: 20, y: 4, width: 300, height: 12, fill: 'url(#viridis)'}, svg);
  [0, 0.5, 1].forEach((f) => node('svg:text', {x: 20 + 300 * f, y: 32, 'text-anchor': 'middle'}, svg,
    (f * top).toFixed(2)));
  node('svg:text', {x: 328, y: 15}, svg, 'weight');
  el.legend.replaceChildren(svg);
}

const textWidth = (labels) => 8 + 7 * Math.max(1, ...labels.map((label) => label.length));

/** One map (T_q, T_k) with the pieces on its axes; hovering tells the weight. */
function drawHeatmap(weights, rows, cols, top, title) {
  const cell = Math.max(12, Math.min(28, Math.floor(640 / Math.max(rows.length, cols.length))));
  const left = textWidth(rows);
  const head = textWidth(cols) + 18;
  const svg = node('svg:svg', {id: 'heatmap', width: left + cell * cols.length + 20, height: head + cell * rows.length + 10});
  node('svg:text', {x: left, y: 12, class: 'title'}, svg, title);
  const grid = node('svg:g', {transform: `translate(${left},${head})`}, svg);
  const rowBand = node('svg:rect', {class: 'band', x: 0, width: cell * cols.length, height: cell, visibility: 'hidden'});
  const colBand = node('svg:rect', {class: 'band', y: 0, width: cell, height: cell * rows.length, visibility: 'hidden'});
  const rowLabels = rows.map((piece, q) => node('svg:text', {class: 'piece row-label', x: -6, y: q * cell + cell / 2 + 4,
    'text-anchor': 'end', 'data-index': q}, grid, piece));
  const colLabels = cols.map((piece, k) => node('svg:text', {class: 'piece col-label', 'text-anchor': 'start',
    transform: `translate(${k * cell + cell / 2 + 4},-6) rotate(-90)`, 'data-index': k}, grid, piece));
  const sameAxes = state.kind === 'encoder_self'; // a source piece is both a row and a column
  const light = (q, k) => {
    rowLabels.forEach((label, i) => label.classList.toggle('lit', i === q || (sameAxes && i === k)));
    colLabels.forEach((label, j) => label.classList.toggle('lit', j === k || (sameAxes && j === q)));
    rowBand.setAttribute('visibility', q === null ? 'hidden' : 'visible');
    colBand.setAttribute('visibility', k === null ? 'hidden' : 'visible');
    if (q !== null) rowBand.setAttribute('y', q * cell);
    if (k !== null) colBand.setAttribute('x', k * cell);
  };
  weights.forEach((row, q) => row.forEach((w, k) => {
    const rect = node('svg:rect', {class: 'cell', x: k * cell, y: q * cell, width: cell, height: cell,
      fill: colour(w / top), 'data-q': q, 'data-k': k, 'data-weight': w.toFixed(4)}, grid);
    rect.addEventListener('mousemove', (event) => {
      light(q, k);
      showTooltip(event, `query ${rows[q]}  →  key ${cols[k]}:  ${w.toFixed(3)}`);
    });
  }));
  grid.append(rowBand, colBand);
  rowLabels.forEach((label, q) => label.addEventListener('mouseenter', () => light(q, sameAxes ? q : null)));
  colLabels.forEach((label, k) => label.addEventListener('mouseenter', () => light(sameAxes ? k : null, k)));
  svg.addEventListener('mouseleave', () => { light(null, null); hideTooltip(); });
  return svg;
}

/** Every head of one layer as lines from query pieces (left) to key pieces (right). */
function drawLines(heads, rows, cols) {
  const lineHeight = 20;
  const left = textWidth(rows);
  const gap = 260;
  const height = 30 + lineHeight * Math.max(rows.length, cols.length);
  const svg = node('svg:svg', {id: 'lines', width: left + gap + textWidth(cols) + 10, height});
  const y = (i) => 30 + i * lineHeight + lineHeight / 2;
  const links = node('svg:g', {}, svg);
  node('svg:text', {x: left - 6, y: 14, 'text-anchor': 'end'}, svg, 'query');
  node('svg:text', {x: left + gap + 6, y: 14}, svg, 'key');
  const lines = [];
  heads.forEach((head, h) => {
    if (state.hiddenHeads.has(h)) return;
    head.forEach((row, q) => row.forEach((w, k) => {
      if (w < 0.02) return; // invisible anyway; keeps long sentences light
      lines.push([q, k, node('svg:line', {x1: left, y1: y(q), x2: left + gap, y2: y(k), stroke: HEAD_COLOURS[h % HEAD_COLOURS.length],
        'stroke-width': (0.5 + 5 * w).toFixed(2), 'stroke-opacity': Math.min(1, 0.15 + w).toFixed(2), 'data-head': h}, links)]);
    }));
  });
  const focus = (side, index) => lines.forEach(([q, k, line]) => line.setAttribute('visibility',
    index === null || (side === 'q' ? q : k) === index ? 'visible' : 'hidden'));
  rows.forEach((piece, q) => node('svg:text', {class: 'piece row-label', x: left - 6, y: y(q) + 4, 'text-anchor': 'end'}, svg, piece)
    .addEventListener('mouseenter', () => focus('q', q)));
  cols.forEach((piece, k) => node('svg:text', {class: 'piece col-label', x: left + gap + 6, y: y(k) + 4}, svg, piece)
    .addEventListener('mouseenter', () => focus('k', k)));
  svg.addEventListener('mouseleave', () => focus('q', null));
  return svg;
}

/** Every layer x head of the kind (and the mean), small; a click opens one as a heatmap. */
function drawGrid(layers, top) {
  const [tq, tk] = [layers[0][0].length, layers[0][0][0].length];
  const cell = Math.max(2, Math.min(8, Math.floor(140 / Math.max(tq, tk))));
  const [width, height] = [tk * cell, tq * cell];
  const svg = node('svg:svg', {id: 'grid', width: 70 + (layers[0].length + 1) * (width + 12), height: 20 + layers.length * (height + 24)});
  layers.forEach((heads, l) => {
    node('svg:text', {x: 0, y: 20 + l * (height + 24) + height / 2 + 14}, svg, `layer ${l + 1}`);
    [...heads, meanOfHeads(heads)].forEach((weights, h) => {
      const isMean = h === heads.length;
      const panel = node('svg:g', {class: 'panel', transform: `translate(${70 + h * (width + 12)},${20 + l * (height + 24)})`}, svg);
      node('svg:text', {x: 0, y: 10}, panel, isMean ? 'mean' : `head ${h + 1}`);
      weights.forEach((row, q) => row.forEach((w, k) => node('svg:rect', {x: k * cell, y: 14 + q * cell, width: cell,
        height: cell, fill: colour(w / top)}, panel)));
      node('svg:rect', {class: 'frame', x: 0, y: 14, width, height, fill: 'none', stroke: '#bdbdbd'}, panel);
      panel.addEventListener('click', () => {
        Object.assign(state, {layer: l, head: isMean ? 'mean' : String(h), view: 'map'});
        syncControls();
        draw();
      });
    });
  });
  return svg;
}

function headChips(count) {
  const chips = node('div', {id: 'heads-legend'});
  for (let h = 0; h < count; h++) {
    const chip = node('span', {class: `chip${state.hiddenHeads.has(h) ? ' off' : ''}`}, chips);
    node('span', {style: `background:${HEAD_COLOURS[h % HEAD_COLOURS.length]}`}, chip);
    chip.append(`head ${h + 1}`);
    chip.addEventListener('click', () => {
      state.hiddenHeads.has(h) ? state.hiddenHeads.delete(h) : state.hiddenHeads.add(h);
      draw();
    });
  }
  return chips;
}

function drawCaption() {
  const sentence = state.sentences.sentences[state.probe];
  const lines = [['source', sentence.source], ['reference', sentence.reference ?? '(none given)'],
    [`step ${currentStep()}`, sentence.translation]];
  el.caption.replaceChildren(...lines.map(([name, text]) => {
    const line = node('div');
    node('b', {}, line, name);
    line.append(text);
    return line;
  }));
}

function draw() {
  // While the maps of a new selection are on their way, the old ones belong to other labels
  // (another kind, step or sentence): draw nothing now, load() draws when they arrive.
  if (!state.maps || state.mapsFor !== mapsKey()) return;
  const {rows, cols, layers} = state.maps;
  const heads = layers[state.layer];
  const kindName = state.kinds.find(([kind]) => kind === state.kind)[1];
  drawCaption();
  message('');
  hideTooltip(); // it described a cell of the drawing being replaced
  if (state.view === 'map') {
    const weights = state.head === 'mean' ? meanOfHeads(heads) : heads[Number(state.head)];
    const top = scaleTop(heads);
    const which = state.head === 'mean' ? `mean of ${heads.length} heads` : `head ${Number(state.head) + 1}`;
    el.view.replaceChildren(drawHeatmap(weights, rows, cols, top, `${kindName}, layer ${state.layer + 1}, ${which}`));
    drawLegend(top);
  } else if (state.view === 'lines') {
    el.view.replaceChildren(headChips(heads.length), drawLines(heads, rows, cols));
    el.legend.replaceChildren();
  } else {
    const top = state.stretch ? Math.max(...layers.map(scaleTop)) : 1;
    el.view.replaceChildren(drawGrid(layers, top));
    drawLegend(top);
  }
  document.body.dataset.drawn = `${mapsKey()}|${state.layer}|${state.head}|${state.view}`;
  if (!document.body.dataset.firstMapMs) document.body.dataset.firstMapMs = performance.now().toFixed(0);
}

// --- loading --------------------------------------------------------------------------------

const showStepLabel = () => {
  el['step-label'].textContent = `step ${currentStep()} (${state.stepIndex + 1} of ${state.steps.length})`;
};

function syncControls() {
  el.run.value = state.run;
  el.step.max = String(Math.max(0, state.steps.length - 1));
  el.step.value = String(state.stepIndex);
  showStepLabel();
  const sentences = state.sentences ? state.sentences.sentences : [];
  setOptions(el.probe, sentences.map((s, i) => [String(i), `${i}: ${s.source}`]));
  el.probe.value = String(state.probe);
  el.kind.value = state.kind;
  const layerCount = sentences.length ? sentences[0].layers[state.kind] : 0;
  const headCount = sentences.length ? sentences[0].heads[state.kind] : 0;
  setOptions(el.layer, Array.from({length: layerCount}, (_, l) => [String(l), `layer ${l + 1}`]));
  el.layer.value = String(state.layer);
  setOptions(el.head, [['mean', 'mean of heads'], ...Array.from({length: headCount}, (_, h) => [String(h), `head ${h + 1}`])]);
  el.head.value = state.head;
  el.head.disabled = state.view !== 'map';
  el.view_select.value = state.view;
}

/** Load what the controls name (sentences of the step, maps of the kind), then draw. Only the
 * newest request draws: sliding fast over steps never shows an older step last. */
async function load() {
  const request = ++state.request;
  try {
    const step = currentStep();
    const sentences = await getJSON(`sentences?${query({run: state.run, step})}`);
    if (request !== state.request) return;
    state.sentences = sentences;
    state.probe = Math.min(state.probe, sentences.sentences.length - 1);
    state.layer = Math.min(state.layer, sentences.sentences[0].layers[state.kind] - 1);
    if (state.head !== 'mean' && Number(state.head) >= sentences.sentences[0].heads[state.kind]) state.head = 'mean';
    syncControls();
    const maps = await getJSON(`maps?${query({run: state.run, step, probe: state.probe, kind: state.kind})}`);
    if (request !== state.request) return;
    Object.assign(state, {maps, mapsFor: mapsKey()});
    draw();
  } catch (error) {
    if (request === state.request) message(`Could not load the attention of run ${state.run}: ${error.message}`);
  }
}

/** Ask for the runs again: new runs and new steps of a still-running run appear. */
async function refreshRuns() {
  let body;
  try {
    body = await getJSON('runs', false);
  } catch (error) {
    message(`Could not list the runs: ${error.message}`);
    return;
  }
  state.runs = body.runs;
  state.kinds = body.kinds; // names and titles: viz/kinds.py, the one list
  setOptions(el.kind, state.kinds);
  el.kind.value = state.kind;
  if (!state.runs.length) {
    state.run = null;
    message(`No run under the logdir has attention data yet. Training writes the probe ` +
      'sentences\' attention into RUN/attention/ at every attention evaluation (train.attention_every; the ' +
      'first at step 0): a run that has just started shows up within seconds, this page looks again every ' +
      `${REFRESH_MS / 1000} s.`);
    return;
  }
  setOptions(el.run, state.runs.map(({run}) => [run, run]));
  const known = state.runs.find(({run}) => run === state.run);
  if (!known) return selectRun(state.runs[state.runs.length - 1].run);
  const atEnd = state.stepIndex === state.steps.length - 1;
  const changed = known.steps.join() !== state.steps.join();
  state.steps = known.steps;
  if (!changed) return; // nothing new: the drawing (and what the pointer shows on it) stays
  if (atEnd) { // following a still-running run: stay on its newest step
    state.stepIndex = state.steps.length - 1;
    syncControls();
    return load();
  }
  syncControls();
}

function selectRun(run) {
  state.run = run;
  state.steps = state.runs.find((entry) => entry.run === run).steps;
  state.stepIndex = state.steps.length - 1;
  state.maps = null;
  return load();
}

function buildPage() {
  node('style', {}, document.head, STYLE);
  el.controls = node('div', {id: 'controls'}, document.body);
  select('run', 'run', [], (value) => selectRun(value));
  select('probe', 'sentence', [], (value) => { state.probe = Number(value); load(); });
  select('kind', 'kind', [], (value) => { state.kind = value; load(); });
  select('layer', 'layer', [], (value) => { state.layer = Number(value); draw(); });
  select('head', 'head', [['mean', 'mean of heads']], (value) => { state.head = value; draw(); });
  select('view_select', 'view', VIEWS, (value) => { state.view = value; syncControls(); draw(); });
  const slider = node('label', {}, el.controls, 'step');
  el.step = node('input', {id: 'step', type: 'range', min: 0, max: 0, value: 0, step: 1}, slider);
  el['step-label'] = node('span', {id: 'step-label'}, slider);
  el.step.addEventListener('input', () => {
    state.stepIndex = Number(el.step.value);
    showStepLabel();
    load();
  });
  const stretch = node('label', {title: 'colour scale from 0 to the largest weight shown, instead of 0 to 1'}, el.controls);
  el.stretch = node('input', {id: 'stretch', type: 'checkbox'}, stretch);
  stretch.append('scale to the largest weight');
  el.stretch.addEventListener('change', () => { state.stretch = el.stretch.checked; draw(); });
  el.caption = node('div', {id: 'caption'}, document.body);
  el.message = node('div', {id: 'message'}, document.body, 'Loading the runs…');
  el.view = node('div', {id: 'view'}, document.body);
  el.legend = node('div', {id: 'legend'}, document.body);
  el.tooltip = node('div', {id: 'tooltip'}, document.body);
}

export async function render() {
  buildPage();
  await refreshRuns();
  setInterval(refreshRuns, REFRESH_MS);
}
