/** The `code` of a Node system error (`ENOENT`…), if it has one. @internal */
export function errorCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** The message of any thrown value. @internal */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
