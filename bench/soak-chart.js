// Draws soak samples as one self-contained SVG: RSS, heap, open fds, event-loop delay p99 and
// request rate over time, one panel each, fault windows shaded and named.

const PANELS = [
  { key: 'rssMB', label: 'RSS (MB)', color: '#1f77b4' },
  { key: 'heapMB', label: 'heap used (MB)', color: '#2ca02c' },
  { key: 'fds', label: 'open fds', color: '#9467bd' },
  { key: 'loopP99ms', label: 'event-loop delay p99 (ms)', color: '#d62728' },
  { key: 'rate', label: 'requests/s (callers)', color: '#ff7f0e' },
];

const esc = (s) => String(s).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);

/** Returns the SVG text for `samples` ({t, ...}) and fault `windows` ({name, from, to}). */
export function drawSoak(samples, windows, { title }) {
  const W = 900;
  const PH = 120;
  const L = 70;
  const R = 20;
  const top = 40;
  const gap = 28;
  const H = top + PANELS.length * (PH + gap) + 30;
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const x = (t) => L + ((W - L - R) * t) / tMax;
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`];
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`, `<text x="${L}" y="20" font-size="14">${esc(title)}</text>`);
  PANELS.forEach((p, i) => {
    const y0 = top + i * (PH + gap);
    const vals = samples.map((s) => s[p.key]).filter(Number.isFinite);
    const max = Math.max(1, ...vals) * 1.1;
    const y = (v) => y0 + PH - (PH * v) / max;
    for (const w of windows) {
      const x1 = x(w.from);
      const x2 = x(w.to ?? tMax);
      out.push(
        `<rect x="${x1.toFixed(1)}" y="${y0}" width="${Math.max(1, x2 - x1).toFixed(1)}" height="${PH}" fill="#f4c7c3" opacity="0.6"/>`,
      );
      if (i === 0) out.push(`<text x="${x1.toFixed(1)}" y="${y0 - 4}" font-size="9" fill="#a33">${esc(w.name)}</text>`);
    }
    out.push(`<rect x="${L}" y="${y0}" width="${W - L - R}" height="${PH}" fill="none" stroke="#999"/>`);
    out.push(`<text x="${L - 6}" y="${y0 + 10}" text-anchor="end">${max.toFixed(max < 10 ? 1 : 0)}</text>`);
    out.push(`<text x="${L - 6}" y="${y0 + PH}" text-anchor="end">0</text>`);
    out.push(`<text x="${L + 6}" y="${y0 + 14}" fill="${p.color}">${esc(p.label)}</text>`);
    const pts = samples.filter((s) => Number.isFinite(s[p.key])).map((s) => `${x(s.t).toFixed(1)},${y(s[p.key]).toFixed(1)}`);
    out.push(`<polyline fill="none" stroke="${p.color}" stroke-width="1.5" points="${pts.join(' ')}"/>`);
  });
  const yAxis = top + PANELS.length * (PH + gap) - gap + 14;
  for (let k = 0; k <= 6; k++) {
    const t = (tMax * k) / 6;
    out.push(`<text x="${x(t).toFixed(1)}" y="${yAxis}" text-anchor="middle">${(t / 60).toFixed(1)} min</text>`);
  }
  out.push('</svg>');
  return out.join('\n');
}
