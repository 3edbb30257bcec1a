import { describe, expect, it } from 'vitest';
import { escapeXml, lineChartSvg, ticksOf } from '../bench/svg-chart.js';

// The bench's SVG line-chart writer (bench/svg-chart.ts): the committed charts are drawn by it.

const pointsOf = (svg: string, series: string) => {
  const m = new RegExp(`<polyline data-series="${series}" points="([^"]*)"`).exec(svg);
  return (m?.[1] ?? '').split(' ').map((p) => p.split(',').map(Number) as [number, number]);
};

describe('lineChartSvg', () => {
  const chart = {
    title: 'calls/s <by> sessions',
    xLabel: 'sessions',
    yLabel: 'calls/s',
    logX: true,
    width: 720,
    height: 400,
    series: [
      { name: 'ours', points: [1, 10, 100, 1000].map((x) => ({ x, y: x * 2 })) },
      { name: 'peer & co', dashed: true, points: [1, 10, 100, 1000].map((x) => ({ x, y: x })) },
    ],
  };
  const svg = lineChartSvg(chart);

  it('draws one polyline per series with one vertex per point, inside the plot area', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    const ours = pointsOf(svg, 'ours');
    expect(ours).toHaveLength(4);
    for (const [x, y] of ours) {
      expect(x).toBeGreaterThanOrEqual(70);
      expect(x).toBeLessThanOrEqual(720 - 190);
      expect(y).toBeGreaterThanOrEqual(40);
      expect(y).toBeLessThanOrEqual(400 - 50);
    }
  });

  it('spaces a log x axis evenly by decade and puts larger values higher', () => {
    const xs = pointsOf(svg, 'ours').map((p) => p[0]);
    const gaps = xs.slice(1).map((x, i) => x - (xs[i] as number));
    for (const g of gaps) expect(g).toBeCloseTo(gaps[0] as number, 0);
    const ys = pointsOf(svg, 'ours').map((p) => p[1]);
    expect([...ys].sort((a, b) => b - a)).toEqual(ys);
    const peerLast = pointsOf(svg, 'peer &amp; co')[3]?.[1] as number;
    expect(peerLast).toBeGreaterThan(ys[3] as number);
  });

  it('escapes names and titles, and dashes a dashed series', () => {
    expect(svg).toContain('calls/s &lt;by&gt; sessions');
    expect(svg).toContain('data-series="peer &amp; co"');
    expect(svg).toMatch(/data-series="peer &amp; co"[^>]*stroke-dasharray/);
    expect(escapeXml(`a"b'c`)).toBe('a&quot;b&apos;c');
  });

  it('leaves out points it cannot place (NaN, or ≤ 0 on a log axis)', () => {
    const s = lineChartSvg({
      ...chart,
      logY: true,
      series: [
        {
          name: 'gaps',
          points: [
            { x: 1, y: 5 },
            { x: 10, y: Number.NaN },
            { x: 100, y: 0 },
            { x: 1000, y: 50 },
          ],
        },
      ],
    });
    expect(pointsOf(s, 'gaps')).toHaveLength(2);
    expect(s).not.toContain('NaN');
  });
});

describe('ticksOf', () => {
  it('steps a linear axis by 1, 2 or 5 times a power of ten', () => {
    expect(ticksOf(0, 1000, false)).toEqual([0, 200, 400, 600, 800, 1000]);
    expect(ticksOf(0, 7, false)).toEqual([0, 2, 4, 6]);
  });

  it('marks powers of ten on a log axis', () => {
    expect(ticksOf(1, 5000, true)).toEqual([1, 10, 100, 1000]);
    expect(ticksOf(1, 50, true)).toEqual([1, 2, 5, 10, 20, 50]);
  });
});
