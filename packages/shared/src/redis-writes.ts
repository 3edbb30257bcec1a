import type { Socket } from 'node:net';

/** An ioredis connection, as far as `coalesceWrites` needs it (its socket is `stream`). */
interface Connection {
  on(event: 'connect', listener: () => void): unknown;
}

const PATCHED = Symbol.for('tool-dispatch.coalesceWrites');

/**
 * Sends the commands a connection gets in one burst of work (one turn of the event loop's tick
 * and microtask queues) in one socket write. ioredis writes each command to the socket as it is
 * called, one system call each; here the first write of a burst corks the socket and a
 * `process.nextTick` uncorks it, so Node flushes them together with one writev. The commands,
 * their order and their replies are unchanged; only the system calls are fewer. Applied again
 * on every (re)connect, since a reconnect brings a new socket.
 */
export function coalesceWrites(connection: Connection): void {
  const patch = () => {
    const stream = (connection as { stream?: Socket & { [PATCHED]?: true } }).stream;
    if (!stream || stream[PATCHED]) return;
    stream[PATCHED] = true;
    const write = stream.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = function coalescedWrite(this: Socket, ...args: Parameters<Socket['write']>): boolean {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(uncork);
      }
      return write.apply(this, args);
    } as Socket['write'];
  };
  connection.on('connect', patch);
  patch();
}
