import { dirname } from 'node:path';

/**
 * The port the bridge listens on inside the sandbox. The sandbox's network namespace is its own,
 * so a fixed port cannot collide with another sandbox's (3128: the usual proxy port).
 */
export const SANDBOX_PROXY_PORT = 3128;

/**
 * Run by the worker's node as `node -e BRIDGE <port> <socket> -- argv…` inside the sandbox:
 * listens on 127.0.0.1:<port>, pipes each connection to the proxy's unix socket, runs argv with
 * the stdio it was given, forwards the catchable signals to it and ends as it ended (the same
 * exit code, or killed by the same signal). Its own failures exit 125 (as `env` does); argv not
 * found 127, not executable 126 (as a shell).
 */
export const BRIDGE_SCRIPT = `'use strict';
const net = require('net'), { spawn } = require('child_process'), { constants } = require('os');
const [port, sock, sep, ...argv] = process.argv.slice(1);
const fail = (m, code) => { process.stderr.write('td-sandbox-bridge: ' + m + '\\n'); process.exit(code); };
if (sep !== '--' || argv.length === 0) fail('usage: <port> <socket> -- command...', 125);
const server = net.createServer({ allowHalfOpen: true }, (c) => {
  const u = net.connect({ path: sock, allowHalfOpen: true });
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
  c.on('close', () => u.destroy()); u.on('close', () => c.destroy());
  c.pipe(u); u.pipe(c);
});
server.on('error', (e) => fail('cannot listen on 127.0.0.1:' + port + ': ' + e.message, 125));
const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGALRM', 'SIGWINCH', 'SIGCONT'];
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
  const relay = (s) => { try { child.kill(s); } catch {} };
  for (const s of SIGNALS) process.on(s, relay);
  child.on('error', (e) => fail('cannot run ' + argv[0] + ': ' + e.message, e.code === 'ENOENT' ? 127 : 126));
  child.on('exit', (code, signal) => {
    server.close();
    if (signal === null) process.exit(code);
    for (const s of SIGNALS) process.removeAllListeners(s);
    // Back to the default action (node ignores SIGPIPE; a listener's removal restores SIG_DFL).
    try { process.on(signal, () => {}); process.removeAllListeners(signal); } catch {}
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(128 + (constants.signals[signal] || 0)), 200);
  });
});
`;

/** What the sandbox needs to launch argv with the proxy reachable (NET-SEAM.md). */
export interface ProxiedLaunch {
  argv: string[];
  env: Record<string, string>;
  roBinds: { src: string; dest: string }[];
}

/**
 * Wraps argv for a sandbox whose network namespace holds only its own loopback: the worker's
 * node (bound read-only at its own path) runs the bridge, which runs argv; the proxy variables
 * name the bridge; the socket's directory is bound read-only at its own path.
 */
export function proxiedLaunch(proxy: { readonly socketPath: string }, argv: readonly string[]): ProxiedLaunch {
  if (argv.length === 0) throw new Error('proxiedLaunch needs a command');
  const url = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  const env: Record<string, string> = {};
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY']) {
    env[name] = url;
    env[name.toLowerCase()] = url;
  }
  env.NO_PROXY = noProxy;
  env.no_proxy = noProxy;
  const dir = dirname(proxy.socketPath);
  return {
    argv: [process.execPath, '-e', BRIDGE_SCRIPT, String(SANDBOX_PROXY_PORT), proxy.socketPath, '--', ...argv],
    env,
    roBinds: [
      { src: process.execPath, dest: process.execPath },
      { src: dir, dest: dir },
    ],
  };
}
