// The ATTENTION tab: the probe sentences' attention at every evaluation of a run, and that of
// any sentence typed into the tab, translated with a checkpoint of the run.
//
// TensorBoard loads this module in an iframe whose base URL is /data/plugin/attention/ and
// calls render(). Everything is plain DOM and SVG in ES modules: no library, no build step, no
// network beyond the plugin's own routes (plugin.py). Four views of one run, source, sentence
// and kind (views/):
//   map     one layer, one head or the mean of heads: a heatmap with the pieces on its axes
//   lines   one layer, every head: lines from each query piece to the key pieces (as bertviz)
//   grid    every layer x head (and the mean) of the kind, small; a click opens one as a map
//   inside  one head, one query piece (a click on a heatmap row): q, k, v step by step
// This file joins them: loading what the controls name, drawing the view, refreshing the runs.

import {legend} from './colour.js';
import {buildControls, setCheckpoints, showStepLabel, syncControls} from './controls.js';
import {getJSON, query} from './data.js';
import {el, hideTooltip, message, node, setOptions} from './dom.js';
import {currentStep, insideKey, mapsKey, sourceParams, state} from './state.js';
import {STYLE} from './style.js';
import {drawGrid} from './views/grid.js';
import {drawHeatmap, meanOfHeads} from './views/heatmap.js';
import {drawInside} from './views/inside.js';
import {drawLines, headChips} from './views/lines.js';

const REFRESH_MS = 30000; // a still-running run gains steps: look for them this often

/** The top of the colour scale: 1, or with "stretch" the largest weight of the layer's heads. */
function scaleTop(heads) {
  if (!state.stretch) return 1;
  let top = 0;
  for (const head of heads) for (const row of head) for (const w of row) top = Math.max(top, w);
  return top || 1;
}

const kindName = () => state.kinds.find(([kind]) => kind === state.kind)[1];

function drawCaption() {
  const sentence = state.sentences.sentences[state.probe];
  const lines = [['source', sentence.source], ['reference', sentence.reference ?? '(none given)'],
    [state.typed ? `checkpoint ${state.typed.checkpoint}` : `step ${currentStep()}`, sentence.translation]];
  el.caption.replaceChildren(...lines.map(([name, text]) => {
    const line = node('div');
    node('b', {}, line, name);
    line.append(text);
    return line;
  }));
}

/** A click on a heatmap row: the inside view of that query piece, in the head shown (or head 1). */
function openQuery(q) {
  Object.assign(state, {query: q, view: 'inside', head: state.head === 'mean' ? '0' : state.head});
  syncControls();
  draw();
}

function drawHeadInside(heads, rows, cols) {
  const head = Number(state.head);
  const heatmap = drawHeatmap(heads[head], rows, cols, scaleTop(heads), `${kindName()}, layer ${state.layer + 1}, head ${head + 1}`,
    {sameAxes: state.kind === 'encoder_self', onRow: openQuery, chosen: state.query, size: 400});
  const panel = node('div', {id: 'inside-panel'});
  el.view.replaceChildren(node('div', {id: 'inside-view'}));
  el.view.firstChild.append(heatmap, panel);
  legend(el.legend, scaleTop(heads));
  if (!state.sentences.sentences[state.probe].inside) {
    panel.textContent = 'This evaluation was stored before training kept the queries, keys and values: ' +
      'a run of this version stores them at every evaluation.';
    return true;
  }
  if (state.inside && state.insideFor === insideKey()) {
    panel.append(drawInside(state.inside, {kindName: kindName(), layer: state.layer, head, query: state.query}));
    return true;
  }
  panel.textContent = 'Loading the query\'s numbers…';
  loadInside();
  return false; // drawn when they arrive
}

