import { execFile } from 'node:child_process';
import { access, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './http/harness.js';

// @tool-dispatch/client as a user gets it: packed (`pnpm pack`, what publishing uploads) or named
// by its path, installed with `npm install --offline` into a project outside the repo, compiled
// under --strict with the repo's typescript for each moduleResolution, and run against a real
// coordinator on loopback. Needs the client built (`pnpm test` builds first).

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const clientDir = path.join(root, 'packages', 'client');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const consumerSource = path.join(root, 'test', 'client-package', 'consumer.ts');

/** compilerOptions per moduleResolution: what a consumer of each kind has. */
const MODES = {
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'preserve', moduleResolution: 'bundler' },
  node10: { module: 'es2022', moduleResolution: 'node10' },
} as const;
type Mode = keyof typeof MODES;

let h: Harness;
let work: string;
let tarball: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'td-client-pkg-'));
  h = await startHarness();
  const packDir = path.join(work, 'pack');
  // --ignore-scripts: dist/ is built already (prepack would build it again).
  await run('npx', ['-y', 'pnpm@12.4.2', 'pack', '--ignore-scripts', '--pack-destination', packDir], {
    cwd: clientDir,
  });
  const [name] = await readdir(packDir);
  if (!name) throw new Error('pnpm pack wrote no tarball');
  tarball = path.join(packDir, name);
}, 60_000);

afterAll(async () => {
  await h?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** PATH without any directory holding a `pnpm` (a user's machine with only node and npm). */
async function pathWithoutPnpm(): Promise<string> {
  const dirs = (process.env.PATH ?? '').split(path.delimiter);
  const kept = await Promise.all(
    dirs.map(async (d) =>
      (await access(path.join(d, 'pnpm')).then(
        () => true,
        () => false,
      ))
        ? undefined
        : d,
    ),
  );
  return kept.filter((d) => d !== undefined).join(path.delimiter);
}

describe('npm pack', () => {
  it('packs the client with plain `npm pack` where pnpm is not on the PATH (prepack builds with npm)', async () => {
    const env = { ...process.env, PATH: await pathWithoutPnpm() };
    await expect(run('sh', ['-c', 'command -v pnpm'], { env })).rejects.toThrow();
    const dest = path.join(work, 'npm-pack');
    await mkdir(dest, { recursive: true });
    await run('npm', ['pack', '--pack-destination', dest], { cwd: clientDir, env });
    const [name] = await readdir(dest);
    const { stdout } = await run('tar', ['tzf', path.join(dest, name as string)]);
    expect(stdout.split('\n')).toEqual(expect.arrayContaining(['package/dist/index.js', 'package/dist/index.d.ts']));
  }, 120_000);
});

/** A fresh project with the client installed from `spec` (a tarball or a directory), offline. */
async function projectWith(spec: string, name: string): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', spec], { cwd: dir });
  await copyFile(consumerSource, path.join(dir, 'consumer.ts'));
  return dir;
}

/** Compiles the consumer under --strict for each moduleResolution (one `tsc -b`), then runs what tsc wrote. */
async function compileAndRun(dir: string, modes: readonly Mode[]): Promise<unknown[]> {
  const projects = await Promise.all(modes.map((mode) => writeProject(dir, mode)));
  await run(process.execPath, [tsc, '-b', ...projects]).catch((e: { stdout?: string }) => {
    throw new Error(`tsc failed:\n${e.stdout ?? String(e)}`);
  });
  const outputs = modes.map((mode) => run(process.execPath, [path.join(dir, `out-${mode}`, 'consumer.js'), h.base]));
  return (await Promise.all(outputs)).map(({ stdout }) => JSON.parse(stdout));
}

async function writeProject(dir: string, mode: Mode): Promise<string> {
  const tsconfig = {
    compilerOptions: {
      ...MODES[mode],
      target: 'es2022',
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      skipLibCheck: true,
      lib: ['es2023'],
      types: ['node'],
      typeRoots: [path.join(root, 'node_modules', '@types')],
      outDir: `out-${mode}`,
    },
    files: ['consumer.ts'],
  };
  const project = path.join(dir, `tsconfig.${mode}.json`);
  await writeFile(project, JSON.stringify(tsconfig));
  return project;
}

const expected = {
  tools: ['find_tools', 'run_tool'],
  statuses: ['ok', 'invalid'],
  answered: ['c1'],
  missing: '404 session_not_found',
};

describe('the packed client', () => {
  it('holds dist/ with its .d.ts files, no sources, no dependencies, and is not private', async () => {
    const { stdout } = await run('tar', ['tzf', tarball]);
    const files = stdout.trim().split('\n').sort();
    expect(files).toContain('package/dist/index.js');
    expect(files).toContain('package/dist/index.d.ts');
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const { stdout: manifest } = await run('tar', ['xzOf', tarball, 'package/package.json']);
    const pkg = JSON.parse(manifest);
    expect(pkg.private).toBeUndefined();
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.types).toBe('./dist/index.d.ts');
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
  });

  it('installs offline and compiles and runs under --strict with node16, bundler and node10 resolution', async () => {
    const dir = await projectWith(tarball, 'from-tarball');
    const outputs = await compileAndRun(dir, Object.keys(MODES) as Mode[]);
    expect(outputs).toEqual([expected, expected, expected]);
  }, 120_000);
});

describe('the client installed from its path', () => {
  it('compiles and runs under --strict with node16 resolution', async () => {
    const dir = await projectWith(clientDir, 'from-path');
    expect(JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')).dependencies).toHaveProperty(
      '@tool-dispatch/client',
    );
    expect(await compileAndRun(dir, ['node16'])).toEqual([expected]);
  }, 120_000);
});
