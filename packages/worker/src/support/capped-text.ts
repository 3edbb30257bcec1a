/**
 * Collects a byte stream up to a cap, keeping the head; the rest is dropped and flagged.
 * @internal
 */
export class CappedText {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly capBytes: number) {}

  /** Adds a chunk; returns false once the cap is reached (the caller may stop reading). */
  push(chunk: Uint8Array): boolean {
    const room = this.capBytes - this.size;
    if (chunk.byteLength > room) {
      this.truncated = true;
      if (room > 0) this.append(chunk.subarray(0, room));
      return false;
    }
    this.append(chunk);
    return true;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** UTF-8 text; a character cut in half at the cap is left out rather than mangled. */
  text(): string {
    return new TextDecoder('utf-8').decode(this.bytes(), { stream: this.truncated });
  }

  private append(chunk: Uint8Array): void {
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.byteLength;
  }
}
