// The controls above the views: run, sentence, kind, layer, head, view, step slider, colour
// scale, and the box for a sentence of one's own. They change `state` and call back index.js.

import {el, node, setOptions} from './dom.js';
import {currentStep, state, VIEWS} from './state.js';

function select(id, label, options, onChange) {
  const wrapper = node('label', {}, el.controls, label);
  el[id] = node('select', {id}, wrapper);
  setOptions(el[id], options);
  el[id].addEventListener('change', () => onChange(el[id].value));
}

export function showStepLabel() {
  el['step-label'].textContent = state.typed ? `checkpoint ${state.typed.checkpoint} (a typed sentence)`
    : `step ${currentStep()} (${state.stepIndex + 1} of ${state.steps.length})`;
}

/** The controls as `state` says. */
export function syncControls() {
  el.run.value = state.run;
  el.step.max = String(Math.max(0, state.steps.length - 1));
  el.step.value = String(state.stepIndex);
  el.step.disabled = Boolean(state.typed);
  showStepLabel();
  const sentences = state.sentences ? state.sentences.sentences : [];
  setOptions(el.probe, sentences.map((s, i) => [String(i), state.typed ? `typed: ${s.source}` : `${i}: ${s.source}`]));
  el.probe.value = String(state.probe);
  el.kind.value = state.kind;
  const layerCount = sentences.length ? sentences[0].layers[state.kind] : 0;
  const headCount = sentences.length ? sentences[0].heads[state.kind] : 0;
  setOptions(el.layer, Array.from({length: layerCount}, (_, l) => [String(l), `layer ${l + 1}`]));
  el.layer.value = String(state.layer);
  const mean = state.view === 'inside' ? [] : [['mean', 'mean of heads']]; // inside: one head's numbers
  setOptions(el.head, [...mean, ...Array.from({length: headCount}, (_, h) => [String(h), `head ${h + 1}`])]);
  el.head.value = state.head;
  el.head.disabled = state.view !== 'map' && state.view !== 'inside';
  el.view_select.value = state.view;
  el['back-to-probes'].style.display = state.typed ? 'inline-block' : 'none';
}

/** The runs' checkpoints for a typed sentence: "best" and the steps with a saved checkpoint. */
export function setCheckpoints(checkpoints) {
  setOptions(el.checkpoint, checkpoints.map((name) => [name, name === 'best' ? 'best checkpoint' : `checkpoint of step ${name}`]));
  el.checkpoint.disabled = !checkpoints.length;
  el.translate.disabled = !checkpoints.length;
  const none = 'this run has no checkpoint yet: training saves one at each validation';
  el.translate.title = checkpoints.length ? '' : none;
  if (!checkpoints.length) el['typed-message'].textContent = none; // said beside the box, not only on hover
  else if (el['typed-message'].textContent === none) el['typed-message'].textContent = '';
}

/** @param on {run, probe, kind, layer, head, view, step, stretch, translate, backToProbes}: handlers */
export function buildControls(on) {
  el.controls = node('div', {id: 'controls'}, document.body);
  select('run', 'run', [], on.run);
  select('probe', 'sentence', [], on.probe);
  select('kind', 'kind', [], on.kind);
  select('layer', 'layer', [], on.layer);
  select('head', 'head', [['mean', 'mean of heads']], on.head);
  select('view_select', 'view', VIEWS, on.view);
  const slider = node('label', {}, el.controls, 'step');
  el.step = node('input', {id: 'step', type: 'range', min: 0, max: 0, value: 0, step: 1}, slider);
  el['step-label'] = node('span', {id: 'step-label'}, slider);
  el.step.addEventListener('input', () => on.step(Number(el.step.value)));
  const stretch = node('label', {title: 'colour scale from 0 to the largest weight shown, instead of 0 to 1'}, el.controls);
  el.stretch = node('input', {id: 'stretch', type: 'checkbox'}, stretch);
  stretch.append('scale to the largest weight');
  el.stretch.addEventListener('change', () => on.stretch(el.stretch.checked));

  el.typed = node('form', {id: 'typed'}, document.body);
  el['typed-text'] = node('input', {id: 'typed-text', type: 'text',
    placeholder: 'Type a source sentence to see its attention'}, el.typed);
  el.checkpoint = node('select', {id: 'checkpoint'}, el.typed);
  el.translate = node('button', {id: 'translate', type: 'submit'}, el.typed, 'Translate');
  el['back-to-probes'] = node('button', {id: 'back-to-probes', type: 'button'}, el.typed, 'Back to the probe sentences');
  el['typed-message'] = node('span', {id: 'typed-message'}, el.typed);
  el.typed.addEventListener('submit', (event) => {
    event.preventDefault();
    on.translate(el['typed-text'].value, el.checkpoint.value);
  });
  el['back-to-probes'].addEventListener('click', on.backToProbes);
}
