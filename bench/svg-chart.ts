// A small SVG line-chart writer for the bench results: one or more series of (x, y) points on linear
// or log axes, with ticks, a legend and a title. No library: the charts are a few polylines.

export interface ChartSeries {
  name: string;
  points: readonly { x: number; y: number }[];
  /** Dashed line, e.g. for the peer's side. */
  dashed?: boolean;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly ChartSeries[];
  logX?: boolean;
  logY?: boolean;
  width?: number;
  height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];
const MARGIN = { left: 70, right: 190, top: 40, bottom: 50 };

/** Escapes text for an SVG text node or attribute. */
export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

/** Tick values covering [min, max]: powers of ten (and 2×, 5×) on a log axis, 1-2-5 steps otherwise. */
export function ticksOf(min: number, max: number, log: boolean): number[] {
  if (log) {
    const ticks: number[] = [];
    const decades = Math.log10(max) - Math.log10(min);
    const steps = decades > 3 ? [1] : [1, 2, 5];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++)
      for (const m of steps) {
        const v = m * 10 ** e;
        if (v >= min * 0.999 && v <= max * 1.001) ticks.push(v);
      }
    return ticks;
  }
  const span = max - min || Math.abs(max) || 1;
  const raw = span / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  const ticks: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

function formatTick(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

/** Extent of the values, padded so the lines do not touch the frame; a linear y axis starts at 0. */
function extentOf(values: number[], log: boolean, fromZero: boolean): [number, number] {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (finite.length === 0) return log ? [1, 10] : [0, 1];
  let min = Math.min(...finite);
  let max = Math.max(...finite);
  if (log) {
    if (min === max) return [min / 2, max * 2];
    return [min, max];
  }
  if (fromZero) min = Math.min(0, min);
  if (min === max) max = min + 1;
  return [min, max + (max - min) * 0.05];
}

/** The chart as an SVG document. Points with a non-finite (or, on a log axis, non-positive) value are left out. */
export function lineChartSvg(chart: LineChart): string {
  const width = chart.width ?? 720;
  const height = chart.height ?? 400;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const logX = chart.logX === true;
  const logY = chart.logY === true;
  const usable = (v: number, log: boolean) => Number.isFinite(v) && (!log || v > 0);
  const all = chart.series.flatMap((s) => s.points.filter((p) => usable(p.x, logX) && usable(p.y, logY)));
  const [x0, x1] = extentOf(
    all.map((p) => p.x),
    logX,
    false,
  );
  const [y0, y1] = extentOf(
    all.map((p) => p.y),
    logY,
    true,
  );
  const scale = (v: number, lo: number, hi: number, log: boolean) =>
    log ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo || 1);
  const px = (x: number) => MARGIN.left + scale(x, x0, x1, logX) * plotW;
  const py = (y: number) => MARGIN.top + plotH - scale(y, y0, y1, logY) * plotH;
  const r = (v: number) => v.toFixed(1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(chart.title)}</text>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`,
  ];
  for (const t of ticksOf(x0, x1, logX)) {
    const x = r(px(t));
    out.push(`<line x1="${x}" y1="${MARGIN.top}" x2="${x}" y2="${MARGIN.top + plotH}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${formatTick(t)}</text>`);
  }
  for (const t of ticksOf(y0, y1, logY)) {
    const y = r(py(t));
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#ddd"/>`);
    out.push(
      `<text x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatTick(t)}</text>`,
    );
  }
  out.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
    `<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(chart.yLabel)}</text>`,
  );
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    const pts = s.points.filter((p) => usable(p.x, logX) && usable(p.y, logY)).sort((a, b) => a.x - b.x);
    const name = escapeXml(s.name);
    if (pts.length > 0) {
      const line = pts.map((p) => `${r(px(p.x))},${r(py(p.y))}`).join(' ');
      out.push(
        `<polyline data-series="${name}" points="${line}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`,
      );
      for (const p of pts) out.push(`<circle cx="${r(px(p.x))}" cy="${r(py(p.y))}" r="3" fill="${color}"/>`);
    }
    const ly = MARGIN.top + 10 + i * 18;
    const lx = MARGIN.left + plotW + 12;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${name}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
