// The lines view: every head of one layer as lines from query pieces (left) to key pieces
// (right), as bertviz draws them; hovering a piece keeps only its lines.

import {node, textWidth} from '../dom.js';

export const HEAD_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#ad494a', '#637939', '#8c6d31',
  '#843c39', '#7b4173'];

/** @param heads (H, T_q, T_k); heads in `hidden` are left out */
export function drawLines(heads, rows, cols, hidden) {
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
    if (hidden.has(h)) return;
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

/** A chip per head, its colour and name; a click hides or shows its lines (`onToggle(h)`). */
export function headChips(count, hidden, onToggle) {
  const chips = node('div', {id: 'heads-legend'});
  for (let h = 0; h < count; h++) {
    const chip = node('span', {class: `chip${hidden.has(h) ? ' off' : ''}`}, chips);
    node('span', {style: `background:${HEAD_COLOURS[h % HEAD_COLOURS.length]}`}, chip);
    chip.append(`head ${h + 1}`);
    chip.addEventListener('click', () => onToggle(h));
  }
  return chips;
}
