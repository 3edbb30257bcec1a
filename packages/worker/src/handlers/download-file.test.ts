import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../testing/http-test-server.js';
import { makeContext, makeWorkspace } from '../../testing/workspace.js';
import { createDownloadFile, downloadFile, MAX_DOWNLOAD_BYTES } from './download-file.js';

const SMALL_CAP = 1024;
const MIB = 1024 * 1024;

let server: TestServer;
let other: TestServer;
/** How the last /huge response ended: all of it sent, or cut by the client. */
let hugeEnd: Promise<{ sentBytes: number; finished: boolean }>;

/** Writes `total` bytes in 1 MiB chunks, honouring backpressure, until done or the client goes away. */
function stream(res: ServerResponse, total: number): Promise<{ sentBytes: number; finished: boolean }> {
  const chunk = Buffer.alloc(MIB, 'x');
  let sentBytes = 0;
  return new Promise((resolve) => {
    res.on('close', () => resolve({ sentBytes, finished: res.writableFinished }));
    const writeMore = () => {
      while (sentBytes < total && !res.destroyed) {
        sentBytes += chunk.byteLength;
        if (!res.write(chunk)) return void res.once('drain', writeMore);
      }
      if (!res.destroyed) res.end();
    };
    writeMore();
  });
}

beforeAll(async () => {
  other = await startTestServer({ '/file': (_req, res) => res.writeHead(200).end('from the other port') });
  server = await startTestServer({
    '/file.txt': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello file'),
    '/no-type': (_req, res) => {
      res.removeHeader('content-type');
      res.writeHead(200).end(Buffer.from([1, 2, 3]));
    },
    '/exact': (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end('e'.repeat(SMALL_CAP)),
    '/chunked-over': (_req, res) => {
      // No Content-Length: only counting while streaming can stop it.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      void stream(res, 8 * SMALL_CAP);
    },
    '/announced-over': (_req, res) =>
      res.writeHead(200, { 'content-length': String(SMALL_CAP + 1) }).end('a'.repeat(SMALL_CAP + 1)),
    '/gzip-over': (_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(4 * SMALL_CAP, 'z'))),
    '/huge': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      // Well past the cap, so the client's cut (not the end of the data) is what stops it.
      hugeEnd = stream(res, MAX_DOWNLOAD_BYTES + 32 * MIB);
    },
    '/missing': (_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'),
    '/server-error': (_req, res) => res.writeHead(500).end('boom'),
    '/redirect': (_req, res) => res.writeHead(302, { location: '/file.txt' }).end(),
    '/redirect-other': (_req, res) => res.writeHead(302, { location: `${other.origin}/file` }).end(),
    '/redirect-metadata': (_req, res) =>
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
    '/trickle': (_req, res) => {
      // A first part of the body, then nothing: the call can only end by its signal.
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).write('partial body');
    },
    '/cut-short': (req, res) => {
      res.writeHead(200, { 'content-length': '1000' }).write('only ten b');
      setTimeout(() => req.socket.destroy(), 20);
    },
  });
});
afterAll(async () => {
  await server.close();
  await other.close();
});

let ws: { dir: string; cleanup: () => Promise<void> };
let root: string;
beforeEach(async () => {
  ws = await makeWorkspace();
  root = path.join(ws.dir, 'w');
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await mkdir(path.join(ws.dir, 'outside'));
});
afterEach(() => ws.cleanup());

const ctx = (overrides: Parameters<typeof makeContext>[1] = {}) =>
  makeContext(root, { ...overrides, config: { httpAllow: [`127.0.0.1:${server.port}`] } });
const small = createDownloadFile({ maxBytes: SMALL_CAP });
/** Every entry under the workspace (dotfiles, so temp files, included), sorted. */
const entries = async () => (await readdir(root, { recursive: true })).sort();

