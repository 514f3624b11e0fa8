// The tab's styles: one sheet, added to the frame's head by index.js.

export const STYLE = `
  body { font-family: Roboto, sans-serif; font-size: 13px; color: #212121; margin: 16px; }
  #controls, #typed { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin-bottom: 8px; }
  #controls label { display: flex; gap: 4px; align-items: center; }
  #controls select { max-width: 420px; }
  #step { width: 320px; }
  #typed-text { width: 420px; padding: 3px 6px; }
  #typed-message { color: #c62828; }
  #caption { margin: 8px 0; line-height: 1.5; }
  #caption b { display: inline-block; width: 110px; color: #616161; font-weight: normal; }
  #message { padding: 24px; color: #616161; font-size: 14px; max-width: 720px; line-height: 1.5; }
  #tooltip { position: fixed; pointer-events: none; background: #212121; color: #fff;
             padding: 4px 8px; border-radius: 3px; font-size: 12px; display: none; z-index: 10; }
  svg text { font-size: 12px; fill: #212121; }
  svg text.piece { cursor: default; }
  svg text.lit { fill: #d84315; font-weight: bold; }
  svg text.dim { fill: #9e9e9e; }
  svg text.note { fill: #616161; }
  .band { fill: none; stroke: #d84315; stroke-width: 1.5; pointer-events: none; }
  .chosen { fill: none; stroke: #d84315; stroke-width: 2.5; pointer-events: none; }
  #heatmap.clickable rect.cell, #heatmap.clickable text.row-label { cursor: pointer; }
  .panel { cursor: pointer; }
  .panel:hover rect.frame { stroke: #d84315; }
  .chip { display: inline-flex; align-items: center; gap: 4px; margin-right: 10px; cursor: pointer; user-select: none; }
  .chip span { width: 12px; height: 12px; border-radius: 2px; display: inline-block; }
  .chip.off { opacity: 0.35; }
  #inside-view { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }
  #inside .key-row:hover rect.hover-band { fill: #fff3e0; }
  #inside .masked text, #inside .masked rect.strip-cell { opacity: 0.3; }
`;
