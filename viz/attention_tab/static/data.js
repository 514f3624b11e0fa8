// Loading from the plugin's routes (plugin.py), relative to the frame's base URL.

// url -> parsed JSON: a stored step, or a typed sentence's result with its checkpoint's version
// in the url, never changes
const cache = new Map();

/** The JSON of a route; an error answer throws its message. */
export async function getJSON(url, cached = true) {
  if (cached && cache.has(url)) return cache.get(url);
  const response = await fetch(url);
  const body = await response.json().catch(() => ({error: `${response.status} ${response.statusText}`}));
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  if (cached) cache.set(url, body);
  return body;
}

export const query = (params) => new URLSearchParams(params).toString();
