import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SignatureScheme } from '../triggers/schemes';
import { signedHeaders } from '../triggers/schemes';

/**
 * `weft triggers send` (issue 28): one test delivery to a trigger, signed as `scheme`'s sender
 * signs, for people wiring a sender. A fresh delivery id each time, so each send is a new delivery.
 */
export async function sendTestDelivery(options: {
  slug: string;
  scheme: SignatureScheme;
  bodyFile: string;
  secret: string;
  baseUrl: string;
}): Promise<{ status: number; response: unknown }> {
  const body = await readFile(options.bodyFile);
  const t = Math.floor(Date.now() / 1000);
  const id = options.scheme === 'standard' ? `msg_${randomUUID()}` : randomUUID();
  const headers = { 'content-type': 'application/json', ...signedHeaders(options.scheme, options.secret, body, t, id) };
  const url = new URL(`/v1/triggers/webhook/${encodeURIComponent(options.slug)}`, options.baseUrl);
  const answer = await fetch(url, { method: 'POST', headers, body });
  const text = await answer.text();
  let response: unknown = text;
  try {
    response = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page, say): shown as text.
  }
  return { status: answer.status, response };
}
