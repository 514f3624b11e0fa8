// The inside view: how one head of one layer computes the attention of one query piece,
// step by step, with the numbers the model computed (stored by training, or computed for a
// typed sentence; plugin.py's inside route):
//   q, and every key k_j             the query's and keys' d_head numbers as colour strips
//   q∘k_j and q·k_j                  element by element for the key under the pointer, and summed
//   q·k_j / sqrt(d_k), the mask      the scores scaled; keys a query may not see greyed
//   softmax -> w_j                   next to the weights the model stored (the heatmap's row)
//   Σ_j w_j v_j                      the values mixed by the weights: the head's output
//   concat(heads) W_O                every head's output for the query, side by side, projected

import {largest, signedColour} from '../colour.js';
import {hideTooltip, node, showTooltip, textWidth} from '../dom.js';

const ROW = 18; // pixels per key row
const NUMBER = 62; // pixels per number column

/** A row of coloured cells, one per number, at (x, y); hovering one tells its index and value. */
function strip(parent, values, x, y, cellWidth, top, name, extraClass = '') {
  const group = node('svg:g', {class: `strip ${extraClass}`.trim(), transform: `translate(${x},${y})`}, parent);
  values.forEach((value, i) => {
    const cell = node('svg:rect', {class: 'strip-cell', x: i * cellWidth, y: 0, width: cellWidth, height: ROW - 4,
      fill: signedColour(value, top), 'data-value': value}, group);
    cell.addEventListener('mousemove', (event) => showTooltip(event, `${name}[${i}] = ${value.toFixed(4)}`));
  });
  node('svg:rect', {x: 0, y: 0, width: values.length * cellWidth, height: ROW - 4, fill: 'none', stroke: '#bdbdbd'}, group);
  return group;
}

const text = (parent, x, y, content, attributes = {}) => node('svg:text', {x, y, ...attributes}, parent, content);

/**
 * @param data the inside route's answer for one query of one head
 * @param where {kindName, layer, head, query}: what it is, for the labels
 */
