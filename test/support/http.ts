/** An HTTP answer as the tests read it: status, body text, the body as JSON when it parses, headers. */
export interface Answer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON answers, checked by the tests
  json: any;
  headers: Headers;
}

/** Reads a fetch response whole; `json` is undefined for an empty or non-JSON body. */
export async function readReply(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}
