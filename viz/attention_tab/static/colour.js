// Colour scales: viridis for weights (0 to a top), and a diverging blue-white-red scale for
// the vectors inside the attention (q, k, v and outputs), whose numbers have both signs.

import {node} from './dom.js';

// viridis at 10 stops (matplotlib's colormap, as the PNG images use): dark = 0, yellow = top
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
// matplotlib's RdBu reversed at 5 stops: blue = negative, white = 0, red = positive
const DIVERGING = [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]];

function interpolate(stops, t) {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const [r, g, b] = stops[i].map((c, j) => Math.round(c + f * (stops[i + 1][j] - c)));
  return `rgb(${r},${g},${b})`;
}

/** Viridis at t in [0, 1]. */
export const colour = (t) => interpolate(VIRIDIS, t);

/** The diverging colour of `value` on a scale from -top to top. */
export const signedColour = (value, top) => interpolate(DIVERGING, 0.5 + value / (2 * (top || 1)));

/** The largest absolute number of nested arrays: a diverging scale's top. */
export const largest = (values) => Math.max(1e-9, ...values.flat(Infinity).map(Math.abs));

/** A colour bar from 0 to `top` with three ticks, into `parent`. */
export function legend(parent, top) {
  const svg = node('svg:svg', {width: 400, height: 40, id: 'legend-bar'});
  const gradient = node('svg:linearGradient', {id: 'viridis'}, node('svg:defs', {}, svg));
  VIRIDIS.forEach((_, i) => node('svg:stop', {offset: `${(100 * i) / (VIRIDIS.length - 1)}%`,
    'stop-color': colour(i / (VIRIDIS.length - 1))}, gradient));
  node('svg:rect', {x: 20, y: 4, width: 300, height: 12, fill: 'url(#viridis)'}, svg);
  [0, 0.5, 1].forEach((f) => node('svg:text', {x: 20 + 300 * f, y: 32, 'text-anchor': 'middle'}, svg,
    (f * top).toFixed(2)));
  node('svg:text', {x: 328, y: 15}, svg, 'weight');
  parent.replaceChildren(svg);
}