export function drawInside(data, where) {
  const {rows, cols, d_head: dHead, heads} = data;
  const dModel = data.concat.length;
  const cellWidth = Math.max(3, Math.min(12, Math.floor(224 / dHead)));
  const stripWidth = dHead * cellWidth;
  const wide = Math.max(2, Math.floor(560 / dModel)); // cells of the d_model-long strips
  const labelWidth = Math.max(textWidth(cols), 100); // also the left labels' column: 'q  (d_k = 32)'
  // columns of the key table
  const x = {};
  x.key = labelWidth;
  x.k = x.key + 8;
  x.score = x.k + stripWidth + 12;
  x.scaled = x.score + NUMBER;
  x.mask = x.scaled + NUMBER;
  x.softmax = x.mask + NUMBER;
  x.weight = x.softmax + NUMBER;
  x.v = x.weight + NUMBER + 30; // room for the weight's bar
  const width = Math.max(x.v + stripWidth, x.k + dModel * wide, 640) + 20; // 640: the title and notes
  const qTop = largest([data.q, data.keys]);
  const vTop = largest([data.values, data.head_output]);

  const svg = node('svg:svg', {id: 'inside', width, height: 10}); // height set at the end
  let y = 14;
  text(svg, 0, y, `${where.kindName}, layer ${where.layer + 1}, head ${where.head + 1}: the query «${rows[where.query]}» ` +
    `(row ${where.query + 1} of ${rows.length}) over ${cols.length} keys`, {class: 'title'});
  y += 22;

  // 1. the query vector
  text(svg, x.key, y + 11, `q  (d_k = ${dHead})`, {'text-anchor': 'end'});
  strip(svg, data.q, x.k, y, cellWidth, qTop, 'q', 'q');
  text(svg, x.score, y + 11, 'its head\'s part of x W_Q', {class: 'note'});
  y += ROW + 16;

  // 2. every key: k_j, q·k_j, / sqrt(d_k), the mask, softmax, the stored weight, v_j
  const headers = [[x.k, `k_j  (${cols.length} × ${dHead})`], [x.score, 'q·k_j'], [x.scaled, `÷ √${dHead}`],
    [x.mask, 'mask'], [x.softmax, 'softmax'], [x.weight, 'w_j (model)'], [x.v, `v_j  (${cols.length} × ${dHead})`]];
  headers.forEach(([column, label]) => text(svg, column, y + 11, label, {class: 'note'}));
  text(svg, x.key, y + 11, 'key', {'text-anchor': 'end', class: 'note'});
  y += ROW;
  const detail = node('svg:g', {}); // q∘k_j of the key under the pointer, placed below the table
  const showProducts = (j) => {
    detail.replaceChildren();
    const top = largest(data.products[j]);
    text(detail, x.key, 11, `q∘k_${j + 1}`, {'text-anchor': 'end'});
    strip(detail, data.products[j], x.k, 0, cellWidth, top, `q∘k_${j + 1}`, 'products');
    text(detail, x.score, 11, `Σ = q·k_${j + 1} = ${data.scores[j].toFixed(3)}: element by element, the query and ` +
      `the key «${cols[j]}» (${data.visible[j] ? 'visible' : 'masked'})`, {class: 'note'});
  };
  cols.forEach((piece, j) => {
    const masked = !data.visible[j];
    const row = node('svg:g', {class: `key-row${masked ? ' masked' : ''}`, 'data-k': j, transform: `translate(0,${y + j * ROW})`}, svg);
    node('svg:rect', {class: 'hover-band', x: 0, y: -2, width, height: ROW, fill: 'transparent'}, row);
    text(row, x.key, 11, piece, {'text-anchor': 'end', class: 'piece key-label'});
    strip(row, data.keys[j], x.k, 0, cellWidth, qTop, `k_${j + 1}`, 'k');
    text(row, x.score, 11, data.scores[j].toFixed(3));
    text(row, x.scaled, 11, data.scaled[j].toFixed(3));
    text(row, x.mask, 11, masked ? 'masked' : '✓', masked ? {class: 'dim'} : {});
    text(row, x.softmax, 11, data.softmax[j].toFixed(4), {class: 'softmax', 'data-k': j});
    const w = data.weights[j];
    text(row, x.weight, 11, w.toFixed(4), {class: 'weight', 'data-k': j, 'data-weight': w.toFixed(4)});
    node('svg:rect', {x: x.weight + NUMBER - 14, y: 1, width: Math.max(0.5, 36 * w), height: ROW - 6, fill: '#ff8a65'}, row);
    strip(row, data.values[j], x.v, 0, cellWidth, vTop, `v_${j + 1}`, 'v');
    row.addEventListener('mouseenter', () => showProducts(j));
  });
  y += cols.length * ROW + 10;
  detail.setAttribute('transform', `translate(0,${y})`);
  svg.appendChild(detail);
  showProducts(data.weights.indexOf(Math.max(...data.weights))); // at first the key it attends to most
  y += ROW + 18;

  // 3. the head's output: the values mixed by the weights
  text(svg, x.key, y + 11, 'Σ_j w_j v_j', {'text-anchor': 'end'});
  strip(svg, data.head_output, x.k, y, cellWidth, vTop, 'head output', 'head-output');
  text(svg, x.score, y + 11, `head ${where.head + 1}'s output for the query (d_v = ${dHead})`, {class: 'note'});
  y += ROW + 22;

  // 4. the layer: every head's output side by side, projected by W_O
  text(svg, 0, y + 11, `The layer: the ${heads} heads' outputs concatenated (${heads} × ${dHead} = ${dModel}), ` +
    `times W_O (${dModel} × ${dModel}) plus its bias, is the attention's output for the query (${dModel}).`, {class: 'note'});
  y += ROW + 4;
  text(svg, x.key, y + 11, 'concat', {'text-anchor': 'end'});
  strip(svg, data.concat, x.k, y, wide, largest(data.concat), 'concat', 'concat');
  node('svg:rect', {class: 'chosen', x: x.k + where.head * dHead * wide, y: -1 + y, width: dHead * wide, height: ROW - 2}, svg);
  y += ROW + 4;
  text(svg, x.key, y + 11, '× W_O + b_O', {'text-anchor': 'end'});
  strip(svg, data.output, x.k, y, wide, largest(data.output), 'output', 'output');
  y += ROW + 10;
  svg.setAttribute('height', y);
  svg.addEventListener('mouseleave', hideTooltip);
  return svg;
}
