// A trace as Jaeger's query API answered it (`/api/traces/{id}`), drawn as a timeline in the
// manner of Jaeger's trace view: one row per span in tree order, indented under its parent, a bar
// for its time within the trace, coloured by service. The Jaeger that Go builds from the module
// carries no UI assets (its UI is a placeholder page), so the docs' picture of a round is this
// page, drawn from Jaeger's own answer. A self-contained page: no request leaves it.
import type { JaegerSpan, JaegerTrace } from './jaeger.js';
import { parentOf, tag } from './jaeger.js';

const COLOURS = ['#17b8be', '#e3a33d', '#7b61c9', '#d9534f', '#5cb85c'];
/** The attributes shown beside a span's name, when it has them. */
const SHOWN = ['td.call.id', 'td.status', 'td.wait.reason', 'td.confirm.decision', 'td.calls'];

const html = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The spans depth-first from the roots, children by start time, each with its depth. */
function treeOrder(spans: readonly JaegerSpan[]): { span: JaegerSpan; depth: number }[] {
  const ids = new Set(spans.map((s) => s.spanID));
  const children = new Map<string | undefined, JaegerSpan[]>();
  for (const span of spans) {
    const parent = parentOf(span);
    const key = parent !== undefined && ids.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), span]);
  }
  const out: { span: JaegerSpan; depth: number }[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of (children.get(parent) ?? []).sort((a, b) => a.startTime - b.startTime)) {
      out.push({ span, depth });
      walk(span.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  return out;
}

const ms = (micros: number) => `${(micros / 1000).toFixed(micros < 10_000 ? 2 : 1)} ms`;

/** A bar's duration, after the bar, or before it when the bar ends near the right edge. */
const durationLabel = (left: number, width: number, text: string) =>
  left + width > 85
    ? `<span class="dur before" style="right:${100 - left}%">${text}</span>`
    : `<span class="dur" style="left:${left + width}%">${text}</span>`;

/** The HTML page; `source` names the Jaeger query URL the trace came from. */
export function renderTrace(trace: JaegerTrace, options: { source: string }): string {
  const start = Math.min(...trace.spans.map((s) => s.startTime));
  const end = Math.max(...trace.spans.map((s) => s.startTime + s.duration));
  const total = Math.max(end - start, 1);
  const services = [...new Set(Object.values(trace.processes).map((p) => p.serviceName))].sort();
  const colour = (span: JaegerSpan) =>
    COLOURS[services.indexOf(trace.processes[span.processID]?.serviceName ?? '') % COLOURS.length];
  const rows = treeOrder(trace.spans).map(({ span, depth }) => {
    const service = trace.processes[span.processID]?.serviceName ?? '?';
    const left = ((span.startTime - start) / total) * 100;
    const width = Math.max((span.duration / total) * 100, 0.3);
    const attrs = SHOWN.filter((k) => tag(span, k) !== undefined)
      .map((k) => `${k}=${String(tag(span, k))}`)
      .join(' ');
    return `<div class="row" data-span="${html(span.spanID)}">
  <div class="name" style="padding-left:${8 + depth * 14}px"><span class="svc" style="background:${colour(span)}"></span><b>${html(service)}</b> ${html(span.operationName)} <small>${html(attrs)}</small></div>
  <div class="lane"><div class="bar" style="left:${left}%;width:${width}%;background:${colour(span)}"></div>${durationLabel(left, width, ms(span.duration))}</div>
</div>`;
  });
  const legend = services
    .map((s, i) => `<span><span class="svc" style="background:${COLOURS[i % COLOURS.length]}"></span>${html(s)}</span>`)
    .join(' ');
  return `<!doctype html><html><head><meta charset="utf-8"><title>Trace ${html(trace.traceID)}</title><style>
body{margin:0;font:13px/1.3 system-ui,sans-serif;color:#222;background:#fff}
main{padding:12px 16px;width:1248px;box-sizing:border-box}
h1{font-size:16px;margin:0 0 4px} .meta{color:#555;margin-bottom:8px} .meta span{margin-right:14px}
.row{display:flex;border-bottom:1px solid #eee;height:22px;align-items:center}
.row:nth-child(odd){background:#fafafa}
.name{width:560px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;box-sizing:border-box}
.name small{color:#666} .svc{display:inline-block;width:4px;height:14px;margin-right:6px;vertical-align:middle}
.lane{position:relative;flex:1;height:100%;border-left:1px solid #ddd}
.bar{position:absolute;top:5px;height:12px;border-radius:2px;min-width:2px}
.dur{position:absolute;top:4px;padding-left:4px;color:#555;font-size:11px;white-space:nowrap} .dur.before{padding:0 4px 0 0}
</style></head><body><main>
<h1>Trace ${html(trace.traceID)}: ${html(treeOrder(trace.spans)[0]?.span.operationName ?? '')}</h1>
<div class="meta"><span>${trace.spans.length} spans</span><span>${ms(total)}</span><span>services: ${legend}</span><span>drawn from Jaeger v1.75.0's answer to GET ${html(options.source)}/api/traces/${html(trace.traceID)}</span></div>
${rows.join('\n')}
</main></body></html>`;
}
