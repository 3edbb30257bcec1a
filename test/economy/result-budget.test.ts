// The result budget (API.md v1.2 "What the model sees", issue 28) in all three modes: the whole
// output is written to .tool-results/ in the session's workspace where it is produced (on a
// worker in distributed and cluster mode), a preview fitting the budget goes to the model in
// every view, and read_files offset/limit pages the artifact back together byte for byte.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { direct, rt, uid } from '../conformance/api.js';
import { describeModes, useService } from '../conformance/fixture.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** ~5 MB of numbered lines of varying length with multi-byte characters (a cut inside one would show). */
function fiveMegabytes(): string {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < 5 * 1024 * 1024; i++) {
    const line = `line ${String(i).padStart(6, '0')} café 日本 🙂 ${'x'.repeat((i * 37) % 90)}\n`;
    lines.push(line);
    bytes += Buffer.byteLength(line);
  }
  return lines.join('');
}
const BIG = fiveMegabytes();
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describeModes('result budget', (mode) => {
  // The pages round moves the 5 MB artifact through Redis (outputs, history, dedupe): on a test
  // machine running other files' clusters at once, a command of it can pass the default 2 s
  // deadline and the round answer 503 (retry). The deadline is not what this file tests.
  const f = useService(mode, { env: { TD_REDIS_COMMAND_TIMEOUT_MS: '10000' } });

  it('a 5 MB read under {call: 2000}: a preview within the budget in every view, the whole in an artifact, pages that rebuild it byte for byte', async () => {
    const s = await f.api.session(['read_files', 'calculate'], { provider: 'openai', resultBudget: { call: 2000 } });
    writeFileSync(path.join(f.service.workspace(s), 'big.txt'), BIG);
    const run = uid('run');
    const b = await f.api.round(
      s,
      run,
      [rt('read_files', { paths: ['big.txt'] }), rt('calculate', { expression: '6*7' })],
      { query: 'format=openai' },
    );
    const [read, calc] = b.results;
    expect(read?.status).toBe('ok');
    const o = read?.output as {
      truncated: boolean;
      preview: string;
      artifact: { path: string; bytes: number };
      message: string;
    };
    expect(o.truncated).toBe(true);
    expect(JSON.stringify(o).length).toBeLessThanOrEqual(2000);
    expect(o.preview.length).toBeGreaterThan(500);
    expect(BIG.startsWith(o.preview)).toBe(true);
    expect(o.preview.endsWith('\n')).toBe(true); // cut at a line
    expect(LONE_SURROGATE.test(o.preview)).toBe(false);
    expect(o.artifact.path).toMatch(/^\.tool-results\//);
    expect(o.message).toContain(o.artifact.path);
    expect(o.message).toMatch(/read_files/);
    // Written where the output was produced, into the session's workspace: the whole file.
    const abs = path.join(f.service.workspace(s), o.artifact.path);
    expect(statSync(abs).size).toBe(o.artifact.bytes);
    expect(sha(readFileSync(abs))).toBe(sha(BIG));
    expect(calc?.output).toEqual({ value: 42 });
    // The openai view carries what the neutral result does.
    const msg = (b as unknown as { messages: Array<{ content: string }> }).messages[0]?.content ?? '';
    expect(JSON.parse(msg)).toEqual(o);
    expect(msg.length).toBeLessThanOrEqual(2000);
    // History and dedupe keep what the model got.
    const again = await f.api.one(s, rt('read_files', { paths: ['big.txt'] }), run);
    expect(again.status).toBe('deduped');
    expect(again.output).toEqual(o);
    const history = await f.api.history(s, 'read_files');
    expect(history.find((h) => h.id === read?.id)?.output).toEqual(o);

    // A page within the budget answers as it is, with the artifact's line count.
    const totalLines = BIG.split('\n').length - 1;
    const first = await f.api.one(s, rt('read_files', { paths: [o.artifact.path], offset: 1, limit: 10 }));
    const entry = first.output.files[0];
    expect(entry.totalLines).toBe(totalLines);
    expect(entry.content).toBe(`${BIG.split('\n').slice(0, 10).join('\n')}\n`);
    // Pages in a session whose budget holds them put the artifact back together byte for byte.
    await f.api.putSession(s, { provider: 'openai', resultBudget: { call: 2_000_000 } });
    const pageLines = 8000;
    const calls = [];
    for (let offset = 1; offset <= totalLines; offset += pageLines)
      calls.push(rt('read_files', { paths: [o.artifact.path], offset, limit: pageLines }));
    const pages = await f.api.round(s, uid('pages'), calls);
    let whole = '';
    for (const p of pages.results) {
      expect(p.status, JSON.stringify(p).slice(0, 300)).toBe('ok');
      expect(p.output.truncated).toBeUndefined();
      whole += p.output.files[0].content;
    }
    expect(whole.length).toBe(BIG.length);
    expect(sha(Buffer.from(whole, 'utf8'))).toBe(sha(BIG));
  }, 180_000);

  it('a round over {round: 3000} has its largest outputs cut first; smaller ones stay whole', async () => {
    const s = await f.api.session(['read_files'], { provider: 'anthropic', resultBudget: { round: 3000 } });
    const ws = f.service.workspace(s);
    writeFileSync(path.join(ws, 'a.txt'), 'a'.repeat(2500));
    writeFileSync(path.join(ws, 'b.txt'), 'b'.repeat(1500));
    writeFileSync(path.join(ws, 'c.txt'), 'c'.repeat(200));
    const b = await f.api.round(
      s,
      uid('run'),
      ['a.txt', 'b.txt', 'c.txt'].map((p) => rt('read_files', { paths: [p] })),
      { query: 'format=anthropic' },
    );
    const [a, bb, c] = b.results;
    expect(a?.output.truncated).toBe(true);
    expect(bb?.output.files[0].content).toBe('b'.repeat(1500));
    expect(c?.output.files[0].content).toBe('c'.repeat(200));
    const total = b.results.reduce((n, r) => n + JSON.stringify(r.output).length, 0);
    expect(total).toBeLessThanOrEqual(3000);
    expect(readFileSync(path.join(ws, a?.output.artifact.path), 'utf8')).toBe('a'.repeat(2500));
    const content = (b as unknown as { content: Array<{ content: string }> }).content;
    expect(JSON.parse(content[0]?.content ?? '')).toEqual(a?.output);
  }, 120_000);

  it('a session without a budget answers exactly as before and writes no artifact', async () => {
    const s = await f.api.session(['read_files'], { provider: 'openai' });
    const ws = f.service.workspace(s);
    writeFileSync(path.join(ws, 'mid.txt'), 'm'.repeat(100_000));
    const r = await f.api.one(s, rt('read_files', { paths: ['mid.txt'] }));
    expect(r.output).toEqual({ files: [{ path: 'mid.txt', content: 'm'.repeat(100_000) }] });
    expect(
      existsSync(path.join(ws, '.tool-results')) && readdirSync(path.join(ws, '.tool-results')).length,
    ).toBeFalsy();
  }, 60_000);

  it('refuses a bad resultBudget with 400 naming it', async () => {
    for (const resultBudget of [{ call: 10 }, { call: 'big' }, { round: 1.5 }, { turn: 2000 }, 5000]) {
      const r = await f.api.request('PUT', `/v1/sessions/${uid('s')}`, { provider: 'openai', resultBudget });
      expect(r.status, JSON.stringify(resultBudget)).toBe(400);
      expect(r.text).toMatch(/resultBudget/);
    }
    const ok = await f.api.one(await f.api.session([]), direct('find_tools', { names: ['read_files'] }));
    expect(ok.status).toBe('ok');
  }, 60_000);
});
