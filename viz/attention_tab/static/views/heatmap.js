// The heatmap view: one map (T_q, T_k) with the pieces on its axes; hovering tells the weight,
// clicking a row chooses that query piece (for the inside view).

import {colour} from '../colour.js';
import {hideTooltip, node, showTooltip, textWidth} from '../dom.js';

/** Mean over heads: (H, T_q, T_k) -> (T_q, T_k). */
export function meanOfHeads(heads) {
  return heads[0].map((row, q) => row.map((_, k) => heads.reduce((sum, head) => sum + head[q][k], 0) / heads.length));
}

/**
 * @param weights (T_q, T_k), shown on a scale from 0 to `top`
 * @param sameAxes a piece is both a row and a column (encoder self-attention): light both
 * @param onRow called with a row's index when it is clicked; `chosen` outlines that row
 * @param size the most pixels the larger side may take
 */
export function drawHeatmap(weights, rows, cols, top, title, {sameAxes = false, onRow = null, chosen = null, size = 640} = {}) {
  const cell = Math.max(12, Math.min(28, Math.floor(size / Math.max(rows.length, cols.length))));
  const left = textWidth(rows);
  const head = textWidth(cols) + 18;
  const svg = node('svg:svg', {id: 'heatmap', width: left + cell * cols.length + 20, height: head + cell * rows.length + 10});
  if (onRow) svg.classList.add('clickable');
  node('svg:text', {x: left, y: 12, class: 'title'}, svg, title);
  const grid = node('svg:g', {transform: `translate(${left},${head})`}, svg);
  const rowBand = node('svg:rect', {class: 'band', x: 0, width: cell * cols.length, height: cell, visibility: 'hidden'});
  const colBand = node('svg:rect', {class: 'band', y: 0, width: cell, height: cell * rows.length, visibility: 'hidden'});
  const rowLabels = rows.map((piece, q) => node('svg:text', {class: 'piece row-label', x: -6, y: q * cell + cell / 2 + 4,
    'text-anchor': 'end', 'data-index': q}, grid, piece));
  const colLabels = cols.map((piece, k) => node('svg:text', {class: 'piece col-label', 'text-anchor': 'start',
    transform: `translate(${k * cell + cell / 2 + 4},-6) rotate(-90)`, 'data-index': k}, grid, piece));
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
      showTooltip(event, `query ${rows[q]}  →  key ${cols[k]}:  ${w.toFixed(3)}` + (onRow ? '  (click: inside this query)' : ''));
    });
  }));
  grid.append(rowBand, colBand);
  if (chosen !== null) node('svg:rect', {class: 'chosen', x: 0, y: chosen * cell, width: cell * cols.length, height: cell}, grid);
  rowLabels.forEach((label, q) => label.addEventListener('mouseenter', () => light(q, sameAxes ? q : null)));
  colLabels.forEach((label, k) => label.addEventListener('mouseenter', () => light(sameAxes ? k : null, k)));
  if (onRow) {
    grid.querySelectorAll('rect.cell').forEach((rect) => rect.addEventListener('click', () => onRow(Number(rect.dataset.q))));
    rowLabels.forEach((label, q) => label.addEventListener('click', () => onRow(q)));
  }
  svg.addEventListener('mouseleave', () => { light(null, null); hideTooltip(); });
  return svg;
}