describe('download_file', () => {
  it('writes the body to the path and reports its size and content type', async () => {
    await expect(downloadFile({ url: `${server.origin}/file.txt`, path: 'sub/hello.txt' }, ctx())).resolves.toEqual({
      path: 'sub/hello.txt',
      bytes: 10,
      contentType: 'text/plain; charset=utf-8',
      created: true,
    });
    await expect(readFile(path.join(root, 'sub/hello.txt'), 'utf8')).resolves.toBe('hello file');
    expect(await entries()).toEqual(['sub', 'sub/hello.txt']);
  });

  it('creates parent directories inside the workspace', async () => {
    await downloadFile({ url: `${server.origin}/file.txt`, path: 'new/deep/dir/f.txt' }, ctx());
    await expect(readFile(path.join(root, 'new/deep/dir/f.txt'), 'utf8')).resolves.toBe('hello file');
  });

  it('reports the path as given, normalised', async () => {
    const out = await downloadFile({ url: `${server.origin}/file.txt`, path: './sub/../f.txt' }, ctx());
    expect(out.path).toBe('f.txt');
    await expect(readFile(path.join(root, 'f.txt'), 'utf8')).resolves.toBe('hello file');
  });

  it('replaces an existing file, reporting created false', async () => {
    await writeFile(path.join(root, 'f.txt'), 'old content');
    await expect(downloadFile({ url: `${server.origin}/file.txt`, path: 'f.txt' }, ctx())).resolves.toMatchObject({
      created: false,
    });
    await expect(readFile(path.join(root, 'f.txt'), 'utf8')).resolves.toBe('hello file');
  });

  it('writes a file whose name is as long as a file name can be (the temp name does not grow with it)', async () => {
    const name = `${'n'.repeat(251)}.txt`;
    await expect(downloadFile({ url: `${server.origin}/file.txt`, path: name }, ctx())).resolves.toMatchObject({
      path: name,
    });
    expect(await entries()).toEqual([name, 'sub']);
  });

  it('reports a null content type when the server sends none', async () => {
    await expect(downloadFile({ url: `${server.origin}/no-type`, path: 'f.bin' }, ctx())).resolves.toMatchObject({
      bytes: 3,
      contentType: null,
    });
  });

  describe('when the status is not 2xx', () => {
    it('fails naming the status and writes nothing, not even the parent directories', async () => {
      await expect(downloadFile({ url: `${server.origin}/missing`, path: 'new/f.html' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/answered with status 404.*nothing was written to new\/f\.html/),
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('leaves an existing file as it was', async () => {
      await writeFile(path.join(root, 'f.txt'), 'keep me');
      await expect(downloadFile({ url: `${server.origin}/server-error`, path: 'f.txt' }, ctx())).rejects.toMatchObject({
        message: expect.stringMatching(/status 500/),
      });
      await expect(readFile(path.join(root, 'f.txt'), 'utf8')).resolves.toBe('keep me');
    });
  });

  describe('when the body is larger than the cap', () => {
    it('writes a body of exactly the cap', async () => {
      await expect(small({ url: `${server.origin}/exact`, path: 'f.bin' }, ctx())).resolves.toMatchObject({
        bytes: SMALL_CAP,
      });
    });

    it('fails once the stream passes the cap, leaving no file and no temp file', async () => {
      await expect(small({ url: `${server.origin}/chunked-over`, path: 'f.bin' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/larger than the download limit of 1024 bytes; nothing was written to f\.bin/),
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('leaves an existing file as it was', async () => {
      await writeFile(path.join(root, 'f.bin'), 'keep me');
      await expect(small({ url: `${server.origin}/chunked-over`, path: 'f.bin' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
      });
      await expect(readFile(path.join(root, 'f.bin'), 'utf8')).resolves.toBe('keep me');
      expect(await entries()).toEqual(['f.bin', 'sub']);
    });

    it('fails before reading when Content-Length announces more than the cap', async () => {
      await expect(small({ url: `${server.origin}/announced-over`, path: 'f.bin' }, ctx())).rejects.toMatchObject({
        message: expect.stringMatching(/announces 1025 bytes \(Content-Length\), more than the download limit/),
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('counts the decoded bytes, so a compressed body inflating past the cap fails', async () => {
      await expect(small({ url: `${server.origin}/gzip-over`, path: 'f.txt' }, ctx())).rejects.toMatchObject({
        message: expect.stringMatching(/larger than the download limit/),
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('stops a real stream past 64 MiB without reading it all, leaving nothing behind', async () => {
      await expect(downloadFile({ url: `${server.origin}/huge`, path: 'huge.bin' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/larger than the download limit of 64 MiB/),
      });
      expect(await entries()).toEqual(['sub']);
      const end = await hugeEnd;
      expect(end.finished).toBe(false);
      expect(end.sentBytes).toBeLessThan(MAX_DOWNLOAD_BYTES + 32 * MIB);
    }, 20_000);
  });

  describe('when the network rules refuse', () => {
    it('refuses a loopback server TD_HTTP_ALLOW does not list, writing nothing', async () => {
      const unlisted = makeContext(root);
      await expect(downloadFile({ url: `${server.origin}/file.txt`, path: 'f.txt' }, unlisted)).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/private.*TD_HTTP_ALLOW=127\.0\.0\.1:\d+/s),
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('refuses a redirect to a loopback address that is not allowed, without connecting to it', async () => {
      await expect(
        downloadFile({ url: `${server.origin}/redirect-other`, path: 'f.txt' }, ctx()),
      ).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(new RegExp(`127\\.0\\.0\\.1:${other.port}.*private`)),
      });
      expect(other.hits).toEqual([]);
      expect(await entries()).toEqual(['sub']);
    });

    it('refuses a redirect to the cloud metadata address', async () => {
      await expect(
        downloadFile({ url: `${server.origin}/redirect-metadata`, path: 'f.txt' }, ctx()),
      ).rejects.toMatchObject({ message: expect.stringMatching(/169\.254\.169\.254.*private/) });
      expect(await entries()).toEqual(['sub']);
    });

    it('follows a redirect to an allowed host', async () => {
      await downloadFile({ url: `${server.origin}/redirect`, path: 'f.txt' }, ctx());
      await expect(readFile(path.join(root, 'f.txt'), 'utf8')).resolves.toBe('hello file');
    });
  });

  describe('when the path leaves the workspace', () => {
    const refusesWithoutRequest = async (p: string, message: RegExp) => {
      const before = server.hits.length;
      await expect(downloadFile({ url: `${server.origin}/file.txt`, path: p }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(message),
      });
      expect(server.hits.length).toBe(before);
      await expect(readdir(path.join(ws.dir, 'outside'))).resolves.toEqual([]);
    };

    it('refuses an absolute path, saying it is absolute, without making the request', async () => {
      await refusesWithoutRequest(path.join(ws.dir, 'outside/f.txt'), /is absolute/);
    });

    it('refuses "../x", naming the escape', async () => {
      await refusesWithoutRequest('../outside/f.txt', /escapes the session workspace \(through "\.\."\)/);
    });

    it('refuses a path under a symlinked directory pointing out', async () => {
      await symlink(path.join(ws.dir, 'outside'), path.join(root, 'out'));
      await refusesWithoutRequest('out/new/f.txt', /escapes the session workspace \(through a symlink\)/);
    });

    it('refuses a target that is itself a symlink pointing out', async () => {
      await symlink('../outside/victim.txt', path.join(root, 'link.txt'));
      await refusesWithoutRequest('link.txt', /escapes the session workspace \(through a symlink\)/);
    });

    it('refuses a path that names a directory', async () => {
      await refusesWithoutRequest('sub/', /names a directory/);
      await refusesWithoutRequest('sub', /is a directory/);
    });
  });

  describe('when the download stops part way', () => {
    it('fails with timeout past the deadline and leaves no partial file', async () => {
      const late = ctx({ signal: AbortSignal.timeout(300) });
      await expect(downloadFile({ url: `${server.origin}/trickle`, path: 'f.bin' }, late)).rejects.toMatchObject({
        code: 'timeout',
      });
      expect(await entries()).toEqual(['sub']);
    });

    it('fails with cancelled when the caller aborts and leaves an existing file as it was', async () => {
      await writeFile(path.join(root, 'f.bin'), 'keep me');
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      await expect(
        downloadFile({ url: `${server.origin}/trickle`, path: 'f.bin' }, ctx({ signal: controller.signal })),
      ).rejects.toMatchObject({ code: 'cancelled' });
      await expect(readFile(path.join(root, 'f.bin'), 'utf8')).resolves.toBe('keep me');
      expect(await entries()).toEqual(['f.bin', 'sub']);
    });

    it('fails naming the request when the server cuts the body short, leaving no temp file', async () => {
      await expect(downloadFile({ url: `${server.origin}/cut-short`, path: 'f.bin' }, ctx())).rejects.toMatchObject({
        code: 'handler_error',
        message: expect.stringMatching(/the request to .*\/cut-short failed/),
      });
      expect(await entries()).toEqual(['sub']);
    });
  });

  it('refuses a cap that is not a non-negative integer', () => {
    expect(() => createDownloadFile({ maxBytes: -1 })).toThrow(/maxBytes/);
  });
});
