// What the page shows: one run, one source (a stored step, or a typed sentence translated with
// a checkpoint), one sentence, kind, layer, head, view and query piece.

export const VIEWS = [['map', 'heatmap'], ['lines', 'lines, all heads'], ['grid', 'all layers x heads'],
  ['inside', 'inside one head: q, k, v']];

export const state = {
  runs: [], kinds: [], run: null, steps: [], stepIndex: 0, probe: 0, kind: 'cross', layer: 0,
  head: 'mean', view: 'map', stretch: false, hiddenHeads: new Set(), query: 0,
  typed: null, // {checkpoint, text, version} while a typed sentence is shown, else null
  sentences: null, maps: null, mapsFor: null, inside: null, insideFor: null, request: 0,
};

export const currentStep = () => state.steps[state.stepIndex];

/** The route parameters naming the source. */
export const sourceParams = () => (state.typed
  ? {run: state.run, checkpoint: state.typed.checkpoint, text: state.typed.text, version: state.typed.version}
  : {run: state.run, step: currentStep()});

const sourceKey = () => (state.typed
  ? `typed ${state.typed.checkpoint} ${state.typed.version}: ${state.typed.text}` : `${currentStep()}`);

// what a set of maps belongs to: only maps of the selection on screen are ever drawn
export const mapsKey = () => `${state.run}|${sourceKey()}|${state.probe}|${state.kind}`;

// likewise the values inside one head for one query
export const insideKey = () => `${mapsKey()}|${state.layer}|${state.head}|${state.query}`;
