import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { trackRouteMethods } from './route-methods.js';

async function appWithRoutes() {
  const app = Fastify();
  const allowedMethods = trackRouteMethods(app);
  const ok = async () => ({});
  app.get('/v1/sessions/:session', ok);
  app.put('/v1/sessions/:session', ok);
  app.post('/v1/sessions/:session/runs/:run/rounds', ok);
  app.get('/files/*', ok);
  app.delete('/items/:id(^\\d+)', ok);
  app.get('/pairs/:pair(^(\\d+)-(\\d+)$)', ok);
  app.get('/ratio::x', ok);
  await app.register(
    async function prefixed(child) {
      child.post('/jobs', ok);
    },
    { prefix: '/admin' },
  );
  await app.ready();
  return { app, allowedMethods };
}

describe('trackRouteMethods', () => {
  it('lists the methods of every route whose pattern matches the path, HEAD with GET', async () => {
    const { app, allowedMethods } = await appWithRoutes();
    expect(allowedMethods('/v1/sessions/s-1')).toEqual(['GET', 'HEAD', 'PUT']);
    expect(allowedMethods('/v1/sessions/s-1/runs/r/rounds')).toEqual(['POST']);
    expect(allowedMethods('/admin/jobs')).toEqual(['POST']);
    await app.close();
  });

  it('reads one segment for :param, the regex for :param(re), the rest for * and a colon for ::', async () => {
    const { app, allowedMethods } = await appWithRoutes();
    expect(allowedMethods('/v1/sessions/a/b')).toEqual([]);
    expect(allowedMethods('/files/a/b/c.txt')).toEqual(['GET', 'HEAD']);
    expect(allowedMethods('/items/42')).toEqual(['DELETE']);
    expect(allowedMethods('/items/abc')).toEqual([]);
    expect(allowedMethods('/pairs/1-2')).toEqual(['GET', 'HEAD']);
    expect(allowedMethods('/ratio:x')).toEqual(['GET', 'HEAD']);
    await app.close();
  });

  it('lists nothing for a path no route has, so the caller answers 404', async () => {
    const { app, allowedMethods } = await appWithRoutes();
    expect(allowedMethods('/nowhere')).toEqual([]);
    expect(allowedMethods('/v1/sessions')).toEqual([]);
    await app.close();
  });
});
