import { describe, expect, it } from 'vitest';
import { Turns } from './turns.js';

const never = () => new AbortController().signal;
/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

/** Starts `take` and records when it is granted (or refused), for order checks. */
function taker(turns: Turns, name: string, log: string[], signal = never()) {
  const p = turns.take(signal).then(
    (release) => {
      log.push(name);
      return release;
    },
    (e: unknown) => {
      log.push(`${name} refused`);
      throw e;
    },
  );
  p.catch(() => undefined);
  return p;
}

describe('Turns', () => {
  it('grants the first taker at once', async () => {
    const turns = new Turns();
    const release = await turns.take(never());
    expect(typeof release).toBe('function');
    expect(turns.queued).toBe(0);
  });

  it('holds later takers until the holder releases, one holder at a time', async () => {
    const turns = new Turns();
    const log: string[] = [];
    const first = await taker(turns, 'a', log);
    const second = taker(turns, 'b', log);
    const third = taker(turns, 'c', log);
    await settle();
    expect(log).toEqual(['a']);
    expect(turns.queued).toBe(2);
    first();
    const releaseB = await second;
    await settle();
    expect(log).toEqual(['a', 'b']);
    expect(turns.queued).toBe(1);
    releaseB();
    (await third)();
    expect(log).toEqual(['a', 'b', 'c']);
  });

  it('grants waiters in the order they came (FIFO)', async () => {
    const turns = new Turns();
    const log: string[] = [];
    const first = await taker(turns, 'holder', log);
    const waiting = ['w1', 'w2', 'w3', 'w4', 'w5'].map((n) => taker(turns, n, log));
    first();
    for (const w of waiting) (await w)();
    expect(log).toEqual(['holder', 'w1', 'w2', 'w3', 'w4', 'w5']);
  });

  it('is free again once the last holder releases', async () => {
    const turns = new Turns();
    (await turns.take(never()))();
    const log: string[] = [];
    await taker(turns, 'later', log);
    expect(log).toEqual(['later']);
  });

  describe('when a waiter aborts', () => {
    it('rejects it with the signal reason and takes it out of the line without granting it a turn', async () => {
      const turns = new Turns();
      const log: string[] = [];
      const holder = await taker(turns, 'holder', log);
      const controller = new AbortController();
      const leaving = taker(turns, 'leaving', log, controller.signal);
      const next = taker(turns, 'next', log);
      await settle();
      expect(turns.queued).toBe(2);
      const reason = new Error('run cancelled');
      controller.abort(reason);
      await expect(leaving).rejects.toBe(reason);
      expect(turns.queued).toBe(1);
      holder();
      const releaseNext = await next;
      expect(log).toEqual(['holder', 'leaving refused', 'next']);
      // The one that left holds nothing: with next released, the turns are free.
      releaseNext();
      expect(turns.queued).toBe(0);
      await taker(turns, 'after', log);
      expect(log.at(-1)).toBe('after');
    });

    it('keeps the line moving when the aborted waiter was the only one', async () => {
      const turns = new Turns();
      const log: string[] = [];
      const holder = await taker(turns, 'holder', log);
      const controller = new AbortController();
      const leaving = taker(turns, 'leaving', log, controller.signal);
      controller.abort(new Error('gone'));
      await expect(leaving).rejects.toThrow('gone');
      holder();
      await taker(turns, 'next', log);
      expect(log).toEqual(['holder', 'leaving refused', 'next']);
    });

    it('refuses a taker whose signal is already aborted, even when the turns are free', async () => {
      const turns = new Turns();
      const reason = new Error('already');
      await expect(turns.take(AbortSignal.abort(reason))).rejects.toBe(reason);
      const log: string[] = [];
      await taker(turns, 'next', log);
      expect(log).toEqual(['next']);
    });

    it('keeps a granted turn when the signal aborts afterwards', async () => {
      const turns = new Turns();
      const log: string[] = [];
      const holder = await taker(turns, 'holder', log);
      const controller = new AbortController();
      const granted = taker(turns, 'granted', log, controller.signal);
      holder();
      const release = await granted;
      controller.abort(new Error('late'));
      const next = taker(turns, 'next', log);
      await settle();
      expect(log).toEqual(['holder', 'granted']);
      release();
      await next;
      expect(log).toEqual(['holder', 'granted', 'next']);
    });
  });

  describe('when a release is called twice', () => {
    it('grants only one waiter, not two', async () => {
      const turns = new Turns();
      const log: string[] = [];
      const release = await taker(turns, 'holder', log);
      const b = taker(turns, 'b', log);
      taker(turns, 'c', log);
      release();
      release();
      await b;
      await settle();
      expect(log).toEqual(['holder', 'b']);
      expect(turns.queued).toBe(1);
    });

    it('does not free the turns while another holds them', async () => {
      const turns = new Turns();
      const log: string[] = [];
      const release = await taker(turns, 'holder', log);
      const b = taker(turns, 'b', log);
      release();
      await b;
      release();
      taker(turns, 'c', log);
      await settle();
      expect(log).toEqual(['holder', 'b']);
    });
  });
});