function draw() {
  // While the maps of a new selection are on their way, the old ones belong to other labels
  // (another kind, step or sentence): draw nothing now, load() draws when they arrive.
  if (!state.maps || state.mapsFor !== mapsKey()) return;
  const {rows, cols, layers} = state.maps;
  const heads = layers[state.layer];
  state.query = Math.min(state.query, rows.length - 1);
  drawCaption();
  message('');
  hideTooltip(); // it described a cell of the drawing being replaced
  if (state.view === 'map') {
    const weights = state.head === 'mean' ? meanOfHeads(heads) : heads[Number(state.head)];
    const top = scaleTop(heads);
    const which = state.head === 'mean' ? `mean of ${heads.length} heads` : `head ${Number(state.head) + 1}`;
    el.view.replaceChildren(drawHeatmap(weights, rows, cols, top, `${kindName()}, layer ${state.layer + 1}, ${which}`,
      {sameAxes: state.kind === 'encoder_self', onRow: openQuery}));
    legend(el.legend, top);
  } else if (state.view === 'lines') {
    const toggle = (h) => { state.hiddenHeads.has(h) ? state.hiddenHeads.delete(h) : state.hiddenHeads.add(h); draw(); };
    el.view.replaceChildren(headChips(heads.length, state.hiddenHeads, toggle), drawLines(heads, rows, cols, state.hiddenHeads));
    el.legend.replaceChildren();
  } else if (state.view === 'grid') {
    const top = state.stretch ? Math.max(...layers.map(scaleTop)) : 1;
    const open = (layer, head) => { Object.assign(state, {layer, head, view: 'map'}); syncControls(); draw(); };
    el.view.replaceChildren(drawGrid(layers, top, open));
    legend(el.legend, top);
  } else if (!drawHeadInside(heads, rows, cols)) {
    return;
  }
  const drawn = [mapsKey(), state.layer, state.head, state.view];
  if (state.view === 'inside') drawn.push(`q${state.query}`);
  document.body.dataset.drawn = drawn.join('|');
  if (!document.body.dataset.firstMapMs) document.body.dataset.firstMapMs = performance.now().toFixed(0);
}

/** The values inside the head for the chosen query; drawn if still wanted when they arrive. */
async function loadInside() {
  const key = insideKey();
  try {
    const inside = await getJSON(`inside?${query({...sourceParams(), probe: state.probe, kind: state.kind,
      layer: state.layer, head: state.head, query: state.query})}`);
    if (key !== insideKey()) return;
    Object.assign(state, {inside, insideFor: key});
    draw();
  } catch (error) {
    const panel = document.getElementById('inside-panel');
    if (key === insideKey() && panel) panel.textContent = `Could not load the query's numbers: ${error.message}`;
  }
}

/** Load what the controls name (sentences of the source, maps of the kind), then draw. Only the
 * newest request draws: sliding fast over steps never shows an older step last. */
async function load() {
  const request = ++state.request;
  try {
    const sentences = await getJSON(`sentences?${query(sourceParams())}`);
    if (request !== state.request) return;
    state.sentences = sentences;
    state.probe = Math.min(state.probe, sentences.sentences.length - 1);
    state.layer = Math.min(state.layer, sentences.sentences[0].layers[state.kind] - 1);
    if (state.head !== 'mean' && Number(state.head) >= sentences.sentences[0].heads[state.kind]) state.head = '0';
    syncControls();
    const maps = await getJSON(`maps?${query({...sourceParams(), probe: state.probe, kind: state.kind})}`);
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
  setCheckpoints(known.checkpoints);
  const atEnd = state.stepIndex === state.steps.length - 1;
  const changed = known.steps.join() !== state.steps.join();
  state.steps = known.steps;
  if (!changed) return; // nothing new: the drawing (and what the pointer shows on it) stays
  if (atEnd && !state.typed) { // following a still-running run: stay on its newest step
    state.stepIndex = state.steps.length - 1;
    syncControls();
    return load();
  }
  syncControls();
}

function selectRun(run) {
  const entry = state.runs.find((known) => known.run === run);
  Object.assign(state, {run, steps: entry.steps, stepIndex: entry.steps.length - 1, maps: null, typed: null});
  setCheckpoints(entry.checkpoints);
  return load();
}

/** Translate a typed sentence with a checkpoint; its maps replace the probes' until "back".
 * A sentence that cannot be translated leaves the view as it was and says why beside the box. */
async function translate(text, checkpoint) {
  el['typed-message'].textContent = 'Translating…';
  let body;
  try { // never from the cache: training may have rewritten the checkpoint since
    body = await getJSON(`sentences?${query({run: state.run, checkpoint, text})}`, false);
  } catch (error) {
    el['typed-message'].textContent = error.message;
    return;
  }
  el['typed-message'].textContent = '';
  // the file's identity goes into every later request: cached answers are this version's only
  Object.assign(state, {typed: {checkpoint, text, version: body.version}, probe: 0, maps: null});
  await load();
}

function buildPage() {
  node('style', {}, document.head, STYLE);
  buildControls({
    run: selectRun,
    probe: (value) => { state.probe = Number(value); load(); },
    kind: (value) => { state.kind = value; load(); },
    layer: (value) => { state.layer = Number(value); draw(); },
    head: (value) => { state.head = value; draw(); },
    view: (value) => {
      state.view = value;
      if (value === 'inside' && state.head === 'mean') state.head = '0';
      syncControls();
      draw();
    },
    step: (index) => { state.stepIndex = index; showStepLabel(); load(); },
    stretch: (checked) => { state.stretch = checked; draw(); },
    translate,
    backToProbes: () => { Object.assign(state, {typed: null, probe: 0, maps: null}); load(); },
  });
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
