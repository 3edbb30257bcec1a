import { describe, expect, it } from 'vitest';
import { Catalog } from './catalog.js';
import { sessionStateOf } from './session-state.js';

const catalog = new Catalog();
const picker = { name: 'pick_file', description: 'the client picks a file', parameters: { type: 'object' } };

describe('sessionStateOf (PUT of a session)', () => {
  const first = sessionStateOf({
    session: 's1',
    body: { provider: 'openai', tenant: 'acme', autoApprove: ['run_command'], clientTools: [picker] },
    tenant: 'acme',
    workspace: '/ws/acme/s1',
    previous: null,
    catalog,
    now: 1_000,
  });

  it('creates the session from the body', () => {
    expect(first).toMatchObject({
      id: 's1',
      provider: 'openai',
      tenant: 'acme',
      autoApprove: ['run_command'],
      clientTools: [picker],
      workspace: '/ws/acme/s1',
      createdAt: 1_000,
      updatedAt: 1_000,
    });
  });

  it('on an update takes provider, tenant and client tools as sent, keeps autoApprove when absent, and keeps fetched schemas and createdAt', () => {
    const previous = { ...first, fetched: [...first.fetched, 'calculate'], autoApprove: ['run_command', 'edit_file'] };
    const next = sessionStateOf({
      session: 's1',
      body: { provider: 'anthropic' },
      tenant: 'default',
      workspace: '/ws/default/s1',
      previous,
      catalog,
      now: 2_000,
    });
    expect(next).toMatchObject({
      provider: 'anthropic',
      tenant: 'default',
      clientTools: [],
      autoApprove: ['run_command', 'edit_file'],
      workspace: '/ws/default/s1',
      createdAt: 1_000,
      updatedAt: 2_000,
    });
    expect(next.fetched).toContain('calculate');
  });

  it('replaces autoApprove when the update sends it', () => {
    const next = sessionStateOf({
      session: 's1',
      body: { provider: 'openai', autoApprove: 'all' },
      tenant: 'default',
      workspace: '/ws/default/s1',
      previous: first,
      catalog,
      now: 2_000,
    });
    expect(next.autoApprove).toBe('all');
  });
});
