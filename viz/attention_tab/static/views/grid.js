// The grid view: every layer x head of the kind (and their mean), small; a click opens one.

import {colour} from '../colour.js';
import {node} from '../dom.js';
import {meanOfHeads} from './heatmap.js';

/** @param layers (L, H, T_q, T_k); `onOpen(layer, head)` on a click, head 'mean' for the mean */
export function drawGrid(layers, top, onOpen) {
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
      panel.addEventListener('click', () => onOpen(l, isMean ? 'mean' : String(h)));
    });
  });
  return svg;
}
