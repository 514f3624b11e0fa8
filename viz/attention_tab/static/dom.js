// Building the page: elements and SVG from plain DOM calls, the tooltip, the page's message.

const SVG_NS = 'http://www.w3.org/2000/svg';
export const el = {}; // the page's elements by id

/** A new element (`svg:` prefix: an SVG element) with attributes, appended to `parent`. */
export function node(tag, attributes = {}, parent = null, text = null) {
  const element = tag.startsWith('svg:') ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== null) element.textContent = text;
  if (parent) parent.appendChild(element);
  return element;
}

/** A select's options as [value, text] pairs, keeping its value when still offered. The same
 * options leave the select untouched: the page's refresh every 30 s never closes a list that is
 * open under the pointer, nor swaps the option being clicked. */
export function setOptions(selectElement, options) {
  const current = Array.from(selectElement.options, (option) => [option.value, option.textContent]);
  if (current.length === options.length && current.every(([value, text], i) =>
    value === String(options[i][0]) && text === String(options[i][1]))) return;
  const previous = selectElement.value;
  selectElement.replaceChildren(...options.map(([value, text]) => node('option', {value}, null, text)));
  if (options.some(([value]) => value === previous)) selectElement.value = previous;
}

export function showTooltip(event, text) {
  el.tooltip.textContent = text;
  el.tooltip.style.display = 'block';
  el.tooltip.style.left = `${event.clientX + 12}px`;
  el.tooltip.style.top = `${event.clientY + 12}px`;
}

export const hideTooltip = () => { el.tooltip.style.display = 'none'; };

/** The page's message instead of a drawing ('' takes it away). */
export function message(text) {
  el.message.textContent = text;
  el.message.style.display = text ? 'block' : 'none';
  if (text) { el.view.replaceChildren(); el.legend.replaceChildren(); el.caption.replaceChildren(); }
}

/** The width of a column of piece labels, in pixels. */
export const textWidth = (labels) => 8 + 7 * Math.max(1, ...labels.map((label) => label.length));
